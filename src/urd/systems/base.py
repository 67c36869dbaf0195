"""The MemorySystem interface and the helpers text-fiche systems share."""

from __future__ import annotations

from ..harness.context import ContextAnswerer, Decode


class MemorySystem:
    """Subclass this and implement consolidate() and answer().

    - consolidate(transcript, budget_bytes) -> bytes: the fiche, at most budget_bytes long.
      Declare every token the consolidation processes with declare_tokens(); the harness also
      meters the backbone and fails a system that declares fewer than it used.
    - answer(fiche, query, header) -> str: the reply, from the fiche alone (a fresh context).
    Set out_of_contract = True for a diagnostic that may exceed the token cap: it is measured
    and labelled, never ranked.
    """

    name = "unnamed"
    out_of_contract = False

    def __init__(self, backbone, settings: dict | None = None):
        self.backbone = backbone
        self.settings = settings or {}
        self.declared_tokens = 0
        self.decode = Decode(max_new_tokens=16)
        self._answerer = ContextAnswerer(backbone)

    def declare_tokens(self, n: int) -> None:
        self.declared_tokens += int(n)

    def consolidate(self, transcript: str, budget_bytes: int | None) -> bytes:
        raise NotImplementedError

    def answer(self, fiche: bytes, query: str, header: str) -> str:
        raise NotImplementedError

    # Helpers for systems whose fiche is text read back into the context.
    def answer_from_text(self, text: str, query: str, header: str) -> str:
        context = f"{header}\n{text}\n" if text else f"{header}\n"
        self._answerer.set_context(context)
        return self._answerer.ask(query, self.decode)

    def answer_from_state(self, state, key, query: str, header: str) -> str:
        self._answerer.set_context(f"{header}\n", state=state, key=key)
        return self._answerer.ask(query, self.decode)

    def prefill_transcript(self, transcript: str):
        """Read the transcript once (declared), returning (logits, state)."""
        tokens = self.backbone.tokenizer.encode(transcript)
        self.declare_tokens(len(tokens))
        return self.backbone.prefill(tokens, None)


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of text within max_bytes, cut at a character boundary."""
    data = text.encode("utf-8")[:max_bytes]
    return data.decode("utf-8", errors="ignore")

"""The MemorySystem interface and the helpers text-fiche systems share."""

from __future__ import annotations

from dataclasses import dataclass

from ..session.context import ContextAnswerer, Decode
from ..session.handle import ModelHandle


@dataclass(frozen=True)
class Context:
    """Where session B starts for every query of an episode: `text` prefilled from `state`
    (None: the zero state). `key` names the context so it is prefilled once, not per query."""

    text: str
    state: list | None = None
    key: tuple | None = None


class MemorySystem:
    """Subclass this and implement consolidate() and answer().

    - consolidate(transcript, budget_bytes) -> bytes: the fiche, at most budget_bytes long.
      Declare every token the consolidation processes with declare_tokens(); the harness also
      meters the backbone and fails a system that declares fewer than it used.
    - answer(fiche, query, header) -> str: the reply, from the fiche alone (a fresh context).
      Or, instead of answer(), context(fiche, header) -> Context: where session B starts; the
      harness then decodes every query of a cell together, which is much faster than one at
      a time.
    Set out_of_contract = True for a diagnostic that may exceed the token cap: it is measured
    and labelled, never ranked.

    Rung 2 (session chains): consolidate(transcript, budget_bytes, prior=None) may take the
    fiche the previous boundary left (None at the first); a system without the `prior`
    parameter is called as above and measured as it is. `self.consolidation_factor` is the
    contract's factor the current consolidation is held to (the Pareto sweep varies it).
    Optional, for speed: consolidate_sweep(transcripts, [(budget_bytes, factor), ...]) ->
    one [(fiche, declared tokens)] per point, every point written in one batch with its model
    work scoped under (point index, episode index) (urd.systems.summary does it); it must give
    what consolidate_batch() gives point by point (urd.harness.runner.consolidate_points).

    `self.backbone` is a metered ModelHandle (urd.session.handle), never the raw model.
    """

    name = "unnamed"  # the registry sets the name the system is registered under
    plugin: str | None = None  # a plug-in's 'module:Class' (set by the registry)
    out_of_contract = False
    # What the dry run's estimate prices (urd.cost.estimate, urd.rung2.plan), read from the class
    # so that every entry of a class is priced alike. The defaults price a system that reads the
    # transcript with the model, writes nothing, and decodes its answers.
    consolidates_from_text = False  # True: consolidation runs no forward (its fiche is text work)
    answers_with_model = True  # False: answers come from the fiche without a forward
    # False: the same fiche at every budget and cap (a sweep decodes its answers once an episode)
    fiche_depends_on_budget = True
    # False: the same fiche at every cap that admits the consolidation (a sweep decodes its
    # answers once a budget); a system that adapts to its consolidation_factor leaves it True
    fiche_depends_on_cap = True

    @classmethod
    def notes_tokens(cls, budget_bytes: int | None, settings: dict) -> int:
        """At most how many tokens one episode's consolidation decodes (0: it decodes none)."""
        return 0

    def __init__(self, backbone, settings: dict | None = None):
        self.backbone = backbone if isinstance(backbone, ModelHandle) else ModelHandle(backbone)
        self.settings = settings or {}
        self.declared_tokens = 0
        self.consolidation_factor: int | None = None  # set by the harness before each cell
        self.decode = Decode(max_new_tokens=16)
        self._answerer = ContextAnswerer(self.backbone)

    def declare_tokens(self, n: int) -> None:
        self.declared_tokens += int(n)

    def consolidate(self, transcript: str, budget_bytes: int | None) -> bytes:
        raise NotImplementedError

    def consolidate_batch(self, transcripts: list[str], budget_bytes: int | None) -> list[tuple[bytes, int]] | None:
        """Optional: every episode of a cell at once, as (fiche, declared tokens) per transcript.
        The model work must go through generate_groups(..., scopes=episode indices) so the
        handle meters each episode apart; tokens it cannot attribute count against every
        episode. None (the default): the harness calls consolidate() episode by episode."""
        return None

    def context(self, fiche: bytes, header: str) -> Context | None:
        return None

    def answer(self, fiche: bytes, query: str, header: str) -> str:
        if self.context(fiche, header) is None:
            raise NotImplementedError(f"{type(self).__name__} implements neither answer() nor context()")
        return self.answer_all(fiche, [query], header)[0]

    def answer_all(self, fiche: bytes, queries: list[str], header: str) -> list[str]:
        """Every query of an episode from one fiche: in one batch from context(), or, for a
        system that defines answer() instead, one query at a time."""
        ctx = self.context(fiche, header)
        if ctx is None:
            return [self.answer(fiche, q, header) for q in queries]
        self._answerer.set_context(ctx.text, state=ctx.state, key=ctx.key)
        return self._answerer.ask_all(queries, self.decode)

    # Helpers for systems whose fiche is text read back into the context.
    @staticmethod
    def text_context(text: str, header: str) -> Context:
        return Context(f"{header}\n{text}\n" if text else f"{header}\n")

    @staticmethod
    def state_context(state, key, header: str) -> Context:
        return Context(f"{header}\n", state, (*key, header))

    def answer_from_text(self, text: str, query: str, header: str) -> str:
        self._answerer.set_context(self.text_context(text, header).text)
        return self._answerer.ask(query, self.decode)

    def answer_from_state(self, state, key, query: str, header: str) -> str:
        ctx = self.state_context(state, key, header)
        self._answerer.set_context(ctx.text, state=ctx.state, key=ctx.key)
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

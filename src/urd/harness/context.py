"""Answering queries from a shared context without prefilling it twice.

The context (a transcript, or a header and a fiche, or a restored state) is prefilled once; each
query starts from a clone of the state after it. Context and query are tokenized separately, so
the boundary between them is the same whatever the query.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Decode:
    max_new_tokens: int
    stop: tuple[str, ...] = ("\n",)


class ContextAnswerer:
    def __init__(self, backbone):
        self.backbone = backbone
        self._key = None
        self._logits = None
        self._state = None

    def set_context(self, text: str, state=None, key=None) -> None:
        """Prefill `text` (from `state`, or a fresh one) unless this exact context is cached."""
        key = key if key is not None else (hashlib.sha256(text.encode()).hexdigest(), None)
        if key == self._key:
            return
        tokens = self.backbone.tokenizer.encode(text) if text else []
        if tokens:
            self._logits, self._state = self.backbone.prefill(tokens, state)
        else:
            self._logits, self._state = None, self.backbone.clone_state(state) if state is not None else None
        self._key = key

    def ask(self, query: str, decode: Decode) -> str:
        tokens = self.backbone.tokenizer.encode(query)
        state = self.backbone.clone_state(self._state) if self._state is not None else None
        gen = self.backbone.generate(
            tokens, state, max_new_tokens=decode.max_new_tokens, stop=decode.stop, keep_state=False
        )
        return gen.text

"""summary: the model reads the session and writes its own fiche.

The model's notes are cut at the budget (at a character boundary) by the system itself, before
the harness weighs them; the harness never truncates.
"""

from __future__ import annotations

from ..harness.context import Decode
from .base import MemorySystem, utf8_prefix

INSTRUCTION = "\nWrite short notes of everything above worth remembering, in at most {budget} bytes.\nNotes:"


class Summary(MemorySystem):
    name = "summary"

    def consolidate(self, transcript, budget_bytes):
        budget = budget_bytes if budget_bytes is not None else 4096
        prompt = transcript + INSTRUCTION.format(budget=budget)
        tokens = self.backbone.tokenizer.encode(prompt)
        self.declare_tokens(len(tokens))
        max_new = int(self.settings.get("max_new_tokens", 64))
        gen = self.backbone.generate(tokens, None, max_new_tokens=max_new, stop=("\n\n",), keep_state=False)
        self.declare_tokens(len(gen.tokens))
        return utf8_prefix(gen.text.strip(), budget).encode("utf-8")

    def answer(self, fiche, query, header):
        return self.answer_from_text(fiche.decode("utf-8"), query, header)

"""summary: the model reads the session and writes its own fiche.

The model's notes are cut at the budget (at a character boundary) by the system itself, before
the harness weighs them; the harness never truncates.
"""

from __future__ import annotations

from .base import MemorySystem, utf8_prefix

INSTRUCTION = "\nWrite short notes of everything above worth remembering, in at most {budget} bytes.\nNotes:"


class Summary(MemorySystem):
    name = "summary"

    def consolidate(self, transcript, budget_bytes):
        ((fiche, tokens),) = self.consolidate_batch([transcript], budget_bytes)
        self.declare_tokens(tokens)
        return fiche

    def consolidate_batch(self, transcripts, budget_bytes):
        """The notes of every episode written in one batch (one row an episode)."""
        budget = budget_bytes if budget_bytes is not None else 4096
        # transcript and instruction tokenized apart: the transcript's tokens are then a prefix
        # the handle serves from the state computed once per episode
        enc = self.backbone.tokenizer.encode
        prompts = [enc(t) + enc(INSTRUCTION.format(budget=budget)) for t in transcripts]
        max_new = int(self.settings.get("max_new_tokens", 64))
        gens = self.backbone.generate_groups([(None, [p]) for p in prompts], max_new_tokens=max_new,
                                             stop=("\n\n",), scopes=list(range(len(prompts))))
        # declared: the prompt read and every token written
        return [(utf8_prefix(g.text.strip(), budget).encode("utf-8"), len(p) + len(g.tokens))
                for p, (g,) in zip(prompts, gens)]

    def context(self, fiche, header):
        return self.text_context(fiche.decode("utf-8"), header)

"""summary: the model reads the session and writes its own fiche.

The notes may fill the budget: the model writes up to ceil(budget / bytes_per_token) tokens
(settings; 3 bytes a token reaches past any budget on English notes, about 4 bytes a token with
the World tokenizer), or ``max_new_tokens`` where a setting fixes it. The model's notes are cut
at the budget (at a character boundary) by the system itself, before the harness weighs them;
the harness never truncates. Under a consolidation cap (rung 2's sweep varies it) the notes stop
where the cap would be passed; a cap the prompt alone passes is a BudgetViolation, as it should be.
"""

from __future__ import annotations

import math

from .base import MemorySystem, utf8_prefix

DEFAULT_BUDGET = 4096  # bytes, for the unbounded (full-state) budget of the bits curve
BYTES_PER_TOKEN = 3


def note_tokens(budget_bytes: int | None, settings: dict) -> int:
    """How many tokens the notes of one episode may run to (also what the spend estimate bills)."""
    if settings.get("max_new_tokens") is not None:
        return int(settings["max_new_tokens"])
    budget = budget_bytes if budget_bytes is not None else DEFAULT_BUDGET
    return max(1, math.ceil(budget / float(settings.get("bytes_per_token", BYTES_PER_TOKEN))))

INSTRUCTION = "\nWrite short notes of everything above worth remembering, in at most {budget} bytes.\nNotes:"


class Summary(MemorySystem):
    name = "summary"

    @classmethod
    def notes_tokens(cls, budget_bytes, settings):
        return note_tokens(budget_bytes, settings)

    def consolidate(self, transcript, budget_bytes):
        ((fiche, tokens),) = self.consolidate_batch([transcript], budget_bytes)
        self.declare_tokens(tokens)
        return fiche

    def consolidate_batch(self, transcripts, budget_bytes):
        """The notes of every episode written in one batch (one row an episode)."""
        return self._write(transcripts, [(budget_bytes, self.consolidation_factor)], lambda p, i: i)[0]

    def consolidate_sweep(self, transcripts, points):
        """Rung 2's sweep: the notes of every (budget, cap factor) point and episode in one
        batch, each row stopping at its own point's limits; the same notes, and the same tokens,
        as each point written alone (urd.harness.runner.consolidate_points)."""
        return self._write(transcripts, points, lambda p, i: (p, i))

    def _write(self, transcripts, points, scope):
        # transcript and instruction tokenized apart: the transcript's tokens are then a prefix
        # the handle serves from the state computed once per episode
        enc = self.backbone.tokenizer.encode
        read = [enc(t) for t in transcripts]
        groups, limits, byte_limits, scopes, prompts_of = [], [], [], [], []
        for p, (budget_bytes, factor) in enumerate(points):
            budget = budget_bytes if budget_bytes is not None else DEFAULT_BUDGET
            prompts = [r + enc(INSTRUCTION.format(budget=budget)) for r in read]
            max_new = note_tokens(budget_bytes, self.settings)
            if factor is not None:  # write no more than the cap leaves
                room = min(factor * len(r) - len(q) for r, q in zip(read, prompts))
                max_new = max(1, min(max_new, room))
            for i, q in enumerate(prompts):
                groups.append((None, [q]))
                limits.append(max_new)
                # a note stops once it fills the budget: what is written past it would be cut anyway
                byte_limits.append(budget)
                scopes.append(scope(p, i))
            prompts_of.append((budget, prompts))
        gens = iter(self.backbone.generate_groups(groups, max_new_tokens=limits, stop=("\n\n",), scopes=scopes,
                                                  max_bytes=byte_limits))
        # declared: the prompt read and every token written
        return [[(utf8_prefix(g.text.strip(), budget).encode("utf-8"), len(q) + len(g.tokens))
                 for q, (g,) in zip(prompts, gens)] for budget, prompts in prompts_of]

    def context(self, fiche, header):
        return self.text_context(fiche.decode("utf-8"), header)

"""vanilla: nothing crosses; the floor."""

from .base import MemorySystem


class Vanilla(MemorySystem):
    name = "vanilla"
    consolidates_from_text = True
    fiche_depends_on_budget = False  # nothing crosses, at any budget

    def consolidate(self, transcript, budget_bytes):
        return b""

    def context(self, fiche, header):
        return self.text_context("", header)

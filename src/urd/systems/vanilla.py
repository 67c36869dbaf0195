"""vanilla: nothing crosses; the floor."""

from .base import MemorySystem


class Vanilla(MemorySystem):
    name = "vanilla"

    def consolidate(self, transcript, budget_bytes):
        return b""

    def answer(self, fiche, query, header):
        return self.answer_from_text("", query, header)

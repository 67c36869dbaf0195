"""retrieval: a deduplicated index of the exposure lines ranked by salience, cut to the budget.

Salience is how often a line was shown; ties go to the line shown first. Header lines (the
instruction the harness passes to answer() anyway) are not indexed. Whole lines only: the index
stops at the first line that does not fit. In a rung-2 chain the new session's lines are ranked
first and the prior fiche's lines follow in their order (the newest session wins the budget).
"""

from __future__ import annotations

from collections import Counter

from .base import MemorySystem

HEADER_LINES = 2  # "Session log." and the task header


def ranked_lines(transcript: str) -> list[str]:
    lines = [l for l in transcript.split("\n")[HEADER_LINES:] if l.strip()]
    counts = Counter(lines)
    first = {}
    for i, line in enumerate(lines):
        first.setdefault(line, i)
    return sorted(counts, key=lambda l: (-counts[l], first[l]))


def pack_lines(lines: list[str], budget: int | None) -> bytes:
    out = b""
    for line in lines:
        candidate = (out + b"\n" if out else b"") + line.encode("utf-8")
        if budget is not None and len(candidate) > budget:
            break
        out = candidate
    return out


class Retrieval(MemorySystem):
    name = "retrieval"
    consolidates_from_text = True

    def consolidate(self, transcript, budget_bytes, prior=None):
        lines = ranked_lines(transcript)
        if prior:
            fresh = set(lines)
            lines += [line for line in prior.decode("utf-8").split("\n") if line and line not in fresh]
        return pack_lines(lines, budget_bytes)

    def context(self, fiche, header):
        return self.text_context(fiche.decode("utf-8"), header)

"""Rung 3's reference systems, on the MemorySystem interface every rung-1 system keeps.

- `oracle`: the episode's latest preference set, one canonical statement a line, the most
  queried first, whole lines to the budget. With the scripted reader it is the ceiling of each
  budget; its fiche at no budget is the episode's payload.
- `everywhere`: the oracle's lines without their scopes: every preference applied on every
  request. It must score about 0 on scoped types (applied on non-triggers as on triggers).
- `first_value`: the first statement of each type, not the last: it carries superseded values
  and shows the stale rate.
Each reads the transcript as text (no model) and knows the family's phrases, as a system built for
rung 3 would.
"""

from __future__ import annotations

from ..core.errors import InputError
from ..data.rung3 import Family
from ..data.rung3 import family as load_family
from ..systems.base import MemorySystem
from ..systems.retrieval import pack_lines
from .reader import known_sides


def family_of(transcript: str, plugins: dict | None = None) -> Family:
    """The family a transcript teaches, from its header line (the second); a transcript of no
    rung-3 family (a rung-1 episode) is refused, never read as one."""
    from ..data.rung3 import HEADERS

    header = transcript.split("\n", 2)[1] if transcript.count("\n") >= 2 else ""
    for name, text in HEADERS.items():
        if header == text:
            return load_family(name, plugins)
    raise InputError("transcript", "header line", f"one of rung 3's family headers ({', '.join(HEADERS)})",
                     header[:80])


def statements(family: Family, transcript: str, *, last: bool = True, scoped: bool = True) -> list[str]:
    """The canonical statement of each type the transcript states, unscoped types first: of its
    last statement (or its first), with its scope where it was stated with one (or without)."""
    if last:
        known = known_sides(family, transcript)
    else:
        known = {}
        for line in transcript.splitlines():
            single = known_sides(family, line)
            known.update({k: v for k, v in single.items() if k not in known})
    kinds = sorted(family.kinds, key=lambda k: k.scoped)  # unscoped first
    return [k.statement(known[k.name][0], scoped=scoped and known[k.name][1]) for k in kinds if k.name in known]


class _Statements(MemorySystem):
    consolidates_from_text = True
    scoped_lines = True
    last = True

    def consolidate(self, transcript, budget_bytes):
        family = family_of(transcript, self.settings.get("types"))
        return pack_lines(statements(family, transcript, last=self.last, scoped=self.scoped_lines), budget_bytes)

    def context(self, fiche, header):
        return self.text_context(fiche.decode("utf-8"), header)


class Oracle(_Statements):
    name = "oracle"


class Everywhere(_Statements):
    name = "everywhere"
    scoped_lines = False


class FirstValue(_Statements):
    name = "first_value"
    last = False


class Codebook(MemorySystem):
    """The latest side of every type as two bits (unknown, side 0, side 1) and, for a scoped type,
    one more (stated with its scope), expanded back into the canonical statements in session B.
    It ships the family's phrases, as a system built for this benchmark could: 10 types fit in
    3 bytes. It shows what the byte budget binds: statements carried as text (the oracle's
    ceiling), not the few bits a preference set holds."""

    name = "codebook"
    consolidates_from_text = True

    def consolidate(self, transcript, budget_bytes):
        family = family_of(transcript, self.settings.get("types"))
        known, bits = known_sides(family, transcript), []
        for k in family.kinds:
            side, scoped = known.get(k.name, (None, False))
            bits += [side is not None, side == 1] + ([scoped] if k.scoped else [])
        code = int("".join("1" if b else "0" for b in [True, *bits]), 2)  # a leading 1 keeps the length
        fiche = HEADERS_BY_NAME[family.name] + code.to_bytes((code.bit_length() + 7) // 8, "big")
        return fiche if budget_bytes is None or len(fiche) <= budget_bytes else b""

    def context(self, fiche, header):
        if not fiche:
            return self.text_context("", header)
        name = next(n for n, b in HEADERS_BY_NAME.items() if fiche.startswith(b))
        family = load_family(name, self.settings.get("types"))
        bits = bin(int.from_bytes(fiche[len(HEADERS_BY_NAME[name]):], "big"))[3:]
        lines, at = [], 0
        for k in family.kinds:
            stated, side = bits[at] == "1", int(bits[at + 1])
            scoped = k.scoped and bits[at + 2] == "1"
            at += 3 if k.scoped else 2
            if stated:
                lines.append(k.statement(side, scoped=scoped))
        return self.text_context("\n".join(lines), header)


HEADERS_BY_NAME = {"prefs": b"P", "code": b"C"}  # the family, in the codebook's first byte

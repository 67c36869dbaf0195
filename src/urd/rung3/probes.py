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

from ..data.rung3 import Family
from ..data.rung3 import family as load_family
from ..systems.base import MemorySystem
from ..systems.retrieval import pack_lines
from .reader import known_sides


def family_of(transcript: str, plugins: dict | None = None) -> Family:
    """The family a transcript teaches, from its header line."""
    from ..data.rung3 import HEADERS

    header = transcript.split("\n", 2)[1] if transcript.count("\n") >= 2 else ""
    for name, text in HEADERS.items():
        if header == text:
            return load_family(name, plugins)
    return load_family("prefs", plugins)


class _Statements(MemorySystem):
    consolidates_from_text = True
    scoped_lines = True
    last = True

    def statements(self, family: Family, transcript: str) -> list[str]:
        if self.last:
            known = known_sides(family, transcript)
        else:
            known = {}
            for line in transcript.splitlines():
                single = known_sides(family, line)
                known.update({k: v for k, v in single.items() if k not in known})
        kinds = sorted(family.kinds, key=lambda k: k.scoped)  # unscoped first
        return [k.statement(known[k.name][0], scoped=self.scoped_lines and known[k.name][1])
                for k in kinds if k.name in known]

    def consolidate(self, transcript, budget_bytes):
        family = family_of(transcript, self.settings.get("types"))
        return pack_lines(self.statements(family, transcript), budget_bytes)

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

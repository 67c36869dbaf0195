"""The scripted reader: an offline, deterministic model of session B.

It reads its context line by line and learns, for every type of the family, the side of the last
statement it finds there (a line of the assistant's is not a statement), and whether that statement
carried its scope. To a request it then writes the reply the family's writer makes on those sides:
- a type it read with its scope is kept inside the scope only, and left neutral outside it;
- a type it read without its scope is kept on every request of its kind;
- an unscoped type it did not read is answered from its habit (`HABIT`, one side of each pair),
  as a model's habit would; a scoped type it did not read is left neutral.
It is the ceiling of what a system's fiche carries: it applies exactly what its context states.
Its habit alone scores 0 under the base-rate correction (urd.rung3.score).

It runs no model: a state in a context (a state system's fiche) cannot be read, and such a system
gets no cell on this reader (urd.rung3.plan).
"""

from __future__ import annotations

from ..data.rung3 import Family
from ..data.rung3.episodes import HABIT

NAME = "scripted"


def known_sides(family: Family, context: str) -> dict[str, tuple[int, bool]]:
    """{type: (side, stated with its scope)} of the last statement of each type in `context`."""
    known: dict[str, tuple[int, bool]] = {}
    for line in context.splitlines():
        if line.startswith("Assistant:"):
            continue
        low = line.lower()
        for kind in family.kinds:
            hits = [(low.find(p.lower()), side) for side, p in enumerate(kind.phrases) if p.lower() in low]
            if hits:
                side = min(hits)[1]  # "No, X" or "X from now on": the first phrase of a line is its statement
                known[kind.name] = (side, kind.scoped and kind.scope.lower() in low)
    return known


def request_of(prompt: str) -> str:
    """The request of a session-B prompt ("User: ...\\nAssistant:")."""
    text = prompt.removeprefix("User: ")
    return text.rsplit("\nAssistant:", 1)[0] if "\nAssistant:" in text else text


def sides_for(family: Family, known: dict[str, tuple[int, bool]], request: str) -> dict[str, int]:
    sides = {}
    for kind in family.kinds:
        if kind.name in known:
            side, scoped = known[kind.name]
            if not scoped or kind.in_scope(request):
                sides[kind.name] = side
        elif not kind.scoped:
            sides[kind.name] = HABIT
    return sides


class ScriptedReader:
    name = NAME
    reads_states = False

    def __init__(self, family: Family):
        self.family = family

    def replies(self, contexts, prompts: list[list[str]]) -> list[list[str]]:
        """Every prompt of every context (urd.systems.base.Context: its text; one list of prompts
        a context)."""
        out = []
        for context, ps in zip(contexts, prompts, strict=True):
            if context.state is not None:
                raise ValueError("the scripted reader reads text only, not a model state")
            known = known_sides(self.family, context.text)
            out.append([self.family.write(request_of(p), sides_for(self.family, known, request_of(p))) for p in ps])
        return out

"""A preference type: the unit rung 3 is built from, and its plug-in interface.

A type is a pair of mutually exclusive sides a user can teach (km / miles, snake_case /
camelCase), how the user states each side (`phrases`, also the oracle's line), the requests where
it applies, how a reply that keeps a side is written (`render`, what the scripted reader and the
session-A assistant do) and the checker that decides whether a reply keeps a side (`check`).
A scoped type (`scope`) applies only to requests inside its scope; `outside` are requests of the
same kind outside it (the non-triggers).

Every type is checked when the DAG is built (`validate`): each side's fixtures must pass its own
checker and fail the counterpart's, and every request template must render. A type whose checker
accepts its counterpart's fixture is refused in one line naming the type and the fixture.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ...core.errors import InputError
from ...core.rng import Stream

FAMILIES = ("prefs", "code")


@dataclass(frozen=True)
class Preference:
    name: str
    family: str  # "prefs" (a user's preferences) or "code" (a codebase's conventions)
    sides: tuple[str, str]  # what each side is called in the data and the tables
    phrases: tuple[str, str]  # how a user states each side, lower case, no final period
    requests: tuple[str, ...]  # request templates where the type applies ({slot}s from `slots`)
    check: Callable[[int, str], bool]  # check(side, reply): does the reply keep that side?
    render: Callable[[int, object], None]  # render(side, draft): write the side into a draft reply
    fixtures: tuple[tuple[str, ...], tuple[str, ...]]  # replies that keep side 0 / side 1
    failing: tuple[str, ...] = ()  # replies that keep neither side (empty, off-topic, both)
    slots: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scope: str | None = None  # scoped: the clause a statement opens with ("when you write to my landlord")
    outside: tuple[str, ...] = ()  # scoped: requests of the same kind outside the scope

    @property
    def scoped(self) -> bool:
        return self.scope is not None

    def in_scope(self, request: str) -> bool:
        """Whether a request falls inside the scope: it names the scope's last word ("landlord",
        "migrations/"); an unscoped type's scope is every request."""
        if self.scope is None:
            return True
        mark = self.scope.split()[-1].lower()
        return re.search(r"(?<![\w/])" + re.escape(mark) + r"(?![\w])", request.lower()) is not None

    def statement(self, side: int, scoped: bool = True) -> str:
        """The canonical line that teaches `side` (the oracle writes it; a reader parses it)."""
        phrase = self.phrases[side]
        text = f"{self.scope}, {phrase}" if self.scope and scoped else phrase
        return text[0].upper() + text[1:] + "."

    def request(self, stream: Stream, inside: bool = True) -> str:
        """A request drawn from the seeded `stream`: a trigger, or (`inside=False`) a scoped
        type's non-trigger."""
        templates = self.requests if inside else self.outside
        return fill(stream.choice(templates), self.slots, stream)


def fill(template: str, slots: Mapping[str, tuple[str, ...]], stream: Stream) -> str:
    names = [n for _, n, _, _ in string.Formatter().parse(template) if n]
    return template.format(**{n: stream.choice(slots[n]) for n in dict.fromkeys(names)})


def validate(kind: Preference, where: str = "rung 3 preference types") -> Preference:
    """The type, or an InputError in one line naming it and the fixture or template at fault."""
    name = f"{where}: {kind.name}"
    if kind.family not in FAMILIES:
        raise InputError(name, "family", f"one of {', '.join(FAMILIES)}", kind.family)
    if len(kind.sides) != 2 or len(kind.phrases) != 2 or kind.phrases[0] == kind.phrases[1]:
        raise InputError(name, "phrases", "two different statements, one a side")
    if kind.phrases[0] in kind.phrases[1] or kind.phrases[1] in kind.phrases[0]:
        # a reader finds a statement by its phrase: one inside the other would read as both
        raise InputError(name, "phrases", "statements neither of which contains the other", kind.phrases)
    for side in (0, 1):
        if len(kind.fixtures[side]) < 3:
            raise InputError(name, f"fixtures[{side}]", "at least three replies that keep the side",
                             len(kind.fixtures[side]))
        for fx in kind.fixtures[side]:
            if not kind.check(side, fx):
                raise InputError(name, f"fixture of {kind.sides[side]!r}", "a reply its checker accepts",
                                 _short(fx))
            if kind.check(1 - side, fx):
                raise InputError(name, f"checker of {kind.sides[1 - side]!r}",
                                 f"to refuse the counterpart's fixture ({kind.sides[side]!r})", _short(fx))
    for fx in kind.failing:
        if kind.check(0, fx) or kind.check(1, fx):
            raise InputError(name, "failing fixture", "a reply both checkers refuse", _short(fx))
    if not kind.requests or (kind.scoped and not kind.outside):
        raise InputError(name, "requests", "request templates (and, for a scoped type, `outside` ones)")
    probe = Stream("urd3-validate", kind.name)
    for template in (*kind.requests, *kind.outside):
        try:
            fill(template, kind.slots, probe)
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError(name, "request template", f"one that renders from its slots ({exc})", template) from None
    return kind


def _short(text: str, n: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[: n - 3] + "..."


def lines(reply: str) -> list[str]:
    return [l.strip() for l in reply.strip().splitlines() if l.strip()]


def has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def exclusive(first: str, second: str) -> Callable[[int, str], bool]:
    """A checker for a pair decided by two patterns: side 0 shows `first` and never `second`,
    side 1 the reverse."""

    def check(side: int, reply: str) -> bool:
        own, other = (first, second) if side == 0 else (second, first)
        return has(own, reply) and not has(other, reply)

    return check

"""The three update gates, decided from one pair's probe answers.

* ``production``: retire on a settled CHANGES; when the older claim carries a past-value
  marker, also require the contradiction probe's YES.
* ``changes-only``: retire on a settled CHANGES alone.
* ``before-1.187``: retire on a contradiction YES and a settled CHANGES (the rule the
  seed's ``--no-same-slot-admits`` restores).

Answers are read lazily, so the order a gate reads them in is the order a store asks
them in, and a recorded sample is scored by the very same function.
"""

from __future__ import annotations

from typing import Protocol

from .markers import has_past_value_marker

PRODUCTION = "production"
CHANGES_ONLY = "changes-only"
BEFORE_1_187 = "before-1.187"
GATES = (PRODUCTION, CHANGES_ONLY, BEFORE_1_187)

CHANGES, FIXED, DIFFERENT = "CHANGES", "FIXED", "DIFFERENT"


class Answers(Protocol):
    def contradiction(self) -> bool | None: ...

    def update(self) -> str | None:
        """The settled update verdict: CHANGES, FIXED, DIFFERENT, or None (no usable answer)."""
        ...


def retires(gate: str, older: str, answers: Answers) -> bool:
    """Whether ``gate`` retires the older claim of a pair with these answers."""
    if gate == PRODUCTION:
        if answers.update() != CHANGES:
            return False
        if has_past_value_marker(older):
            return answers.contradiction() is True
        return True
    if gate == CHANGES_ONLY:
        return answers.update() == CHANGES
    if gate == BEFORE_1_187:
        if answers.contradiction() is not True:
            return False
        return answers.update() == CHANGES
    raise ValueError(f"unknown gate {gate!r}; expected one of {GATES}")


class RecordedAnswers:
    """A saved sample: ``{"contradiction": bool|None, "slot": str|None}``."""

    def __init__(self, sample: dict) -> None:
        self._sample = sample

    def contradiction(self) -> bool | None:
        return self._sample.get("contradiction")

    def update(self) -> str | None:
        return self._sample.get("slot")


def settle(first: str | None, second: str | None) -> str | None:
    """The update ladder: a first CHANGES stands only if the confirming reading agrees."""
    return second if first == CHANGES else first

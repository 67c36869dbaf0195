"""The checks registry: every shipped version, and scoring a run under any of them.

The checks read only a store's rows and events, never a model's opinion of them. A
version that reads a field an older report did not save, or does not define the report's
case, refuses it rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.errors import UrdError
from ..data.agentmem.cases import case as case_named
from ..data.agentmem.cases import load_note
from . import checks_urd, checks_v1, checks_v2, checks_v3

CURRENT = 3
VERSIONS = {1: checks_v1, 2: checks_v2, 3: checks_v3}


class NotRescorable(UrdError):
    """The requested checks version cannot score this run."""


def evaluate(
    rows: Sequence[Mapping], events: Sequence[tuple[str, Mapping]], *, trip_alone: bool, case: str, version: int = CURRENT
) -> dict:
    module = VERSIONS.get(version)
    if module is None:
        raise NotRescorable(f"checks version {version} does not exist; shipped: {sorted(VERSIONS)}")
    if case not in module.CASES:
        raise NotRescorable(f"checks version {version} does not define the {case} case")
    the_case = case_named(case)
    needs = module.fields(the_case) if hasattr(module, "fields") else module.FIELDS  # v1, v2: the same for every case
    for row in rows:
        lacking = needs - set(row)
        if lacking:
            raise NotRescorable(f"checks version {version} reads {sorted(lacking)}, which this run did not save")
    return module.evaluate(rows, events, trip_alone=trip_alone, case=the_case)


def evaluate_urd(rows: Sequence[Mapping], events: Sequence[tuple[str, Mapping]], *, variant: str, case: str) -> dict:
    """urd's own stricter checks (checks_urd) of one run."""
    the_case = case_named(case)
    return checks_urd.evaluate(rows, events, trip_alone=variant == "trip-alone", case=the_case,
                               trip_told_on=load_note(the_case.trip).date)

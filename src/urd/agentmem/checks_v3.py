"""Trip-vs-move checks, version 3 (current): version 2's checks, reading ``valid_until`` only
for a case that counts an end date.

Shipped: never edited (calibration/agentmem/checks.json pins this file's SHA-256). A change
is a new version. Version 2 reads ``valid_until`` from every row, so it refuses a mid-trip
store saved without the field, although the mid-trip case never counts an end date (the
write-up's engine stores none there: the trip note's Thursday is past when it is read).
Version 3 scores such a store, and scores every store version 2 scores exactly as version 2
does: the checks themselves are version 2's, from its pinned, never-edited file.
"""

from __future__ import annotations

from . import checks_v2

VERSION = 3
CASES = checks_v2.CASES


def fields(case) -> frozenset:
    """The row fields this version reads for `case`."""
    return checks_v2.FIELDS if case.lapse_counts else checks_v2.FIELDS - {"valid_until"}


def evaluate(rows, events, *, trip_alone, case):
    return checks_v2.evaluate(rows, events, trip_alone=trip_alone, case=case)

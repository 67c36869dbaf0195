"""The past-value marker: wording that says a claim's value is over.

Such a claim ("lived in Rotterdam until 2024", "used to coach chess", a restatement
"As of <date>, when ...") records history, so a later value does not replace it. The
production gate keeps the contradiction probe in front of the update verdict for a pair
whose older claim carries one. The list is narrow on purpose: "until" counts only with
a year, since "in Lyon until the end of May" is a current, bounded value.
"""

from __future__ import annotations

import re

_YEAR = r"(?:19|20)\d\d"

PAST_VALUE_MARKERS = (
    re.compile(rf"\buntil\s+(?:[A-Za-z]+\s+)?{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b(?:before|back in)\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(r"\b(?:previously|formerly|used to|no longer|had been)\b", re.IGNORECASE),
    re.compile(r"^\s*as of [^,]{1,40},\s*when\b", re.IGNORECASE),
)


def has_past_value_marker(text: str) -> bool:
    return any(p.search(text) for p in PAST_VALUE_MARKERS)

"""urd's own stricter trip-vs-move checks, version 1: beside the write-up's, never in place of them.

Shipped: never edited (calibration/agentmem/checks.json pins this file's SHA-256); a change is a
new version. The write-up's checks (checks_v2, checks_v3) stay as the write-up states them; these
catch three stores that pass them, each a failure the write-up warns of:

* i+ (move): no ACTIVE claim from the home note says anything of the old home (a residence word:
  live, home, flat, ...) unless it is a dated restatement. The write-up's i looks for the city
  only, so "Kamla's Kitchen is a ten-minute walk from the user's flat" left ACTIVE passes it.
* b+ (trip alone): the trip is stored as current: an ACTIVE trip-note claim naming the trip's
  city, not a restatement, whose own end date (if it has one) falls after the date of the note
  that told of the trip. A trip stored as over on the day it was told (an end date taken from the
  note's own date) passes the write-up's b.
* iii+ (move): no ACTIVE trip-note claim reads the week as current unless it is a dated
  restatement, whether or not its end date has passed: an ended trip still shown as current is
  the stale state the write-up warns of, and the write-up's iii exempts it where the case counts
  end dates.
* v (both): no claim is RETIRED that says nothing of where the user lives or is (no place, no
  residence, flight or trip word). "Newest note wins", retiring every older fact for the latest
  note's, passes the reader case's move under the write-up's checks (its one earlier note holds
  only the home and the trip); it retires the user's other facts with them, which v catches, as
  the mid-trip case's trip-alone run catches it there.
"""

from __future__ import annotations

import re
from datetime import date

from . import checks_v2 as v2

VERSION = 1
CASES = v2.CASES
CITIES = ("delhi", "mumbai")
_PLACE = re.compile(r"\b(?:in|to|at|from)\s+(?:the\s+)?[A-Z][a-z]+")


def _about_whereabouts(text: str) -> bool:
    """Says something of where the user lives or is: a place, or a residence, flight or trip word."""
    return (any(c in text.lower() for c in CITIES) or bool(_PLACE.search(text))
            or v2._says(text, v2.RESIDENCE_OR_FLIGHT) or bool(v2.TRIP_WORDS.search(text)))


def _ends_by(row, day: date) -> bool:
    until = row.get("valid_until")
    return until is not None and date.fromisoformat(str(until)[:10]) <= day


def evaluate(rows, events, *, trip_alone: bool, case, trip_told_on: date) -> dict:
    """The stricter checks of one run. `trip_told_on`: the date of the case's trip note."""
    active = [r for r in rows if r["status"] == "ACTIVE"]
    unrelated = [r["content"] for r in rows if r["status"] == "RETIRED" and not _about_whereabouts(r["content"])]
    if trip_alone:
        current = [r["content"] for r in active
                   if v2._from(r, case.trip) and not r["restatement"] and "mumbai" in r["content"].lower()
                   and not _ends_by(r, trip_told_on)]
        failed = [name for name, bad in (("b_plus_trip_current", not current), ("v_unrelated_retired", unrelated)) if bad]
        return {"b_plus_trip_current": current, "v_unrelated_retired": unrelated, "failed": failed, "pass": not failed}
    home = [r["content"] for r in active
            if v2._from(r, case.home) and v2._says(r["content"], v2.RESIDENCE) and not v2._dated(r)]
    week = [r["content"] for r in active
            if v2._from(r, case.trip) and v2.TRIP_WORDS.search(r["content"]) and not v2._dated(r)]
    failed = [name for name, bad in (("i_plus_home_fact_active", home), ("iii_plus_trip_current", week),
                                     ("v_unrelated_retired", unrelated)) if bad]
    return {"i_plus_home_fact_active": home, "iii_plus_trip_current": week, "v_unrelated_retired": unrelated,
            "failed": failed, "pass": not failed}

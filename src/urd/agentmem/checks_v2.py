"""Trip-vs-move checks, version 2 (current), for both cases.

Shipped: never edited (calibration/agentmem/checks.json pins this file's SHA-256). A
change is a new version. Self-contained on purpose.

Claims are selected by the note they came from: the home note states the residence, the
trip note the week away, the move note the move. A dated restatement is a claim the
store rewrote as history, with an "as of" ISO date and a past-tense was or were.

Trip alone passes when (a) an ACTIVE home-note claim names Delhi with a residence word
(the home stays current) and (b) an ACTIVE trip-note claim that is not a restatement
names Mumbai (the trip is current). One claim may satisfy both.

The move passes when (i) no ACTIVE claim names Delhi with a residence or flight word
unless it is a dated restatement; (ii) no restatement was kept back for contradicting
the claim that retired its anchor, and every restatement is ACTIVE; (iii) no ACTIVE
trip-note claim reads the week as current (a trip word) unless it is a dated
restatement or, where the case counts it, its own end date falls on or before the move;
(iv) an ACTIVE move-note claim names Mumbai.
"""

from __future__ import annotations

import re
from datetime import date

VERSION = 2
CASES = ("reader", "mid-trip")
FIELDS = frozenset({"content", "status", "sources", "restatement", "valid_until"})

RESIDENCE = ("live", "lives", "living", "home", "flat", "reside", "resides", "residence")
RESIDENCE_OR_FLIGHT = (*RESIDENCE, "fly", "flies", "flying", "flight", "back to")
TRIP_WORDS = re.compile(
    r"\bfor a week\b|\bweek-long\b|\btrip\b|\bvisit\b|\bvisiting\b|\btemporary\b|\btemporarily\b",
    re.IGNORECASE,
)
_AS_OF = re.compile(r"\bas of \d{4}-\d{2}-\d{2}\b", re.IGNORECASE)


def _says(text, words):
    return any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words)


def _from(row, note):
    return note in row["sources"]


def _dated(row):
    text = row["content"]
    return bool(row["restatement"] and _AS_OF.search(text) and _says(text, ("was", "were")))


def _lapsed(row, by):
    until = row.get("valid_until")
    return until is not None and date.fromisoformat(str(until)[:10]) <= by


def _kept_back_by_winner(events):
    winners = {p["retired_id"]: p.get("winner_id") for kind, p in events if kind == "UPDATE_SUPERSESSION"}
    return [
        p.get("restatement")
        for kind, p in events
        if kind == "DEPENDENT_CLAIM_EXAMINED"
        and p.get("outcome") == "unrestated"
        and str(p.get("why", "")).startswith("the restatement contradicts")
        and p.get("other_id") is not None
        and p.get("other_id") == winners.get(p.get("retired_id"))
    ]


def evaluate(rows, events, *, trip_alone, case):
    active = [r for r in rows if r["status"] == "ACTIVE"]
    if trip_alone:
        home = [
            r["content"]
            for r in active
            if _from(r, case.home) and "delhi" in r["content"].lower() and _says(r["content"], RESIDENCE)
        ]
        trip = [
            r["content"]
            for r in active
            if not r["restatement"] and _from(r, case.trip) and "mumbai" in r["content"].lower()
        ]
        missing = [name for name, found in (("a_home_in_delhi", home), ("b_trip_current", trip)) if not found]
        return {"a_home_in_delhi": home, "b_trip_current": trip, "missing": missing, "pass": not missing}

    def delhi_home(r):
        return "delhi" in r["content"].lower() and _says(r["content"], RESIDENCE_OR_FLIGHT)

    delhi = [r["content"] for r in active if delhi_home(r) and not r["restatement"]]
    undated = [r["content"] for r in active if delhi_home(r) and r["restatement"] and not _dated(r)]
    held = _kept_back_by_winner(events)
    not_active = [r["content"] for r in rows if r["restatement"] and r["status"] != "ACTIVE"]
    week = [
        r["content"]
        for r in active
        if _from(r, case.trip)
        and TRIP_WORDS.search(r["content"])
        and not _dated(r)
        and not (case.lapse_counts and _lapsed(r, case.move_date))
    ]
    moved = [r["content"] for r in active if _from(r, case.move) and "mumbai" in r["content"].lower()]
    missing = [] if moved else ["iv_move_kept"]
    return {
        "i_delhi_residence_or_flight": delhi,
        "i_undated_restatement": undated,
        "ii_kept_back_by_winner": held,
        "ii_restatement_not_active": not_active,
        "iii_trip_current": week,
        "iv_move_kept": moved,
        "missing": missing,
        "pass": not (delhi or undated or held or not_active or week or missing),
    }

"""Trip-vs-move checks, version 1: the checks of the first mid-trip results.

Shipped: never edited (calibration/agentmem/checks.json pins this file's SHA-256). A
change is a new version. Defined for the mid-trip case only. Self-contained on purpose,
so that nothing this version reads can change under it.

Move: (i) no ACTIVE claim other than a restatement names Delhi with a residence or
flight word, and every ACTIVE restatement naming a flight carries an ISO "as of" date
and a past-tense was/were; (ii) no restatement was kept back for contradicting the claim
that retired its anchor, and every restatement is ACTIVE; (iii) no ACTIVE trip-note claim
other than a restatement matches "for a week" or "work trip".
Trip alone: an ACTIVE home-note claim names Delhi with live, lives or home.
"""

from __future__ import annotations

import re

VERSION = 1
CASES = ("mid-trip",)
FIELDS = frozenset({"content", "status", "sources", "restatement"})

RESIDENCE_OR_FLIGHT = ("live", "lives", "home", "flat", "fly", "flies", "flying", "flight", "back to")
FLIGHT = ("fly", "flies", "flying", "flight")
RESIDENCE = ("live", "lives", "home")
_AS_OF = re.compile(r"\bas of \d{4}-\d{2}-\d{2}\b", re.IGNORECASE)
_WEEK = re.compile(r"\bfor a week\b|\bwork trip\b", re.IGNORECASE)


def _says(text, words):
    return any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words)


def _from(row, note):
    return note in row["sources"]


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
        return {"residence_claims": home, "pass": bool(home)}
    delhi = [
        r["content"]
        for r in active
        if not r["restatement"] and "delhi" in r["content"].lower() and _says(r["content"], RESIDENCE_OR_FLIGHT)
    ]
    undated = [
        r["content"]
        for r in active
        if r["restatement"]
        and _says(r["content"], FLIGHT)
        and not (_AS_OF.search(r["content"]) and _says(r["content"], ("was", "were")))
    ]
    held = _kept_back_by_winner(events)
    not_active = [r["content"] for r in rows if r["restatement"] and r["status"] != "ACTIVE"]
    week = [r["content"] for r in active if not r["restatement"] and _from(r, case.trip) and _WEEK.search(r["content"])]
    return {
        "i_delhi_residence_or_flight": delhi,
        "i_undated_flight_restatement": undated,
        "ii_kept_back_by_winner": held,
        "ii_restatement_not_active": not_active,
        "iii_trip_current": week,
        "pass": not (delhi or undated or held or not_active or week),
    }

"""Scoring the update-gate samples: the three gates from the same answers, the bar,
the regression reading, and the rows reported and never barred. Pure: no call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..stores.reference.gates import BEFORE_1_187, GATES, PRODUCTION, RecordedAnswers, retires

#: Rows never barred: the trip case's own pairs, and rows labelled 'report'.
UNBARRED_CLASS = "case"


#: The pseudo-gate of a store scored through its own update decision (``decides_update``):
#: each sample is ``{"retires": bool}``.
STORE_GATE = "store"


def _retires(gate: str, row: Mapping, sample: Mapping) -> bool:
    if gate == STORE_GATE:
        return bool(sample["retires"])
    return retires(gate, row["older"], RecordedAnswers(sample))


def retirements(row: Mapping, gate: str) -> int:
    return sum(_retires(gate, row, s) for s in row["samples"])


def barred(row: Mapping) -> bool:
    return row["class"] != UNBARRED_CLASS and row["expected"] != "report"


def needed(samples: int) -> int:
    """Samples that must retire a labelled update: two of three, a majority in general."""
    return samples // 2 + 1


def gate_tally(rows: Sequence[Mapping], gate: str, *, heldout: bool) -> dict:
    """Positives retired in a majority of samples; any retirement of a control fails.
    A held-out set lets one positive miss."""
    scored = [r for r in rows if barred(r)]
    positives = [r for r in scored if r["expected"] == "changes"]
    controls = [r for r in scored if r["expected"] == "not_changes"]
    hit = [r["id"] for r in positives if retirements(r, gate) >= needed(len(r["samples"]))]
    false = {r["id"]: retirements(r, gate) for r in controls if retirements(r, gate)}
    return {
        "positives_retired": len(hit),
        "positives": len(positives),
        "positive_misses": [r["id"] for r in positives if r["id"] not in hit],
        "control_retirements": sum(false.values()),
        "control_samples": sum(len(r["samples"]) for r in controls),
        "controls_retired": sorted(false),
        "ok": len(hit) >= len(positives) - (1 if heldout else 0) and not false,
    }


def score_set(rows: Sequence[Mapping], *, heldout: bool) -> dict:
    """Every gate's tally; the bar (production); regression (production retires no
    control sample the rule before 1.187 kept); the unbarred rows' retirements."""
    gates = {g: gate_tally(rows, g, heldout=heldout) for g in GATES}
    added = sorted(
        r["id"]
        for r in rows
        if barred(r)
        and r["expected"] == "not_changes"
        and any(
            retires(PRODUCTION, r["older"], RecordedAnswers(s)) and not retires(BEFORE_1_187, r["older"], RecordedAnswers(s))
            for s in r["samples"]
        )
    )
    reported = {
        r["id"]: {"class": r["class"], "expected": r["expected"], "samples": len(r["samples"]), **{g: retirements(r, g) for g in GATES}}
        for r in rows
        if not barred(r)
    }
    unanswered = sum(1 for r in rows for s in r["samples"] if s.get("slot") is None or s.get("contradiction") is None)
    return {
        "gates": gates,
        "bar": gates[PRODUCTION]["ok"],
        "regression": not added,
        "controls_added_by_production": added,
        "reported": reported,
        "unanswered_samples": unanswered,
    }


def score_store_set(rows: Sequence[Mapping], *, heldout: bool) -> dict:
    """A store's own update decision, under the production gate's bar; the regression reading
    compares two gates of the reference store and is not defined for it."""
    tally = gate_tally(rows, STORE_GATE, heldout=heldout)
    reported = {
        r["id"]: {"class": r["class"], "expected": r["expected"], "samples": len(r["samples"]), STORE_GATE: retirements(r, STORE_GATE)}
        for r in rows
        if not barred(r)
    }
    return {"gates": {STORE_GATE: tally}, "bar": tally["ok"], "regression": None, "controls_added_by_production": None,
            "reported": reported, "unanswered_samples": 0}

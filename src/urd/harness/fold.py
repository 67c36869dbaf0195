"""Fold responses.jsonl files into the figures of summary.json.

Every figure is re-derived from the raw responses: verdicts are judged again here, so the
summary and a later offline rescore cannot disagree unless the judging code changed (which
`rescore` reports). Retention B/A is the ratio of the episode means of score B and score A,
with the per-episode values beside it; where mean A is 0 or negative it is undefined, with the
reason.
"""

from __future__ import annotations

from collections import defaultdict

from ..core.errors import InputError
from .scoring import episode_scores, judge_t1, judge_t2

DIGITS = 6


def _r(x):
    return None if x is None else round(float(x), DIGITS)


def rejudge(rec: dict) -> dict:
    if rec["task"] == "t1":
        return judge_t1({"kind": rec["kind"], "expected": rec["expected"]}, rec["response"])
    return judge_t2({"kind": rec["kind"]}, rec["response"], rec["marker"])


def by_episode(records: list[dict]) -> dict[int, list[dict]]:
    eps: dict[int, list[dict]] = defaultdict(list)
    for rec in records:
        eps[rec["episode"]].append({**rec, **rejudge(rec)})
    return dict(sorted(eps.items()))


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


SANDBOX_KEYS = ("sandbox_consolidate", "sandbox_answer", "sandbox_judge")


def sandbox_labels(records: list[dict]) -> list[str]:
    """How the jobs behind these responses ran (urd.workflow.sandbox): ["bwrap"] when every one
    was sandboxed; a response without any label (written before labels existed, or not by the
    workflow) counts as "unlabelled", never as sandboxed."""
    return sorted({lab for r in records for lab in ([r[k] for k in SANDBOX_KEYS if k in r] or ["unlabelled"])})


def sandbox_summary(figures: dict, own: str) -> dict:
    """The summary's sandbox line: its own job's label, the labels of its cells and controls, and
    whether they are all sandboxed or mixed."""
    labels = [lab for c in figures["control"].values() for lab in c.get("sandbox", [])]
    labels += [lab for tasks in figures["cells"].values() for splits in tasks.values() for c in splits.values()
               for lab in c.get("sandbox", [])]
    counts = {lab: labels.count(lab) for lab in sorted(set(labels))}
    every = {own, *counts}
    return {"summary": own, "cells": counts, "all_sandboxed": every == {"bwrap"},
            "mixed": "bwrap" in every and len(every) > 1}


def _stat(xs):
    return {"mean": _r(_mean(xs)), "max": max(xs) if xs else None}


def fold_control(task: str, records: list[dict]) -> dict:
    eps = {e: episode_scores(task, recs) for e, recs in by_episode(records).items()}
    return {"episodes": {str(e): {k: _r(v) if isinstance(v, float) else v for k, v in s.items()} for e, s in eps.items()},
            "score_A": _r(_mean([s["score"] for s in eps.values()])), "sandbox": sandbox_labels(records)}


def fold_cell(task: str, control: list[dict], records: list[dict]) -> dict:
    a = {e: episode_scores(task, recs) for e, recs in by_episode(control).items()}
    b_recs = by_episode(records)
    b = {e: episode_scores(task, recs) for e, recs in b_recs.items()}
    missing = sorted(set(b) - set(a))
    if missing:
        raise ValueError(f"{task}: episodes {missing} have session-B responses but no control")
    per_episode = []
    for e in b:
        first = b_recs[e][0]
        row = {"episode": e, "score_A": _r(a[e]["score"]), "score_B": _r(b[e]["score"]),
               "fiche_bytes": first["fiche_bytes"], "declared_tokens": first["declared_tokens"],
               "metered_tokens": first["metered_tokens"], "token_cap": first["token_cap"]}
        if task == "t1":
            row.update(confabulation_A=_r(a[e]["confabulation"]), confabulation_B=_r(b[e]["confabulation"]))
        else:
            row.update(rate_trigger_A=_r(a[e]["rate_trigger"]), rate_trigger_B=_r(b[e]["rate_trigger"]),
                       rate_non_trigger_A=_r(a[e]["rate_non_trigger"]), rate_non_trigger_B=_r(b[e]["rate_non_trigger"]))
        per_episode.append(row)
    mean_a = _mean([a[e]["score"] for e in b])
    mean_b = _mean([b[e]["score"] for e in b])
    oocs = {r["out_of_contract"] for recs in b_recs.values() for r in recs}
    cell = {
        "episodes": per_episode,
        "score_A": _r(mean_a),
        "score_B": _r(mean_b),
        "out_of_contract": any(oocs),
        "budget_bytes": b_recs[next(iter(b_recs))][0]["budget_bytes"] if b_recs else None,
        "fiche_bytes": _stat([r["fiche_bytes"] for r in per_episode]),
        "declared_tokens": _stat([r["declared_tokens"] for r in per_episode]),
        "metered_tokens": _stat([r["metered_tokens"] for r in per_episode]),
        "token_cap": _stat([r["token_cap"] for r in per_episode]),
        "sandbox": sandbox_labels(records),
    }
    if mean_a is None:
        cell["retention"] = None
        cell["retention_undefined"] = ("no episode has a score A (a reduced run without seen-key, or "
                                       "without trigger and non-trigger, queries): B/A has no value")
    elif mean_a == 0:
        cell["retention"] = None
        cell["retention_undefined"] = "score A (in-session control) is 0 on these episodes: B/A has no value"
    elif mean_a < 0:
        cell["retention"] = None
        cell["retention_undefined"] = ("score A (in-session control) is negative on these episodes (T2 "
                                       "discrimination below chance): B/A would flip its sign")
    else:
        cell["retention"] = _r(mean_b / mean_a)
    if task == "t1":
        cell["confabulation_A"] = _r(_mean([r["confabulation_A"] for r in per_episode]))
        cell["confabulation_B"] = _r(_mean([r["confabulation_B"] for r in per_episode]))
    else:
        for k in ("rate_trigger_A", "rate_trigger_B", "rate_non_trigger_A", "rate_non_trigger_B"):
            cell[k] = _r(_mean([r[k] for r in per_episode]))
    return cell


def _queries(records: list[dict]) -> dict[int, list[str]]:
    eps: dict[int, list[str]] = defaultdict(list)
    for r in records:
        eps[r["episode"]].append(r["query_id"])
    return {e: sorted(q) for e, q in eps.items()}


def check_matches_control(label: str, records: list[dict], control: list[dict]) -> None:
    """A cell folds only against the same episodes and queries as its control, each once."""
    ids = [r["query_id"] for r in records]
    if len(ids) != len(set(ids)):
        dup = next(q for q in ids if ids.count(q) > 1)
        raise InputError(label, "query_id", "each query once", f"{dup} more than once")
    mine, theirs = _queries(records), _queries(control)
    if sorted(mine) != sorted(theirs):
        raise InputError(label, "episodes", f"the control's episodes {sorted(theirs)}", sorted(mine))
    for e in theirs:
        if mine[e] != theirs[e]:
            missing = sorted(set(theirs[e]) - set(mine[e]))
            extra = sorted(set(mine[e]) - set(theirs[e]))
            raise InputError(label, f"episode {e}", "the control's queries",
                             f"{len(missing)} missing ({' '.join(missing[:3])}), {len(extra)} extra ({' '.join(extra[:3])})")


def fold(responses: dict[tuple, list[dict]]) -> dict:
    """responses: {("control", task, None) or (system, task, split): records} -> figures."""
    controls = {task: recs for (system, task, split), recs in responses.items() if system == "control"}
    out = {"control": {t: fold_control(t, recs) for t, recs in sorted(controls.items())}, "cells": {}}
    for (system, task, split), recs in sorted(responses.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        if system == "control":
            continue
        if task not in controls:
            raise InputError(f"{system}/{task}/{split}", "control", f"the control responses of {task}")
        check_matches_control(f"{system}/{task}/{split}/responses.jsonl", recs, controls[task])
        out["cells"].setdefault(system, {}).setdefault(task, {})[split] = fold_cell(task, controls[task], recs)
    return out


def verdict_drift(responses: dict[tuple, list[dict]]) -> list[str]:
    """Query ids whose stored verdict differs from a fresh judgement (the judge changed)."""
    return [r["query_id"] for recs in responses.values() for r in recs if rejudge(r)["verdict"] != r["verdict"]]

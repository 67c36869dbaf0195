"""One scale's rung-1 table beside the write-up's 0.1B table, and the write-up's four "what holds
at both scales" findings measured on it.

    python -m urd.tables.writeup --summary results/urd/learned/summary.json --scale learned \
        --bootstrap JSON --md OUT.md --json OUT.json

Same rows and columns as the write-up (retention B/A; T1 over, T1 sanity, T2 over, T2 sanity),
each cell this scale's point and 95 % interval (urd.tables.bootstrap) with the write-up's figure
quoted beside it; then the in-session control (score_A, the denominator of every cell) with its
interval; then each finding as the write-up states it, whether it holds here, and the numbers
that decide it. Nothing is tuned to agree: a finding that fails is reported as failing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from ..core.errors import UrdError
from ..core.io import atomic_write_json, atomic_write_text, read_json
from .bootstrap import Bootstrap, resample_indices
from .retention import build_cells
from .sources import load

COLUMNS = (("t1", "over"), ("t1", "sanity"), ("t2", "over"), ("t2", "sanity"))
# The write-up's 0.1B retention table (seed 001, "Results"), in percent; systems in its order.
WRITEUP_01B = {
    "retrieval": (30.0, 125.7, 0.0, 112.5),
    "gzip_tail": (8.6, 87.1, 18.8, 100.0),
    "summary": (7.1, 4.3, 0.0, 0.0),
    "state_carry": (0.0, 0.0, 0.0, 0.0),
    "replay_tune": (0.0, 0.0, 0.0, 0.0),
    "replay_banc": (0.0, 0.0, 0.0, 0.0),
    "vanilla": (0.0, 0.0, 0.0, 0.0),
}
IN_CONTRACT_STATE = ("state_carry", "replay_tune")  # the state channel under contract
WRITES_NOTES = ("summary",)  # the model writes the fiche: it needs a head that can write what it read
VOCABULARY = 65536  # the World tokenizer's ids
# A replay recipe whose tuning loss ends above a uniform guess's over the vocabulary (ln 65,536 =
# 11.09 nats a token) never fitted the transcript: whatever its state carries, its cell cannot
# say what a tuned state keeps, and is marked not comparable, with the figures.
UNIFORM_LOSS = math.log(VOCABULARY)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def mean_interval(values: list[float], boot: Bootstrap) -> dict:
    """The mean over episodes and its percentile bootstrap interval (the tables' resampling)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"mean": None, "low": None, "high": None, "n_episodes": 0}
    means = v[resample_indices(v.size, boot.resamples, boot.seed)].mean(axis=1)
    alpha = (1 - boot.level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return {"mean": float(v.mean()), "low": float(low), "high": float(high), "n_episodes": int(v.size)}


def control(summary: dict, boot: Bootstrap) -> dict:
    """score_A per task over the episodes (each cell of a task shares the control's scores)."""
    out = {}
    for task in ("t1", "t2"):
        per_episode = {}
        for tasks in summary["cells"].values():
            for cell in tasks.get(task, {}).values():
                for e in cell.get("episodes", []):
                    if e.get("score_A") is not None:
                        per_episode[e["episode"]] = e["score_A"]
        out[task] = mean_interval([per_episode[k] for k in sorted(per_episode)], boot)
    return out


def _point(cells, system, task, split):
    c = cells.get((system, task, split))
    return None if c is None else c.interval.point


def not_comparable(systems: list[str], costs: dict | None, record: dict | None) -> dict[str, str]:
    """{system: why its cells at this scale say nothing about the system}, from what was measured:
    a replay recipe whose tuning loss did not fall (its costs), a note-writing system on a model
    whose head scores only its replies' token ids (its training record's reply_vocabulary)."""
    cut = (record or {}).get("reply_vocabulary")
    head = (f"the head scores {cut:,} of the tokenizer's {VOCABULARY:,} ids (the replies'), every other at -100"
            if cut and cut < VOCABULARY else None)
    out = {}
    for s in systems:
        recipe = ((costs or {}).get("recipes") or {}).get(s)
        if recipe and recipe.get("loss_last_mean"):
            first, last = recipe["loss_first_mean"], recipe["loss_last_mean"]
            if last > UNIFORM_LOSS:
                out[s] = (f"its tuning never fitted the transcripts: the loss ends at {last:.2f} nats a token (mean "
                          f"over {recipe['artifacts']} artifacts, {recipe['steps']} steps, from {first:.2f} at the "
                          f"first), above the {UNIFORM_LOSS:.2f} of a uniform guess over the tokenizer's ids"
                          + (f"; {head}, and a tuned state cannot move those" if head else ""))
        elif s in WRITES_NOTES and head:
            out[s] = f"the model writes its notes, and {head}: they cannot hold the keys, codes or examples it read"
    return out


def findings(cells: dict, systems: list[str], excluded: dict[str, str] | None = None) -> list[dict]:
    """The write-up's four findings, each decided from this scale's cells (points); `excluded`
    systems (not comparable here) take no part, and the findings that would read them say so."""
    excluded = excluded or {}
    inc = [s for s in systems if s not in excluded
           and not any(c.out_of_contract for (sy, _, _), c in cells.items() if sy == s)]
    out = []
    # 1. retrieval wins T1 (both splits); gzip_tail wins T2-over
    for claim, system, cols in (("retrieval wins T1", "retrieval", [("t1", "over"), ("t1", "sanity")]),
                                ("gzip_tail wins T2-over", "gzip_tail", [("t2", "over")])):
        detail, holds = [], True
        for task, split in cols:
            mine = _point(cells, system, task, split)
            rivals = {s: _point(cells, s, task, split) for s in inc if s != system}
            best = max((v for v in rivals.values() if v is not None), default=None)
            if mine is None:  # no defined retention: the finding cannot be read, not "fails"
                holds = None
            elif holds is not None:
                holds &= best is None or mine > best  # a tie wins nothing
            top = max(rivals, key=lambda s: -1 if rivals[s] is None else rivals[s]) if rivals else None
            detail.append(f"{task.upper()} {split}: {system} {_pct(mine)}, best other in contract "
                          f"{top} {_pct(best)}")
        out.append({"finding": claim, "holds": holds, "detail": "; ".join(detail)})
    # 2. the state channel scores zero under contract
    vals = {f"{s} {t.upper()} {sp}": _point(cells, s, t, sp) for s in IN_CONTRACT_STATE if s not in excluded
            for t, sp in COLUMNS if (s, t, sp) in cells}
    nonzero = {k: v for k, v in vals.items() if v not in (None, 0.0)}
    defined = [v for v in vals.values() if v is not None]
    left_out = [s for s in IN_CONTRACT_STATE if s in excluded]
    out.append({"finding": "the state channel scores zero under contract",
                "holds": None if not defined else not nonzero,
                "detail": ("no defined retention" if not defined else "every defined cell 0" if not nonzero else
                           "; ".join(f"{k}: {_pct(v)}" for k, v in nonzero.items()))
                + (f"; left out, not comparable here: {', '.join(left_out)}" if left_out else "")})
    # 3. retention above 100 % in sanity
    over100 = {f"{s} {t.upper()}": _point(cells, s, t, "sanity") for s in inc for t in ("t1", "t2")
               if (_point(cells, s, t, "sanity") or 0) > 1.0}
    sanity = [_point(cells, s, t, "sanity") for s in inc for t in ("t1", "t2")]
    out.append({"finding": "retention above 100 % in sanity",
                "holds": bool(over100) if any(v is not None for v in sanity) else None,
                "detail": ("; ".join(f"{k}: {_pct(v)}" for k, v in over100.items()) or "no sanity cell above 100 %")})
    return out


def hot_cold(control: dict) -> str:
    """T1's in-session recall split by key kind: the hot keys (shown 5 times, 15 of a published
    episode's 20 seen-key queries) and the cold (shown once), from the control's episodes."""
    eps = [e for e in control.get("episodes", {}).values() if "cold" in e]
    if not eps:
        return ""
    cold, cold_ok = sum(e["cold"] for e in eps), sum(e["cold_correct"] for e in eps)
    hot, hot_ok = sum(e["seen"] for e in eps) - cold, sum(e["correct"] for e in eps) - cold_ok
    return f" (hot keys {hot_ok}/{hot}, cold keys {cold_ok}/{cold})"


def checkpoint_line(checked: dict | None) -> str:
    """Which check admitted the checkpoint at use (urd.learn.check): its pin, or what it does."""
    if not checked or checked.get("check") == "sha256":
        return "Checkpoint: admitted by its SHA-256 pin (calibration/backbones.sha256)."
    m, p, f = checked["measured"], checked["pinned"], checked["floor"]
    return ("Checkpoint: its bytes differ from the pin; admitted by behaviour, held-out score_A "
            + ", ".join(f"{t.upper()} {m[t]:.3f} (pinned {p[t]:.3f}, at least {f[t]:.3f})" for t in ("t1", "t2"))
            + ".")


def build(summary_path: str, scale: str, boot: Bootstrap, costs: dict | None = None,
          record: dict | None = None) -> tuple[str, dict]:
    src = load(summary_path, scale)
    cells = {(c.system, c.task, c.split): c for c in build_cells(src, None, boot)}
    systems = [s for s in WRITEUP_01B if s in src.data["cells"]]
    systems += sorted(s for s in src.data["cells"] if s not in WRITEUP_01B)
    apart = not_comparable(systems, costs, record)
    ctl = control(src.data, boot)
    lines = [f"# urd rung 1 at `{scale}` beside the write-up's 0.1B", "",
             f"Retention B/A, this scale's point and {boot.level:.0%} interval ({boot.describe()}); "
             "in brackets after it, the write-up's 0.1B figure. `*` = out of contract; `†` = not comparable "
             "at this scale (why: below the table).", "",
             "| system | " + " | ".join(f"{t.upper()} {s}" for t, s in COLUMNS) + " |",
             "|---|" + "---|" * len(COLUMNS)]
    rows = []
    for s in systems:
        ooc = any(c.out_of_contract for (sy, _, _), c in cells.items() if sy == s)
        texts, row = [], {"system": s, "out_of_contract": ooc, "not_comparable": apart.get(s), "cells": {}}
        for i, (t, sp) in enumerate(COLUMNS):
            c = cells.get((s, t, sp))
            ref = WRITEUP_01B.get(s, (None,) * 4)[i]
            mine = "not run" if c is None else c.text()
            texts.append(f"{mine} (write-up {'—' if ref is None else f'{ref:.1f} %'})")
            row["cells"][f"{t}_{sp}"] = {"this_scale": None if c is None else c.interval.as_dict(), "writeup_01b_pct": ref}
        rows.append(row)
        lines.append(f"| {s}{'*' if ooc else ''}{'†' if s in apart else ''} | " + " | ".join(texts) + " |")
    if apart:
        lines += [""] + [f"† {s}: not comparable at `{scale}`: {why}." for s, why in apart.items()]
    lines += ["", "In-session control (score_A: T1 exact recall on seen keys, T2 discrimination), the "
              "denominator of every cell:", ""]
    for task, name in (("t1", "T1 score_A"), ("t2", "T2 discrimination_A")):
        m = ctl[task]
        split = hot_cold(src.data.get("control", {}).get("t1", {})) if task == "t1" else ""
        lines.append(f"- {name}: {_pct(m['mean'])} [{_pct(m['low'])}, {_pct(m['high'])}] over "
                     f"{m['n_episodes']} episodes{split}")
    lines += ["", checkpoint_line(src.data.get("provenance", {}).get("checkpoint_check"))]
    found = findings(cells, systems, apart)
    lines += ["", "The write-up's findings that hold at both of its scales, measured here:", ""]
    verdicts = {True: "holds", False: "does not hold", None: "not measurable (no defined retention)"}
    lines += [f"{n}. **{f['finding']}**: {verdicts[f['holds']]} ({f['detail']})" for n, f in enumerate(found, 1)]
    lines += ["", f"Source: {src.line()}", ""]
    doc = {"scale": scale, "summary": summary_path, "summary_sha256": src.sha256, "bootstrap": boot.as_dict(),
           "checkpoint_check": src.data.get("provenance", {}).get("checkpoint_check"),
           "rows": rows, "control": ctl, "findings": found, "not_comparable": apart, "writeup_01b_pct": WRITEUP_01B}
    return "\n".join(lines), doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.tables.writeup", description=__doc__.split("\n")[0])
    ap.add_argument("--summary", required=True)
    ap.add_argument("--scale", required=True)
    ap.add_argument("--bootstrap", default="{}", help="resamples, level, seed (JSON)")
    ap.add_argument("--costs", help="the scale's replay_costs.json (urd.replay.costs): tuning losses")
    ap.add_argument("--record", help="the backbone's training record (a learned backbone): its head's rows")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args(argv)
    try:
        costs, record = (read_json(p) if p else None for p in (a.costs, a.record))
        text, doc = build(a.summary, a.scale, Bootstrap(**json.loads(a.bootstrap)), costs, record)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    atomic_write_text(a.md, text)
    atomic_write_json(a.json, doc)
    print(f"wrote {a.md} and {a.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The learned backbone's learning curve: held-out in-session control (T1 score_A, T2
discrimination, and T1 score_A at the curriculum's current pair count and code length) and training loss against
trained tokens, from its training record.

    python -m urd.tables.learning --record models/X.pth.train.json --csv OUT.csv --png OUT.png
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import InputError, UrdError
from ..core.io import atomic_write_text
from .render import csv_text


def rows(record: dict, where: str = "record") -> list[list]:
    evals = record.get("evals")
    if not isinstance(evals, list) or not evals:
        raise InputError(where, "evals", "the held-out evaluations of a training run", evals)
    out = []
    for e in evals:
        t1, t2 = e["t1"], e["t2"]
        cap = e.get("t1_at_cap") or {}  # records before the curriculum's own evaluation lack it
        out.append([e["step"], e["tokens"], t1["score_A"], t1.get("confabulation"), t2["score_A"],
                    t2.get("rate_trigger"), t2.get("rate_non_trigger"), cap.get("pairs"), cap.get("score_A"),
                    cap.get("code_length", 12 if cap else None)])
    return out


def marks(record: dict) -> dict:
    """What the figure sets beside the run's own evaluations (4 held-out episodes a task, the
    ones its choices were made on): the record's scores on the published episodes along the run,
    and the finished checkpoint's on the check's fresh held-out episodes, each a mean with its
    95 % interval ([mean, low, high]), at their trained tokens."""
    pub = [{"tokens": p["tokens"], "t1": p["t1_score_A"], "t2": p["t2_discrimination_A"]}
           for p in (record.get("published_episodes") or {}).get("at", [])]
    fresh = record.get("fresh_held_out")
    shipped = None if not fresh else {"tokens": record.get("tokens"), "t1": fresh["t1_score_A"],
                                      "t2": fresh["t2_discrimination_A"], "how": fresh.get("how", "")}
    return {"published": pub, "fresh": shipped}


HEADER = ["step", "tokens", "t1_score_A", "t1_confabulation", "t2_discrimination_A", "t2_rate_trigger",
          "t2_rate_non_trigger", "t1_cap_pairs", "t1_score_A_at_cap", "t1_cap_code_length"]


def png(record: dict, path: str, dpi: int = 150) -> None:
    from .figures import STYLE, plt, save_png

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
        r = rows(record)
        mtok = [x[1] / 1e6 for x in r]
        ax.plot(mtok, [x[2] for x in r], marker="o", ms=3, color="#4477AA",
                label="T1 score_A (the run's 4 held-out episodes)")
        ax.plot(mtok, [x[4] for x in r], marker="s", ms=3, color="#CC6677",
                label="T2 discrimination_A (the run's 4 held-out episodes)")
        m = marks(record)
        if m["published"]:
            for task, color in (("t1", "#4477AA"), ("t2", "#CC6677")):
                ax.plot([p["tokens"] / 1e6 for p in m["published"]], [p[task][0] for p in m["published"]],
                        ls="none", marker="^", ms=3, color=color, alpha=0.5,
                        label="T1, T2 on the 6 published episodes" if task == "t1" else None)
        if m["fresh"] and m["fresh"]["tokens"]:
            x = m["fresh"]["tokens"] / 1e6
            for task, color in (("t1", "#4477AA"), ("t2", "#CC6677")):
                mean, low, high = m["fresh"][task]
                ax.errorbar([x], [mean], yerr=[[mean - low], [high - mean]], fmt="D", ms=5, color=color, capsize=3,
                            label="T1, T2 of the shipped checkpoint on 24 fresh held-out episodes (the check's)" if task == "t1" else None)
        if any(x[8] is not None for x in r):
            ax.plot([m for m, x in zip(mtok, r) if x[8] is not None], [x[8] for x in r if x[8] is not None],
                    ls="--", marker="o", ms=2, color="#4477AA", alpha=0.6, label="T1 score_A at the curriculum's pairs and code length")
        ax.set_xlabel("trained tokens (millions)")
        ax.set_ylabel("in-session control")
        ax.set_ylim(-0.05, 1.05)
        curve = record.get("curve") or []
        if curve:
            ax2 = ax.twinx()
            ax2.plot([c["tokens"] / 1e6 for c in curve], [c["loss"] for c in curve], color="#BBBBBB", lw=0.8,
                     label="training loss (replies)")
            ax2.set_ylabel("loss (nats a reply token)")
            ax2.spines["right"].set_visible(True)
        s = record.get("settings", {})
        ax.set_title(f"learned backbone: {s.get('n_layer')} layers x {s.get('n_embd')}, seed {s.get('seed')}, "
                     f"{record.get('threads')} thread(s), {record.get('seconds', 0) / 60:.0f} min", fontsize=9)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
        fig.tight_layout()
        save_png(fig, path, dpi)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.tables.learning", description=__doc__.split("\n")[0])
    ap.add_argument("--record", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--dpi", type=int, default=150)
    a = ap.parse_args(argv)
    try:
        try:
            record = json.loads(open(a.record, encoding="utf-8").read())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(a.record, "content", "a training record (JSON)", str(exc)) from None
        atomic_write_text(a.csv, csv_text(HEADER, rows(record, a.record)))
        png(record, a.png, a.dpi)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {a.csv} and {a.png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The learned backbone against its targets (issue: "a backbone that learns in context"): prints,
on the published rung-1 episodes, the in-session control (T1 score_A, T2 discrimination_A) with
their 95 % intervals, vanilla in session B (it must sit at its floor: the model knows nothing of
an episode but what crosses), and the training run's time, tokens and peak memory. With
--held-out N, the control on N held-out episodes of the training family that no run evaluates
(urd.learn.stream.RANGES["fresh"], which only the check at use reads: this is its measurement, the
figure its behaviour pins come from): a figure no choice between runs or resume points was made on.

    .venv/bin/python benchmarks/learned.py [--checkpoint models/urd-learned-rwkv7-L2-D128.pth] [--held-out 24]

Run from the repository root after `snakemake models/<file> --cores 1` (or the main command).
Figures, not assertions: the targets are T1 score_A >= 0.3 and T2 discrimination_A >= 0.5.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from urd.backbone.adapter import Backbone  # noqa: E402
from urd.backbone.tokenizer import get_tokenizer  # noqa: E402
from urd.core.config import load_config  # noqa: E402
from urd.core.io import read_jsonl  # noqa: E402
from urd.harness.runner import run_control, run_system  # noqa: E402
from urd.harness.scoring import episode_scores  # noqa: E402
from urd.learn.plan import learn_spec, settings_of  # noqa: E402
from urd.learn.train import Data, stream_inputs  # noqa: E402
from urd.session.context import Decode  # noqa: E402
from urd.session.handle import ModelHandle  # noqa: E402
from urd.systems import registry  # noqa: E402
from urd.tables.bootstrap import Bootstrap  # noqa: E402
from urd.tables.writeup import mean_interval  # noqa: E402

TARGETS = {"t1": 0.3, "t2": 0.5}


def scores(task: str, recs: list[dict]) -> list[float]:
    eps = sorted({r["episode"] for r in recs})
    out = [episode_scores(task, [r for r in recs if r["episode"] == e])["score"] for e in eps]
    return [x for x in out if x is not None]


def line(name: str, vals: list[float], boot: Bootstrap) -> str:
    m = mean_interval(vals, boot)
    return f"{name}: {m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}] over {m['n_episodes']} episodes"


def main() -> int:
    cfg = load_config(REPO / "config/config.yaml", REPO / "config/schema.yaml")
    b = cfg["backbones"]["learned"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=str(REPO / "models" / b["file"]))
    ap.add_argument("--record", default=None, help="the training record (default: CHECKPOINT.train.json)")
    ap.add_argument("--held-out", type=int, default=0, metavar="N",
                    help="also the control on N held-out episodes of the training family no run evaluates")
    a = ap.parse_args()
    boot = Bootstrap(**cfg["publish"]["bootstrap"])
    bb = Backbone.load(a.checkpoint, strategy=cfg["strategy"])
    data = {"t1": read_jsonl(REPO / f"data/{cfg['profile']}/t1.jsonl"), "t2": read_jsonl(REPO / "data/t2.jsonl")}
    for task, eps in data.items():
        dec = Decode(max_new_tokens=cfg["decode"][task]["max_new_tokens"])
        ctl = scores(task, run_control(bb, task, eps, dec))
        name = "T1 score_A" if task == "t1" else "T2 discrimination_A"
        reached = "reached" if sum(ctl) / len(ctl) >= TARGETS[task] else "NOT reached"
        print(f"{line(name + ' (in-session control)', ctl, boot)}; target >= {TARGETS[task]}: {reached}")
        system = registry.build("vanilla", ModelHandle(bb), {}, {})
        van = run_system(bb, system, task, eps, "over", cfg["profiles"][cfg["profile"]]["budgets"]["over"],
                         cfg["consolidation_factor"], dec)
        what = "T1 seen-key recall" if task == "t1" else "T2 discrimination"
        print(line(f"vanilla in session B, {what}", scores(task, van), boot) + " (the floor: ~0)")
    if a.held_out:
        spec = learn_spec(cfg)
        tasks, ex = stream_inputs(spec)
        s = settings_of(b["train"]["settings"])
        held = Data(s, tasks, ex, get_tokenizer()).held_out(cfg["queries"], "fresh", a.held_out)
        for task, eps in held.items():
            dec = Decode(max_new_tokens=cfg["decode"][task]["max_new_tokens"])
            name = "T1 score_A" if task == "t1" else "T2 discrimination_A"
            print(line(f"{name} (in-session control), held-out episodes of the training family",
                       scores(task, run_control(bb, task, eps, dec)), boot))
    rec_path = Path(a.record or a.checkpoint + ".train.json")
    if rec_path.is_file():
        rec = json.loads(rec_path.read_text())
        print(f"training: {rec['tokens']:,} tokens, {rec['steps']:,} steps, {rec['seconds'] / 60:.1f} min on "
              f"{rec['threads']} thread(s) of {rec.get('cpu', '?')}, torch {rec['torch']}, peak RSS "
              f"{rec['peak_rss_mb']:,} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

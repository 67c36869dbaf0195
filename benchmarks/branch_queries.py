"""Training speed of the two readings of a query (`branch_queries` 0 and 1), one thread.

    .venv/bin/python benchmarks/branch_queries.py [--level 9] [--steps 3] [--rounds 3]

At one level of the gated curriculum (`urd.learn.plan.levels`; 0 is 4 pairs and 2-character
codes, 9 is 21 pairs and 12), with `t1_query_all` and the gated run's 4 T1 and 1 T2 episodes a
step, times the forward and backward of `--steps` steps of the same episodes read both ways: the
queries one after another in one sequence, and each from the transcript's end state (one batch).
Prints tokens a second of each and their ratio, the two ways interleaved `--rounds` times so that a
slower minute of a shared machine falls on both.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from urd.backbone.tokenizer import get_tokenizer  # noqa: E402
from urd.core.config import load_config  # noqa: E402
from urd.learn import model as M  # noqa: E402
from urd.learn import plan  # noqa: E402
from urd.learn import train as T  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--level", type=int, default=9)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    tasks, ex = T.stream_inputs(plan.learn_spec(load_config(REPO / "config/config.yaml")))
    tok = get_tokenizer()
    speed = {0: [], 1: []}
    for _ in range(a.rounds):
        for branch in (0, 1):
            s = plan.settings_of({"gate": 0.5, "value_min": 2, "t1_per_step": 4, "t2_per_step": 1,
                                  "t1_query_all": 1, "branch_queries": branch})
            data = T.Data(s, tasks, ex, tok)
            data.level = a.level
            net = M.Trainable(M.init_weights(1, 2, 128), data.vocab())
            seqs = [x for step in range(a.steps) for x in data.step_with_replies(step, 0)]
            ids, flags, _, starts = seqs[0]  # untimed: the first call's allocations and warm-up
            net.loss_and_hits(ids, flags, starts)[0].backward()
            started = time.perf_counter()
            for ids, flags, _, starts in seqs:
                net.loss_and_hits(ids, flags, starts)[0].backward()
            speed[branch].append(sum(len(x[0]) for x in seqs) / (time.perf_counter() - started))
    pairs, length = plan.levels(s)[a.level]
    for branch, name in ((0, "one after another"), (1, "each from the transcript's end")):
        print(f"{pairs} pairs, {length}-character codes, queries {name}: "
              + ", ".join(f"{x:,.0f}" for x in speed[branch]) + " tokens/s")
    print(f"ratio branched / sequential (best of each): {max(speed[1]) / max(speed[0]):.2f}")


if __name__ == "__main__":
    main()

"""Peak memory of a CPU job that runs the model, against the rows it decodes in one batch.

    .venv/bin/python benchmarks/job_memory.py [--shape 0.1b|0.4b|tiny] [--contexts 1,12,24] [--past-limit N]

Each measurement is a fresh process (peak RSS, `ru_maxrss`, is per process) on a random-weight
checkpoint of the shape: it loads the model, prefills one T1 transcript through the sequence
pass (the prefill job's work), then answers the T1 queries of `n` session-B contexts (each a
header and the first 1,200 characters of a transcript, 25 queries each) in one batch, as an
answer job does (urd.session.context.answer_groups): 25 n rows. Prints each run's peak, the
straight line through them (the model's memory, and each row's), the state a row carries by
arithmetic, and the `cpu_memory` entry the workflow's estimate reads
(urd.cost.estimate.job_resources: a job declares model_mb + rows x row_mb as `mem_mb`).
With --past-limit N it also answers N contexts (more rows than MAX_BATCH_ROWS) both in one
batch and as the harness does, in batches of up to MAX_BATCH_ROWS: both peaks and times.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rung1_cpu import SHAPES

from urd.session.context import MAX_BATCH_ROWS

QUERIES = 25  # T1 queries an episode


def child(checkpoint: str, contexts: int, limit: int) -> dict:
    from urd.backbone.adapter import Backbone
    from urd.backbone.batch import prefill
    from urd.core.config import load_config
    from urd.data import calibrate, views
    from urd.harness.runner import as_handle
    from urd.session.context import Decode, answer_groups

    config = load_config()
    bb = Backbone.load(checkpoint)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    episodes = [calibrate.t1_episode(config, i % config["episodes"]) for i in range(contexts)]
    prefill(bb, bb.tokenizer.encode(episodes[0]["transcript"]))
    prefilled = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    handle = as_handle(bb)
    b = [views.session_b(e) for e in episodes]
    ctx = [(f"{e['header']}\n{e['transcript'][:1200]}\n", None) for e in episodes]
    replies = answer_groups(handle, ctx, [[q["prompt"] for q in ep["queries"]][:QUERIES] for ep in b],
                            Decode(max_new_tokens=12), limit=limit)
    return {"rows": sum(map(len, replies)), "loaded_mb": loaded, "prefill_mb": prefilled,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "answer_s": time.perf_counter() - started}


def measure(checkpoint, contexts: int, limit: int) -> dict:
    """One child run, in a fresh process (ru_maxrss is the process's peak)."""
    out = subprocess.run([sys.executable, __file__, "--child", str(checkpoint), str(contexts), str(limit)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def state_mb(n_layer: int, n_embd: int) -> float:
    """One row's state by arithmetic: per layer two token shifts [C] and the WKV matrices
    [H, 64, 64], float32."""
    return n_layer * (2 * n_embd + (n_embd // 64) * 64 * 64) * 4 / 2**20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--contexts", default="1,12,24", help="session-B contexts answered in one batch, per run")
    ap.add_argument("--past-limit", type=int, default=0, metavar="CONTEXTS",
                    help="also answer this many contexts (more rows than MAX_BATCH_ROWS) in one batch and "
                         "in batches of MAX_BATCH_ROWS, and print both peaks and times")
    ap.add_argument("--child", nargs=3, metavar=("CHECKPOINT", "CONTEXTS", "LIMIT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), int(args.child[2]))))
        return 0

    from urd.backbone.tiny import write_tiny_checkpoint

    shape = SHAPES[args.shape]
    counts = [int(c) for c in args.contexts.split(",")]
    if len(counts) < 2 or len(set(counts)) != len(counts):
        ap.error("--contexts: at least two different counts")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **shape)
        for n in counts:
            run = measure(ckpt, n, n * QUERIES)  # every row in one batch: the line is the batch's
            runs.append(run)
            print(f"{run['rows']:>5} rows: loaded {run['loaded_mb']:,.0f} MB, after a transcript's prefill "
                  f"{run['prefill_mb']:,.0f} MB, peak {run['peak_mb']:,.0f} MB (answered in {run['answer_s']:.1f} s)",
                  flush=True)
        if args.past_limit:
            one, limited = (measure(ckpt, args.past_limit, lim) for lim in (args.past_limit * QUERIES, MAX_BATCH_ROWS))
            print(f"{one['rows']:>5} rows in one batch: peak {one['peak_mb']:,.0f} MB, answered in {one['answer_s']:.1f} s; "
                  f"in batches of up to {MAX_BATCH_ROWS}: peak {limited['peak_mb']:,.0f} MB, answered in "
                  f"{limited['answer_s']:.1f} s ({limited['answer_s'] / one['answer_s']:.2f}x the time)", flush=True)
    # least squares through (rows, peak)
    xs, ys = [r["rows"] for r in runs], [r["peak_mb"] for r in runs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    base = my - slope * mx
    worst = max(y - (base + slope * x) for x, y in zip(xs, ys))
    print(f"{args.shape} shape, random weights, CPU fp32: peak = {base:,.0f} MB + rows x {slope:.2f} MB "
          f"(largest run above the line by {worst:,.0f} MB); a row's state is {state_mb(**shape):.2f} MB by arithmetic")
    print(f"cpu_memory entry, with a quarter more of each: {{model_mb: {base * 1.25:.0f}, row_mb: {slope * 1.25:.1f}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

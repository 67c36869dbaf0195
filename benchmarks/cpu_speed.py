"""The CPU speed of the backbone as a workflow job runs it: the five numbers of config `cpu_speed`.

    .venv/bin/python benchmarks/cpu_speed.py [--shape tiny|0.1b|0.4b] [--threads 1,2] [--repeats 3] [--cold]

A job runs with as many torch threads as its rule declares: Snakemake sets OMP_NUM_THREADS
(and MKL's, OpenBLAS's) to the job's `threads`, 1 for every rule that runs the model, and the
SLURM profile asks for as many CPUs as threads. Each measurement here is a fresh process with
those variables set to the thread count, on a random-weight checkpoint of the shape, through
the paths the jobs take (urd.backbone.batch), timing:

* startup_s: from the process's start to the model loaded (interpreter, torch, checkpoint);
  with --cold, the page cache is dropped before each process (root only), so torch and the
  checkpoint are read from disk, as by a job on a node that has not read them yet;
* prefill_tokens_per_s: one T1 transcript through the sequence pass (batch.prefill: the prefill
  job's work, and every transcript or context a job caches);
* decode_ms_per_token: one row of the batched decoder, 32 tokens, one forward a token (the
  steps of summary's notes), after a warm-up decode;
* step_ms: one decode step's time at 8, 32 and 168 distinct rows decoding together (summary's
  notes at the published sweep start with up to 168 rows, one a budget, cap and episode, and
  leave the batch as each ends: urd.cost.estimate.lockstep and step_ms);
* batch_tokens_per_s: the T1 queries of 6 episodes (150 rows, 12 new tokens at most) answered in
  one batch from their session-B headers (urd.session.context.answer_groups, as an answer job
  does), in the estimate's units: each query counted as 16 prompt tokens + 12
  (urd.cost.estimate.cell_cpu_seconds).

Each thread count's figure is the best of `--repeats` fresh processes (the machine may be shared),
run round-robin so drift over minutes does not become a ratio. Prints each, the ratio of the
first thread count to the others, and the `cpu_speed` entry for the first (the jobs' count).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rung1_cpu import SHAPES

REPO = Path(__file__).resolve().parents[1]
QUERY_TOKENS, NEW_TOKENS, EPISODES, QUERIES = 16, 12, 6, 25
ROWS, RIDE_STEPS = (8, 32, 168), 24  # decode steps timed at these rows (step_ms)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")  # as Snakemake sets them


def child(checkpoint: str, spawned: float) -> dict:
    from urd.backbone.adapter import Backbone
    from urd.backbone.batch import generate_batch
    from urd.backbone.batch import prefill as sequence_prefill
    from urd.core.config import load_config
    from urd.data import calibrate, views
    from urd.harness.runner import as_handle
    from urd.session.context import Decode, answer_groups

    bb = Backbone.load(checkpoint)
    bb.tokenizer.encode("warm")
    startup = time.time() - spawned
    import torch

    config = load_config()
    episodes = [calibrate.t1_episode(config, i) for i in range(EPISODES)]
    transcript = bb.tokenizer.encode(episodes[0]["transcript"])
    sequence_prefill(bb, transcript[:64])  # first calls pay for allocation and packing
    t = time.perf_counter()
    _, state = sequence_prefill(bb, transcript)
    prefill = time.perf_counter() - t
    generate_batch(bb, [transcript[-2:]], state, max_new_tokens=4, stop=())
    t = time.perf_counter()
    (gen,) = generate_batch(bb, [transcript[-2:]], state, max_new_tokens=32, stop=())
    decode = (time.perf_counter() - t) / len(gen.tokens)  # a random model may end early (token 0)
    # a row riding along in a decode step: steps of ROWS[0] and ROWS[-1] rows, the slope between
    # (summary's notes at the published sweep decode 6 episodes x 28 points = 168 rows at first)
    step_s = {}
    for n in ROWS:
        prompts = [[transcript[-1], 1000 + i] for i in range(n)]  # distinct: the decoder decodes a repeat once
        generate_batch(bb, prompts, state, max_new_tokens=2, stop=())
        t = time.perf_counter()
        gens = generate_batch(bb, prompts, state, max_new_tokens=RIDE_STEPS, stop=())
        step_s[n] = (time.perf_counter() - t) / max(len(g.tokens) for g in gens)
    b = [views.session_b(e) for e in episodes]
    contexts = [(f"{e['header']}\n", None) for e in b]
    t = time.perf_counter()
    replies = answer_groups(as_handle(bb), contexts, [[q["prompt"] for q in e["queries"]][:QUERIES] for e in b],
                            Decode(max_new_tokens=NEW_TOKENS))
    batch = time.perf_counter() - t
    rows = sum(map(len, replies))
    return {"threads": torch.get_num_threads(), "startup_s": startup, "prefill_tokens": len(transcript),
            "prefill_tokens_per_s": len(transcript) / prefill, "decode_ms_per_token": 1000 * decode,
            "rows": rows, "batch_s": batch, "batch_tokens_per_s": rows * (QUERY_TOKENS + NEW_TOKENS) / batch,
            "step_ms": {n: 1000 * v for n, v in step_s.items()}}


def _pairs(step_ms: dict) -> str:
    """config's form of step_ms: [[rows, ms], ...]."""
    return "[" + ", ".join(f"[{n}, {ms:.0f}]" for n, ms in sorted(step_ms.items(), key=lambda kv: int(kv[0]))) + "]"


def drop_page_cache() -> None:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        raise SystemExit(f"cpu_speed --cold: cannot drop the page cache ({exc}); it needs root on Linux") from None


def measure(checkpoint, threads: int, cold: bool = False) -> dict:
    env = {**os.environ, **{v: str(threads) for v in THREAD_VARIABLES}}
    if cold:
        drop_page_cache()
    spawned = time.time()
    out = subprocess.run([sys.executable, __file__, "--child", str(checkpoint), repr(spawned)],
                         capture_output=True, text=True, env=env, cwd=REPO)  # config/ is read from the root
    if out.returncode != 0:
        raise SystemExit(f"cpu_speed: a measurement at {threads} thread(s) failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(runs: list[dict]) -> dict:
    """Each figure's best run: the fastest speed, the shortest time."""
    return {"threads": runs[0]["threads"], "startup_s": min(r["startup_s"] for r in runs),
            "prefill_tokens_per_s": max(r["prefill_tokens_per_s"] for r in runs),
            "decode_ms_per_token": min(r["decode_ms_per_token"] for r in runs),
            "batch_tokens_per_s": max(r["batch_tokens_per_s"] for r in runs),
            "step_ms": {n: min(r["step_ms"][n] for r in runs) for n in runs[0]["step_ms"]}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--threads", default="1,2", help="torch threads per job, the jobs' own count first")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each process (root)")
    ap.add_argument("--child", nargs=2, metavar=("CHECKPOINT", "SPAWNED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], float(args.child[1]))))
        return 0

    from urd.backbone.tiny import write_tiny_checkpoint

    counts = [int(t) for t in args.threads.split(",")]
    runs = {n: [] for n in counts}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape])
        for r in range(args.repeats):
            for n in counts:
                run = measure(ckpt, n, args.cold)
                runs[n].append(run)
                print(f"round {r + 1}, {run['threads']} thread(s): start-up {run['startup_s']:.1f} s, prefill "
                      f"{run['prefill_tokens_per_s']:.0f} tokens/s ({run['prefill_tokens']} tokens), decode "
                      f"{run['decode_ms_per_token']:.1f} ms/token, batch {run['batch_tokens_per_s']:.0f} tokens/s "
                      f"({run['rows']} rows in {run['batch_s']:.1f} s), a decode step "
                      f"{', '.join(f'{v:.0f} ms at {k} rows' for k, v in run['step_ms'].items())}",
                      flush=True)
    bests = {n: best(rs) for n, rs in runs.items()}
    print(f"{args.shape} shape, random weights, CPU fp32, best of {args.repeats}"
          f"{', page cache dropped before each' if args.cold else ''} (os.cpu_count() {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.2f}):")
    for n, b in bests.items():
        print(f"  {n} thread(s): startup_s {b['startup_s']:.1f}, prefill_tokens_per_s {b['prefill_tokens_per_s']:.0f}, "
              f"decode_ms_per_token {b['decode_ms_per_token']:.1f}, batch_tokens_per_s {b['batch_tokens_per_s']:.0f}, "
              f"step_ms {_pairs(b['step_ms'])}")
    first = bests[counts[0]]
    for n in counts[1:]:
        o = bests[n]
        print(f"  {counts[0]} against {n} thread(s): prefill {o['prefill_tokens_per_s'] / first['prefill_tokens_per_s']:.2f}x "
              f"slower, decode {first['decode_ms_per_token'] / o['decode_ms_per_token']:.2f}x, batch "
              f"{o['batch_tokens_per_s'] / first['batch_tokens_per_s']:.2f}x")
    print(f"cpu_speed entry at {counts[0]} thread(s): {{prefill_tokens_per_s: {first['prefill_tokens_per_s']:.0f}, "
          f"decode_ms_per_token: {first['decode_ms_per_token']:.0f}, batch_tokens_per_s: "
          f"{first['batch_tokens_per_s']:.0f}, step_ms: {_pairs(first['step_ms'])}, "
          f"startup_s: {first['startup_s']:.0f}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

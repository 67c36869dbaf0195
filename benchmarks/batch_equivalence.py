"""Batched vs sequential greedy decoding of the benchmark's queries, on a random-weight model.

    .venv/bin/python benchmarks/batch_equivalence.py [--shape tiny|0.1b] [--episodes 2] [--decode 12]

For each T1 and T2 episode and two contexts (the state after the transcript; the zero state after
the header line), every query is decoded by the sequential decoder (Backbone.generate on a clone
of the context, as ContextAnswerer does) and by urd.backbone.batch.generate_batch, with a fixed
length (no stop string) and with the real stop ("\\n"). Prints the queries compared, the replies
that differ, the tokens that differ (each differing reply with its first differing position) and
the wall time of each path. The paths round differently (gemm vs gemv, forward_one vs
forward_seq for the prompt's tail), so a near-tie can flip a greedy token: it is counted here.
Context prefill is shared and not timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from urd.backbone.adapter import Backbone
from urd.backbone.batch import generate_batch
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.config import load_config
from urd.data import calibrate

SHAPES = {"0.1b": dict(n_layer=12, n_embd=768), "tiny": dict(n_layer=2, n_embd=128)}
MODES = {"fixed": (), "stop": ("\n",)}
EPISODE = {"t1": calibrate.t1_episode, "t2": calibrate.t2_episode}


def differing_positions(a: tuple, b: tuple) -> list[int]:
    """Positions where two token sequences differ (a missing token counts as different)."""
    return [i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]


def line(task: str, ctx_name: str, mode: str, r: dict) -> str:
    counts = " ".join(f"{int(r[k]):{w}d}" for k, w in (("queries", 7), ("generated", 7), (
        "replies_differ", 8), ("tokens_differ", 7), ("seq_tok", 7), ("bat_tok", 7)))
    return (f"{task:4} {ctx_name:10} {mode:5} {counts} {r['seq_s']:8.2f} {r['bat_s']:8.2f} "
            f"{r['seq_s'] / r['bat_s']:6.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--decode", type=int, default=12, help="max new tokens per answer")
    args = ap.parse_args(argv)

    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape])
        bb = Backbone.load(ckpt)
    enc = bb.tokenizer.encode
    print(f"shape {args.shape} (n_layer {bb.n_layer}, n_embd {bb.n_embd}), episodes {args.episodes}, "
          f"decode {args.decode}, strategy {bb.strategy}", flush=True)

    # (task, context, mode) -> totals
    rows = defaultdict(lambda: defaultdict(float))
    diffs = []
    for task, make in EPISODE.items():
        for e in range(args.episodes):
            ep = make(config, e)
            prompts = [enc(q["prompt"]) for q in ep["queries"]]
            contexts = {
                "transcript": bb.prefill(enc(ep["transcript"]))[1],
                "header": bb.prefill(enc(ep["header"] + "\n"))[1],
            }
            for ctx_name, ctx in contexts.items():
                for mode, stop in MODES.items():
                    r = rows[(task, ctx_name, mode)]
                    n0, t0 = bb.tokens_processed, time.perf_counter()
                    seq = [bb.generate(p, bb.clone_state(ctx), max_new_tokens=args.decode, stop=stop,
                                       keep_state=False) for p in prompts]
                    n1, t1 = bb.tokens_processed, time.perf_counter()
                    bat = generate_batch(bb, prompts, ctx, max_new_tokens=args.decode, stop=stop)
                    n2, t2 = bb.tokens_processed, time.perf_counter()
                    r["queries"] += len(prompts)
                    r["seq_s"] += t1 - t0
                    r["bat_s"] += t2 - t1
                    r["seq_tok"] += n1 - n0
                    r["bat_tok"] += n2 - n1
                    r["generated"] += sum(len(g.tokens) for g in seq)
                    for q, (a, b) in enumerate(zip(seq, bat)):
                        if a != b:
                            pos = differing_positions(a.tokens, b.tokens)
                            r["replies_differ"] += 1
                            r["tokens_differ"] += len(pos)
                            diffs.append((task, e, ctx_name, mode, q, pos, a, b))
            print(f"  done {task} episode {e}", flush=True)

    print()
    head = (f"{'task':4} {'context':10} {'mode':5} {'queries':>7} {'gen.tok':>7} {'replies≠':>8} "
            f"{'tokens≠':>7} {'fwd seq':>7} {'fwd bat':>7} {'seq s':>8} {'batch s':>8} {'ratio':>6}")
    print(head)
    totals = defaultdict(lambda: defaultdict(float))
    for (task, ctx_name, mode), r in rows.items():
        for k, v in r.items():
            totals[mode][k] += v
            totals["all"][k] += v
        print(line(task, ctx_name, mode, r))
    for mode in (*MODES, "all"):
        print(line("ALL", "", mode, totals[mode]))
    print("\n(gen.tok: tokens generated by the sequential path; fwd: tokens through the forward; "
          "ratio: sequential / batched wall time)")
    print(f"\ndiffering replies: {len(diffs)}")
    for task, e, ctx_name, mode, q, pos, a, b in diffs:
        print(f"  {task} ep{e} {ctx_name} {mode} q{q:02d}: first differing token at position {pos[0]} "
              f"({len(pos)} differ)\n    sequential {a.stop_reason:15} {a.tokens} {a.text!r}\n"
              f"    batched    {b.stop_reason:15} {b.tokens} {b.text!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

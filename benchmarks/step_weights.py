"""A decoding step with packed weights against MKL's x @ W, in one run, on a random-weight model.

    .venv/bin/python benchmarks/step_weights.py [--shape 0.1b|tiny] [--tokens 200] [--repeats 2]

urd.backbone.batch steps rows through each block's projections and the head as oneDNN weights
packed once a model (`_step_weights`, from PACK_MIN_EMBD wide); the old path ran the projections
as x @ W, which MKL packs again on every call. Both paths, alternating `--repeats` times (the
best time of each kept, so a slow moment of the machine costs neither):
  - a bare step (`forward_batch`, every row picking a token) at 1, 2, 4, 6, 12, 24 and 42 rows;
  - `summary`'s sweep notes as rung 2 writes them: six T1 transcripts, the 16 KB and 64 KB
    instructions (12 rows, each from its transcript's state), `--tokens` tokens each;
and whether both paths wrote the same tokens.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from rung1_cpu import SHAPES

from urd.backbone import batch
from urd.backbone.adapter import Backbone
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.config import load_config
from urd.data import calibrate, views
from urd.systems.summary import INSTRUCTION

PATHS = {"x @ W (old)": 1 << 30, "packed": batch.PACK_MIN_EMBD}
ROWS = (1, 2, 4, 6, 12, 24, 42)


def use(path: str):
    """Switch the step path (the packed copies are made again on the next step)."""
    batch.PACK_MIN_EMBD = PATHS[path]
    batch._STEP_WEIGHTS.clear()


def bare_step(bb, rows: int, n: int = 20) -> float:
    st = batch.stack_state(bb.zero_state(), rows)
    tokens, want = torch.arange(rows) * 997 % bb.vocab_size, torch.arange(rows)
    for _ in range(3):
        _, st = batch.forward_batch(bb.model, tokens, st, want, inplace=True)
    t = time.perf_counter()
    for _ in range(n):
        _, st = batch.forward_batch(bb.model, tokens, st, want, inplace=True)
    return (time.perf_counter() - t) / n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--tokens", type=int, default=200, help="tokens each note writes")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        bb = Backbone.load(write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape]))
    print(f"decoding steps, random weights, {args.shape} shape, CPU fp32, {torch.get_num_threads()} torch threads; "
          f"packed from {batch.PACK_MIN_EMBD} wide (this shape: {bb.n_embd})", flush=True)

    config, enc = load_config(), bb.tokenizer.encode
    groups = []
    for i in range(6):
        _, st = batch.prefill(bb, enc(views.session_a(calibrate.t1_episode(config, i))["transcript"]))
        groups += [(st, [enc(INSTRUCTION.format(budget=b))]) for b in (16384, 65536)]

    best, notes = {}, {}
    for _ in range(args.repeats):
        for path in PATHS:
            use(path)
            for rows in ROWS:
                key = (path, rows)
                best[key] = min(best.get(key, float("inf")), bare_step(bb, rows))
            t = time.perf_counter()
            out = batch.generate_groups(bb, groups, max_new_tokens=args.tokens, stop=("\n\n",))
            dt = time.perf_counter() - t
            best[(path, "notes")] = min(best.get((path, "notes"), float("inf")), dt)
            notes.setdefault(path, [g.tokens for (g,) in out])
    use("packed")

    old, new = PATHS
    print(f"\n{'rows':>6s} {old + ' ms':>16s} {new + ' ms':>10s} {'ratio':>6s}")
    for rows in ROWS:
        a, b = best[(old, rows)] * 1e3, best[(new, rows)] * 1e3
        print(f"{rows:6d} {a:16.1f} {b:10.1f} {a / b:6.2f}")
    a, b = best[(old, "notes")], best[(new, "notes")]
    steps = max(len(t) for t in notes[new])
    print(f"\nsummary's sweep notes, 12 rows, {steps} steps: {a:.1f} s against {b:.1f} s ({a / b:.2f}x; "
          f"{a / steps * 1e3:.1f} and {b / steps * 1e3:.1f} ms a step)")
    same = sum(x == y for x, y in zip(notes[old], notes[new]))
    print(f"notes identical on both paths: {same} of {len(notes[new])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

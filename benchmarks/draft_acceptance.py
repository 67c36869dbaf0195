"""How many of `summary`'s notes tokens free drafts would have guessed, on a random-weight model.

    .venv/bin/python benchmarks/draft_acceptance.py [--shape 0.1b|tiny] [--tokens 400] [--episodes 2]

Speculative decoding shortens the chain of steps only by the drafts the model accepts. The
drafts that cost nothing (prompt lookup): the k tokens that followed the latest earlier
occurrence of the last 3, 2 or 1 tokens in the prompt and the notes so far. This writes the
notes greedily (T1 and T2, the 64 KB instruction, `--tokens` tokens at most each, the real stop)
and replays them: at each position the draft, accepted up to its first token the model did not
write, then the model's own token (one step). Prints, for k = 2, 4, 8, the drafted tokens
accepted, the steps speculative decoding would take, and tokens a step (1.00: no step saved).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rung1_cpu import SHAPES

from urd.backbone.adapter import Backbone
from urd.backbone.batch import generate_groups
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.config import load_config
from urd.data import calibrate, views
from urd.systems.summary import INSTRUCTION


def draft(context: list[int], k: int, longest: int = 3) -> list[int]:
    """The k tokens after the latest earlier occurrence of the context's last n tokens, n from
    `longest` down to 1 (none found: no draft)."""
    for n in range(min(longest, len(context) - 1), 0, -1):
        tail = context[-n:]
        for s in range(len(context) - n - 1, -1, -1):
            if context[s: s + n] == tail:
                return context[s + n: s + n + k]
    return []


def steps_with_drafts(prompt: list[int], written: list[int], k: int) -> tuple[int, int]:
    """The forwards speculative decoding would take to write `written` after `prompt`, and the
    drafted tokens it would accept."""
    steps = i = taken = 0
    while i < len(written):
        guess = draft(prompt + written[:i], k)
        accepted = 0
        while accepted < len(guess) and i + accepted < len(written) and guess[accepted] == written[i + accepted]:
            accepted += 1
        i += accepted + 1  # the accepted drafts, then the model's own token
        steps, taken = steps + 1, taken + accepted
    return steps, taken


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--tokens", type=int, default=400)
    ap.add_argument("--episodes", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        bb = Backbone.load(write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape]))
    config, enc = load_config(), bb.tokenizer.encode
    prompts = [enc(views.session_a(make(config, i))["transcript"]) + enc(INSTRUCTION.format(budget=65536))
               for make in (calibrate.t1_episode, calibrate.t2_episode) for i in range(args.episodes)]
    notes = [list(g.tokens) for (g,) in generate_groups(bb, [(None, [p]) for p in prompts],
                                                         max_new_tokens=args.tokens, stop=("\n\n",))]
    total = sum(map(len, notes))
    print(f"\n{args.shape} shape, {len(notes)} notes, {total} tokens written")
    print(f"{'k':>3s} {'accepted':>9s} {'steps':>7s} {'tokens/step':>12s}")
    for k in (2, 4, 8):
        steps, taken = map(sum, zip(*(steps_with_drafts(p, n, k) for p, n in zip(prompts, notes))))
        print(f"{k:3d} {taken:9d} {steps:7d} {total / steps:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

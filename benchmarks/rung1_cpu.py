"""The urd rung-1 table workload on a random-weight model of the real 0.1B shape, on the CPU.

    .venv/bin/python benchmarks/rung1_cpu.py [--episodes 6] [--shape 0.1b|tiny] [--sequential-episodes 1]

Runs what `results/urd/0.1b/summary.json` runs (each transcript prefilled once, the control and
the five baselines, both tasks, both splits), the way the workflow's jobs run it: the prefill
job's states, then per cell a consolidation on a metered handle and a fresh system answering
every query of an episode in one batch. Decoding has a fixed length (no stop string, so every
answer decodes exactly --decode tokens). Then, in the same run, today's sequential path (every
consumer prefills its own transcript, every query decoded alone) on the first
--sequential-episodes episodes, for the ratio, and the replies of both paths compared.

Prints wall time; tokens forwarded (prefilled, decoded) against the irreducible count: each
transcript once per task and episode, each session-B context once per cell and episode, and from
each context every distinct prefix of its queries' prompts-and-replies once (a token's logits
depend on everything before it, so two rows can share only a common prefix; a reply's last token
is never forwarded), plus what a consolidation forwards beyond the transcript (summary's
instruction and notes). No decoder can forward less, so the ratio is at least 1. A random model
answers nonsense: only the figures of work mean anything, not the scores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

from urd.backbone.adapter import Backbone
from urd.backbone.batch import prefill as sequence_prefill
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.config import load_config
from urd.data import calibrate, views
from urd.harness import fiches
from urd.harness.runner import answer_cell, answer_control, consolidate_cell
from urd.session.context import ContextAnswerer, Decode
from urd.session.handle import ModelHandle
from urd.systems import registry

SHAPES = {"0.1b": dict(n_layer=12, n_embd=768), "0.4b": dict(n_layer=24, n_embd=1024), "tiny": dict(n_layer=2, n_embd=128)}
# The replay baselines read tuning artifacts made by separate jobs; their cost is the tuning
# benchmark's (python -m urd.backbone.bench), not this one's.
BASELINES = ("vanilla", "gzip_tail", "retrieval", "summary", "state_carry")


def trie_nodes(sequences) -> int:
    """The number of distinct non-empty prefixes of the sequences (the nodes of their trie)."""
    root, n = {}, 0
    for seq in sequences:
        node = root
        for t in seq:
            nxt = node.get(t)
            if nxt is None:
                nxt = node[t] = {}
                n += 1
            node = nxt
    return n


class Counter:
    """Tokens forwarded (the backbone's own count), tokens decoded (from what generation
    returned: every generated token but the last of each reply is forwarded; a prompt repeated
    in a batch group is decoded once) and, for batched decoding, the floor: from each group's
    state, every distinct prefix of its prompts followed by their replies (but the last token);
    and the steps in sequence: each reply token is picked after a forward that waits for the
    one before it, so a batch takes at least as many forwards as its longest reply has tokens
    (`steps` sums that over batches: a floor on wall time however rows are batched)."""

    def __init__(self, bb: Backbone):
        self.bb, self.decoded, self.floor, self.steps = bb, 0, 0, 0
        decode_from = bb.decode_from

        def counting(*a, **kw):
            gen = decode_from(*a, **kw)
            forwarded = max(0, len(gen.tokens) - (0 if kw.get("keep_state", True) else 1))
            self.decoded += forwarded
            self.steps += forwarded  # one row: each forward waits for the one before
            return gen

        bb.decode_from = counting
        from urd.backbone import batch

        generate_groups = batch.generate_groups

        def counting_groups(backbone, groups, **kw):
            out = generate_groups(backbone, groups, **kw)
            self.steps += max((len(g.tokens) for gens in out for g in gens), default=0)
            for (_, prompts), gens in zip(groups, out):
                if not any(g.tokens for g in gens):  # max_new_tokens 0: the group forwards nothing
                    continue
                rows = {tuple(p): tuple(g.tokens[:-1]) for p, g in zip(prompts, gens)}  # as decoded: once
                self.decoded += sum(map(len, rows.values()))
                self.floor += trie_nodes(p + r for p, r in rows.items())
            return out

        batch.generate_groups = counting_groups  # generate_batch goes through it too

    def snapshot(self):
        return self.bb.tokens_processed, self.decoded


class Irreducible:
    def __init__(self, tokenizer):
        self.enc, self.total = tokenizer.encode, 0

    def text(self, s: str):
        """A text forwarded once (a transcript, a session-B context)."""
        self.total += len(self.enc(s)) if s else 0


def episodes_of(config, task, n):
    make = calibrate.t1_episode if task == "t1" else calibrate.t2_episode
    return [make(config, i) for i in range(n)]


def run_batched(bb, config, budgets, episodes, decode, systems, counter, irr, times=None):
    """The workflow's path, in one process: returns {(cell, task, episode): replies}. `times`,
    if given, gets each system's wall seconds (and the control's) added under its name."""
    replies = {}
    times = {} if times is None else times
    for task, eps in episodes.items():
        a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
        cache = {}
        for ep in a:  # the prefill job (urd.harness.prefill), through the sequence pass as there
            tokens = bb.tokenizer.encode(ep["transcript"])
            cache[ep["episode"]] = (tokens, *sequence_prefill(bb, tokens))
            irr.text(ep["transcript"])

        def cached_handle(cache=cache):
            h = ModelHandle(bb)
            for tokens, logits, state in cache.values():
                h.cache_prefix(tokens, logits, state)
            return h

        fl0, t0 = counter.floor, time.perf_counter()
        raw = answer_control(cached_handle(), a, b, decode, label=f"control/{task}")
        times["control"] = times.get("control", 0.0) + time.perf_counter() - t0
        irr.total += counter.floor - fl0
        replies.update({("control", task, r["query_id"]): r["response"] for r in raw})
        for name in systems:
            t0 = time.perf_counter()
            for split, budget in sorted(budgets.items()):
                system = registry.build(name, cached_handle(), settings=config.get("system_settings", {}).get(name, {}))
                h = system.backbone
                f0, s0 = h.tokens_processed, h.tokens_served
                recs = consolidate_cell(system, task, a, split, budget, config["consolidation_factor"])
                irr.total += (h.tokens_processed - f0) - (h.tokens_served - s0)  # forwarded beyond the cache
                fresh = registry.build(name, ModelHandle(bb), settings=config.get("system_settings", {}).get(name, {}))
                crossing = [(r, fiches.read_one(r)) for r in recs]
                fl1 = counter.floor
                raw = answer_cell(fresh, b, crossing, decode, label=f"{name}/{task}/{split}")
                for e, (_rec, fiche) in zip(b, crossing):
                    irr.text(fresh.context(fiche, e["header"]).text)
                irr.total += counter.floor - fl1
                replies.update({(f"{name}/{split}", task, r["query_id"]): r["response"] for r in raw})
            times[name] = times.get(name, 0.0) + time.perf_counter() - t0
    return replies


def run_sequential(bb, config, budgets, episodes, decode, systems):
    """Before: each consumer prefills its own transcript, consolidates episode by episode, and
    decodes each query alone."""
    replies = {}
    for task, eps in episodes.items():
        a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
        answerer = ContextAnswerer(ModelHandle(bb))
        for ea, eb in zip(a, b):
            answerer.set_context(ea["transcript"])
            for q in eb["queries"]:
                replies[("control", task, q["id"])] = answerer.ask(q["prompt"], decode)
        for name in systems:
            for split, budget in sorted(budgets.items()):
                system = registry.build(name, ModelHandle(bb), settings=config.get("system_settings", {}).get(name, {}))
                fiche_of = [system.consolidate(ea["transcript"], budget) for ea in a]  # one by one
                answerer = ContextAnswerer(ModelHandle(bb))
                for eb, fiche in zip(b, fiche_of):
                    ctx = system.context(bytes(fiche), eb["header"])
                    answerer.set_context(ctx.text, state=ctx.state, key=ctx.key)
                    for q in eb["queries"]:
                        replies[(f"{name}/{split}", task, q["id"])] = answerer.ask(q["prompt"], decode)
    return replies


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--sequential-episodes", type=int, default=1, help="episodes run the old way too (0: skip)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--systems", default=",".join(BASELINES))
    ap.add_argument("--decode", type=int, default=12, help="tokens decoded per answer")
    args = ap.parse_args(argv)

    config = load_config()
    budgets = config["profiles"][config["profile"]]["budgets"]
    decode = Decode(max_new_tokens=args.decode, stop=())
    systems = args.systems.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape])
        t0 = time.perf_counter()
        bb = Backbone.load(ckpt)
        load_s = time.perf_counter() - t0
    counter = Counter(bb)
    print(f"urd rung-1 workload, random weights, {args.shape} shape {SHAPES[args.shape]}, {args.decode} "
          f"decoded tokens an answer, CPU fp32, {torch.get_num_threads()} torch threads; model load {load_s:.1f} s",
          flush=True)

    rows = []

    def measure(label, fn, n_eps):
        episodes = {t: episodes_of(config, t, n_eps) for t in ("t1", "t2")}
        irr = Irreducible(bb.tokenizer)
        f0, d0 = counter.snapshot()
        t = time.perf_counter()
        out = fn(episodes, irr)
        wall = time.perf_counter() - t
        f1, d1 = counter.snapshot()
        rows.append((label, n_eps, wall, f1 - f0, (f1 - f0) - (d1 - d0), d1 - d0, irr.total if irr.total else None))
        print(f"  {label}: {wall:.1f} s", flush=True)
        return out

    measure("batched (the workflow's path)", lambda eps, irr: run_batched(
        bb, config, budgets, eps, decode, systems, counter, irr), args.episodes)
    if args.sequential_episodes:
        seq = measure("sequential (the old path)", lambda eps, irr: run_sequential(
            bb, config, budgets, eps, decode, systems), args.sequential_episodes)
        same_eps = measure("batched, same episodes", lambda eps, irr: run_batched(
            bb, config, budgets, eps, decode, systems, counter, irr), args.sequential_episodes)

    print(f"\n{'path':32s} {'episodes':>8s} {'wall s':>8s} {'forwarded':>10s} {'prefilled':>10s} {'decoded':>8s} "
          f"{'irreducible':>11s} {'ratio':>6s}")
    for label, n, wall, fwd, pre, dec, irr in rows:
        ratio = f"{fwd / irr:.2f}" if irr else "-"
        print(f"{label:32s} {n:8d} {wall:8.1f} {fwd:10d} {pre:10d} {dec:8d} {irr or '-':>11} {ratio:>6s}")
    if args.sequential_episodes:
        speedup = rows[1][2] / rows[2][2]
        diff = sorted(k for k in seq if seq[k] != same_eps.get(k))
        print(f"\nspeed-up on the same {args.sequential_episodes} episode(s): {speedup:.1f}x "
              f"({rows[1][2]:.1f} s sequential, {rows[2][2]:.1f} s batched)")
        per_seq, per_batch = rows[1][2] / rows[1][1], rows[0][2] / rows[0][1]
        print(f"per episode at {args.episodes} episodes a cell (the workflow batches a cell's episodes "
              f"together): {per_batch:.1f} s batched vs {per_seq:.1f} s sequential, {per_seq / per_batch:.1f}x")
        print(f"replies compared: {len(seq)}; differing between the paths: {len(diff)}"
              + (f" (first: {diff[0]}: {seq[diff[0]]!r} vs {same_eps[diff[0]]!r})" if diff else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

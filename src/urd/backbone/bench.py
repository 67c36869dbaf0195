"""Timings of the backbone on random weights: `python -m urd.backbone.bench [--out F.json]`.

On the CPU by default; the state-tuning stages run on CUDA where torch sees a GPU (on a GPU machine,
`pip install -e '.[gpu]' && python -m urd.backbone.bench --train-only` adds fla's kernels and prints
trained tokens a second per WKV path). `--gpu-table` prints the spend preview's GPU figures
(config `train_speed`): one state-tuning step of the 0.1B and 0.4B shapes at ctx 2,048 and 6,144
on each path a tuning job can take there, and the first fla step of a fresh process (the kernels'
compilation); `benchmarks/gpu_fla.sh` runs it.

Each stage runs in its own process so peak RSS belongs to that stage alone. Speeds are the best
of `--repeats` runs (the machine may be shared); token ids are fixed pseudo-random ids.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

SHAPES = {"tiny": dict(n_layer=2, n_embd=128), "0.1b": dict(n_layer=12, n_embd=768),
          "0.4b": dict(n_layer=24, n_embd=1024)}
# the paths of the GPU table: (wkv, precision, checkpoint_layers); the last is what a tuning job
# runs on CUDA (config replay.on_cuda, below half the GPU's memory), the second what it ran before
TABLE_PATHS = (("chunked", "fp32", True), ("fla", "fp32", True), ("fla", "bf16", True), ("fla", "bf16", False))
WKV_CHUNK = 32  # config/config.yaml replay.wkv_chunk


def _tokens(n: int, seed: int = 0) -> list[int]:
    import torch

    return torch.randint(1, 65530, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def stage_inference(shape: str, prefill_tokens: int, decode_tokens: int, repeats: int) -> dict:
    from .adapter import Backbone
    from .tiny import write_tiny_checkpoint

    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        path = write_tiny_checkpoint(os.path.join(d, "m.pth"), seed=0, **SHAPES[shape])
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        bb = Backbone.load(path)
        load_s = time.perf_counter() - t
    toks = _tokens(prefill_tokens)
    bb.prefill(toks[:16])  # warm-up: TorchScript compiles on first calls
    prefill = []
    for _ in range(repeats):
        t = time.perf_counter()
        _, state = bb.prefill(toks, None)
        prefill.append(time.perf_counter() - t)
    decode = []
    for _ in range(repeats):
        t = time.perf_counter()
        bb.generate(toks[-8:], state, max_new_tokens=decode_tokens, stop=(), keep_state=False)
        # prefill of 8 prompt tokens included; negligible next to the decode steps
        decode.append((time.perf_counter() - t) / decode_tokens)
    return {"shape": shape, **SHAPES[shape], "checkpoint_write_s": round(write_s, 3),
            "load_s": round(load_s, 3), "prefill_tokens": prefill_tokens,
            "prefill_s": round(min(prefill), 3), "threads": __import__("torch").get_num_threads(),
            "prefill_tokens_per_s": round(prefill_tokens / min(prefill), 1),
            "decode_ms_per_token": round(1000 * min(decode), 2), "peak_rss_mb": round(_peak_rss_mb())}


def stage_train(shape: str, tokens: int, repeats: int, checkpoint_layers: bool, wkv: str = "chunked",
                precision: str = "fp32") -> dict:
    import torch

    from .rwkv7_torch import RWKV7
    from .tiny import random_state_dict

    torch.set_flush_denormal(True)  # as the tuning job runs
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    m = RWKV7(random_state_dict(0, **SHAPES[shape]), device, checkpoint_layers=checkpoint_layers, wkv=wkv,
              wkv_chunk=WKV_CHUNK, precision=precision)
    rss_weights = _peak_rss_mb()
    toks = torch.tensor(_tokens(tokens), device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    runs = []
    for _ in range(repeats):
        ts = m.zero_time_state(requires_grad=True)
        t = time.perf_counter()
        loss = m.loss(toks, ts)
        sync()
        f = time.perf_counter() - t
        loss.backward()
        sync()
        runs.append((f, time.perf_counter() - t))
    f, total = min(runs, key=lambda r: r[1])
    gpu_mb = round(torch.cuda.max_memory_allocated() / 2**20) if device.type == "cuda" else None
    return {"shape": shape, **SHAPES[shape], "tokens": tokens, "wkv": m.wkv, "device": device.type,
            "trained_tokens_per_s": round(tokens / total, 1), "peak_gpu_mb": gpu_mb,
            "checkpoint_layers": checkpoint_layers, "precision": precision,
            "forward_s": round(f, 2), "forward_backward_s": round(total, 2),
            "forward_backward_s_per_512": round(total * 512 / tokens, 2),
            "peak_rss_mb": round(_peak_rss_mb()), "rss_after_weights_mb": round(rss_weights),
            "threads": torch.get_num_threads()}


def stage_table(shape: str, ctxs: list[int], repeats: int) -> dict:
    """One state-tuning step per (ctx, path) of TABLE_PATHS on one set of weights: trained tokens
    a second (the best of `repeats` after a warm-up step) and peak GPU memory per row, and how long
    the first fla step of this fresh process took (compiling fla's kernels). A path this machine
    cannot run is a row with its reason."""
    import torch

    from .rwkv7_torch import RWKV7
    from .tiny import random_state_dict
    from .wkv_fla import unavailable

    torch.set_flush_denormal(True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sd = random_state_dict(0, **SHAPES[shape])
    rows, first_fla_s = [], None
    for ctx in ctxs:
        toks = torch.tensor(_tokens(ctx), device=device)
        for wkv, precision, ckpt in TABLE_PATHS:
            row = {"shape": shape, "ctx": ctx, "wkv": wkv, "precision": precision, "checkpoint_layers": ckpt}
            why = unavailable(device) if wkv == "fla" else None
            if why:
                rows.append({**row, "skipped": why})
                continue
            m = RWKV7(sd, device, checkpoint_layers=ckpt, wkv=wkv, wkv_chunk=WKV_CHUNK, precision=precision)
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
            times = []
            for _ in range(1 + repeats):  # the first is the warm-up
                ts = m.zero_time_state(requires_grad=True)
                sync()
                t = time.perf_counter()
                m.loss(toks, ts).backward()
                sync()
                times.append(time.perf_counter() - t)
            if wkv == "fla" and first_fla_s is None:
                first_fla_s = round(times[0], 1)
            rows.append({**row, "step_s": round(min(times[1:]), 3),
                         "trained_tokens_per_s": round(ctx / min(times[1:])),
                         "peak_gpu_mb": round(torch.cuda.max_memory_allocated(device) / 2**20) if cuda else None})
            del m
            if cuda:
                torch.cuda.empty_cache()
    from ..core.provenance import package_versions

    return {"shape": shape, **SHAPES[shape], "device": _device_label(device), "rows": rows,
            "first_fla_step_s": first_fla_s, "versions": package_versions(("torch", "triton", "fla-core"))}


def _device_label(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def table_lines(results: list[dict]) -> list[str]:
    """The GPU table as the spend preview's basis quotes it: a row per shape and ctx, a column per
    path, trained tokens a second with peak GPU memory."""
    head = ["shape", "ctx"] + [f"{w} {p}{' + ckpt' if c else ', no ckpt'}" for w, p, c in TABLE_PATHS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        by = {(r["ctx"], r["wkv"], r["precision"], r["checkpoint_layers"]): r for r in res["rows"]}
        for ctx in sorted({r["ctx"] for r in res["rows"]}):
            cells = []
            for w, p, c in TABLE_PATHS:
                r = by[(ctx, w, p, c)]
                gb = f" ({r['peak_gpu_mb'] / 1024:.1f} GB)" if r.get("peak_gpu_mb") is not None else ""
                cells.append("skipped" if "skipped" in r else f"{r['trained_tokens_per_s']:,}{gb}")
            out.append(f"| {res['shape']} | {ctx:,} | " + " | ".join(cells) + " |")
    for res in results:
        v = res["versions"]
        out.append(f"{res['shape']} on {res['device']} (torch {v['torch']}, triton {v['triton']}, "
                   f"fla-core {v['fla-core']}): the first fla step of a fresh process took "
                   + (f"{res['first_fla_step_s']} s" if res["first_fla_step_s"] is not None else "- (no fla)"))
    skipped = sorted({r["skipped"] for res in results for r in res["rows"] if "skipped" in r})
    out += [f"skipped: {why}" for why in skipped]
    return out


def _child(args: list[str], threads: int) -> dict:
    cmd = [sys.executable, "-m", "urd.backbone.bench", "--threads", str(threads), "--stage", *args]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads per stage (0: torch's default). On a shared machine, "
                         "oversubscribed OpenMP threads can be 10x slower than one thread.")
    ap.add_argument("--train-only", action="store_true",
                    help="only the 0.1B state-tuning step at ctx 2,048: chunked and sequential WKV, chunked with "
                         "checkpoint_layers in fp32 and in bf16, and fla's kernels on a GPU with the gpu extra")
    ap.add_argument("--gpu-table", action="store_true",
                    help="the spend preview's GPU figures: a step per shape, ctx and path (TABLE_PATHS), "
                         "each shape in a fresh process")
    ap.add_argument("--shapes", default="0.1b,0.4b", help="--gpu-table's shapes (comma-separated)")
    ap.add_argument("--ctx", default="2048,6144", help="--gpu-table's contexts (comma-separated)")
    ap.add_argument("--stage", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.stage:
        if a.threads:
            import torch

            torch.set_num_threads(a.threads)
        kind, shape, *rest = a.stage
        if kind == "table":
            res = stage_table(shape, [int(c) for c in rest[0].split(",")], a.repeats)
        elif kind == "inference":
            res = stage_inference(shape, int(rest[0]), int(rest[1]), a.repeats)
        else:
            res = stage_train(shape, int(rest[0]), a.repeats, rest[1] == "1", *rest[2:4])
        print(json.dumps(res))
        return 0
    r = str(a.repeats)
    if a.gpu_table:
        shapes = a.shapes.split(",")
        unknown = [x for x in shapes if x not in SHAPES]
        if unknown:
            ap.error(f"--shapes: {unknown[0]} is not one of {', '.join(SHAPES)}")
        results = []
        for shape in shapes:  # a fresh process a shape: its first fla step compiles, as a job's does
            results.append(_child(["table", shape, a.ctx, "--repeats", r], a.threads))
            print("\n".join(table_lines(results[-1:])), flush=True)
        print("\n".join(table_lines(results)))
        if a.out:
            from ..core.io import atomic_write_json

            atomic_write_json(a.out, {"table": results})
        return 0
    if a.train_only:
        # one state-tuning step at the 0.1B shape, ctx 2,048, every WKV path this machine runs, in one
        # run (on a GPU with the gpu extra, fla's kernels too)
        import torch

        from .wkv_fla import unavailable

        # checkpoint_layers 1 with fp32 is how the tuning job runs by default (config replay.*)
        stages = [["0", "chunked"], ["0", "sequential"], ["1", "chunked"], ["1", "chunked", "bf16"]]
        if torch.cuda.is_available() and unavailable("cuda") is None:
            stages += [["0", "fla"], ["1", "fla", "bf16"]]
        # round-robin, `--repeats` rounds of every path (each a warm-up step and a timed one), the best
        # round of each kept: a shared machine drifts over minutes, and drift should not become a ratio
        rounds = [[_child(["train", "0.1b", "2048", *st, "--repeats", "2"], a.threads) for st in stages]
                  for _ in range(a.repeats)]
        runs = [min(col, key=lambda x: x["forward_backward_s"]) for col in zip(*rounds)]
        for x, col in zip(runs, zip(*rounds)):
            x["rounds_s"] = [y["forward_backward_s"] for y in col]
        chunked, sequential = runs[0], runs[1]
        for x in runs:  # each against the token-by-token WKV in fp32, the path chunking replaced
            x["speedup_vs_sequential"] = round(sequential["forward_backward_s"] / x["forward_backward_s"], 2)
        results = {"train": runs, "cpu_count": os.cpu_count(), "load_average": os.getloadavg()}
        print(json.dumps(results, indent=2))
        where = f"{chunked['threads']} threads" if chunked["device"] == "cpu" else chunked["device"]
        print(f"0.1B, ctx 2048, one state-tuning step, {where}:")
        for x in runs:
            print(f"  {x['wkv']} {x['precision']}{' checkpoint_layers' if x['checkpoint_layers'] else ''}: "
                  f"{x['forward_backward_s']} s (rounds {x['rounds_s']}), {x['speedup_vs_sequential']}x sequential fp32, "
                  f"{x['trained_tokens_per_s']} trained tokens/s, peak "
                  + (f"RSS {x['peak_rss_mb']} MB" if x["device"] == "cpu" else f"GPU memory {x['peak_gpu_mb']} MB"))
        if a.out:
            from ..core.io import atomic_write_json

            atomic_write_json(a.out, results)
        return 0
    results = {
        "inference": [_child(["inference", "tiny", "2048", "64", "--repeats", r], a.threads),
                      _child(["inference", "0.1b", "512", "32", "--repeats", r], a.threads)],
        "train": [_child(["train", "0.1b", "512", "0", "chunked", "--repeats", r], a.threads),
                  _child(["train", "0.1b", "2048", "0", "chunked", "--repeats", "1"], a.threads),
                  _child(["train", "0.1b", "2048", "0", "sequential", "--repeats", "1"], a.threads),
                  _child(["train", "0.1b", "2048", "1", "chunked", "--repeats", "1"], a.threads)],
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    if a.out:
        from ..core.io import atomic_write_json

        atomic_write_json(a.out, results)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

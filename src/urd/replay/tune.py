"""The tuning job: learn the initial WKV state on one transcript, write the artifact.

    python -m urd.replay.tune --checkpoint models/m.pth --checkpoint-stamp S --data data/t2.jsonl \
        --task t2 --episode 0 --sha256 <transcript sha256> --recipe replay_tune --scale tiny \
        --settings '{...}' --factor 10 --threads 1 --out-dir artifacts/replay/tiny/replay_tune/<sha256>

Only time_state ([n_layer, n_head, N, N], the rwkv package's WKV layout) is trained, from zeros,
with Adam, cosine learning rate and gradient-norm clipping; weights stay frozen (the recipe of
RWKV-PEFT's state tuning). The trained tokens are metered on the model (every token through the
differentiable forward), not computed, and must equal steps x ctx.

Determinism: nothing is random (zero init, fixed windows), so on one machine and thread count the
same inputs give the same time_state bytes. Across CPUs, thread counts or a GPU, float reduction
order differs and the bytes may too; costs.json records the device and threads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

from ..core.errors import InputError, UrdError
from ..core.io import read_jsonl
from ..core.machine import cpu_model, machine_record
from ..data import TASKS
from ..data.rung3 import BUILTIN
from .artifact import write_artifact
from .recipe import Recipe, resolve

DETERMINISM = ("the same bytes on the same device, torch threads, WKV path and precision (and torch version); "
               "another of these may round differently")
# Triton autotunes fla's block sizes in each process, and a block size orders the sums
FLA_DETERMINISM = ("not byte-reproducible: fla's kernels choose block sizes by timing in each process, "
                   "and a block size orders their sums")


# Peak GPU memory of a step without recomputation: the weights in float32 and ~104 bytes a token,
# layer and channel of activations (fla, bf16, no checkpoint_layers, on an H200, from the peaks
# at ctx 2,048 and 6,144 in GiB, config train_speed.*.basis: 102 bytes at the 0.1B shape, 106 at
# 0.4B; the estimate is within 10 % of all four peaks)
ACTIVATION_BYTES = 104
# `auto` recomputes blocks only when that estimate passes this share of the GPU's memory
AUTO_CHECKPOINT_SHARE = 0.5


def estimated_peak_mb(n_params: int, n_layer: int, n_embd: int, ctx: int) -> int:
    return round((4 * n_params + ACTIVATION_BYTES * ctx * n_layer * n_embd) / 2**20)


def checkpoint_choice(requested, peak_mb: int, device_mb: int | None) -> bool:
    """Whether a step recomputes its blocks: as requested (True or False), or for `auto` only
    where the estimated peak passes AUTO_CHECKPOINT_SHARE of the device's memory."""
    if requested != "auto":
        return bool(requested)
    return device_mb is not None and peak_mb > AUTO_CHECKPOINT_SHARE * device_mb


def device_name(device) -> str:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({cpu_model()})"


def tune_state(model, tokens: list[int], recipe: Recipe, log=None):
    """Train model's initial WKV state on `tokens` with `recipe`; returns (state, losses)."""
    import torch

    ts = model.zero_time_state(requires_grad=True)
    opt = torch.optim.Adam([ts], lr=recipe.lr_init, betas=(recipe.beta1, recipe.beta2), eps=recipe.eps)
    losses = []
    for step in range(recipe.steps):
        for group in opt.param_groups:
            group["lr"] = recipe.lr(step)
        opt.zero_grad(set_to_none=True)
        loss = model.loss(recipe.window(tokens, step), ts)
        loss.backward()
        if not torch.isfinite(ts.grad).all():
            raise UrdError(f"recipe {recipe.name}: non-finite gradient at step {step}")
        torch.nn.utils.clip_grad_norm_([ts], recipe.grad_clip)
        opt.step()
        losses.append(loss.detach().item())
        if log:
            log(f"step {step + 1}/{recipe.steps} loss {losses[-1]:.4f}")
    return ts.detach(), losses


def find_episode(path: str, task: str, episode: int, sha256: str) -> dict:
    for ep in read_jsonl(path):
        if ep["episode"] == episode:
            got = hashlib.sha256(ep["transcript"].encode("utf-8")).hexdigest()
            if got != sha256:
                raise InputError(path, f"{task} episode {episode} transcript SHA-256",
                                 f"{sha256} (the hash the DAG was built with)", got)
            return ep
    raise InputError(path, f"{task} episode", f"episode {episode} present")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m urd.replay.tune")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--checkpoint-stamp", help="the verify stamp of the checkpoint (its SHA-256)")
    ap.add_argument("--data", required=True)
    ap.add_argument("--task", required=True, choices=[*TASKS, *BUILTIN],
                    help="a rung-1 task or a rung-3 family (the transcript's source)")
    ap.add_argument("--episode", required=True, type=int)
    ap.add_argument("--sha256", required=True, help="SHA-256 of the episode's transcript")
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--scale", required=True)
    ap.add_argument("--settings", required=True, help="the recipe's merged settings (JSON)")
    ap.add_argument("--factor", required=True, type=int, help="the contract's consolidation factor")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda[:i]")
    ap.add_argument("--wkv", choices=("auto", "chunked", "sequential", "fla"), default="auto",
                    help="the WKV path (urd.backbone.rwkv7_torch.resolve_wkv); the bytes depend on the path run")
    ap.add_argument("--wkv-chunk", type=int, default=64)
    ap.add_argument("--precision", default="fp32",
                    help="fp32 or bf16, the frozen weight products' (urd.backbone.rwkv7_torch.PRECISIONS); "
                         "the bytes depend on it")
    ap.add_argument("--checkpoint-layers", action="store_true", help="recompute block activations in backward")
    ap.add_argument("--cuda-precision", help="the precision on a CUDA device (default: --precision)")
    ap.add_argument("--cuda-checkpoint-layers", choices=("auto", "true", "false"),
                    help="recomputation on a CUDA device: true, false, or auto (only where the estimated "
                         "peak passes half the GPU's memory); default: --checkpoint-layers")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
    return ap


def load_model(args, device, recipe: Recipe, log):
    """The differentiable model on `device`, as the device's settings ask (precision, recomputation;
    `auto` decided from the estimated peak): (model, the recomputation asked for, the peak estimate)."""
    import torch

    from ..backbone.rwkv7_torch import RWKV7

    cuda = device.type == "cuda"
    precision = (args.cuda_precision or args.precision) if cuda else args.precision
    asked = (args.cuda_checkpoint_layers or args.checkpoint_layers) if cuda else args.checkpoint_layers
    asked = {"true": True, "false": False}.get(asked, asked)
    model = RWKV7.load(args.checkpoint, device, wkv_chunk=args.wkv_chunk,
                       checkpoint_layers=asked is True, wkv=args.wkv, precision=precision)
    peak_mb = estimated_peak_mb(sum(t.numel() for t in model.z.values()), model.n_layer, model.n_embd, recipe.ctx)
    device_mb = torch.cuda.get_device_properties(device).total_memory // 2**20 if cuda else None
    model.checkpoint_layers = checkpoint_choice(asked, peak_mb, device_mb)
    if asked == "auto":
        log(f"checkpoint_layers auto: estimated peak {peak_mb} MB of the device's {device_mb} MB: "
            f"{'recomputing blocks' if model.checkpoint_layers else 'no recomputation'}")
    if args.wkv == "auto" and model.wkv != "fla" and cuda:
        from ..backbone.wkv_fla import unavailable

        log(f"WKV path {model.wkv}, not fla: {unavailable(device)}")
    if precision == "bf16" and not cuda and not (
            torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()):
        log("bf16 products on a CPU without native bf16 (avx512_bf16 or AMX): emulated, slower than fp32")
    return model, asked, peak_mb


def costs_record(args, recipe: Recipe, model, device, asked, peak_mb: int, losses: list[float], clock: dict) -> dict:
    """costs.json: what the tuning cost and where it ran (the artifact's record)."""
    import torch

    from ..core.provenance import code_digest, sandbox_label

    stamp = Path(args.checkpoint_stamp).read_text().split()[0] if args.checkpoint_stamp else None
    return {
        "scale": args.scale, "recipe": recipe.as_record(), "task": args.task, "episode": args.episode,
        "transcript_sha256": args.sha256, "transcript_tokens": recipe.transcript_tokens,
        "steps": recipe.steps, "ctx": recipe.ctx, "trained_tokens": model.tokens_processed,
        "token_cap": recipe.token_cap, "cap_ratio": round(model.tokens_processed / recipe.token_cap, 4),
        "out_of_contract": recipe.out_of_contract, "losses": losses,
        "device": device_name(device), "torch_threads": torch.get_num_threads(),
        "wkv": {"path": model.wkv, "requested": args.wkv,
                "chunk": None if model.wkv == "fla" else args.wkv_chunk},  # fla picks its own
        "precision": model.precision,
        "checkpoint_layers": {"ran": model.checkpoint_layers, "requested": asked, "estimated_peak_mb": peak_mb},
        "determinism": FLA_DETERMINISM if model.wkv == "fla" else DETERMINISM,
        "wall_time_s": round(clock["tuned"] - clock["started"], 3),
        "load_s": round(clock["loaded"] - clock["started"], 3),
        "tune_s": round(clock["tuned"] - clock["loaded"], 3),
        "seconds_per_step": round((clock["tuned"] - clock["loaded"]) / recipe.steps, 3),
        "cpu_time_s": round(time.process_time() - clock["cpu0"], 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_gpu_mem_mb": (round(torch.cuda.max_memory_allocated(device) / 2**20) if device.type == "cuda" else None),
        "checkpoint": Path(args.checkpoint).name, "checkpoint_sha256": stamp,
        "code_sha256": code_digest("urd.replay.tune"), **machine_record(),
        # where it ran: a SLURM job (and its partition) or a workstation
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"), "slurm_partition": os.environ.get("SLURM_JOB_PARTITION"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "sandbox": sandbox_label(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    log = lambda msg: print(f"[tune {args.recipe}/{args.task}/{args.episode}] {msg}", file=sys.stderr, flush=True)
    try:
        from ..core.verify import check_stamps

        check_stamps(args.verified)
        import torch

        from ..backbone.tokenizer import encode

        clock = {"started": time.monotonic(), "cpu0": time.process_time()}
        torch.set_num_threads(args.threads)
        torch.set_flush_denormal(True)  # decaying states underflow; subnormals are slow on x86
        device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                              else ("cpu" if args.device == "auto" else args.device))
        tokens = encode(find_episode(args.data, args.task, args.episode, args.sha256)["transcript"])
        recipe = resolve(json.loads(args.settings), args.recipe, args.scale, len(tokens), args.factor)
        log(f"{recipe.steps} steps x ctx {recipe.ctx} = {recipe.trained_tokens} tokens "
            f"(cap {recipe.token_cap}{', out of contract' if recipe.out_of_contract else ''}) on {device}")
        model, asked, peak_mb = load_model(args, device, recipe, log)
        clock["loaded"] = time.monotonic()
        state, losses = tune_state(model, tokens, recipe, log)
        clock["tuned"] = time.monotonic()
        if model.tokens_processed != recipe.trained_tokens:
            raise UrdError(f"metered {model.tokens_processed} trained tokens, recipe says {recipe.trained_tokens}")
        costs = costs_record(args, recipe, model, device, asked, peak_mb, losses, clock)
        digest = write_artifact(args.out_dir, state.cpu().numpy(), costs)
    except UrdError as exc:
        print(f"urd replay tune FAILED: {exc}", file=sys.stderr)
        return 1
    log(f"wrote {args.out_dir} (time_state sha256 {digest}) in {costs['wall_time_s']} s, "
        f"{costs['seconds_per_step']} s/step, peak RSS {costs['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

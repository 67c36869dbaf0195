"""Deterministic random-weight RWKV-7 checkpoints.

They carry exactly the tensor names, shapes and dtype (bf16) of the released g1d checkpoints,
so they load through the same `rwkv` path as the real 0.1B/0.4B. Used by tests and CPU benchmarks
where the real weights are unavailable. Random weights say nothing about the benchmark's numbers;
they only exercise the code.

Determinism: every tensor draws from its own numpy PCG64 stream seeded by (seed, sha256(name)),
so values do not depend on draw order or on the CPU's vector units (torch's CPU normal_ has
ISA-specific paths). The file is serialised into memory, not to a path, because torch.save
embeds the target file's stem as the zip's top-level folder: the same weights saved under two
names would differ in bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
import os

import numpy as np
import torch

from ..core.io import atomic_write_bytes
from .shapes import lora_dims, rwkv7_shapes  # noqa: F401  (part of this module's interface)

DTYPE = torch.bfloat16  # what the released g1d checkpoints store


def _rng(seed: int, name: str) -> np.random.Generator:
    tag = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([seed, tag]))


def _init(name: str, shape: tuple, rng: np.random.Generator, layer: int, n_layer: int) -> np.ndarray:
    """Scales loosely follow RWKV-LM's x070 init, made non-degenerate (no zero matrices) so every
    tensor influences the output and a wrong transpose or missing term shows up in tests."""
    normal = lambda std, mean=0.0: mean + std * rng.standard_normal(shape, dtype=np.float32)
    leaf = ".".join(name.split(".")[3:])  # blocks.<i>.att.<leaf> / blocks.<i>.ffn.<leaf>
    fan_in = shape[0] if len(shape) == 2 else 1
    if name == "emb.weight":
        return normal(1.0)  # ln0 normalises it at load time
    if name == "head.weight":
        return normal(2.0 / math.sqrt(shape[1]))  # logits of std ~2: peaked enough to decode
    if name.endswith(("ln0.weight", "ln1.weight", "ln2.weight", "ln_out.weight")):
        return normal(0.1, 1.0)
    if name.endswith("ln_x.weight"):
        return normal(0.1, ((1 + layer) / n_layer) ** 0.7)
    if name.endswith(".bias"):
        return normal(0.1)
    if leaf in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g"):
        return rng.uniform(0.0, 1.0, shape).astype(np.float32)  # token-shift lerp weights
    if leaf == "w0":
        # RWKV-LM's decay-speed ramp: slow and fast channels, decays from ~1 down to ~0.9
        C = shape[-1]
        ratio = layer / max(1, n_layer - 1)
        n = np.arange(C, dtype=np.float64) / max(1, C - 1)
        ramp = -7 + 5 * n ** (0.85 + ratio**0.5) + 0.5
        return (ramp.reshape(shape) + 0.3 * rng.standard_normal(shape)).astype(np.float32)
    if leaf in ("a0", "r_k"):
        return normal(0.5)
    if leaf == "v0":
        return normal(0.5, 1.0)
    if leaf == "k_k":
        return normal(0.1, 0.85)
    if leaf == "k_a":
        return normal(0.1, 1.0)
    if leaf in ("w1", "a1", "v1", "g1", "receptance.weight", "key.weight", "value.weight"):
        # (C, d) LoRA-in, or (out, in) Linear: unit-variance outputs from unit-variance inputs
        return normal(1.0 / math.sqrt(shape[0] if leaf.endswith("1") else shape[1]))
    if leaf in ("w2", "a2", "v2", "g2"):
        return normal((1.0 if leaf == "g2" else 0.5) / math.sqrt(fan_in))
    if leaf == "output.weight":
        return normal(0.5 / math.sqrt(shape[1]))
    raise KeyError(f"no initialiser for {name}")  # a new tensor name must be handled on purpose


def random_state_dict(seed: int, n_layer: int = 2, n_embd: int = 128, head_size: int = 64,
                      vocab_size: int = 65536) -> dict[str, torch.Tensor]:
    """Random RWKV-7 weights, bf16, in a released checkpoint's names, shapes and order.

    The real 0.1B shape is n_layer=12, n_embd=768; the 0.4B is n_layer=24, n_embd=1024."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    out = {}
    for name, shape in rwkv7_shapes(n_layer, n_embd, head_size, vocab_size).items():
        layer = int(name.split(".")[1]) if name.startswith("blocks.") else 0
        arr = _init(name, shape, _rng(seed, name), layer, n_layer)
        # fresh storage per tensor: torch.save writes whole storages, views would bloat the file
        out[name] = torch.from_numpy(np.ascontiguousarray(arr)).to(DTYPE)
    return out


def checkpoint_bytes(state_dict: dict[str, torch.Tensor]) -> bytes:
    """torch.save into memory: the zip's folder is then always 'archive', whatever the path."""
    buf = io.BytesIO()
    torch.save(state_dict, buf)
    return buf.getvalue()


def write_tiny_checkpoint(path: str | os.PathLike, *, seed: int, n_layer: int = 2, n_embd: int = 128,
                          head_size: int = 64, vocab_size: int = 65536) -> str:
    """Write a random RWKV-7 checkpoint to `path` (must end in .pth, as the rwkv loader appends
    it); same arguments -> byte-identical file. Returns the path as a string."""
    path = os.fspath(path)
    if not path.endswith(".pth"):
        raise ValueError(f"checkpoint path must end in .pth, got {path!r}")
    sd = random_state_dict(seed, n_layer, n_embd, head_size, vocab_size)
    atomic_write_bytes(path, checkpoint_bytes(sd))
    return path


def main(argv=None) -> int:
    """python -m urd.backbone.tiny OUT.pth --seed N [--n-layer L --n-embd D]; prints the SHA-256."""
    import argparse

    from ..core.io import sha256_file

    ap = argparse.ArgumentParser(description="Write a deterministic random RWKV-7 checkpoint.")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--head-size", type=int, default=64)
    ap.add_argument("--vocab-size", type=int, default=65536)
    a = ap.parse_args(argv)
    path = write_tiny_checkpoint(a.out, seed=a.seed, n_layer=a.n_layer, n_embd=a.n_embd,
                                 head_size=a.head_size, vocab_size=a.vocab_size)
    print(sha256_file(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The recurrent state of RWKV-7 as the `rwkv` package holds it, and its canonical byte layout.

A state is a list of 3 * n_layer tensors; for layer i:
  [3i + 0]  time-mix token shift     (n_embd,)                        model dtype
  [3i + 1]  WKV matrix               (n_head, head_size, head_size)   fp32, [head, value, key]
  [3i + 2]  channel-mix token shift  (n_embd,)                        model dtype

Canonical bytes: the 3 * n_layer tensors in that order, each C-order, as IEEE fp32 little-endian,
no header (the shapes come from the model). Length = 4 * n_layer * (2 * n_embd + n_head *
head_size**2): 2,433,024 bytes at the 0.1B shape. Round-trip is exact for fp32 and for bf16/fp16
token shifts (they widen losslessly to fp32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.errors import InputError


@dataclass(frozen=True)
class StateLayout:
    n_layer: int
    n_embd: int
    n_head: int
    head_size: int

    def shapes(self) -> list[tuple[int, ...]]:
        C, H, N = self.n_embd, self.n_head, self.head_size
        return [s for _ in range(self.n_layer) for s in ((C,), (H, N, N), (C,))]

    @property
    def n_floats(self) -> int:
        return self.n_layer * (2 * self.n_embd + self.n_head * self.head_size**2)

    @property
    def n_bytes(self) -> int:
        return 4 * self.n_floats

    def zeros(self, device="cpu", dtype=torch.float32) -> list[torch.Tensor]:
        # the WKV matrix is always fp32 in the package, the shifts follow the model dtype
        return [torch.zeros(s, device=device, dtype=torch.float32 if len(s) == 3 else dtype)
                for s in self.shapes()]

    def check(self, state) -> None:
        if not isinstance(state, (list, tuple)) or len(state) != 3 * self.n_layer:
            raise InputError("state", "length", f"a list of {3 * self.n_layer} tensors",
                             type(state).__name__ if not isinstance(state, (list, tuple)) else len(state))
        for i, (t, s) in enumerate(zip(state, self.shapes())):
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != s:
                raise InputError("state", f"[{i}]", f"tensor of shape {s}",
                                 tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__)

    def to_bytes(self, state) -> bytes:
        self.check(state)
        return b"".join(
            t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False).tobytes()
            for t in state
        )

    def from_bytes(self, data: bytes, device="cpu", dtype=torch.float32) -> list[torch.Tensor]:
        if len(data) != self.n_bytes:
            raise InputError("state bytes", "length", f"{self.n_bytes} bytes", len(data))
        flat = np.frombuffer(data, dtype="<f4")
        out, at = [], 0
        for s in self.shapes():
            n = int(np.prod(s))
            t = torch.from_numpy(flat[at: at + n].astype(np.float32).reshape(s))  # copy: owns memory
            out.append(t.to(device=device, dtype=torch.float32 if len(s) == 3 else dtype))
            at += n
        return out


def clone_state(state) -> list[torch.Tensor]:
    """Deep copy: the CUDA kernel updates the WKV tensors in place, the CPU path rebinds the
    list's entries; a clone protects the caller's state from both."""
    return [t.clone() for t in state]

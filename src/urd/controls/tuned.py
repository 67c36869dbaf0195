"""A replay recipe's tuned state behind the MemorySystem interface.

State-tuning learns the initial WKV state of every layer (RWKV-PEFT's time_state). Session B
starts from it: token shifts zero, WKV matrices the tuned ones, then the task header and the
query. The fiche is the tuned WKV state packed top-k by magnitude (urd.systems.packing, 8 bytes
an entry); with no budget every entry is kept (the "full" state: 8 x n_layer x n_head x 64 x 64
bytes, 4,718,592 at the 0.1B shape).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..core.errors import InputError
from ..systems.base import MemorySystem
from ..systems.packing import pack_topk, state_with_wkv, unpack_topk, wkv_shape


@dataclass(frozen=True)
class TunedState:
    """wkv: float32, n_layer x n_head x head_size x head_size, in the rwkv package's WKV layout
    ([head, value, key], urd.backbone.state). trained_tokens: tokens the tuning processed,
    counted with the harness tokenizer (costs.json); declared as consolidation tokens, so the
    contract's cap is checked on them."""

    wkv: np.ndarray
    trained_tokens: int = 0
    artifact: dict | None = None  # where it came from (path, sha256), for provenance


TunedStateProvider = Callable[[str], TunedState | np.ndarray | torch.Tensor | list]


def as_tuned(obj, layout, where: str = "tuned state") -> TunedState:
    """Normalise what a provider returns; a wrong size or a non-finite value fails loudly."""
    meta: dict = {}
    if isinstance(obj, TunedState):
        meta = {"trained_tokens": obj.trained_tokens, "artifact": obj.artifact}
        obj = obj.wkv
    if isinstance(obj, (list, tuple)):
        obj = np.stack([t.detach().cpu().float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t) for t in obj])
    elif isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().float().numpy()
    arr = np.asarray(obj, dtype=np.float32)
    shape = wkv_shape(layout)
    if arr.size != int(np.prod(shape)) or (arr.ndim > 1 and arr.shape != shape):
        raise InputError(where, "shape", f"{shape} (or flat, {int(np.prod(shape))} entries)", arr.shape)
    if not np.isfinite(arr).all():
        raise InputError(where, "values", "finite floats", "NaN or inf")
    tokens = int(meta.get("trained_tokens", 0))
    if tokens < 0:
        raise InputError(where, "trained_tokens", "a non-negative integer", tokens)
    return TunedState(np.ascontiguousarray(arr.reshape(shape)), tokens, meta.get("artifact"))


class TunedStateSystem(MemorySystem):
    """consolidate: the provider's tuned state for this transcript, packed to the budget (None:
    all of it); its training tokens are declared. context: restore it; session B starts there."""

    def __init__(self, backbone, provider: TunedStateProvider, name: str, out_of_contract: bool = False):
        super().__init__(backbone, {})
        self.provider, self.name, self.out_of_contract = provider, name, bool(out_of_contract)
        self.size = int(np.prod(wkv_shape(self.backbone.layout)))

    def consolidate(self, transcript, budget_bytes):
        tuned = as_tuned(self.provider(transcript), self.backbone.layout, f"{self.name} tuned state")
        self.declare_tokens(tuned.trained_tokens)
        return pack_topk(tuned.wkv.ravel(), budget_bytes)

    def context(self, fiche, header):
        digest = hashlib.sha256(fiche).hexdigest()
        return self.state_context(state_with_wkv(self.backbone, unpack_topk(fiche, self.size)), ("tuned", digest), header)

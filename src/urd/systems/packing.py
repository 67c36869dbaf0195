"""Top-k packing of a state into a fiche: 8 bytes an entry (uint32 index, float32 value).

Shared by state_carry and the replay systems, as is the restore of an unpacked WKV state into a
full recurrent state (`state_with_wkv`). The k entries of largest magnitude are kept (ties
to the lower index, so the bytes are deterministic), sorted by index, little-endian.
"""

from __future__ import annotations

import numpy as np

ENTRY_BYTES = 8
_DTYPE = np.dtype([("index", "<u4"), ("value", "<f4")])


def capacity(budget_bytes: int | None, size: int) -> int:
    return size if budget_bytes is None else min(size, budget_bytes // ENTRY_BYTES)


def pack_topk(flat: np.ndarray, budget_bytes: int | None) -> bytes:
    flat = np.asarray(flat, dtype=np.float32).ravel()
    k = capacity(budget_bytes, flat.size)
    if k == 0:
        return b""
    # lexsort: primary key -|v| (largest first), secondary the index (lower first).
    order = np.lexsort((np.arange(flat.size), -np.abs(flat)))[:k]
    order.sort()
    packed = np.empty(k, dtype=_DTYPE)
    packed["index"] = order
    packed["value"] = flat[order]
    return packed.tobytes()


def unpack_topk(fiche: bytes, size: int) -> np.ndarray:
    if len(fiche) % ENTRY_BYTES:
        raise ValueError(f"a top-k fiche is a multiple of {ENTRY_BYTES} bytes, got {len(fiche)}")
    entries = np.frombuffer(fiche, dtype=_DTYPE)
    if entries.size and int(entries["index"].max()) >= size:
        raise ValueError(f"fiche index {int(entries['index'].max())} out of range for a state of {size}")
    flat = np.zeros(size, dtype=np.float32)
    flat[entries["index"]] = entries["value"]
    return flat


def wkv_shape(layout) -> tuple[int, int, int, int]:
    """The WKV state's shape: layers x heads x head size x head size."""
    return (layout.n_layer, layout.n_head, layout.head_size, layout.head_size)


def state_with_wkv(backbone, wkv_flat: np.ndarray) -> list:
    """A full recurrent state: zero token shifts, the given WKV matrices (the restore the replay
    systems and the controls' tuned-state system share)."""
    import torch  # not when the DAG is parsed

    layout = backbone.layout
    state = backbone.zero_state()
    wkv = np.asarray(wkv_flat, dtype=np.float32).reshape(wkv_shape(layout))
    for i in range(layout.n_layer):
        state[3 * i + 1] = torch.from_numpy(wkv[i].copy()).to(state[3 * i + 1].device, torch.float32)
    return state

"""Top-k packing of a state into a fiche: 8 bytes an entry (uint32 index, float32 value).

Shared by state_carry and the replay systems. The k entries of largest magnitude are kept (ties
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

"""Consolidation FLOPs, from metered tokens and the backbone's parameter count.

    forward:       2 x N FLOPs a token (each weight one multiply-add)
    state-tuning:  6 x N FLOPs a trained token (forward, and a backward of twice the forward)
N is every parameter of the checkpoint (embedding and head included), counted from its tensors.
The WKV recurrence and the attention-free mixing add a few percent at these widths and are left
out: the formula is the usual dense-transformer approximation, stated wherever it is used.
"""

from __future__ import annotations

FORMULA = ("FLOPs = 2 x N x forward tokens + 6 x N x trained tokens; N = every parameter of the "
           "checkpoint (embedding and head included); forward tokens as the handle metered them "
           "(a transcript served from the prefill cache counts as read)")


def consolidation(n_params: int, forward_tokens: int, trained_tokens: int = 0) -> int:
    return 2 * n_params * int(forward_tokens) + 6 * n_params * int(trained_tokens)


def parameter_count(checkpoint: str) -> int:
    """Sum of the checkpoint's tensor sizes, read memory-mapped (nothing is loaded)."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)
    return int(sum(t.numel() for t in state.values()))

"""The RWKV-7 WKV through flash-linear-attention's chunked Triton kernels, on CUDA.

`fla.ops.rwkv7.chunk_rwkv7` (fla-core, pinned in the `gpu` extra) is the operator RWKV-PEFT's
state tuning runs on (`--op fla --train_type state`). Its state is [key, value] where ours (the
`rwkv` package's) is [value, key], and it takes the log decay; its recurrence,
    S_t = (diag(exp(gk_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T,    o_t = S_t^T q_t   (scale 1),
is ours transposed, with the same a (= -kk) and b (= kk * iclr). Inputs go in bfloat16, as the
field trains (fla's chunked kernels warn that float32 is unsupported on some GPUs); the state
stays float32. So this path rounds like a bf16 model: tests/test_backbone_wkv_fla.py bounds it
against `wkv_chunked` (outputs, final state, the state gradient) on a GPU, and skips without one.
"""

from __future__ import annotations

import torch

FLA_DTYPE = torch.bfloat16


def unavailable(device) -> str | None:
    """Why the fla path cannot run on `device`, or None when it can."""
    if torch.device(device).type != "cuda":
        return "fla's kernels run on CUDA only"
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        import fla.ops.rwkv7  # noqa: F401
    except Exception as exc:  # not installed, no Triton, or a Triton that finds no usable GPU
        return f"fla-core is not importable ({type(exc).__name__}: {exc}); install the gpu extra: pip install -e '.[gpu]'"
    return None


def wkv7_fla(s0, r, w, k, v, a, b, chunk: int | None = None):
    """`wkv_chunked.wkv7_chunked`'s contract: s0 [H, N, N] ([value, key]); r, w (the decay, in
    (0, 1)), k, v, a, b [T, H, N] -> (y [T, H, N] float32, final state [H, N, N]).
    `chunk` is accepted for the common signature; fla picks its own chunk length."""
    from fla.ops.rwkv7 import chunk_rwkv7

    def seq(x):
        return x.to(FLA_DTYPE).unsqueeze(0).contiguous()  # [1, T, H, N]

    y, s = chunk_rwkv7(seq(r), seq(torch.log(w)), seq(k), seq(v), seq(a), seq(b), scale=1.0,
                       initial_state=s0.float().transpose(-1, -2).unsqueeze(0).contiguous(),
                       output_final_state=True)
    return y[0].float(), s[0].transpose(-1, -2)

"""The RWKV-7 WKV recurrence, differentiable, with memory bounded by a chunk length.

Per head, with S the [value, key] matrix (the `rwkv` package's layout):
    S_t = S_{t-1} diag(w_t) + (S_{t-1} a_t) b_t^T + v_t k_t^T,    y_t = S_t r_t
(the model passes a = -kk, b = kk * iclr; the update is urd.backbone.rwkv7_block.wkv_update).
Plain autograd would keep every S_t: T * H * N * N floats per layer, 4.7 GB per saved tensor at
2K tokens of the 0.1B. This Function keeps only the states at chunk boundaries and, in backward,
recomputes one chunk's states at a time, then runs the exact reverse-time adjoint. Memory:
(T / chunk + chunk) states per layer.

Each step is a handful of fused elementwise ops on the N x N matrices (chosen by timing on CPU,
where batched gemv of this size is slower than multiply-and-sum).
"""

from __future__ import annotations

import torch

from .rwkv7_block import wkv_update


class WKV7(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s0, r, w, k, v, a, b, chunk: int):
        T = r.shape[0]
        col, row = _views(r, w, k, v, a, b)
        ys, S, saved = [], s0, []
        for t in range(T):
            if t % chunk == 0:
                saved.append(S)
            S = _step(S, t, col, row)
            ys.append((S * row["r"][t]).sum(-1))
        ctx.chunk = chunk
        ctx.save_for_backward(r, w, k, v, a, b, *saved)
        return torch.stack(ys), S

    @staticmethod
    def backward(ctx, dy, dsT):
        r, w, k, v, a, b, *saved = ctx.saved_tensors
        chunk, T = ctx.chunk, r.shape[0]
        need_inputs = any(ctx.needs_input_grad[1:7])
        col, row = _views(r, w, k, v, a, b)
        dS = torch.zeros_like(saved[0]) if dsT is None else dsT.clone()
        dY = (torch.zeros_like(r) if dy is None else dy).unsqueeze(-1)  # [T, H, N, 1]
        g = {n: torch.empty_like(r) for n in "rwkvab"} if need_inputs else None
        for c in reversed(range(len(saved))):
            t0, t1 = c * chunk, min(T, (c + 1) * chunk)
            prev = [saved[c]]  # prev[j]: the state before step t0 + j
            for t in range(t0, t1 - 1):
                prev.append(_step(prev[-1], t, col, row))
            for t in reversed(range(t0, t1)):
                Sp = prev[t - t0]
                dS = torch.addcmul(dS, dY[t], row["r"][t])  # y_t = S_t r_t
                dsa = (dS * row["b"][t]).sum(-1, keepdim=True)  # S_t = Sp*w + sa b^T + v k^T
                if need_inputs:
                    sa = (Sp * row["a"][t]).sum(-1, keepdim=True)
                    Y = torch.bmm(dS.transpose(1, 2), torch.cat((col["v"][t], sa), -1))  # dk, db
                    Z = torch.bmm(Sp.transpose(1, 2), torch.cat((dY[t], dsa), -1))  # Sp^T dy, da
                    # dr = S_t^T dy, expanded through the update so S_t itself is never needed
                    vy = (v[t] * dy[t]).sum(-1, keepdim=True)
                    sy = (sa.squeeze(-1) * dy[t]).sum(-1, keepdim=True)
                    g["r"][t] = w[t] * Z[..., 0] + b[t] * sy + k[t] * vy
                    g["v"][t] = (dS * row["k"][t]).sum(-1)
                    g["k"][t], g["b"][t], g["a"][t] = Y[..., 0], Y[..., 1], Z[..., 1]
                    g["w"][t] = (dS * Sp).sum(1)
                dS = torch.addcmul(dS * row["w"][t], dsa, row["a"][t])
            del prev
        need = ctx.needs_input_grad
        grads = [g[n] if g is not None and need[i + 1] else None for i, n in enumerate("rwkvab")]
        return (dS if need[0] else None, *grads, None)


def _views(r, w, k, v, a, b):
    # per-step operands as columns [T, H, N, 1] and rows [T, H, 1, N], made once per call
    xs = dict(r=r, w=w, k=k, v=v, a=a, b=b)
    return ({n: x.unsqueeze(-1) for n, x in xs.items()}, {n: x.unsqueeze(-2) for n, x in xs.items()})


def _step(S, t, col, row):
    # S a as multiply + last-dim sum: faster than batched gemv for N = 64
    sa = (S * row["a"][t]).sum(-1, keepdim=True)
    return wkv_update(S, sa, row["w"][t], row["b"][t], col["v"][t], row["k"][t])


def wkv7(s0, r, w, k, v, a, b, chunk: int = 64):
    """s0: [H, N, N]; r, w, k, v, a, b: [T, H, N] -> (y [T, H, N], final state [H, N, N])."""
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    return WKV7.apply(s0, r, w, k, v, a, b, chunk)


def wkv7_reference(s0, r, w, k, v, a, b):
    """Plain autograd, every state kept, no fused products: the test oracle for short inputs."""
    S, ys = s0, []
    for t in range(r.shape[0]):
        S = S * w[t][:, None, :] + (S @ a[t][:, :, None]) @ b[t][:, None, :] + v[t][:, :, None] @ k[t][:, None, :]
        ys.append((S @ r[t][:, :, None]).squeeze(-1))
    return torch.stack(ys), S

"""The RWKV-7 WKV recurrence in chunks: matrix products within a chunk, the recurrence across
chunks, plain PyTorch (CPU or CUDA), differentiable by autograd.

Per head, S the [value, key] state (the `rwkv` package's layout), the step of `wkv.py`:
    S_t = S_{t-1} diag(w_t) + (S_{t-1} a_t) b_t^T + v_t k_t^T,    y_t = S_t r_t.
Within a chunk starting from S_0, with Γ_t = w_1 ⊙ ... ⊙ w_t and u_t = S_{t-1} a_t, induction gives
    S_t = S_0 diag(Γ_t) + Σ_{s<=t} [u_s (b_s ⊙ Γ_t/Γ_s)^T + v_s (k_s ⊙ Γ_t/Γ_s)^T],
so the u_t solve one unit-lower-triangular system,
    (I - A_ab) U = (a ⊙ Γ_{t-1}) S_0^T + A_ak V,   A_xy[t, s] = (x_t ⊙ Γ_{t-1}/Γ_s) · y_s, s < t,
and the outputs and the next chunk's state are products:
    Y = (r ⊙ Γ) S_0^T + A_rb U + A_rk V   (A_r*[t, s] = (r_t ⊙ Γ_t/Γ_s) · *_s, s <= t),
    S_L = S_0 diag(Γ_L) + U^T (b ⊙ Γ_L/Γ) + V^T (k ⊙ Γ_L/Γ) = S_0 M + D.
Everything that does not involve S_0 (M and D included) is computed for all chunks at once; only
S_L = S_0 M + D steps from chunk to chunk, and Y then takes every chunk's S_0 in one product.
The factors Γ_{t-1} and 1/Γ_s are formed apart: RWKV-7's decay is at least exp(-e^-0.5) = 0.545
a step, so over a chunk of at most `MAX_CHUNK` tokens 1/Γ stays below 1e17, and its square (which
autograd forms) inside fp32's range; `wkv7_chunked` refuses a decay that would not.

Exactness: the same recurrence, summed in another order: it agrees with `wkv.wkv7` (outputs,
final state, and every gradient) to float32 rounding; tests/test_backbone_wkv_chunked.py states
the tolerance.
"""

from __future__ import annotations

import torch

MAX_CHUNK = 64
# A chunk's total log decay below this is refused: autograd forms (b/Γ)/Γ, which overflows fp32
# (3.4e38 = e^88.7) past half of that range. RWKV-7 decays reach -38.8 over 64 tokens, -19.4 over 32.
_MIN_LOG_DECAY = -40.0


def wkv7_chunked(s0, r, w, k, v, a, b, chunk: int = 32):
    """s0: [H, N, N]; r, w, k, v, a, b: [T, H, N] -> (y [T, H, N], final state [H, N, N]), as
    `wkv.wkv7` returns them."""
    if not 1 <= chunk <= MAX_CHUNK:
        raise ValueError(f"chunk must be in [1, {MAX_CHUNK}], got {chunk}")
    T, H, N = r.shape
    n_chunks = -(-T // chunk)
    pad = n_chunks * chunk - T

    def blocks(x, fill):  # [T, H, N] -> [H, n_chunks, chunk, N]; padded steps change nothing
        if pad:
            x = torch.cat((x, x.new_full((pad, H, N), fill)))
        return x.reshape(n_chunks, chunk, H, N).permute(2, 0, 1, 3)

    r, w, k, v, a, b = (blocks(x, f) for x, f in ((r, 0.0), (w, 1.0), (k, 0.0), (v, 0.0), (a, 0.0), (b, 0.0)))
    log_g = torch.cumsum(torch.log(w), dim=2)  # log Γ_t within each chunk
    if not float(log_g[:, :, -1].detach().min()) >= _MIN_LOG_DECAY:  # NaN is refused too
        raise ValueError(f"a decay under exp({_MIN_LOG_DECAY / chunk:.2f}) a step over a chunk of {chunk}: "
                         "use a shorter chunk")
    g_incl, g_prev = torch.exp(log_g), torch.exp(log_g - torch.log(w))
    a_g, r_g = a * g_prev, r * g_incl
    b_i, k_i = b / g_incl, k / g_incl
    strict = torch.ones(chunk, chunk, dtype=torch.bool, device=r.device).tril(-1)
    incl = torch.ones(chunk, chunk, dtype=torch.bool, device=r.device).tril(0)
    zero = r.new_zeros(())
    a_ab = torch.where(strict, a_g @ b_i.transpose(-1, -2), zero)
    a_ak = torch.where(strict, a_g @ k_i.transpose(-1, -2), zero)
    a_rb = torch.where(incl, r_g @ b_i.transpose(-1, -2), zero)
    a_rk = torch.where(incl, r_g @ k_i.transpose(-1, -2), zero)
    m = torch.eye(chunk, dtype=r.dtype, device=r.device) - a_ab
    solved = torch.linalg.solve_triangular(m, torch.cat((a_g, a_ak @ v), dim=-1), upper=False, unitriangular=True)
    w_a, u_1 = solved[..., :N], solved[..., N:]  # U = w_a S_0^T + u_1
    y_local = a_rk @ v + a_rb @ u_1  # what does not depend on S_0
    q = r_g + a_rb @ w_a  # Y = q S_0^T + y_local
    g_last = g_incl[:, :, -1:, :]  # Γ_L, [H, n_chunks, 1, N]
    b_out, k_out = b_i * g_last, k_i * g_last  # b ⊙ Γ_L/Γ, k ⊙ Γ_L/Γ
    # S_L = S_0 M + D with M = diag(Γ_L) + w_a^T b_out, D = u_1^T b_out + V^T k_out: one product
    # a chunk steps; the outputs then come from every chunk's S_0 at once
    m_step = torch.diag_embed(g_last.squeeze(2)) + w_a.transpose(-1, -2) @ b_out
    d_step = u_1.transpose(-1, -2) @ b_out + v.transpose(-1, -2) @ k_out
    # unbind, not [:, c]: each index's backward would zero-fill a whole [H, n_chunks, N, N] gradient
    starts, S = [], s0
    for d_c, m_c in zip(d_step.unbind(1), m_step.unbind(1)):
        starts.append(S)
        S = torch.baddbmm(d_c, S, m_c)
    y = q @ torch.stack(starts, dim=1).transpose(-1, -2) + y_local
    return y.reshape(H, n_chunks * chunk, N)[:, :T].permute(1, 0, 2), S

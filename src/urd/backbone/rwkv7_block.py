"""The RWKV-7 (x070) block, written once: time mix, the WKV step, channel mix.

One layer, C = H heads x N channels. x is the layer-normed input [..., C] (one token per row, or a
sequence [..., T, C]), x' the token before it (the token shift), and the weights go by their
checkpoint names (`z[p + name]`). The code follows these lines in order:

time mix (`time_mix`: `_projections`, the WKV, `_output`)
    d = x' - x;   x_m = x + d * mu_m      for m in r, w, k, v, a, g   (mu_m: the weight x_m)
    r = x_r W_r,   k = x_k W_k,   v = x_v W_v                       (receptance, key, value)
    w = tanh(x_w w1) w2,   a = sigmoid(a0 + x_a a1 a2),   g = sigmoid(x_g g1) g2
    kk = normalize(k * k_k), per head;   k = k * (1 + (a - 1) * k_a)
    layer 0: v_first = v;   later layers: v = v + (v_first - v) * sigmoid(v0 + x_v v1 v2)
    w = exp(-e^-0.5 * sigmoid(w0 + w))                               (in float32; 0.606531 = e^-0.5)
    per head, with the state S [N value x N key] (the WKV; its a and b arguments are -kk, kk * a):
        S' = S diag(w) + (S (-kk)) (kk * a)^T + v k^T,   y = S' r    (`wkv_update`, `wkv_step`)
    out = (group_norm_H(y; ln_x, eps 64e-5) + (r * k * r_k summed per head) v) * g W_o
channel mix (`channel_mix`)
    k = (x + (x' - x) * x_k) W_k;   out = relu(k)^2 W_v
block (`block`)
    x = x + time_mix(ln1(x));   x = x + channel_mix(ln2(x))

This is the `rwkv` package's RWKV_x070 (CPU path): ln0 is applied to the embedding by the caller.
What differs between callers is a `Way`: how a frozen projection is multiplied (`mm`: the
package's [in, out] weights, oneDNN-packed ones, F.linear over [out, in] ones in fp32 or bf16),
how the WKV runs over the layer's state (one step, in place, for decoding; chunked, sequential or
fla over a sequence for training), and whether x has a time axis. The decoding step reads S once
for both S a and y (`wkv_step`); the sequence paths sum the same recurrence in their own order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

DECAY_SCALE = 0.606531  # e^-0.5: the decay's exponent, -e^-0.5 * sigmoid(.), as the package rounds it
GROUP_NORM_EPS = 64e-5


@dataclass(frozen=True)
class Way:
    """How a pass runs the block. mm(x, W): x times a frozen projection W. wkv(S, r, w, k, v, a, b)
    -> (y, S'): the recurrence over [..., C] operands from the layer's state S (y [..., C] or
    [..., H, N], tokens in x's order). last(x, x'): the token shift a sequence leaves for the next
    call; None for one step (x [..., C], no time axis: the shift it leaves is x itself)."""

    mm: Callable
    wkv: Callable
    last: Callable | None = None

    def shift(self, x, prev):
        """x' - x: the token shift's difference."""
        return prev - x if self.last is None else shifted(x, prev) - x

    def after(self, x, prev):
        return x if self.last is None else self.last(x, prev)


def shifted(x, prev):
    """x's tokens one step later along time (the second-last axis), `prev` first."""
    return torch.cat((prev.unsqueeze(-2).expand(*x.shape[:-2], 1, x.shape[-1]), x[..., :-1, :]), dim=-2)


def layer_norm(x, z, name):
    return F.layer_norm(x, (x.shape[-1],), z[name + ".weight"], z[name + ".bias"])


def block(z, i: int, H: int, N: int, x, att_prev, S, ffn_prev, v_first, way: Way):
    """Layer i over x [..., C] (the residual stream) from its state (time-mix shift, WKV S,
    channel-mix shift): (x, att_last, S', ffn_last, v_first), the package's slot order."""
    pre = f"blocks.{i}."
    xa = layer_norm(x, z, pre + "ln1")
    dx, S, v_first = time_mix(z, pre + "att.", i, H, N, xa, way.shift(xa, att_prev), v_first, S, way)
    x = x + dx
    xf = layer_norm(x, z, pre + "ln2")
    x = x + channel_mix(z, pre + "ffn.", xf, way.shift(xf, ffn_prev), way.mm)
    return x, way.after(xa, att_prev), S, way.after(xf, ffn_prev), v_first


def time_mix(z, p: str, layer_id: int, H: int, N: int, x, d, v_first, S, way: Way):
    """RWKV_x070_TMix: x [..., C] and its shift difference d = x' - x -> (out, S', v_first)."""
    r, w, k, v, a, g, kk, v_first = _projections(z, p, layer_id, H, N, x, d, v_first, way.mm)
    y, S = way.wkv(S, r, w, k, v, -kk, kk * a)
    return _output(z, p, H, N, y, r, k, v, g, way.mm), S, v_first


def _projections(z, p, layer_id, H, N, x, d, v_first, mm):
    """r, w (float32), k, v, a, g, kk and v_first of the time mix."""
    xr, xw, xk = x + d * z[p + "x_r"], x + d * z[p + "x_w"], x + d * z[p + "x_k"]
    xv, xa, xg = x + d * z[p + "x_v"], x + d * z[p + "x_a"], x + d * z[p + "x_g"]

    r = mm(xr, z[p + "receptance.weight"])
    w = torch.tanh(xw @ z[p + "w1"]) @ z[p + "w2"]
    k = mm(xk, z[p + "key.weight"])
    v = mm(xv, z[p + "value.weight"])
    a = torch.sigmoid(z[p + "a0"] + (xa @ z[p + "a1"]) @ z[p + "a2"])
    g = torch.sigmoid(xg @ z[p + "g1"]) @ z[p + "g2"]

    kk = F.normalize((k * z[p + "k_k"]).unflatten(-1, (H, N)), dim=-1, p=2.0).flatten(-2)
    k = k * (1 + (a - 1) * z[p + "k_a"])
    if layer_id == 0:
        v_first = v
    else:
        v = v + (v_first - v) * torch.sigmoid(z[p + "v0"] + (xv @ z[p + "v1"]) @ z[p + "v2"])
    w = torch.exp(-DECAY_SCALE * torch.sigmoid((z[p + "w0"] + w).float()))
    return r, w, k, v, a, g, kk, v_first


def _output(z, p, H, N, y, r, k, v, g, mm):
    """The time mix's output from the WKV's y: group norm per head, the r.k bonus, gate, W_o."""
    shape, C = r.shape, r.shape[-1]
    y = F.group_norm(y.to(dtype=r.dtype).reshape(-1, C), H, z[p + "ln_x.weight"], z[p + "ln_x.bias"],
                     eps=GROUP_NORM_EPS).view(shape)
    heads = lambda t: t.view(*shape[:-1], H, N)
    y = y + (heads(r * k * z[p + "r_k"]).sum(-1, keepdim=True) * heads(v)).view(shape)
    return mm(y * g, z[p + "output.weight"])


def channel_mix(z, p: str, x, d, mm):
    """RWKV_x070_CMix: x [..., C] and its shift difference d = x' - x."""
    k = mm(x + d * z[p + "x_k"], z[p + "key.weight"])
    # in place where no graph needs k: the [..., 4C] product is ours
    k = torch.relu(k) ** 2 if k.requires_grad else torch.relu_(k).square_()
    return mm(k, z[p + "value.weight"])


def wkv_step(S, r, w, k, v, a, b, inplace: bool = False):
    """One WKV step: S [..., N, N] fp32, r, w, k, v, a, b [..., N] fp32 -> (y = S' r, S'; `S`
    itself when `inplace`). S a and y come from one pass over the old S (the states are most of
    the memory a decoding step touches):
        S' r = S (w * r) + (S a)(b . r) + v (k . r).
    Two matrix-vector products where the package forms the N x N rank-1 matrix (N^2 operations
    instead of N^3; it rounds differently)."""
    prod = S @ torch.stack((a, w * r), dim=-1)  # [..., N, 2]
    sa, y = prod[..., :1], prod[..., 1]
    y = y + sa.squeeze(-1) * (b * r).sum(-1, keepdim=True) + v * (k * r).sum(-1, keepdim=True)
    return y, wkv_update(S, sa, w.unsqueeze(-2), b.unsqueeze(-2), v.unsqueeze(-1), k.unsqueeze(-2), inplace)


def wkv_update(S, sa, w, b, v, k, inplace: bool = False):
    """S' = S diag(w) + sa b^T + v k^T, given sa = S a: S [..., N, N]; w, b, k rows [..., 1, N];
    sa, v columns [..., N, 1]. `inplace`: into S itself (its owner drops the old state)."""
    S = S.mul_(w) if inplace else S * w
    S.addcmul_(sa, b)
    return S.addcmul_(v, k)

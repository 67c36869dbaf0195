"""The chunked WKV against the sequential one (urd.backbone.wkv) and the plain-autograd oracle:
outputs, final state and every gradient, on the decays and keys RWKV-7 makes, over lengths
that are and are not a multiple of the chunk; and the model's loss and state gradient with
either WKV."""

import pytest
import torch

from urd.backbone.rwkv7_torch import RWKV7
from urd.backbone.tiny import random_state_dict
from urd.backbone.wkv import wkv7, wkv7_reference
from urd.backbone.wkv_chunked import wkv7_chunked

TOL = dict(rtol=2e-4, atol=2e-5)  # float32 sums in another order


def inputs(T, H=3, N=16, seed=0, dtype=torch.float32):
    """What RWKV-7's time mix passes: decay in (0.545, 1), a = -kk, b = kk * iclr with kk unit."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=dtype)
    kk = torch.nn.functional.normalize(rnd(T, H, N), dim=-1)
    iclr = torch.sigmoid(rnd(T, H, N))
    w = torch.exp(-0.606531 * torch.sigmoid(2 * rnd(T, H, N)))
    return [rnd(H, N, N) * 0.5, rnd(T, H, N), w, rnd(T, H, N) * 0.3, rnd(T, H, N), -kk, kk * iclr]


@pytest.mark.parametrize("T,chunk", [(1, 8), (7, 8), (64, 16), (100, 32), (130, 64)])
def test_outputs_and_final_state_match_the_sequential_wkv(T, chunk):
    args = inputs(T, seed=T)
    y_ref, s_ref = wkv7(*args, chunk=16)
    y, s = wkv7_chunked(*args, chunk=chunk)
    torch.testing.assert_close(y, y_ref, **TOL)
    torch.testing.assert_close(s, s_ref, **TOL)


def test_every_gradient_matches_the_plain_autograd_oracle():
    args = [x.double().requires_grad_() for x in inputs(45, seed=3)]
    y_ref, s_ref = wkv7_reference(*args)
    dy, ds = torch.randn_like(y_ref), torch.randn_like(s_ref)
    want = torch.autograd.grad((y_ref * dy).sum() + (s_ref * ds).sum(), args)
    y, s = wkv7_chunked(*args, chunk=16)
    got = torch.autograd.grad((y * dy).sum() + (s * ds).sum(), args)
    for name, g, w in zip(["s0", "r", "w", "k", "v", "a", "b"], got, want):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-10, msg=f"gradient of {name}")


def test_float32_gradients_match_the_sequential_wkvs_backward():
    args = [x.requires_grad_() for x in inputs(200, seed=5)]
    y_ref, s_ref = wkv7(*args, chunk=64)
    dy = torch.randn_like(y_ref)
    want = torch.autograd.grad((y_ref * dy).sum() + s_ref.sum(), args)
    y, s = wkv7_chunked(*args, chunk=32)
    got = torch.autograd.grad((y * dy).sum() + s.sum(), args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-4)


def test_rwkv7s_strongest_decay_keeps_every_gradient_finite_and_a_stronger_one_is_refused():
    s0, r, w, k, v, a, b = inputs(64)
    strongest = torch.full_like(w, torch.exp(torch.tensor(-0.606531)).item()).requires_grad_()  # sigmoid -> 1
    y, s = wkv7_chunked(s0, r, strongest, k, v, a, b, chunk=64)
    (grad,) = torch.autograd.grad(y.sum() + s.sum(), strongest)
    assert torch.isfinite(grad).all()
    for decay in (0.5, float("nan")):
        with pytest.raises(ValueError, match="shorter chunk"):
            wkv7_chunked(s0, r, torch.full_like(w, decay), k, v, a, b, chunk=64)
    with pytest.raises(ValueError, match="chunk must be"):
        wkv7_chunked(s0, r, w, k, v, a, b, chunk=65)


def test_the_model_loss_and_state_gradient_are_the_same_with_either_wkv():
    sd = random_state_dict(1, n_layer=2, n_embd=64)
    toks = torch.randint(1, 65530, (150,), generator=torch.Generator().manual_seed(0))
    out = {}
    for wkv in ("sequential", "chunked"):
        m = RWKV7(sd, wkv=wkv)
        ts = m.zero_time_state(requires_grad=True)
        loss = m.loss(toks, ts)
        loss.backward()
        out[wkv] = (loss.detach(), ts.grad)
    torch.testing.assert_close(out["chunked"][0], out["sequential"][0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["chunked"][1], out["sequential"][1], rtol=1e-3, atol=1e-6)

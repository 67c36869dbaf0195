"""flash-linear-attention's RWKV-7 kernels (urd.backbone.wkv_fla) against the chunked PyTorch WKV,
on a GPU with fla-core installed (the `gpu` extra); elsewhere the path choice, and the arguments
against fla's documented recurrence in place of its kernels.
fla takes bfloat16 inputs, so it is held to bf16-level agreement: relative error of outputs and
final state, and the direction of the state gradient state-tuning follows."""

import sys
import types

import pytest
import torch
from test_backbone_wkv_chunked import inputs

from urd.backbone import wkv_fla
from urd.backbone.rwkv7_torch import RWKV7, resolve_wkv
from urd.backbone.tiny import random_state_dict
from urd.backbone.wkv_chunked import wkv7_chunked
from urd.core.errors import InputError

gpu = pytest.mark.skipif(wkv_fla.unavailable("cuda") is not None,
                         reason=f"fla path: {wkv_fla.unavailable('cuda')}")


def test_auto_runs_the_chunked_path_where_fla_cannot_and_a_named_fla_path_there_is_refused():
    sd = random_state_dict(0, n_layer=1, n_embd=64)
    assert RWKV7(sd, wkv="auto").wkv == "chunked"  # CPU: fla's kernels are CUDA-only
    with pytest.raises(InputError, match=r"replay\.wkv.*CUDA only"):
        RWKV7(sd, wkv="fla")
    with pytest.raises(InputError, match="auto or one of"):
        resolve_wkv("flash", "cpu")


def rel(x, ref):
    return float((x - ref).norm() / ref.norm())


@gpu
@pytest.mark.parametrize("T", [1, 50, 300])
def test_fla_outputs_and_state_gradient_agree_with_the_chunked_wkv(T):
    args = [x.cuda().requires_grad_() for x in inputs(T, H=4, N=64, seed=T)]
    y_ref, s_ref = wkv7_chunked(*args, chunk=32)
    dy = torch.randn_like(y_ref)
    (g_ref,) = torch.autograd.grad((y_ref * dy).sum() + s_ref.sum(), args[0])
    y, s = wkv_fla.wkv7_fla(*args)
    (g,) = torch.autograd.grad((y * dy).sum() + s.sum(), args[0])
    assert y.dtype == s.dtype == torch.float32 and y.shape == y_ref.shape and s.shape == s_ref.shape
    assert rel(y, y_ref) < 2e-2 and rel(s, s_ref) < 2e-2
    assert torch.nn.functional.cosine_similarity(g.flatten(), g_ref.flatten(), dim=0) > 0.999


@gpu
def test_the_model_state_gradient_with_fla_points_where_the_chunked_one_does():
    sd = random_state_dict(1, n_layer=2, n_embd=128)
    toks = torch.randint(1, 65530, (200,), generator=torch.Generator().manual_seed(0))
    out = {}
    # fla alone, and as a bf16 tuning job runs it: fla's autograd Function under selective checkpointing
    for key, wkv, kw in (("chunked", "chunked", {}), ("fla", "fla", {}),
                         ("fla-bf16", "fla", dict(precision="bf16", checkpoint_layers=True))):
        m = RWKV7(sd, "cuda", wkv=wkv, **kw)
        assert m.wkv == wkv
        ts = m.zero_time_state(requires_grad=True)
        loss = m.loss(toks, ts)
        loss.backward()
        out[key] = (float(loss), ts.grad.flatten())
    for key in ("fla", "fla-bf16"):
        assert abs(out[key][0] - out["chunked"][0]) < 1e-2 * abs(out["chunked"][0])
        assert torch.nn.functional.cosine_similarity(out[key][1], out["chunked"][1], dim=0) > 0.99
    assert RWKV7(sd, "cuda", wkv="auto").wkv == "fla"


def test_the_arguments_reach_fla_in_its_own_convention(monkeypatch):
    """Without a GPU, fla's operator is replaced by its documented recurrence (fla-core 0.6.0,
    ops/generalized_delta_rule/dplr/naive.py, in chunk_rwkv7's [B, T, H, K] layout): state
    [key, value], S_t = diag(exp(w_t)) S + b_t (a_t^T S) + k_t v_t^T, o_t = scale * S_t^T r_t.
    A swapped a and b, a missing transpose or a decay passed as is would not match the chunked
    WKV here."""

    def chunk_rwkv7(r, w, k, v, a, b, scale, initial_state, output_final_state):
        assert r.dtype == torch.bfloat16 and initial_state.dtype == torch.float32 and output_final_state
        r, w, k, v, a, b = (x.float()[0] for x in (r, w, k, v, a, b))
        S, out = initial_state[0].clone(), []
        for t in range(r.shape[0]):
            sa = torch.einsum("hk,hkv->hv", a[t], S)
            S = S * w[t].exp()[..., None] + b[t][..., None] * sa[:, None, :] + k[t][..., None] * v[t][:, None, :]
            out.append(scale * torch.einsum("hk,hkv->hv", r[t], S))
        return torch.stack(out)[None], S[None]

    fake = types.ModuleType("fla.ops.rwkv7")
    fake.chunk_rwkv7 = chunk_rwkv7
    monkeypatch.setitem(sys.modules, "fla.ops.rwkv7", fake)
    args = inputs(40, H=2, N=8, seed=11)
    y_ref, s_ref = wkv7_chunked(*args, chunk=16)
    y, s = wkv_fla.wkv7_fla(*args)
    assert rel(y, y_ref) < 2e-2 and rel(s, s_ref) < 2e-2  # bf16 inputs
    assert rel(y, y_ref) > 0  # and it did go through bf16

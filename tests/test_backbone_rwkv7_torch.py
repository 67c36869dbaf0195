"""Differentiable RWKV-7: exact adjoint of the WKV recurrence, logits equal to the rwkv package's
(non-zero initial state), gradients reach time_state and a step of descent lowers the loss."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml

from urd.backbone.rwkv7_torch import PRECISIONS, RWKV7
from urd.backbone.rwkv_pkg import load_rwkv7
from urd.backbone.tiny import write_tiny_checkpoint
from urd.backbone.wkv import wkv7, wkv7_reference
from urd.core.errors import InputError

TOL = dict(rtol=1e-4, atol=1e-4)  # fp32, 2-3 layers: observed max |diff| ~1e-5 on logits ~10


def _wkv_inputs(T=7, H=2, N=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = torch.float64
    s0 = torch.randn(H, N, N, generator=g, dtype=d)
    r, k, v = (torch.randn(T, H, N, generator=g, dtype=d) for _ in range(3))
    w = 0.5 + 0.5 * torch.rand(T, H, N, generator=g, dtype=d)
    kk = F.normalize(torch.randn(T, H, N, generator=g, dtype=d), dim=-1)
    iclr = torch.rand(T, H, N, generator=g, dtype=d)
    return [x.requires_grad_() for x in (s0, r, w, k, v, -kk, kk * iclr)]


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_wkv_gradient_is_exact(chunk):
    xs = _wkv_inputs()
    assert torch.autograd.gradcheck(lambda *a: wkv7(*a, chunk=chunk), xs)
    y1, s1 = wkv7(*xs, chunk=chunk)
    y2, s2 = wkv7_reference(*xs)
    torch.testing.assert_close(y1, y2)
    torch.testing.assert_close(s1, s2)


def test_wkv_gradient_when_only_the_initial_state_is_trained():
    s0, *rest = _wkv_inputs(seed=1)
    rest = [x.detach() for x in rest]  # layer 0: inputs do not depend on any state
    assert torch.autograd.gradcheck(lambda s: wkv7(s, *rest, chunk=3), (s0,))


@pytest.fixture(scope="module", params=[(2, 128), (3, 192)], ids=["tiny-L2-D128", "L3-D192"])
def pair(request, tmp_path_factory):
    n_layer, n_embd = request.param
    path = write_tiny_checkpoint(tmp_path_factory.mktemp("m") / "m.pth", seed=21,
                                 n_layer=n_layer, n_embd=n_embd)
    return load_rwkv7(path[:-4], "cpu fp32"), RWKV7.load(path, wkv_chunk=16)


def _random_state(m, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(m.time_state_shape, generator=g),
            torch.randn(m.n_layer, 2, m.n_embd, generator=g))


def _package_state(ts, shifts):
    st = []
    for i in range(ts.shape[0]):
        st += [shifts[i, 0].clone(), ts[i].clone(), shifts[i, 1].clone()]
    return st


def test_logits_match_rwkv_package_with_nonzero_state(pair):
    pkg, m = pair
    ts, shifts = _random_state(m, 0)
    toks = torch.randint(1, 65530, (48,), generator=torch.Generator().manual_seed(1)).tolist()
    ref, ref_state = pkg.forward(toks, _package_state(ts, shifts), full_output=True)
    out, state = m.forward(toks, ts, shifts=shifts, return_state=True)
    assert out.shape == (48, 65536)
    torch.testing.assert_close(out, ref, **TOL)
    for a, b in zip(state, ref_state):
        torch.testing.assert_close(a, b, **TOL)
    # WKV state only (shifts zero), as state-tuning uses it
    ref2, _ = pkg.forward(toks, _package_state(ts, torch.zeros_like(shifts)), full_output=True)
    torch.testing.assert_close(m.forward(toks, ts), ref2, **TOL)
    # and the state matters: the zero state gives different logits
    assert not torch.allclose(m.forward(toks), ref2, atol=1e-2)


@pytest.mark.parametrize("wkv", ["chunked", "sequential"])
def test_a_batch_from_one_state_is_each_sequence_run_alone(tmp_path, wkv):
    """tokens [B, T]: every row from the same state, outputs, final states and the state's
    gradient those of the rows run one at a time (the batch folds into the WKV's heads)."""
    m = RWKV7.load(write_tiny_checkpoint(tmp_path / "m.pth", seed=9, n_layer=2, n_embd=128), wkv=wkv, wkv_chunk=16)
    ts, shifts = _random_state(m, 7)
    toks = torch.randint(1, 65530, (3, 21), generator=torch.Generator().manual_seed(8))
    ts_b, ts_1 = ts.clone().requires_grad_(), ts.clone().requires_grad_()
    h, state = m.hidden(toks, ts_b, shifts=shifts)
    assert h.shape == (3, 21, m.n_embd) and state[1].shape == (3, m.n_head, m.head_size, m.head_size)
    h.square().sum().backward()
    alone = 0
    for b in range(3):
        hb, sb = m.hidden(toks[b], ts_1, shifts=shifts)
        torch.testing.assert_close(h[b], hb, **TOL)
        for x, y in zip(state, sb):
            torch.testing.assert_close(x[b], y, **TOL)
        alone = alone + hb.square().sum()
    alone.backward()
    torch.testing.assert_close(ts_b.grad, ts_1.grad, rtol=1e-4, atol=1e-3)
    assert not torch.allclose(h[0], h[1], atol=1e-2)  # the rows are not one row repeated


def test_loss_equals_cross_entropy_of_full_logits(pair):
    _, m = pair
    ts, _ = _random_state(m, 2)
    toks = torch.randint(1, 65530, (160,), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = F.cross_entropy(m.forward(toks, ts)[:-1], toks[1:])
        torch.testing.assert_close(m.loss(toks, ts, head_chunk=128), ref, **TOL)
        tg = toks.clone()
        tg[:100] = -100  # train on the tail only
        tg = torch.cat((tg[1:], tg.new_full((1,), -100)))
        ref_tail = F.cross_entropy(m.forward(toks, ts)[99:-1], toks[100:])
        torch.testing.assert_close(m.loss(toks, ts, targets=tg), ref_tail, **TOL)


def test_gradient_reaches_time_state_and_a_step_lowers_loss(pair):
    _, m = pair
    toks = torch.randint(1, 65530, (96,), generator=torch.Generator().manual_seed(4))
    ts = (0.3 * _random_state(m, 5)[0]).requires_grad_()
    loss = m.loss(toks, ts)
    loss.backward()
    grad = ts.grad.clone()
    assert torch.isfinite(grad).all()
    assert all(grad[i].abs().sum() > 0 for i in range(m.n_layer))  # every layer's state learns
    # directional finite difference agrees with the analytic gradient
    d = grad / grad.norm()
    eps = 1e-2
    with torch.no_grad():
        fd = (m.loss(toks, ts + eps * d) - m.loss(toks, ts - eps * d)) / (2 * eps)
    assert abs(fd.item() - grad.norm().item()) <= 0.05 * grad.norm().item()
    opt = torch.optim.Adam([ts], lr=1e-2)
    opt.step()
    with torch.no_grad():
        assert m.loss(toks, ts) < loss.detach()


# bf16 recomputes selectively (the products kept) and is compared at one chunk length: another
# summation order in the WKV can move a value across a bf16 rounding step of the next product
@pytest.mark.parametrize("precision,chunks", [("fp32", (64, 7)), ("bf16", (7, 7))])
def test_checkpointed_layers_and_wkv_chunk_do_not_change_gradients(tmp_path, precision, chunks):
    path = write_tiny_checkpoint(tmp_path / "c.pth", seed=8)
    toks = torch.randint(1, 65530, (50,), generator=torch.Generator().manual_seed(6))
    grads = []
    for kw in (dict(wkv_chunk=chunks[0]), dict(wkv_chunk=chunks[1], checkpoint_layers=True)):
        m = RWKV7.load(path, precision=precision, **kw)
        ts = (0.3 * _random_state(m, 2)[0]).requires_grad_()
        m.loss(toks, ts).backward()
        grads.append(ts.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6)
    assert grads[0].abs().max() > 1e-4


def test_token_meter_and_input_checks(pair):
    _, m = pair
    before = m.tokens_processed
    with torch.no_grad():
        m.forward([1, 2, 3])
        m.loss([1, 2, 3, 4])
    assert m.tokens_processed - before == 7
    with pytest.raises(InputError):
        m.forward([1, 2], torch.zeros(1, 1, 64, 64))
    with pytest.raises(InputError):
        m.forward([])
    with pytest.raises(InputError):
        m.forward([65536])
    with pytest.raises(InputError):
        m.loss([1])  # nothing to predict
    for bad in (-5, 65536):  # only -100 is "ignored"; anything else outside the vocabulary is refused
        with pytest.raises(InputError, match="target id"):
            m.loss([1, 2, 3], targets=[2, bad, -100])


def _fused_and_autograd_head(m):
    """Loss and time-state gradient through the fused head, then through plain autograd over the
    whole [T, vocab] logits, with ignored targets and a ragged last chunk."""
    toks = torch.randint(1, 65530, (70,), generator=torch.Generator().manual_seed(9))
    tg = torch.cat((toks[1:], toks.new_full((1,), -100)))
    tg[10:25] = -100
    ts0 = 0.3 * _random_state(m, 6)[0]
    grads, losses = [], []
    for fused in (True, False):
        ts = ts0.clone().requires_grad_()
        if fused:
            loss = m.loss(toks, ts, targets=tg, head_chunk=32)
        else:
            loss = F.cross_entropy(m.forward(toks, ts), tg, ignore_index=-100)
        (2.5 * loss).backward()  # the incoming gradient scales the kept one
        grads.append(ts.grad)
        losses.append(loss.detach())
    assert grads[1].abs().max() > 1e-4  # the comparison is not of zeros
    return losses, grads


def test_the_loss_gradient_formed_in_the_forward_pass_is_autograds(pair):
    """The fused head (its gradient formed chunk by chunk in the forward pass) against autograd."""
    losses, grads = _fused_and_autograd_head(pair[1])
    torch.testing.assert_close(losses[0], losses[1], **TOL)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-7)


def test_bf16_products_stay_within_the_stated_tolerance_of_fp32(tmp_path):
    """precision="bf16" rounds the frozen weight products to bfloat16 (8-bit mantissa): the loss
    within 2e-4 relative and the state gradient's direction within cosine 0.9997 of fp32's (observed
    2e-5 and 0.99997), on non-zero states, with ignored targets; yet not fp32's result (the weights
    really are rounded)."""
    path = write_tiny_checkpoint(tmp_path / "c.pth", seed=8, n_layer=3, n_embd=192)
    toks = torch.randint(1, 65530, (300,), generator=torch.Generator().manual_seed(6))
    tg = torch.cat((toks[1:], toks.new_full((1,), -100)))
    tg[40:60] = -100
    losses, grads = [], []
    for precision in ("fp32", "bf16"):
        m = RWKV7.load(path, wkv_chunk=32, checkpoint_layers=True, precision=precision)
        ts = (0.3 * _random_state(m, 4)[0]).requires_grad_()
        loss = m.loss(toks, ts, targets=tg, head_chunk=128)
        loss.backward()
        losses.append(loss.item())
        grads.append(ts.grad.flatten())
    assert abs(losses[1] - losses[0]) <= 2e-4 * abs(losses[0])
    assert F.cosine_similarity(grads[0], grads[1], dim=0) > 0.9997
    assert losses[1] != losses[0] and not torch.equal(grads[0], grads[1])


def test_an_unknown_precision_is_refused_naming_the_key(tmp_path):
    path = write_tiny_checkpoint(tmp_path / "c.pth", seed=8)
    with pytest.raises(InputError, match=r"replay\.precision.*fp16"):
        RWKV7.load(path, precision="fp16")
    # the config's schema admits exactly the precisions the model runs
    schema = yaml.safe_load((Path(__file__).parents[1] / "config" / "schema.yaml").read_text())
    assert schema["properties"]["replay"]["properties"]["precision"]["enum"] == list(PRECISIONS)


def test_the_fused_head_under_bf16_is_autograds_through_the_same_bf16_products(tmp_path):
    """Under bf16 the fused head multiplies bf16 copies of the softmax by the bf16 head; autograd
    through the full logits takes the same rounding in its own order (observed 1 - cosine 1e-5;
    with the ignored rows left unmasked it is 0.06)."""
    m = RWKV7.load(write_tiny_checkpoint(tmp_path / "c.pth", seed=3), wkv_chunk=16, precision="bf16")
    losses, grads = _fused_and_autograd_head(m)
    torch.testing.assert_close(losses[0], losses[1], **TOL)
    assert F.cosine_similarity(grads[0].flatten(), grads[1].flatten(), dim=0) > 0.9999


def test_the_fused_head_gives_plain_exps_bytes_under_flush_and_keeps_every_normal_probability():
    """On the CPU in float32 the fused head sends log-probabilities under log(FLT_MIN) to -inf
    before its exp (a subnormal exp is 10-30x slower there): under the tuning job's
    flush-denormal, its gradient is the plain softmax's bit for bit, on rows whose gradient is
    nothing but the probabilities at the float32 steps either side of the threshold (the
    target's is 1.0 exactly, the rest at -95, flushed): a probability of 1.2e-38 kept is seen."""
    from urd.backbone.rwkv7_torch import LOG_TINY, _HeadNLL

    g = torch.Generator().manual_seed(3)
    edge = torch.tensor(LOG_TINY, dtype=torch.float32)
    near = [edge]
    for _ in range(20):  # the 20 float32 values above the threshold and the 20 below it
        near = [torch.nextafter(near[0], torch.tensor(0.0))] + near + [torch.nextafter(near[-1], torch.tensor(-1e9))]
    logits = torch.cat((torch.zeros(1), torch.stack(near), torch.full((40,), -95.0)))
    head = torch.stack((logits, torch.cat((torch.zeros(1), torch.rand(len(logits) - 1, generator=g) + 0.5))), dim=1)
    h = torch.tensor([[1.0, 0.0]] * 3, requires_grad=True)  # each row's logits: the first column
    targets = torch.tensor([0, 0, -100])
    keep = (targets != -100).float().unsqueeze(1)
    torch.set_flush_denormal(True)  # tests run with it off: restored below
    try:
        _HeadNLL.apply(h, head, targets, 2).backward()
        logp = torch.log_softmax(F.linear(h.detach(), head), dim=1)
        below = logp < LOG_TINY
        assert below.sum() >= 2 * (20 + 40) and ((logp >= LOG_TINY) & (logp < -87.3)).sum() >= 2 * 20
        p = logp.exp()
        # flush zeroes what the head skips, and the threshold's own value (a hair under FLT_MIN)
        assert torch.equal(p == 0, logp <= edge) and (below != (logp <= edge)).sum() == 3
        p.scatter_add_(1, targets.clamp(min=0).unsqueeze(1), -keep)
        want = F.linear(p * keep, head.t())  # under flush, as the tuning job computes it
    finally:
        torch.set_flush_denormal(False)
    assert torch.equal(h.grad, want)
    assert h.grad[:2].abs().min() > 0 and h.grad[2].abs().max() == 0  # the ignored row sends nothing


@pytest.mark.parametrize("const", [-100.0, 1.5])
def test_a_head_whose_rows_the_checkpoint_fixes_gives_the_full_softmaxs_loss_and_gradient(tmp_path, const):
    """A final-norm channel of weight 0 outputs its bias, so head rows zero elsewhere score one
    logit at every position (the learned backbone's untrained rows: -100). The loss over the live
    rows with the fixed ones in closed form equals the full softmax's, and so does the state's
    gradient, to float32 rounding, with targets on live and on fixed rows and some ignored; at a
    fixed logit near the live ones (1.5) a wrong closed form would show."""
    from urd.backbone.tiny import random_state_dict

    sd = random_state_dict(5, n_layer=2, n_embd=128)
    sd["ln_out.weight"][-1], sd["ln_out.bias"][-1] = 0.0, 1.0
    fixed = torch.arange(sd["head.weight"].shape[0]) >= 3000  # rows 3,000 on: fixed at `const`
    sd["head.weight"][fixed] = 0.0
    sd["head.weight"][fixed, -1] = const
    m = RWKV7(sd, wkv_chunk=16)
    assert m.rows is not None and m.rows.live == 3000
    toks = torch.randint(1, 65530, (200,), generator=torch.Generator().manual_seed(2))
    tg = torch.cat((toks[1:], toks.new_full((1,), -100)))
    tg[:40] = torch.randint(1, 3000, (40,), generator=torch.Generator().manual_seed(3))  # live targets
    tg[60:70] = -100
    out = []
    for rows in (m.rows, None):
        m.rows = rows
        ts = (0.3 * _random_state(m, 4)[0]).requires_grad_()
        loss = m.loss(toks, ts, targets=tg, head_chunk=64)
        loss.backward()
        out.append((loss.detach(), ts.grad))
    torch.testing.assert_close(out[0][0], out[1][0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out[0][1], out[1][1], rtol=1e-5, atol=1e-7)
    # a released checkpoint fixes no row: every row live, the full softmax runs
    assert RWKV7(random_state_dict(5, n_layer=2, n_embd=128), wkv_chunk=16).rows is None

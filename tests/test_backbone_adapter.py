"""Backbone over the rwkv package: state hygiene, canonical state bytes, greedy decoding, meter."""

import struct

import pytest
import torch

from urd.backbone.adapter import END, MAX_NEW_TOKENS, STOP, Backbone, greedy_token
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.errors import InputError, UrdError

PROMPT = "User: what is the value of k42?\n\nAssistant:"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return write_tiny_checkpoint(tmp_path_factory.mktemp("bb") / "tiny.pth", seed=11)


@pytest.fixture(scope="module")
def bb(ckpt):
    return Backbone.load(ckpt)


def _warm_state(bb):
    _, st = bb.prefill(bb.tokenizer.encode("some context: key k1 -> AB12CD34EF56\n"))
    return st


def test_load_with_or_without_suffix(ckpt, bb):
    assert (bb.n_layer, bb.n_embd, bb.n_head, bb.head_size, bb.vocab_size) == (2, 128, 2, 64, 65536)
    other = Backbone.load(ckpt[: -len(".pth")])
    toks = bb.tokenizer.encode(PROMPT)
    assert torch.equal(bb.prefill(toks)[0], other.prefill(toks)[0])
    with pytest.raises(InputError):
        Backbone.load(ckpt + ".missing.pth")
    with pytest.raises(InputError):
        Backbone.load(ckpt, strategy="cpu int8")


def test_prefill_never_mutates_the_state_passed_in(bb):
    st = _warm_state(bb)
    before_ids = [id(t) for t in st]
    before = bb.state_to_bytes(st)
    logits, new = bb.prefill(bb.tokenizer.encode(PROMPT), st)
    assert [id(t) for t in st] == before_ids  # list entries not rebound
    assert bb.state_to_bytes(st) == before  # tensors not written
    assert bb.state_to_bytes(new) != before  # and the returned state did move
    assert logits.shape == (65536,) and logits.dtype == torch.float32


def test_none_state_is_the_zero_state(bb):
    toks = bb.tokenizer.encode(PROMPT)
    assert torch.equal(bb.prefill(toks)[0], bb.prefill(toks, bb.zero_state())[0])


def test_state_carries_context(bb):
    toks = bb.tokenizer.encode(PROMPT)
    a = bb.prefill(toks)[0]
    b = bb.prefill(toks, _warm_state(bb))[0]
    assert not torch.allclose(a, b, atol=1e-3)


def test_chunked_prefill_equals_one_pass_and_chaining(ckpt, bb):
    toks = bb.tokenizer.encode(PROMPT * 6)
    small = Backbone.load(ckpt, chunk_len=7)
    la, sa = bb.prefill(toks)
    lb, sb = small.prefill(toks)
    torch.testing.assert_close(la, lb, rtol=1e-4, atol=1e-4)
    for x, y in zip(sa, sb):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4)
    half = len(toks) // 2
    lc, _ = bb.prefill(toks[half:], bb.prefill(toks[:half])[1])
    torch.testing.assert_close(la, lc, rtol=1e-4, atol=1e-4)


def test_clone_is_independent(bb):
    st = _warm_state(bb)
    cl = bb.clone_state(st)
    ref = bb.state_to_bytes(st)
    for t in cl:
        t.add_(1.0)
    assert bb.state_to_bytes(st) == ref
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(st, cl))


def test_state_bytes_round_trip_and_layout(bb):
    st = _warm_state(bb)
    data = bb.state_to_bytes(st)
    assert len(data) == 4 * 2 * (2 * 128 + 2 * 64 * 64) == bb.layout.n_bytes
    back = bb.state_from_bytes(data)
    assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(st, back))
    assert bb.state_to_bytes(back) == data
    # documented layout: layer 0 time-mix shift first, fp32 little-endian; then the WKV matrix
    assert struct.unpack("<4f", data[:16]) == tuple(st[0][:4].tolist())
    wkv0 = struct.unpack("<f", data[4 * 128: 4 * 128 + 4])[0]
    assert wkv0 == st[1][0, 0, 0].item()
    with pytest.raises(InputError):
        bb.state_from_bytes(data[:-4])
    with pytest.raises(InputError):
        bb.state_to_bytes(st[:-1])


def test_greedy_is_deterministic_across_instances(ckpt, bb):
    toks = bb.tokenizer.encode(PROMPT)
    g1 = bb.generate(toks, max_new_tokens=12, stop=())
    g2 = Backbone.load(ckpt).generate(toks, max_new_tokens=12, stop=())
    assert g1.tokens == g2.tokens and g1.text == g2.text
    assert g1.stop_reason == MAX_NEW_TOKENS and len(g1.tokens) == 12
    assert g1.text == bb.tokenizer.decode(g1.tokens)
    assert len(set(g1.tokens)) > 1  # a random model that is not stuck on one token


def test_greedy_token_breaks_ties_low():
    assert greedy_token(torch.tensor([1.0, 3.0, 3.0, 2.0])) == 1
    assert greedy_token(torch.tensor([0.0, 0.0])) == 0
    with pytest.raises(UrdError):
        greedy_token(torch.tensor([0.0, float("nan")]))


def test_stop_string_cuts_text_and_ends_generation(bb):
    toks = bb.tokenizer.encode(PROMPT)
    free = bb.generate(toks, max_new_tokens=10, stop=())
    dec = bb.tokenizer.decode
    # pick a later token whose text is clean and new: generation must stop right there
    for k in range(2, 10):
        s = dec([free.tokens[k]])
        if s and "\ufffd" not in s and s not in dec(free.tokens[:k]):
            break
    else:
        pytest.fail("no usable stop string in the free generation")
    g = bb.generate(toks, max_new_tokens=10, stop=(s, "never-appears"))
    assert g.stop_reason == STOP
    assert g.tokens == free.tokens[: k + 1]
    full = dec(free.tokens[: k + 1])
    assert g.text == full[: full.find(s)]
    assert s not in g.text


def test_end_of_text_token_stops(ckpt):
    bb = Backbone.load(ckpt)
    real = bb.model

    class ForceEos:  # the real model, with token 0 made the argmax from the 3rd call on
        calls = 0

        def forward(self, toks, state):
            logits, state = real.forward(toks, state)
            ForceEos.calls += 1
            if ForceEos.calls >= 3:
                logits = logits.clone()
                logits[0] = logits.max() + 1
            return logits, state

    bb.model = ForceEos()
    g = bb.generate(bb.tokenizer.encode(PROMPT), max_new_tokens=10, stop=())
    assert g.stop_reason == END and g.tokens[-1] == 0 and len(g.tokens) == 3
    assert g.text == bb.tokenizer.decode(g.tokens[:-1])


def test_keep_state_and_meter_counts(bb):
    toks = bb.tokenizer.encode(PROMPT)
    with bb.metered() as m:
        g = bb.generate(toks, max_new_tokens=5, stop=())
    assert m.tokens == len(toks) + 5  # prompt + 4 decode steps + the last token, kept
    _, ref = bb.prefill(toks + list(g.tokens))
    for a, b in zip(g.state, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    with bb.metered() as outer:
        g = bb.generate(toks, max_new_tokens=5, stop=(), keep_state=False)
        with bb.metered() as inner:
            bb.prefill([1, 2, 3])
    assert g.state is None
    assert inner.tokens == 3 and outer.tokens == len(toks) + 4 + 3
    bb.prefill([5])
    assert outer.tokens == len(toks) + 7  # frozen at exit
    with bb.metered() as m0:
        g = bb.generate(toks, max_new_tokens=0)
    assert m0.tokens == len(toks) and g.tokens == () and g.stop_reason == MAX_NEW_TOKENS
    bb.reset_meter()
    assert bb.tokens_processed == 0


def test_prefill_rejects_bad_input(bb):
    with pytest.raises(InputError):
        bb.prefill([])
    with pytest.raises(InputError):
        bb.prefill([65536])
    with pytest.raises(InputError):
        bb.prefill([1], [torch.zeros(3)] * 6)

"""Batched greedy decoding against the sequential decoder (Backbone.generate) and the package's
forward_one: same replies, same logits, same stop rules, honest token count, untouched states."""

import os

import pytest
import torch

from urd.backbone import batch
from urd.backbone.adapter import END, MAX_NEW_TOKENS, STOP, Backbone
from urd.backbone.batch import forward_batch, generate_batch, stack_state
from urd.backbone.tiny import write_tiny_checkpoint
from urd.core.errors import InputError
from urd.data import calibrate
from urd.session.context import Decode, answer_groups, batches
from urd.session.handle import ModelHandle

EPISODES = (0, 1)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return write_tiny_checkpoint(tmp_path_factory.mktemp("batch") / "tiny.pth", seed=23)


@pytest.fixture(scope="module")
def bb(ckpt):
    return Backbone.load(ckpt)


@pytest.fixture(params=["mkl", "packed"])
def stepping(request, bb, ckpt, monkeypatch):
    """The backbone as the 0.1B shape and up step it (each block's projections through oneDNN's
    packed weights: batch._step_weights), and as tiny does (MKL): tiny is below PACK_MIN_EMBD."""
    if request.param == "mkl":
        assert not batch._step_weights(bb.model)["blocks.0.att.key.weight"].is_mkldnn
        return bb
    if not torch.backends.mkldnn.is_available():
        pytest.skip("no oneDNN in this torch build")
    monkeypatch.setattr(batch, "PACK_MIN_EMBD", bb.n_embd)
    packed = Backbone.load(ckpt)
    weights = batch._step_weights(packed.model)
    assert all(weights[f"blocks.{i}.{p}"].is_mkldnn for i in range(packed.n_layer) for p in batch._PROJECTIONS)
    return packed


@pytest.fixture(scope="module")
def episodes(urd_config):
    return {(task, i): make(urd_config, i) for task, make in
            (("t1", calibrate.t1_episode), ("t2", calibrate.t2_episode)) for i in EPISODES}


def sequential(bb, prompts, state, **kw):
    """The reference: one query at a time from a clone of the context, as ContextAnswerer does."""
    return [bb.generate(p, bb.clone_state(state) if state is not None else None, keep_state=False, **kw)
            for p in prompts]


def state_bytes(bb, state):
    return bb.state_to_bytes(state)


@pytest.mark.parametrize("task", ["t1", "t2"])
@pytest.mark.parametrize("episode", EPISODES)
def test_episode_prompts_match_the_sequential_decoder(stepping, episodes, task, episode):
    bb, ep = stepping, episodes[(task, episode)]
    prompts = [bb.tokenizer.encode(q["prompt"]) for q in ep["queries"]]
    _, after_transcript = bb.prefill(bb.tokenizer.encode(ep["transcript"]))
    # no stop string: a random model never writes the harness's "\n" anyway, so every row runs
    # the full length (stop strings that end rows at different steps: the next test)
    for state in (after_transcript, None):
        want = sequential(bb, prompts, state, max_new_tokens=12, stop=())
        got = generate_batch(bb, prompts, state, max_new_tokens=12, stop=())
        assert got == want
        assert all(len(g.tokens) == 12 and g.stop_reason == MAX_NEW_TOKENS for g in got)


def test_stop_strings_end_rows_at_different_steps(stepping, episodes):
    """A random model never writes "\\n"; stop strings it does write ("k", "A" in some replies,
    at different places) make rows stop at different steps and leave the batch while others go
    on."""
    bb, ep = stepping, episodes[("t1", 0)]
    prompts = [bb.tokenizer.encode(q["prompt"]) for q in ep["queries"]]
    _, st = bb.prefill(bb.tokenizer.encode(ep["transcript"]))
    stop = ("k", "A")
    want = sequential(bb, prompts, st, max_new_tokens=12, stop=stop)
    assert {g.stop_reason for g in want} == {STOP, MAX_NEW_TOKENS}
    assert len({len(g.tokens) for g in want}) >= 3
    assert generate_batch(bb, prompts, st, max_new_tokens=12, stop=stop) == want


def test_end_of_text_ends_a_row(ckpt, episodes):
    """Token 0 ends a reply. Make the model emit it: head column 0 becomes a slightly louder copy
    of a token that some reply produces mid-way (both decoders read the same weights)."""
    bb = Backbone.load(ckpt)  # own copy: the head is edited below
    ep = episodes[("t2", 0)]
    prompts = [bb.tokenizer.encode(q["prompt"]) for q in ep["queries"]]
    tok = sequential(bb, prompts[:1], None, max_new_tokens=12, stop=())[0].tokens[4]
    head = bb.model.z["head.weight"]
    head[:, 0] = head[:, tok] * 1.001
    want = sequential(bb, prompts, None, max_new_tokens=12, stop=("\n",))
    assert END in {g.stop_reason for g in want} and MAX_NEW_TOKENS in {g.stop_reason for g in want}
    assert want[0].tokens[-1] == 0 and want[0].stop_reason == END
    assert generate_batch(bb, prompts, None, max_new_tokens=12, stop=("\n",)) == want


def test_ties_go_to_the_lowest_id(ckpt):
    """A zero head makes every logit exactly 0: greedy must pick id 0 (which then ends the
    reply), as Backbone.generate does."""
    bb = Backbone.load(ckpt)
    bb.model.z["head.weight"].zero_()
    prompts = [bb.tokenizer.encode("In: a\nOut:"), bb.tokenizer.encode("Q: b?\nA:")]
    want = sequential(bb, prompts, None, max_new_tokens=4, stop=("\n",))
    assert [g.tokens for g in want] == [(0,), (0,)]
    assert generate_batch(bb, prompts, None, max_new_tokens=4, stop=("\n",)) == want


def test_first_step_matches_forward_one_row_by_row(stepping):
    bb = stepping
    texts = ["Record: the code for jijip is ZXGC9Y7YDGQN.\n", "In: Note the clamp.\nOut:", "x"]
    states = [bb.prefill(bb.tokenizer.encode(t))[1] for t in texts] + [bb.zero_state()]
    tokens = [bb.tokenizer.encode(" A")[0], 0, 65535, 1234]
    batched = [torch.stack(slot) for slot in zip(*states)]
    before = [t.clone() for t in batched]
    logits, new = forward_batch(bb.model, torch.tensor(tokens), batched)
    assert all(torch.equal(a, b) for a, b in zip(before, batched))  # input state untouched
    assert logits.shape == (4, bb.vocab_size) and logits.dtype == torch.float32
    for r, (tok, st) in enumerate(zip(tokens, states)):
        ref_logits, ref_state = bb.model.forward_one(tok, bb.clone_state(st))
        torch.testing.assert_close(logits[r], ref_logits.float(), rtol=1e-5, atol=1e-5)
        for got, ref in zip(new, ref_state):
            torch.testing.assert_close(got[r], ref, rtol=1e-5, atol=1e-6)
    # logits only for the rows asked for, in that order; the state moves for every row
    part, new2 = forward_batch(bb.model, torch.tensor(tokens), batched, torch.tensor([2, 0]))
    torch.testing.assert_close(part, logits[[2, 0]], rtol=1e-5, atol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(new, new2))
    none, _ = forward_batch(bb.model, torch.tensor(tokens), batched, torch.tensor([], dtype=torch.long))
    assert none is None


def test_the_sequence_pass_prefill_matches_the_packages_prefill(bb, episodes, monkeypatch):
    """A whole transcript, in chunks smaller than it, from the zero state and from another state:
    the same last logits and state as Backbone.prefill (to rounding), the same greedy token, the
    same tokens metered, and the caller's state untouched."""
    monkeypatch.setattr(batch, "PREFILL_CHUNK", 97)
    tokens = bb.tokenizer.encode(episodes[("t1", 0)]["transcript"])
    assert len(tokens) > 3 * 97
    _, start = bb.prefill(bb.tokenizer.encode("Earlier: note the clamp.\n"))
    before = state_bytes(bb, start)
    for state in (None, start):
        want_logits, want_state = bb.prefill(tokens, state)
        n0 = bb.tokens_processed
        logits, st = batch.prefill(bb, tokens, state)
        assert bb.tokens_processed - n0 == len(tokens)
        torch.testing.assert_close(logits, want_logits, rtol=1e-4, atol=1e-4)
        assert int(logits.argmax()) == int(want_logits.argmax())
        for got, ref in zip(st, want_state):
            torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    assert state_bytes(bb, start) == before
    one_logits, _ = batch.prefill(bb, tokens[:1])
    torch.testing.assert_close(one_logits, bb.prefill(tokens[:1])[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width", [9, 45])  # the WKV steps below SEQ_WKV_MIN_TOKENS, runs in chunks from it
def test_padding_in_a_ragged_sequence_pass_leaves_each_rows_state_at_its_last_token(bb, width):
    """Rows of `width`, 3, 1 and 0 tokens in one [4, width] pass: each row's state is the state of
    its own tokens passed alone (the padding decays nothing and adds nothing)."""
    assert (width < batch.SEQ_WKV_MIN_TOKENS) == (width == 9)
    text = "Record: the code for jijip is ZXGC9Y7YDGQN, and the code for kadop is QQ7."
    rows = [bb.tokenizer.encode(text * 3)[:width], [11, 12, 13], [40], []]
    assert len(rows[0]) == width
    _, start = bb.prefill(bb.tokenizer.encode("context\n"))
    lengths = torch.tensor([len(r) for r in rows])
    padded = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    got = batch.forward_seq_batch(bb.model, padded, stack_state(start, 4), lengths)
    for b, r in enumerate(rows):
        want = batch.advance(bb, r, start) if r else start
        for g, w in zip(got, want):
            torch.testing.assert_close(g[b], w, rtol=1e-4, atol=1e-5)  # other GEMM shapes round apart


def test_callers_state_is_not_mutated(bb):
    _, st = bb.prefill(bb.tokenizer.encode("context: key k1 -> AB12\n"))
    ids, before = [id(t) for t in st], state_bytes(bb, st)
    # a shared prefix (prefilled) and none at all (the state is stacked directly)
    for prompts in (["Q: k1?\nA:", "Q: k2?\nA:"], ["alpha", "Q: k1?"]):
        generate_batch(bb, [bb.tokenizer.encode(p) for p in prompts], st, max_new_tokens=3)
        assert [id(t) for t in st] == ids and state_bytes(bb, st) == before


def test_single_prompt_and_prompts_of_different_lengths(bb):
    _, st = bb.prefill(bb.tokenizer.encode("Session log.\nIn: Add the anvil.\nOut: Logged: anvil.\n"))
    enc = bb.tokenizer.encode
    cases = [
        [enc("In: Please log the lute.\nOut:")],  # a single prompt
        [[7], enc("In: x\nOut:"), enc("In: Please log the lute and the very long list.\nOut:"), [7, 8]],
        [enc("Q: same\nA:")] * 3,  # identical prompts: everything but the last token is shared
    ]
    for prompts in cases:
        for state in (st, None):
            want = sequential(bb, prompts, state, max_new_tokens=5, stop=("\n",))
            assert generate_batch(bb, prompts, state, max_new_tokens=5, stop=("\n",)) == want


def test_tokens_processed_counts_forwarded_tokens(bb, episodes):
    t1 = [bb.tokenizer.encode(q["prompt"]) for q in episodes[("t1", 0)]["queries"]][:6]
    cases = [
        t1 + [t1[0][:-3]],  # a shorter prompt bounds the shared prefix
        [t1[1]] * 3,  # identical prompts: decoded once
    ]
    for prompts in cases:
        shortest = min(map(len, prompts))
        prefix = min(len(os.path.commonprefix(prompts)), shortest - 1)  # noqa: RUF071 (token lists, compared element-wise)
        assert prefix > 0
        n0 = bb.tokens_processed
        want = sequential(bb, prompts, None, max_new_tokens=8, stop=("e",))
        n_seq = bb.tokens_processed - n0
        # sequential: each prompt, then every generated token but the last
        assert n_seq == sum(len(p) + len(g.tokens) - 1 for p, g in zip(prompts, want))
        n0 = bb.tokens_processed
        assert generate_batch(bb, prompts, None, max_new_tokens=8, stop=("e",)) == want
        # batched: the same, but the shared prefix goes through once instead of once per prompt,
        # and a prompt asked twice is decoded once
        unique = {tuple(p): len(p) + len(g.tokens) - 1 for p, g in zip(prompts, want)}
        prefix = min(len(os.path.commonprefix([list(u) for u in unique])), min(map(len, unique)) - 1)  # noqa: RUF071
        assert bb.tokens_processed - n0 == sum(unique.values()) - (len(unique) - 1) * prefix


def test_max_new_tokens_zero(bb):
    prompts = [bb.tokenizer.encode("In: a\nOut:"), [5]]
    want = sequential(bb, prompts, None, max_new_tokens=0, stop=("\n",))
    n0 = bb.tokens_processed
    assert generate_batch(bb, prompts, None, max_new_tokens=0) == want
    assert want[0].stop_reason == MAX_NEW_TOKENS and want[0].tokens == ()
    assert bb.tokens_processed == n0  # nothing decoded, nothing forwarded


def test_bad_input_raises_before_any_forward(bb):
    n0 = bb.tokens_processed
    for prompts in ([[1, 2], [3, bb.vocab_size]], [[1, -1]], [[1], []]):
        with pytest.raises(InputError):
            generate_batch(bb, prompts, None, max_new_tokens=4)
    with pytest.raises(ValueError):
        generate_batch(bb, [[1]], None, max_new_tokens=-1)
    with pytest.raises(ValueError):
        generate_batch(bb, [[1]], None, max_new_tokens=2, stop=("",))
    with pytest.raises(InputError):
        generate_batch(bb, [[1]], [torch.zeros(3)], max_new_tokens=2)
    assert bb.tokens_processed == n0
    assert generate_batch(bb, [], None, max_new_tokens=4) == []


def test_stack_state_copies(bb):
    st = bb.zero_state()
    stacked = stack_state(st, 1)
    stacked[0].add_(1.0)
    assert torch.count_nonzero(st[0]) == 0
    assert [tuple(t.shape) for t in stack_state(st, 3)] == [(3, *t.shape) for t in st]


def test_a_byte_budget_ends_each_row_at_the_first_token_that_fills_it(bb, episodes):
    from urd.backbone.adapter import MAX_BYTES
    from urd.backbone.batch import generate_groups

    prompts = [bb.tokenizer.encode(q["prompt"]) for q in episodes[("t1", 0)]["queries"][:4]]
    free = generate_groups(bb, [(None, prompts)], max_new_tokens=40, stop=())[0]
    capped = generate_groups(bb, [(None, prompts)], max_new_tokens=40, stop=(), max_bytes=12)[0]
    for f, c in zip(free, capped):
        assert c.tokens == f.tokens[: len(c.tokens)]  # the same decoding, cut short
        if c.stop_reason == MAX_BYTES:
            assert len(c.text.encode()) >= 12 > len(bb.tokenizer.decode(list(c.tokens[:-1])).encode())
        else:  # the budget was never reached
            assert c.stop_reason == f.stop_reason and len(c.text.encode()) < 12
    assert any(c.stop_reason == MAX_BYTES for c in capped)


def test_limits_a_group_stop_each_row_at_its_own_and_count_what_each_forwarded(bb, episodes):
    from urd.backbone.batch import generate_groups

    prompts = [bb.tokenizer.encode(q["prompt"]) for q in episodes[("t1", 0)]["queries"][:3]]
    limits, byte_limits = [0, 3, 30], [None, None, 12]
    groups = [(None, [p]) for p in prompts]
    alone, alone_counts = [], []
    for g, n, m in zip(groups, limits, byte_limits):
        counts = [0]
        alone += generate_groups(bb, [g], max_new_tokens=n, stop=(), max_bytes=m, counts=counts)
        alone_counts += counts
    n0, counts = bb.tokens_processed, [0, 0, 0]
    together = generate_groups(bb, groups, max_new_tokens=limits, stop=(), max_bytes=byte_limits, counts=counts)
    assert together == alone and counts == alone_counts and bb.tokens_processed - n0 == sum(counts)
    assert [len(g.tokens) for (g,) in together][:2] == [0, 3] and 0 < len(together[2][0].tokens) < 30
    with pytest.raises(ValueError, match="one max_new_tokens"):
        generate_groups(bb, groups, max_new_tokens=[1, 2], stop=())


def test_batches_hold_whole_contexts_up_to_the_limit():
    assert batches([3, 5, 4, 2], 7) == [range(0, 1), range(1, 2), range(2, 4)]
    assert batches([3, 5, 4, 2], 4) == [range(0, 1), range(1, 2), range(2, 3), range(3, 4)]  # 5 alone
    assert batches([3, 5, 4, 2], 14) == [range(0, 4)] and batches([], 7) == []


class Recording:
    """A handle that records how many query rows each batch it decodes holds."""

    def __init__(self, handle):
        self.handle, self.rows = handle, []

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def generate_groups(self, groups, **kw):
        self.rows.append(sum(len(q) for _, q in groups))
        return self.handle.generate_groups(groups, **kw)


def test_answers_in_batches_are_the_answers_of_one_batch_and_forward_the_same_tokens(bb, episodes):
    eps = [episodes[k] for k in sorted(episodes)]
    contexts = [(f"{ep['header']}\n{ep['transcript'][:300]}\n", None) for ep in eps]
    queries = [[q["prompt"] for q in ep["queries"]][:n] for ep, n in zip(eps, (3, 5, 4, 2))]
    decode = Decode(max_new_tokens=6)
    whole, split = Recording(ModelHandle(bb)), Recording(ModelHandle(bb))
    assert answer_groups(split, contexts, queries, decode, limit=7) == answer_groups(whole, contexts, queries, decode)
    assert (whole.rows, split.rows) == ([14], [3, 5, 6])
    assert split.tokens_processed == whole.tokens_processed > 0
    with pytest.raises(ValueError, match="4 contexts but 3"):
        answer_groups(whole, contexts, queries[:3], decode)

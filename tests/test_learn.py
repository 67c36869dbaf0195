"""The learned backbone: a training stream with nothing of an evaluated episode in it, a head whose
untrained rows never win, a checkpoint in the released format, the same bytes twice, a killed
run that resumes to those bytes, budgets refused before training, and the check at use."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from urd.backbone.shapes import rwkv7_shapes
from urd.backbone.tokenizer import get_tokenizer
from urd.core.config import load_config
from urd.core.errors import InputError
from urd.data import t1, t2
from urd.learn import check, model, plan, ship
from urd.learn import stream as S
from urd.learn.train import Data, evaluated_episodes

REPO = Path(__file__).resolve().parents[1]
# a run small enough for a test: one layer, 64 wide, a few steps of short episodes
SMALL = {"seed": 3, "n_layer": 1, "n_embd": 64, "tokens": 6000, "pairs_min": 4, "ramp_tokens": 0,
         "eval_every": 1000, "eval_episodes": 1, "save_every": 1, "warmup_steps": 2, "t2_per_step": 1}


@pytest.fixture(scope="module")
def cfg():
    return load_config(REPO / "config/config.yaml")


@pytest.fixture(scope="module")
def spec(cfg):
    return plan.learn_spec(cfg)


@pytest.fixture(scope="module")
def evaluated(spec):
    return evaluated_episodes(spec)


def _stream(cfg, ex, steps, settings=None):
    s = plan.settings_of({**SMALL, **(settings or {})})
    data = Data(s, {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}, ex, get_tokenizer())
    eps = []
    for step in steps:  # the episodes Data.step makes, at every size the curriculum reaches
        pairs = s["pairs_min"] + S.Stream(S.FAMILY, s["seed"], "pairs", step).below(64 - s["pairs_min"] + 1)
        eps.append(S.t1_episode(s["seed"], step, pairs, cfg["tasks"]["t1"], ex))
        eps.append(S.t2_episode(s["seed"], step * 16, cfg["tasks"]["t2"], ex))
    held = data.held_out(cfg["queries"])
    return eps + held["t1"] + held["t2"]


# --- disjointness, held on content --------------------------------------------------------------
def test_training_stream_holds_no_evaluated_key_value_or_rule(cfg, evaluated):
    ex = S.Exclusions.of(evaluated)
    # every evaluated episode counts: rung 1's and each variant of rung 2's chains
    assert len(ex.keys) > 64 * (cfg["episodes"] + 6 * 6) and len(ex.rules) >= cfg["episodes"]
    train = _stream(cfg, ex, range(300))
    assert S.overlap(train, ex) == {"keys": [], "values": [], "rules": []}
    tok = get_tokenizer()  # and not in the token stream either: no evaluated value's text is trained on
    text = "".join(tok.decode(S.sequence(tok, ep)[0]) for ep in train[:40])
    assert not [v for v in ex.values if v in text]


def test_without_the_exclusions_the_same_draws_would_overlap(cfg, evaluated):
    """The check above can fail: the training family's key space is the evaluation's."""
    ex = S.Exclusions.of(evaluated)
    none = S.Exclusions(frozenset(), frozenset(), frozenset(), frozenset())
    found = S.overlap(_stream(cfg, none, range(300)), ex)
    assert found["keys"] and found["rules"]


def test_fresh_held_out_episodes_are_none_a_run_evaluates_and_hold_no_evaluated_key(cfg, evaluated):
    """benchmarks/learned.py --held-out reads episodes no training run evaluates, of the
    published shape, with nothing of an evaluated episode in them."""
    ex = S.Exclusions.of(evaluated)
    s = plan.settings_of({**SMALL, "eval_episodes": 4})
    data = Data(s, {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}, ex, get_tokenizer())
    fresh, used = data.held_out(cfg["queries"], "fresh", 6), data.held_out(cfg["queries"])
    assert [len(fresh[k]) for k in ("t1", "t2")] == [6, 6] and [len(used[k]) for k in ("t1", "t2")] == [4, 4]
    codes = lambda eps: {p["value"] for ep in eps for p in ep["pairs"]}
    assert codes(fresh["t1"]) and not codes(fresh["t1"]) & codes(used["t1"] + data.held_out_at(10**9))
    assert S.overlap(fresh["t1"] + fresh["t2"], ex) == {"keys": [], "values": [], "rules": []}
    assert {len(ep["pairs"]) for ep in fresh["t1"]} == {len(ep["pairs"]) for ep in used["t1"]} == {64}
    # the check's T2 episodes are held out by rule too: each marker one the training stream excluded
    assert {ep["rule"]["marker"] for ep in fresh["t2"]} <= ex.markers
    assert not {ep["rule"]["marker"] for ep in used["t2"]} <= ex.markers  # a run's own: any marker


def test_training_episodes_are_the_generators_own(cfg):
    ex = S.Exclusions(frozenset(), frozenset(), frozenset(), frozenset())
    ep = S.t1_episode(1, 5, 64, cfg["tasks"]["t1"], ex)
    assert ep["transcript"] == t1.transcript_of(ep["lines"]) and len(ep["lines"]) == 96
    assert S.t1_episode(1, 5, 64, cfg["tasks"]["t1"], ex) == ep  # seeded
    assert S.t1_episode(2, 5, 64, cfg["tasks"]["t1"], ex) != ep
    e2 = S.t2_episode(1, 5, cfg["tasks"]["t2"], ex)
    assert e2["header"] == t2.HEADER and len(e2["queries"]) == 24


def test_targets_are_the_replies_and_the_repeated_codes(cfg):
    tok = get_tokenizer()
    ex = S.Exclusions(frozenset(), frozenset(), frozenset(), frozenset())
    ep = S.t1_episode(1, 0, 16, cfg["tasks"]["t1"], ex)
    ids, flags = S.sequence(tok, ep)
    targets = tok.decode([ids[i + 1] for i, f in enumerate(flags) if f])
    for q in ep["queries"]:  # every query's reply, newline included, in order
        assert S.reply("t1", q) in targets
    hot = [p for p in ep["pairs"] if p["hot"]]
    assert all(targets.count(p["value"][:8]) >= 4 for p in hot)  # 4 repeated showings + the answer
    cold = [p for p in ep["pairs"] if not p["hot"] and p["key"] not in {q["key"] for q in ep["queries"]}]
    assert cold and not any(p["value"] in targets for p in cold)  # a first showing is no target
    e2 = S.t2_episode(1, 0, cfg["tasks"]["t2"], ex)
    ids, flags = S.sequence(tok, e2)
    targets = tok.decode([ids[i + 1] for i, f in enumerate(flags) if f])
    assert all(x["reply"] in targets for x in e2["examples"])
    assert "In:" not in targets and "Session log" not in targets


def test_a_step_of_one_t1_episode_is_numbered_by_the_step_as_the_shipped_checkpoint_was_trained(cfg, evaluated):
    """The shipped record predates t1_per_step: at its default of 1 a step must draw the very
    episodes it was trained on (T1 index = step), or its settings no longer retrain its bytes."""
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    one = Data(plan.settings_of(SMALL), tasks, ex, tok)
    for step in (0, 3, 7):
        pairs = 4 + S.Stream(S.FAMILY, SMALL["seed"], "pairs", step).below(61)
        assert one.step(step, 10**9)[0] == S.sequence(tok, S.t1_episode(SMALL["seed"], step, pairs, tasks["t1"], ex))
    two = Data(plan.settings_of({**SMALL, "t1_per_step": 2}), tasks, ex, tok)
    seen = [tuple(seq[0]) for step in range(3) for seq in two.step(step, 10**9)[:2]]
    assert len(set(seen)) == 6  # two a step, no episode drawn twice


def test_a_tied_head_starts_as_the_scaled_embedding_and_the_default_does_not():
    tied = model.init_weights(5, 1, 64, tied_head=True)
    assert torch.equal(tied["head.weight"], tied["emb.weight"] * (0.5 / 8))
    plain = model.init_weights(5, 1, 64)
    assert torch.equal(plain["emb.weight"], tied["emb.weight"])
    assert not torch.allclose(plain["head.weight"], tied["head.weight"])
    with pytest.raises(InputError, match="tied_head"):
        plan.settings_of({"tied_head": 0.5})


def test_the_rwkv_lm_init_starts_the_blocks_as_rwkv_lms_x070_trainer_does():
    x = model.init_weights(3, 2, 128, rwkv_lm=True)
    # by hand from RWKV-LM's formulas: layer 0, channel 0 (www -6, zigzag -1): w0 = -6 + 0.5 - 2.5;
    # channel 63 (the head's last: zigzag +1): -6 + 6 * 63/127 + 0.5 + 2.5
    w0 = x["blocks.0.att.w0"].flatten()
    assert w0[0].item() == pytest.approx(-8.0) and w0[63].item() == pytest.approx(-3 + 6 * 63 / 127, abs=1e-5)
    assert x["blocks.1.att.a0"].flatten()[0].item() == pytest.approx(-0.19 - 0.3 - 0.2)
    assert torch.all(x["blocks.1.att.r_k"] == -0.04) and torch.all(x["blocks.0.ln1.weight"] == 1)
    # decay, in-context learning rate, value mix and gate start input-independent: low-rank
    # inputs zero, outputs orthogonal rows at gain 0.1
    for p in ("w", "a", "v", "g"):
        assert not x[f"blocks.1.att.{p}1"].any()
        w2 = x[f"blocks.1.att.{p}2"].double()
        assert torch.allclose(w2 @ w2.t(), 0.01 * torch.eye(w2.shape[0], dtype=torch.double), atol=1e-6)
    assert x["blocks.0.att.key.weight"].abs().max() <= 0.05 / 128 ** 0.5
    assert not x["blocks.0.att.output.weight"].any() and not x["blocks.1.ffn.value.weight"].any()
    # seeded: the same seed, the same draws; another seed, other draws; embedding and head as before
    again, other, tiny = model.init_weights(3, 2, 128, rwkv_lm=True), model.init_weights(4, 2, 128, rwkv_lm=True), \
        model.init_weights(3, 2, 128)
    assert all(torch.equal(again[k], v) for k, v in x.items())
    assert not torch.equal(other["blocks.0.att.w2"], x["blocks.0.att.w2"])
    assert torch.equal(tiny["emb.weight"], x["emb.weight"]) and torch.equal(tiny["head.weight"], x["head.weight"])
    assert not torch.equal(tiny["blocks.0.att.w0"], x["blocks.0.att.w0"])
    with pytest.raises(InputError, match="rwkv_lm_init"):
        plan.settings_of({"rwkv_lm_init": 2})


def test_query_all_asks_every_shown_key_of_a_training_episode_and_leaves_the_held_out_ones_as_published(cfg, evaluated):
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    some = Data(plan.settings_of({**SMALL, "t2_per_step": 0}), tasks, ex, tok)
    every = Data(plan.settings_of({**SMALL, "t2_per_step": 0, "t1_query_all": 1}), tasks, ex, tok)
    for pairs in (4, 9, 64):
        a = S.t1_episode(1, 5, pairs, tasks["t1"], ex)
        b = S.t1_episode(1, 5, pairs, tasks["t1"], ex, query_all=True)
        assert a["transcript"] == b["transcript"]  # the same session, more of it asked
        asked = [q["key"] for q in b["queries"] if q["kind"] != "unseen"]
        assert sorted(set(asked)) == sorted(p["key"] for p in a["pairs"]) and len(asked) == pairs
        assert len([q for q in a["queries"] if q["kind"] != "unseen"]) < pairs
        assert [q["kind"] for q in b["queries"]].count("unseen") == max(1, pairs // 8)
        c = S.t1_episode(1, 5, pairs, tasks["t1"], ex, query_all=True, no_hot=True)
        assert not any(p["hot"] for p in c["pairs"]) and len(c["lines"]) == pairs  # each key shown once
        assert sorted(q["key"] for q in c["queries"] if q["kind"] == "cold") == sorted(p["key"] for p in c["pairs"])
        assert not S.repeat_spans(c)  # no record repeats: the replies are the only targets
    (ids, flags), = some.step(4, 10**9)
    (ids2, flags2), = every.step(4, 10**9)
    assert sum(flags2) > sum(flags) and len(ids2) > len(ids)
    assert every.held_out_at(10**9) == some.held_out_at(10**9)
    assert every.held_out(25) == some.held_out(25)
    for key in ("t1_query_all", "t1_no_hot", "branch_queries"):
        with pytest.raises(InputError, match=key):
            plan.settings_of({key: 2})


def test_full_loss_makes_every_next_token_a_target_and_the_head_holds_the_transcripts_tokens(cfg, evaluated):
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    replies = Data(plan.settings_of(SMALL), tasks, ex, tok)
    full = Data(plan.settings_of({**SMALL, "full_loss": 1}), tasks, ex, tok)
    for (ids, flags), (same, every) in zip(replies.step(2, 10**9), full.step(2, 10**9)):
        assert same == ids and every == [True] * (len(ids) - 1) + [False]
        assert 0 < sum(flags) < len(ids) / 2  # the replies' loss: a small part of the sequence
    assert replies.vocab() == model.reply_vocab(tok)
    wide = full.vocab()
    assert set(model.reply_vocab(tok)) < set(wide)
    ids, _ = full.step(0, 10**9)[0]
    assert set(ids) - {0} <= set(wide) and not set(ids) <= set(model.reply_vocab(tok))
    # branched, a query's last token predicts nothing: the next query follows the transcript
    both = Data(plan.settings_of({**SMALL, "full_loss": 1, "branch_queries": 1}), tasks, ex, tok)
    for ids, every, _, starts in both.step_with_replies(2, 10**9):
        assert [i for i, f in enumerate(every) if not f] == [a - 1 for a in starts[1:]] + [len(ids) - 1]
    with pytest.raises(InputError, match="full_loss"):
        plan.settings_of({"full_loss": 2})


def test_the_code_length_grows_with_the_pairs_and_the_default_trains_the_published_codes(cfg, evaluated):
    """value_min: T1's codes start that short and reach the published 12 characters over the
    pairs' ramp; at the default (12) a step draws exactly what it drew before the setting."""
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    short = Data(plan.settings_of({**SMALL, "value_min": 2, "ramp_tokens": 1000}), tasks, ex, tok)
    assert [short.code_length(n) for n in (0, 500, 1000, 10**9)] == [2, 7, 12, 12]
    assert [short.cap(n) for n in (0, 1000)] == [SMALL["pairs_min"], 64]

    def codes(data, tokens):
        text = tok.decode(data.step(3, tokens)[0][0])
        return {len(m) for m in re.findall(r" is ([0-9A-Z]+)\.", text)}

    assert codes(short, 0) == {2} and codes(short, 500) == {7} and codes(short, 10**9) == {12}
    assert {len(p["value"]) for ep in short.held_out_at(0) for p in ep["pairs"]} == {2}
    plain = Data(plan.settings_of(SMALL), tasks, ex, tok)
    pairs = 4 + S.Stream(S.FAMILY, SMALL["seed"], "pairs", 3).below(plain.cap(0) - 4 + 1)
    assert plain.step(3, 0)[0] == S.sequence(tok, S.t1_episode(SMALL["seed"], 3, pairs, tasks["t1"], ex))
    for bad in (0, 13, 2.5):
        with pytest.raises(InputError, match="value_min"):
            plan.settings_of({"value_min": bad})


def test_the_gated_levels_climb_one_step_at_a_time_from_the_start_to_the_published_task():
    for raw in ({"value_min": 2, "gate": 0.5}, {"pairs_min": 9, "value_min": 11, "gate": 0.5}, {}):
        lv = plan.levels(plan.settings_of(raw))
        s = plan.settings_of(raw)
        assert lv[0] == (s["pairs_min"], s["value_min"]) and lv[-1] == (64, 12)
        for (p0, c0), (p1, c1) in itertools.pairwise(lv):
            assert (p1 > p0 and c1 == c0) or (c1 > c0 and p1 == p0), (lv, p0, c0)
    assert plan.levels(plan.settings_of({"value_min": 2, "gate": 0.5}))[:3] == [(4, 2), (4, 4), (6, 4)]
    for bad in ({"gate": 1}, {"gate": -0.1}, {"gate": 0.5, "t1_per_step": 0}, {"gate": 0.5, "gate_window": 0}):
        with pytest.raises(InputError, match="gate"):
            plan.settings_of(bad)


def test_a_gated_step_draws_every_t1_episode_at_its_level(cfg, evaluated):
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    s = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5, "t1_per_step": 2})
    data = Data(s, tasks, ex, tok)
    data.level = 5
    pairs, length = plan.levels(s)[5]
    base = {**tasks["t1"], "value_length": length}
    want = [S.sequence(tok, S.t1_episode(s["seed"], 7 * 2 + j, pairs, base, ex)) for j in range(2)]
    assert [(ids, flags) for ids, flags, _, _ in data.step_with_replies(7, 0)[:2]] == want
    assert data.cap(0) == pairs and data.code_length(10**12) == length  # the level, whatever the tokens


def test_the_gate_passes_on_a_full_window_of_seen_key_replies_at_its_bar():
    from urd.learn.train import Gate

    g = Gate(0.5, 4)
    seen, unseen = ("hot", range(10, 12)), ("unseen", range(20, 22))
    g.observe([seen, unseen, ("cold", range(30, 31))], hits={10, 11, 20, 21})
    assert g.rate() == 0.5 and not g.passed()  # the unseen reply is not recall; the window is not full
    g.observe([seen, ("hot", range(40, 43))], hits={10, 11, 40, 42})  # 41 missed: the reply is wrong
    assert g.recent == [True, False, True, False] and g.passed()
    assert g.rate("cold") == 0.0 and g.rate("hot") == 2 / 3  # hot 10-11 twice right, 40-42 wrong
    g.observe([("cold", range(50, 51))], hits=set())
    assert g.rate() == 0.25 and not g.passed()  # the oldest left the window
    assert g.rate("cold") == 0.0 and g.rate("hot") == 0.5 and g.kinds == ["cold", "hot", "hot", "cold"]
    g.reset()
    assert g.rate() is None and g.rate("cold") is None


def test_a_gate_with_a_cold_bar_needs_the_hot_keys_at_the_bar_and_the_cold_keys_at_theirs():
    """gate_cold sets two bars, where the pooled rate sets one: hot keys at the bar, cold keys at
    their own."""
    from urd.learn.train import Gate

    hot, cold = ("hot", range(10, 11)), ("cold", range(20, 21))
    g = Gate(0.5, 6, cold_bar=0.25)
    g.observe([hot, hot, hot, cold, cold, cold], hits={10})  # hot 3/3, cold 0/3: pooled 0.5
    assert g.rate() == 0.5 and not g.passed()  # the pooled bar alone would pass it
    pooled = Gate(0.5, 6)
    pooled.observe([hot, hot, hot, cold, cold, cold], hits={10})
    assert pooled.passed()
    g.observe([cold], hits={20})  # hot 2/2, cold 1/4: pooled 0.5 again
    assert g.rate("cold") == 0.25 and g.passed()
    g.observe([cold, cold], hits={20})  # every hot reply left the window: no hot rate, no pass
    assert g.rate("hot") is None and g.rate() == 0.5 and not g.passed()
    g = Gate(0.5, 4, cold_bar=0.25)
    g.observe([hot, cold, hot, cold], hits={20})  # hot 0/2 under the bar, cold 2/2
    assert not g.passed()
    g.observe([hot, hot], hits={10})  # the window: hot wrong, cold right, hot and hot right
    assert g.kinds == ["hot", "cold", "hot", "hot"] and g.rate("hot") == 2 / 3 and g.passed()
    for bad in ({"gate_cold": 0.2}, {"gate": 0.5, "gate_cold": 1}, {"gate": 0.5, "gate_cold": 0.2, "t1_no_hot": 1},
                {"gate": 0.5, "gate_cold": 0.2, "gate_window": 1}):
        with pytest.raises(InputError, match="gate_cold"):
            plan.settings_of(bad)


def test_reply_positions_predict_each_query_s_reply(cfg, evaluated):
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    ep = S.t1_episode(1, 5, 8, cfg["tasks"]["t1"], ex)
    ids, flags, replies, _ = S.sequence_with_replies(tok, ep)
    assert (ids, flags) == S.sequence(tok, ep)
    assert [k for k, _ in replies] == [q["kind"] for q in ep["queries"]]
    for (_, at), q in zip(replies, ep["queries"]):
        assert all(flags[p] for p in at)
        assert tok.decode([ids[p + 1] for p in at]) == S.reply("t1", q)


def test_branched_queries_each_run_from_the_transcripts_end_as_the_control_reads_them(cfg, evaluated):
    """branch_queries: the step's sequences say where each query starts, and the loss and hits
    are those of the transcript followed by each query alone (the earlier questions and answers
    unseen), where the plain sequence reads them one after another."""
    ex, tok = S.Exclusions.of(evaluated), get_tokenizer()
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    branched = Data(plan.settings_of({**SMALL, "branch_queries": 1}), tasks, ex, tok)
    plain = Data(plan.settings_of(SMALL), tasks, ex, tok)
    (ids, flags, replies, starts), t2seq = branched.step_with_replies(3, 10**9)
    assert all(not b for *_, b in plain.step_with_replies(3, 10**9)) and t2seq[3]  # T2's queries branch too
    assert (ids, flags, replies) == plain.step_with_replies(3, 10**9)[0][:3]
    ep = S.t1_episode(SMALL["seed"], 3, plain.cap(10**9), tasks["t1"], ex)
    assert [tok.decode(ids[a:a + len(tok.encode(q["prompt"]))]) for a, q in zip(starts, ep["queries"])] \
        == [q["prompt"] for q in ep["queries"]]
    net = model.Trainable(model.init_weights(4, 2, 64), model.reply_vocab(tok))
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for name in net.names:  # blocks that read their context (the init's are the identity)
            if name.endswith(("att.output.weight", "ffn.value.weight")):
                net.net.z[name].copy_(0.3 * torch.randn(net.net.z[name].shape, generator=g))
        loss, k, hits = net.loss_and_hits(ids, flags, starts)
        trunk = starts[0]
        want_loss, want_k, want_hits = net.loss_and_hits(ids[:trunk] + [ids[trunk]], flags[:trunk] + [False])
        for a, b in zip(starts, starts[1:] + [len(ids)]):  # each query alone after the transcript
            l, n, h = net.loss_and_hits(ids[:trunk] + ids[a:b], [False] * trunk + flags[a:b])
            want_loss, want_k, want_hits = want_loss + l, want_k + n, want_hits | {p - trunk + a for p in h}
        torch.testing.assert_close(loss, want_loss, rtol=1e-5, atol=1e-4)
        assert k == want_k and hits == want_hits and k > len(replies)
        assert abs(float(loss) - float(net.loss_and_hits(ids, flags)[0])) > 1e-3  # read one after another
    # the gradient too: each query's loss reaches the transcript's weights through the state
    params = net.parameters()
    grad = lambda loss: torch.autograd.grad(loss, params, allow_unused=True, materialize_grads=True)
    branched = grad(net.loss_and_hits(ids, flags, starts)[0])
    alone = net.loss_and_hits(ids[:trunk] + [ids[trunk]], flags[:trunk] + [False])[0]
    for a, b in zip(starts, starts[1:] + [len(ids)]):
        alone = alone + net.loss_and_hits(ids[:trunk] + ids[a:b], [False] * trunk + flags[a:b])[0]
    for x, y in zip(branched, grad(alone)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    for bad in ([0, starts[1]], [starts[1], starts[0]], [len(ids)]):
        with pytest.raises(ValueError, match="query starts"):
            net.loss_and_hits(ids, flags, bad)


def test_hits_are_the_targets_the_head_ranks_first():
    tok = get_tokenizer()
    vocab = model.reply_vocab(tok)
    net = model.Trainable(model.init_weights(5, 1, 64), vocab)
    favourite = tok.encode(" NONE\n")[0]
    with torch.no_grad():  # the constant channel's column: one token far above every other
        net.net.z["head.weight"][:, net.pin] = 0.0
        net.net.z["head.weight"][vocab.index(favourite), net.pin] = 50.0
    other = next(i for i in vocab if i != favourite)
    ids = [favourite, other, favourite, favourite, other, other]
    flags = [True, True, True, False, True, False]
    loss, k, hits = net.loss_and_hits(ids, flags)
    assert k == 4 and hits == {1, 2} and float(loss.detach()) > 0  # positions 1 and 2 predict the favourite


def test_a_run_with_a_cold_bar_does_not_climb_on_hot_keys_alone(tmp_path, cfg, spec, evaluated, monkeypatch):
    """A model that answers the hot keys and no cold one climbs the pooled gate (half its
    replies right at 4 pairs) and not the gate with a cold bar: gate_cold reaches the run's gate."""
    from urd.learn import train as T

    ex = S.Exclusions.of(evaluated)
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    s = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5, "gate_window": 4, "t1_per_step": 2,
                          "t2_per_step": 0, "tokens": 3000, "eval_every": 1000})

    def hot_only(self, replies, hits, _real=T.Gate.observe):
        _real(self, replies, {p for kind, at in replies if kind == "hot" for p in at})

    monkeypatch.setattr(T.Gate, "observe", hot_only)
    pooled = T.train(str(tmp_path / "pooled.pth"), s, tasks, spec["decode"], ex)
    assert pooled["levels"] and all(x["rate_hot"] == 1.0 and x["rate_cold"] == 0.0 for x in pooled["levels"])
    barred = T.train(str(tmp_path / "barred.pth"), {**s, "gate_cold": 0.25}, tasks, spec["decode"], ex)
    assert barred["levels"] == []


def test_a_gated_run_climbs_as_its_recall_passes_and_a_killed_run_resumes_at_its_level(tmp_path, cfg, spec,
                                                                                     evaluated, monkeypatch):
    """With every reply right (a model that recalls perfectly), the curriculum moves a level each
    time the window fills; with none right it never moves. A run stopped midway resumes at its
    level and gate window, to the uninterrupted run's bytes and record."""
    from urd.learn import train as T

    ex = S.Exclusions.of(evaluated)
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    s = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5, "gate_window": 4, "t1_per_step": 2,
                          "t2_per_step": 0, "tokens": 4000, "save_every": 2})
    real = model.Trainable.loss_and_hits

    def recalls(perfect):
        def loss_and_hits(self, tokens, is_target, branches=()):
            loss, k, _ = real(self, tokens, is_target, branches)
            return loss, k, ({i for i, f in enumerate(is_target) if f} if perfect else set())
        return loss_and_hits

    monkeypatch.setattr(model.Trainable, "loss_and_hits", recalls(False))
    flat = T.train(str(tmp_path / "flat.pth"), s, tasks, spec["decode"], ex)
    assert flat["levels"] == [] and {e["t1_at_cap"]["code_length"] for e in flat["evals"]} == {2}

    monkeypatch.setattr(model.Trainable, "loss_and_hits", recalls(True))
    whole = T.train(str(tmp_path / "whole.pth"), s, tasks, spec["decode"], ex)
    moved = [tuple(x["passed"]) for x in whole["levels"]]
    assert moved == plan.levels(s)[:len(moved)] and len(moved) >= 3
    assert all(x["rate"] == 1.0 for x in whole["levels"])

    calls = {"n": 0}

    def killed_at_step_5(self, replies, hits, _real=T.Gate.observe):
        calls["n"] += 1
        if calls["n"] == 5 * 2 + 1:
            raise KeyboardInterrupt
        _real(self, replies, hits)

    monkeypatch.setattr(T.Gate, "observe", killed_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        T.train(str(tmp_path / "b.pth"), s, tasks, spec["decode"], ex)
    point = Path(str(tmp_path / "b.pth") + ".resume.pt")
    assert point.exists() and not (tmp_path / "b.pth").exists()
    saved = torch.load(point, weights_only=False)  # saved before a setting existed: it reads as its default
    del saved["settings"]["branch_queries"]
    torch.save(saved, point)
    monkeypatch.undo()
    monkeypatch.setattr(model.Trainable, "loss_and_hits", recalls(True))
    again = T.train(str(tmp_path / "b.pth"), s, tasks, spec["decode"], ex)
    assert again["levels"] == whole["levels"]
    assert (tmp_path / "b.pth").read_bytes() == (tmp_path / "whole.pth").read_bytes()


def test_stages_change_settings_from_a_token_count_on_and_refuse_what_a_run_holds_fixed():
    s = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5})
    st = plan.stages_of(s, [{"from_tokens": 500, "settings": {"tokens": 9000, "t2_per_step": 3}, "level": [6, 4]},
                            {"from_tokens": 900, "settings": {"gate": 0}}])
    assert [x["from_tokens"] for x in st] == [500, 900] and st[0]["level"] == [6, 4] and st[1]["level"] is None
    assert st[0]["settings"] == {**s, "tokens": 9000, "t2_per_step": 3}
    assert st[1]["settings"] == {**s, "tokens": 9000, "t2_per_step": 3, "gate": 0}  # each from the stage before
    bad = [([{"from_tokens": 5, "settings": {"n_embd": 128}}], r"stages\[0\]\.settings: n_embd"),
           ([{"from_tokens": 5, "settings": {"threads": 2}}], "threads"),
           ([{"from_tokens": 5}, {"from_tokens": 5}], r"stages\[1\]: from_tokens"),
           ([{"from_tokens": 0}], "from_tokens"),
           ([{"from_tokens": 5, "level": [7, 4]}], "level"),
           ([{"from_tokens": 5, "settings": {"gate": 0}, "level": [6, 4]}], "level"),
           ([{"from_tokens": 5, "settings": {"t1_per_step": 0}}], r"stages\[0\]\.settings: gate_window/t1_per_step"),
           ([{"from_tokens": 5, "lr": 1}], "from_tokens/settings/level"),
           ({"from_tokens": 5}, "stages")]
    for raw, match in bad:
        with pytest.raises(InputError, match=match):
            plan.stages_of(s, raw)
    assert plan.stages_of(s, [{"from_tokens": 5, "settings": {"n_embd": 64}}])  # the run's own value is no change
    # a stage that turns the gate on says where the curriculum starts (not back at its easiest)
    ungated = plan.settings_of(SMALL)
    with pytest.raises(InputError, match=r"stages\[0\]: level"):
        plan.stages_of(ungated, [{"from_tokens": 5, "settings": {"gate": 0.5}}])
    assert plan.stages_of(ungated, [{"from_tokens": 5, "settings": {"gate": 0.5}, "level": [64, 12]}])
    # the budget holds the most tokens any stage starts at or trains to
    fits = plan.settings_of({"tokens": 1000, "max_minutes": 60})
    assert plan.check_budget(fits, stages=plan.stages_of(fits, [{"from_tokens": 2, "settings": {"tokens": 3000}}]))
    for stage in ({"from_tokens": 2, "settings": {"tokens": 10**10}}, {"from_tokens": 10**10}):
        with pytest.raises(InputError, match="tokens"):
            plan.check_budget(fits, stages=plan.stages_of(fits, [stage]))
    # each stage's tokens at its own speed: branched queries cost more a token
    half = plan.stages_of(fits, [{"from_tokens": 400, "settings": {"branch_queries": 1}}])
    one = {"plain": plan.estimate({**fits, "tokens": 1})["minutes"],
           "branched": plan.estimate({**fits, "tokens": 1, "branch_queries": 1})["minutes"]}
    assert one["branched"] > one["plain"]
    assert plan.run_estimate(fits, half)["minutes"] == pytest.approx(400 * one["plain"] + 600 * one["branched"])


def test_a_staged_run_trains_the_bytes_of_a_run_continued_under_each_stage_s_settings(tmp_path, cfg, spec,
                                                                                    evaluated, monkeypatch):
    """Each stage begins as a run continued from its resume point under the stage's settings, the
    point's gate window emptied and its level set, does: the staged run and that continuation
    train the same bytes, and a staged run killed where a stage begins, or after, resumes to them.
    A resume point of other stages is refused."""
    from urd.learn import train as T

    ex = S.Exclusions.of(evaluated)
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    s1 = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5, "gate_window": 4, "t1_per_step": 1,
                           "t2_per_step": 0, "tokens": 2500, "save_every": 1})
    raw = [{"from_tokens": 364, "settings": {"t2_per_step": 1, "tokens": 5000, "gate_cold": 0.25, "lr": 1e-3},
            "level": list(plan.levels(s1)[4])},
           {"from_tokens": 3000, "settings": {"gate_window": 12, "t1_per_step": 2, "tokens": 9000}}]
    stages = plan.stages_of(s1, raw)
    real = model.Trainable.loss_and_hits

    def perfect(self, tokens, is_target, branches=()):
        loss, k, _ = real(self, tokens, is_target, branches)
        return loss, k, {i for i, f in enumerate(is_target) if f}

    monkeypatch.setattr(model.Trainable, "loss_and_hits", perfect)
    staged = T.train(str(tmp_path / "staged.pth"), s1, tasks, spec["decode"], ex, stages=stages)
    begun = [x["step"] for x in staged["stages"]]
    assert [(x["level"], x["changes"]) for x in staged["stages"]] == [(x.get("level"), x["settings"]) for x in raw]
    assert all(x["tokens"] >= r["from_tokens"] for x, r in zip(staged["stages"], raw))
    assert staged["tokens"] >= 9000 and staged["steps"] > begun[-1]
    for k in begun:  # the emptied window fills again before a move
        after = [x["step"] for x in staged["levels"] if x["step"] > k]
        assert after and after[0] > k + 1, (k, staged["levels"])
    assert staged["evals"][-1]["t1_at_cap"]["pairs"] >= raw[0]["level"][0]

    def stop_at(step_no):
        def step_with_replies(self, step, tokens_seen, _real=T.Data.step_with_replies):
            if step == step_no:
                raise KeyboardInterrupt
            return _real(self, step, tokens_seen)
        return step_with_replies

    # continued by hand: stopped where each stage begins, the point's settings, gate and level changed
    point = Path(str(tmp_path / "cont.pth") + ".resume.pt")
    for before, k, stage in zip([s1] + [x["settings"] for x in stages], begun, stages):
        with monkeypatch.context() as m:
            m.setattr(T.Data, "step_with_replies", stop_at(k))
            with pytest.raises(KeyboardInterrupt):
                T.train(str(tmp_path / "cont.pth"), before, tasks, spec["decode"], ex)
        ck = torch.load(point, weights_only=False)
        assert ck["step"] == k
        ck.update(settings=stage["settings"], gate_recent=[], gate_kinds=[])
        if stage["level"]:
            ck["level"] = plan.levels(s1).index(tuple(stage["level"]))
        torch.save(ck, point)
    T.train(str(tmp_path / "cont.pth"), stages[-1]["settings"], tasks, spec["decode"], ex)
    assert (tmp_path / "cont.pth").read_bytes() == (tmp_path / "staged.pth").read_bytes()

    # the staged run killed where its first stage begins and after its second began, resumed
    for k in (begun[0], begun[1] + 3):
        with monkeypatch.context() as m:
            m.setattr(T.Data, "step_with_replies", stop_at(k))
            with pytest.raises(KeyboardInterrupt):
                T.train(str(tmp_path / "k.pth"), s1, tasks, spec["decode"], ex, stages=stages)
    other = plan.stages_of(s1, [{**raw[0], "from_tokens": 700}, raw[1]])
    with pytest.raises(InputError, match="stages"):
        T.train(str(tmp_path / "k.pth"), s1, tasks, spec["decode"], ex, stages=other)
    again = T.train(str(tmp_path / "k.pth"), s1, tasks, spec["decode"], ex, stages=stages)
    assert (tmp_path / "k.pth").read_bytes() == (tmp_path / "staged.pth").read_bytes()
    assert again["stages"] == staged["stages"] and again["levels"] == staged["levels"]


def test_a_short_code_is_judged_by_the_same_rule_at_its_length():
    from urd.harness.scoring import judge_t1

    hot = {"kind": "hot", "expected": "F8"}
    assert judge_t1(hot, " F8")["verdict"] == "wrong"  # the published judge reads 12 characters
    assert judge_t1(hot, " F8", code_length=2) == {"parsed": "F8", "verdict": "correct"}
    assert judge_t1(hot, " F8X", code_length=2)["verdict"] == "wrong"
    assert judge_t1({"kind": "unseen", "expected": None}, " Q7", code_length=2)["verdict"] == "confabulated"
    assert judge_t1(hot, " NONE", code_length=2)["verdict"] == "abstained"


# --- the head, the export -----------------------------------------------------------------------
def test_every_reply_token_is_in_the_head(cfg, evaluated):
    tok = get_tokenizer()
    vocab = set(model.reply_vocab(tok))
    for ep in evaluated[:40]:
        for q in ep["queries"]:
            assert set(tok.encode(S.reply(ep["task"], q))) <= vocab, q


def test_a_stage_from_the_checkpoint_trains_what_going_on_from_the_finished_run_s_checkpoint_trains(
        tmp_path, cfg, spec, evaluated):
    """A stage that starts from_checkpoint rounds the weights to the checkpoint's and empties Adam:
    the staged run trains the bytes that the run without it, finished and continued from its
    checkpoint and record (--from-checkpoint), trains. A record that does not match is refused."""
    from urd.learn import train as T

    ex = S.Exclusions.of(evaluated)
    tasks = {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}
    s1 = plan.settings_of({**SMALL, "value_min": 2, "gate": 0.5, "gate_window": 4})
    raw = [{"from_tokens": 1000, "settings": {"t2_per_step": 2, "tokens": 6000}, "level": list(plan.levels(s1)[4])},
           {"from_tokens": 6000, "from_checkpoint": True, "settings": {"tokens": 14000, "lr": 5e-4}}]
    whole = T.train(str(tmp_path / "whole.pth"), s1, tasks, spec["decode"], ex, stages=plan.stages_of(s1, raw))
    assert [x.get("from_checkpoint", False) for x in whole["stages"]] == [False, True]
    first = T.train(str(tmp_path / "first.pth"), s1, tasks, spec["decode"], ex, stages=plan.stages_of(s1, raw[:1]))
    (tmp_path / "first.train.json").write_text(json.dumps(first))
    assert first["steps"] == whole["stages"][1]["step"] < whole["steps"] - 1  # it ends where the stage begins
    args = ["--settings", json.dumps(s1), "--stages", json.dumps(raw), "--spec", json.dumps(spec),
            "--from-checkpoint", str(tmp_path / "first.pth"), str(tmp_path / "first.train.json")]
    assert T.main([str(tmp_path / "on.pth"), "--record", str(tmp_path / "on.json"), *args]) == 0
    assert (tmp_path / "on.pth").read_bytes() == (tmp_path / "whole.pth").read_bytes()
    on = json.loads((tmp_path / "on.json").read_text())
    assert on["stages"] == whole["stages"] and on["tokens"] == whole["tokens"]
    # the finished run's record goes on, its last evaluation in it (one the run from the seed never made)
    assert on["evals"][: len(first["evals"])] == first["evals"]
    assert first["evals"][-1]["step"] not in [x["step"] for x in whole["evals"]]
    # a record of other bytes, of other stages or with no stage from_checkpoint: refused
    with pytest.raises(InputError, match="sha256"):
        T.resume_from_checkpoint(str(tmp_path / "x.pth"), str(tmp_path / "whole.pth"),
                                 str(tmp_path / "first.train.json"), s1, plan.stages_of(s1, raw), tasks, ex)
    other = [{**raw[0], "settings": {"t2_per_step": 3, "tokens": 6000}}, raw[1]]
    for stages, field in ((other, "stages"), (raw[:1], "from_checkpoint")):
        with pytest.raises(InputError, match=field):
            T.resume_from_checkpoint(str(tmp_path / "x.pth"), str(tmp_path / "first.pth"),
                                     str(tmp_path / "first.train.json"), s1, plan.stages_of(s1, stages), tasks, ex)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match="bad.json"):
        T.resume_from_checkpoint(str(tmp_path / "x.pth"), str(tmp_path / "first.pth"), str(tmp_path / "bad.json"),
                                 s1, plan.stages_of(s1, raw), tasks, ex)
    late = [raw[0], {**raw[1], "from_tokens": 6100}]  # not where the finished run ended
    with pytest.raises(InputError, match="from_checkpoint"):
        T.resume_from_checkpoint(str(tmp_path / "x.pth"), str(tmp_path / "first.pth"),
                                 str(tmp_path / "first.train.json"), s1, plan.stages_of(s1, late), tasks, ex)
    assert not Path(str(tmp_path / "x.pth") + ".resume.pt").exists()
    with pytest.raises(InputError, match="from_checkpoint"):
        plan.stages_of(s1, [{**raw[1], "from_checkpoint": 1}])


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    """A freshly initialised small model exported as a checkpoint (untrained rows at -100)."""
    from urd.learn.train import export

    tok = get_tokenizer()
    net = model.Trainable(model.init_weights(5, 1, 64), model.reply_vocab(tok))
    path = tmp_path_factory.mktemp("learned") / "small.pth"
    export(net, path)
    return path, net


def test_checkpoint_is_in_the_released_format(small_checkpoint):
    path, _ = small_checkpoint
    sd = torch.load(path, weights_only=True)
    assert [(k, tuple(v.shape)) for k, v in sd.items()] == list(rwkv7_shapes(1, 64, 64, 65536).items())
    assert {v.dtype for v in sd.values()} == {torch.bfloat16}


def test_untrained_ids_never_win_a_greedy_decode(small_checkpoint):
    from urd.backbone.adapter import Backbone

    path, net = small_checkpoint
    bb = Backbone.load(path)
    tok = get_tokenizer()
    trained = torch.zeros(65536, dtype=torch.bool)
    trained[net.vocab] = True
    st = None
    for text in ("Session log.\nRecord: the code for kamot is 7QH2K3MZ9ABC.\n", "In: Please log the fig.\nOut:",
                 "zebra kiwi ~~ ### 12345"):
        logits, st = bb.prefill(tok.encode(text), st)
        assert float(logits[~trained].max()) <= -99  # their bias, -100, and nothing else
        assert int(torch.argmax(logits)) in set(net.vocab.tolist())
        gen = bb.generate(tok.encode("Q: What is the code stored under kamot?\nA:"), st, max_new_tokens=12)
        assert all(trained[t] for t in gen.tokens)


# --- budgets --------------------------------------------------------------------------------------
def test_a_run_that_cannot_fit_its_budget_is_refused_naming_the_field():
    with pytest.raises(InputError, match="tokens") as err:
        plan.check_budget(plan.settings_of({"tokens": 10**10, "max_minutes": 60}))
    assert "max_minutes 60" in str(err.value)
    with pytest.raises(InputError, match="max_memory_mb"):
        plan.check_budget(plan.settings_of({"n_layer": 24, "n_embd": 1024, "tokens": 1000, "max_memory_mb": 4000}))
    with pytest.raises(InputError, match="lr_peak"):
        plan.settings_of({"lr_peak": 1})
    with pytest.raises(InputError, match="n_embd"):
        plan.settings_of({"n_embd": 100})
    assert plan.check_budget(plan.settings_of({}))["minutes"] < plan.DEFAULTS["max_minutes"]


# --- bytes: the same twice; a killed run resumes to them ---------------------------------------
def _train(out: Path, spec: dict, settings: dict, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "urd.learn.train", str(out), "--record", str(out) + ".train.json",
           "--settings", json.dumps(settings), "--spec", json.dumps(spec)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True, **kw)


def test_same_settings_same_bytes_and_a_killed_run_resumes_to_them(tmp_path, spec):
    a, b = tmp_path / "a.pth", tmp_path / "b.pth"
    p = _train(a, spec, SMALL)
    assert p.wait(300) == 0, p.stderr.read()
    rec = json.loads(Path(str(a) + ".train.json").read_text())
    assert rec["sha256"] == check.sha256_file(a) and rec["threads"] == 1 and rec["curve"] is not None
    assert rec["evals"] and set(rec["evals"][-1]) >= {"t1", "t2", "tokens"}
    # trained weights still hold the constant channel that keeps untrained head rows at -100
    sd = torch.load(a, weights_only=True)
    pin = sd["ln_out.weight"].numel() - 1
    assert float(sd["ln_out.weight"][pin]) == 0.0 and float(sd["ln_out.bias"][pin]) == 1.0
    assert float(sd["ln_out.weight"][:pin].float().std()) > 0
    # the same run again, killed once it has saved a step, then run again: the same bytes
    p = _train(b, spec, SMALL)
    resume = Path(str(b) + ".resume.pt")
    deadline = time.monotonic() + 120
    while not resume.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert resume.exists(), "no step was saved"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not b.exists(), "a killed run left a checkpoint"
    p = _train(b, spec, SMALL)
    err = p.communicate(timeout=300)[1]
    assert p.returncode == 0, err
    assert "resumed at step" in err
    assert b.read_bytes() == a.read_bytes()
    assert not resume.exists()


def test_a_resume_file_of_other_settings_is_refused(tmp_path, spec):
    out = tmp_path / "x.pth"
    torch.save({"settings": plan.settings_of({**SMALL, "seed": 99})}, str(out) + ".resume.pt")
    p = _train(out, spec, SMALL)
    err = p.communicate(timeout=120)[1]
    assert p.returncode == 1 and "settings" in err and not out.exists()


# --- the check at use -----------------------------------------------------------------------------
def _manifest(tmp_path, path, digest):
    m = tmp_path / "backbones.sha256"
    m.write_text(f"{digest}  {path}\n")
    return m


def test_pinned_bytes_pass_by_digest(tmp_path, small_checkpoint, spec, monkeypatch):
    path, _ = small_checkpoint
    monkeypatch.chdir(path.parent)
    m = _manifest(tmp_path, path.name, check.sha256_file(path))
    train = {"settings": SMALL, "behaviour": {"t1": 0.9, "t2": 0.9, "tolerance": 0.0}}
    assert check.check(path.name, m, train, spec)["check"] == "sha256"


def _behaviour(t1, t2, below=(0.1, 0.1), targets=(0.0, 0.0)):
    return {"settings": SMALL, "behaviour": {"t1": t1, "t2": t2, "below": dict(zip(("t1", "t2"), below)),
                                             "targets": dict(zip(("t1", "t2"), targets))}}


def test_other_bytes_pass_by_behaviour_or_are_refused_with_both_figures(tmp_path, small_checkpoint, spec,
                                                                           monkeypatch, capsys):
    """One-sided: an untrained model (0 on both) passes a pin it is exactly its interval below, and
    is refused a pin one step further, T2's alone, or a target above it."""
    path, _ = small_checkpoint
    monkeypatch.chdir(path.parent)
    m = _manifest(tmp_path, path.name, "0" * 64)
    got = check.check(path.name, m, _behaviour(0.05, 0.0, below=(0.05, 0.0)), spec)  # at the floor exactly
    assert got["check"] == "behaviour" and got["measured"] == {"t1": 0.0, "t2": 0.0}
    assert got["floor"] == {"t1": 0.0, "t2": 0.0} and got["pinned"] == {"t1": 0.05, "t2": 0.0}
    for refused in (_behaviour(0.5, 0.0), _behaviour(0.0, 0.2), _behaviour(0.0, 0.0, targets=(0.3, 0.0))):
        with pytest.raises(InputError):
            check.check(path.name, m, refused, spec)
    stamp, result = tmp_path / "stamp", tmp_path / "check.json"
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"exclusions": {"spec": spec}}))
    rc = check.main([path.name, "--manifest", str(m), "--stamp", str(stamp), "--check", str(result),
                     "--train", json.dumps(_behaviour(0.5, 0.0)), "--spec", json.dumps(spec), "--record", str(record)])
    failed = [ln for ln in capsys.readouterr().err.splitlines() if "FAILED" in ln]
    assert rc == 1 and not stamp.exists() and not result.exists()
    assert len(failed) == 1 and path.name in (line := failed[0])  # one line, naming the file
    assert "T1 held-out score_A 0.000 (pinned run 0.500, at least 0.400)" in line and "0" * 64 in line
    assert "T2 held-out score_A 0.000 (pinned run 0.000, at least 0.000)" in line


def test_a_checkpoint_with_no_pin_is_refused_not_judged_by_behaviour(tmp_path, small_checkpoint, spec, monkeypatch):
    """Only other bytes than the pin's fall through to the behaviour check: a file the manifest
    does not name at all is refused, however well it does."""
    path, _ = small_checkpoint
    monkeypatch.chdir(path.parent)
    m = tmp_path / "empty.sha256"
    m.write_text("")
    with pytest.raises(InputError, match="a manifest line") as err:
        check.check(path.name, str(m), _behaviour(0.0, 0.0), spec)
    assert "held-out" not in str(err.value)


def test_a_checkpoint_below_t1s_target_is_refused_at_use(cfg, spec, shipped, tmp_path):
    """The shipped checkpoint under a pin its bytes do not match (as a re-derived one would be) is
    admitted by what it does against the shipped figures; against a pinned T1 whose floor is above
    what it does (0.40, less its interval's 0.041: 0.359 > 0.329) it is refused, in one line naming
    both tasks' figures."""
    import shutil

    train = cfg["backbones"]["learned"]["train"]
    copy = tmp_path / shipped.name
    shutil.copy(shipped, copy)
    m = _manifest(tmp_path, str(copy), "0" * 64)
    admitted = check.check(str(copy), m, train, spec)
    assert admitted["check"] == "behaviour" and admitted["measured"]["t1"] >= 0.3
    higher = {**train, "behaviour": {**train["behaviour"], "t1": 0.40}}
    with pytest.raises(InputError) as err:
        check.check(str(copy), m, higher, spec)
    assert "T1 held-out score_A 0.329 (pinned run 0.400, at least 0.359)" in str(err.value)
    assert "T2 held-out score_A" in str(err.value) and "\n" not in str(err.value)


def test_a_config_evaluating_what_the_stream_did_not_exclude_is_refused_in_one_line(cfg, spec, tmp_path):
    """The shipped record names the data spec its stream excluded; the config's own evaluation
    passes, one with more episodes (or another seed) is refused whatever the checkpoint's bytes."""
    record = json.loads((REPO / cfg["backbones"]["learned"]["train"]["record"]).read_text())
    got = check.trained_apart(record, spec, "m.pth")
    assert got["t1_keys"] == got["excluded_t1_keys"] > 0 and got["t2_markers"] == got["excluded_t2_markers"] > 0
    fewer = {**spec, "rung1": {**spec["rung1"], "episodes": 4}}
    assert check.trained_apart(record, fewer, "m.pth")["t1_keys"] < got["excluded_t1_keys"]  # a subset passes
    for changed in ({"episodes": 8}, {"master_seed": spec["rung1"]["master_seed"] + 1}):
        more = {**spec, "rung1": {**spec["rung1"], **changed}}
        with pytest.raises(InputError) as err:
            check.trained_apart(record, more, "m.pth")
        msg = str(err.value)
        assert "episodes, master_seed" in msg and "T1 keys" in msg and "may have trained on" in msg and "\n" not in msg
    with pytest.raises(InputError, match="exclusions.spec"):
        check.trained_apart({}, spec, "m.pth")


def test_each_draw_of_the_training_family_keeps_to_its_index_range(cfg, spec):
    ranges = sorted(S.RANGES.values())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges)) and S.FRESH == S.RANGES["fresh"][0]
    assert list(S.indices("fresh", S.FRESH, 3)) == [S.FRESH, S.FRESH + 1, S.FRESH + 2]
    for name, first, n in (("train", S.HELD_OUT - 1, 2), ("fresh", S.RANGES["dev"][0], 1), ("dev", S.FRESH, 1)):
        with pytest.raises(ValueError, match=f"outside the '{name}' range"):
            S.indices(name, first, n)
    ex = S.Exclusions(frozenset(), frozenset(), frozenset(), frozenset())
    data = Data(plan.settings_of(SMALL), {"t1": cfg["tasks"]["t1"], "t2": cfg["tasks"]["t2"]}, ex, get_tokenizer())
    with pytest.raises(ValueError, match="'train' range"):  # a step whose episodes would be held-out ones
        data.step(S.HELD_OUT // 16, 0)


# --- the shipped file -----------------------------------------------------------------------------
def test_pack_and_unpack_give_back_the_bytes(tmp_path, small_checkpoint):
    path, _ = small_checkpoint
    digest = ship.pack(str(path), str(tmp_path / "c.pth.xz"))
    assert (tmp_path / "c.pth.xz").stat().st_size < path.stat().st_size / 4  # zero rows cost nothing
    assert ship.pack(str(path), str(tmp_path / "d.pth.xz")) == digest
    assert (tmp_path / "c.pth.xz").read_bytes() == (tmp_path / "d.pth.xz").read_bytes()
    assert ship.unpack(str(tmp_path / "c.pth.xz"), str(tmp_path / "e.pth")) == digest
    (tmp_path / "bad.xz").write_bytes((tmp_path / "c.pth.xz").read_bytes()[:-100])
    with pytest.raises(InputError, match="bad.xz"):
        ship.unpack(str(tmp_path / "bad.xz"), str(tmp_path / "f.pth"))
    assert not (tmp_path / "f.pth").exists()


# --- the shipped checkpoint -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped(tmp_path_factory, cfg):
    """The repository's learned checkpoint, unpacked, after its pin."""
    b = cfg["backbones"]["learned"]
    out = tmp_path_factory.mktemp("shipped") / b["file"]
    digest = ship.unpack(str(REPO / b["train"]["shipped"]), str(out))
    pinned = (REPO / "calibration/backbones.sha256").read_text()
    assert f"{digest}  models/{b['file']}" in pinned, "the shipped checkpoint is not the pinned one"
    return out


def test_the_shipped_record_says_how_it_was_made_and_its_scores_are_the_pinned_behaviour(cfg, shipped):
    b = cfg["backbones"]["learned"]
    rec = json.loads((REPO / b["train"]["record"]).read_text())
    assert rec["sha256"] == check.sha256_file(shipped)
    # A setting added after the record was made reads as its default, which is how training ran
    # before the setting existed; every setting the record names must match the config's.
    s = plan.settings_of(b["train"]["settings"])
    assert s == plan.settings_of(rec["settings"])
    # and its stages began as the config states them, each at or past its token count
    stages = plan.stages_of(s, b["train"].get("stages", []))
    began = rec.get("stages", [])
    assert [(x["changes"], x["level"], x.get("from_checkpoint", False)) for x in began] == [
        (x["changes"], x["level"], x["from_checkpoint"]) for x in stages]
    assert all(x["tokens"] >= st["from_tokens"] for x, st in zip(began, stages))
    final = (stages[-1]["settings"] if stages else s)["tokens"]
    assert "python -m urd.learn.train" in rec["shipped"]["command"] and rec["tokens"] >= final
    want = b["train"]["behaviour"]
    pinned = (want["t1"], want["t2"])
    if "episodes" in want:  # the fresh held-out episodes' figures (rounded as the record gives them)
        fresh = rec["fresh_held_out"]
        assert f"--held-out {want['episodes']}" in fresh["how"]
        assert (fresh["t1_score_A"][0], fresh["t2_discrimination_A"][0]) == pinned
    else:
        last = rec["evals"][-1]
        assert (last["t1"]["score_A"], last["t2"]["score_A"]) == pytest.approx(pinned, abs=1e-9)


def test_the_pinned_behaviour_is_what_the_shipped_checkpoint_does(cfg, spec, shipped):
    """The check at use measures what was pinned: the shipped checkpoint, checked by behaviour,
    scores its pins (to their rounding) on the pinned episodes, so only a model that does
    otherwise is refused."""
    train = cfg["backbones"]["learned"]["train"]
    got = check.behaviour(str(shipped), train, spec)
    assert got == pytest.approx({"t1": train["behaviour"]["t1"], "t2": train["behaviour"]["t2"]}, abs=5e-4)


def test_vanilla_sits_at_its_floor_on_the_shipped_model(cfg, shipped):
    """Nothing of an evaluated episode is in the weights: with nothing crossing, session B finds
    no code and no marker."""
    from urd.backbone.adapter import Backbone
    from urd.data import calibrate
    from urd.harness.runner import run_system
    from urd.harness.scoring import episode_scores
    from urd.session.context import Decode
    from urd.session.handle import ModelHandle
    from urd.systems import registry

    bb = Backbone.load(shipped)
    for task, make in (("t1", calibrate.t1_episode), ("t2", calibrate.t2_episode)):
        eps = [make(cfg, i) for i in range(cfg["episodes"])]
        dec = Decode(max_new_tokens=cfg["decode"][task]["max_new_tokens"])
        van = run_system(bb, registry.build("vanilla", ModelHandle(bb)), task, eps, "over", 120, 10, dec)
        if task == "t1":
            assert not any(r["verdict"] == "correct" for r in van)  # no evaluated code is in the weights
        else:
            rates = [episode_scores("t2", [r for r in van if r["episode"] == e["episode"]]) for e in eps]
            assert all(x["rate_trigger"] == 0 and x["rate_non_trigger"] == 0 for x in rates)  # no marker known


def test_the_shipped_model_learns_both_tasks_in_session_on_the_published_episodes(cfg, shipped):
    """The shipped checkpoint, through the benchmark's own load, decode and judge, learns within
    session A on the published episodes: T2 to the issue's target (discrimination_A >= 0.5) in
    every episode, T1 to the issue's target (score_A >= 0.3; 0.308 measured, docs/learned-backbone.md,
    and the same 0.308 on every path tried: torch's AVX2 and scalar DEFAULT kernels and one thread on
    a 2-core machine, AVX512 on another), each reply in its task's form, so vanilla's floor is not a
    model that says nothing. A regression in the export,
    the loading path or the scoring would read as a model that learns nothing."""
    from urd.backbone.adapter import Backbone
    from urd.data import calibrate
    from urd.harness.runner import run_control
    from urd.harness.scoring import episode_scores, first_line
    from urd.session.context import Decode

    bb = Backbone.load(shipped)
    for task, make in (("t1", calibrate.t1_episode), ("t2", calibrate.t2_episode)):
        eps = [make(cfg, i) for i in range(cfg["episodes"])]
        ctl = run_control(bb, task, eps, Decode(max_new_tokens=cfg["decode"][task]["max_new_tokens"]))
        scores = [episode_scores(task, [r for r in ctl if r["episode"] == e["episode"]])["score"] for e in eps]
        if task == "t1":
            assert sum(scores) / len(scores) >= 0.3, scores
            # a code or NONE, though a code may run past the 12 characters a value holds, or use up
            # the decode's tokens before its newline, and then parse as none
            code = f"[{t1.ALPHABET}]+"
            assert all(r["parsed"] is not None or re.fullmatch(code, first_line(r["response"])) for r in ctl)
        else:
            assert min(scores) >= 0.5, scores
            assert all(r["parsed"].startswith("Logged: ") for r in ctl)  # the reply, with or without a marker


def test_the_learning_curve_reads_each_evaluation_and_the_curriculum_column_where_recorded(tmp_path):
    from urd.tables import learning

    ev = {"step": 10, "tokens": 5000, "t1": {"score_A": 0.25, "confabulation": 0.5},
          "t2": {"score_A": 0.5, "rate_trigger": 0.75, "rate_non_trigger": 0.25}}
    record = {"settings": {"n_layer": 2, "n_embd": 128, "seed": 1}, "threads": 1, "seconds": 60,
              "curve": [{"tokens": 5000, "loss": 1.5}],
              "evals": [ev, {**ev, "step": 20, "tokens": 9000, "t1_at_cap": {"pairs": 12, "score_A": 0.4}},
                        {**ev, "step": 30, "tokens": 13000, "t1_at_cap": {"pairs": 16, "code_length": 4, "score_A": 0.6}}]}
    rows = learning.rows(record)
    assert rows == [[10, 5000, 0.25, 0.5, 0.5, 0.75, 0.25, None, None, None],
                    [20, 9000, 0.25, 0.5, 0.5, 0.75, 0.25, 12, 0.4, 12],
                    [30, 13000, 0.25, 0.5, 0.5, 0.75, 0.25, 16, 0.6, 4]]
    assert len(learning.HEADER) == len(rows[0])
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**record, "evals": []}))
    assert learning.main(["--record", str(path), "--csv", str(tmp_path / "c.csv"), "--png", str(tmp_path / "c.png")]) == 1
    assert not (tmp_path / "c.csv").exists() and not (tmp_path / "c.png").exists()
    path.write_text(json.dumps(record))
    assert learning.main(["--record", str(path), "--csv", str(tmp_path / "c.csv"), "--png", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.csv").read_text().splitlines()[2].endswith(",12,0.4,12")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_learning_curve_sets_the_shipped_points_published_and_fresh_figures_beside_the_runs_own(cfg, tmp_path):
    """The run's curve is its own 4 held-out episodes; the figure marks the shipped checkpoint's
    figure on the check's 24 fresh episodes, and the record's published-episode scores."""
    from urd.tables import learning

    record = json.loads((REPO / cfg["backbones"]["learned"]["train"]["record"]).read_text())
    m = learning.marks(record)
    assert m["fresh"]["t1"] == record["fresh_held_out"]["t1_score_A"] and m["fresh"]["tokens"] == record["tokens"]
    assert m["fresh"]["t1"][1] <= m["fresh"]["t1"][0] <= m["fresh"]["t1"][2]
    assert [p["tokens"] for p in m["published"]] == [p["tokens"] for p in record["published_episodes"]["at"]]
    assert learning.marks({"evals": []}) == {"published": [], "fresh": None}
    assert learning.main(["--record", str(REPO / cfg["backbones"]["learned"]["train"]["record"]),
                          "--csv", str(tmp_path / "c.csv"), "--png", str(tmp_path / "c.png")]) == 0

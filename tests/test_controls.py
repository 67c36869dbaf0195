"""The controls (ceiling, bits curve) through the real harness, on the tiny backbone.

The tuned-state provider here is a test fixture: a deterministic non-zero WKV state derived
from the transcript, standing in for a replay recipe's tuning artifact.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from urd.controls.artifacts import ArtifactProvider, artifact_dir, evaluated_transcript_digests, transcript_sha256
from urd.controls.evaluate import Recipe, bits_curve, ceiling
from urd.controls.tuned import TunedState, TunedStateSystem, as_tuned
from urd.core.errors import InputError
from urd.harness.runner import run_control
from urd.session.context import Decode
from urd.session.contract import BudgetViolation
from urd.systems.packing import ENTRY_BYTES, state_with_wkv, unpack_topk, wkv_shape


def direct_score(task: str, records: list[dict]) -> float | None:
    """Mean over episodes of T1 recall or T2 discrimination, straight from the stored verdicts
    (an episode without a query of a class has none)."""
    per: dict[int, list[dict]] = {}
    for r in records:
        per.setdefault(r["episode"], []).append(r)

    def rate(rs, verdict):
        return sum(r["verdict"] == verdict for r in rs) / len(rs) if rs else None

    scores = []
    for rs in per.values():
        if task == "t1":
            scores.append(rate([r for r in rs if r["kind"] != "unseen"], "correct"))
        else:
            rt = rate([r for r in rs if r["kind"] == "trigger"], "applied")
            rn = rate([r for r in rs if r["kind"] == "non_trigger"], "applied")
            scores.append(None if rt is None or rn is None else rt - rn)
    scores = [s for s in scores if s is not None]
    return sum(scores) / len(scores) if scores else None


def fixture_state(layout, transcript: str, scale: float = 0.5) -> np.ndarray:
    """Deterministic, non-zero, different per transcript."""
    seed = int.from_bytes(hashlib.sha256(transcript.encode()).digest()[:4], "little")
    return (np.random.default_rng(seed).standard_normal(wkv_shape(layout)) * scale).astype(np.float32)


def provider_for(backbone, trained_tokens: int = 0):
    return lambda transcript: TunedState(fixture_state(backbone.layout, transcript), trained_tokens)


@pytest.fixture(scope="module")
def episodes(urd_config):
    from urd.data.calibrate import t1_episode, t2_episode

    def cut(ep):
        # two queries, and a T1 session cut to its first lines (1.8 K tokens is slow to prefill
        # on CPU and adds nothing here)
        lines = ep["transcript"].split("\n")
        return {**ep, "queries": ep["queries"][:2], "transcript": "\n".join(lines[:6]) + "\n"}

    return {"t1": [cut(t1_episode(urd_config, 0))], "t2": [cut(t2_episode(urd_config, 0))]}


@pytest.fixture(scope="module")
def decode():
    return {"t1": Decode(max_new_tokens=4), "t2": Decode(max_new_tokens=4)}


@pytest.fixture(scope="module")
def controls(tiny_backbone, episodes, decode):
    return {t: run_control(tiny_backbone, t, episodes[t], decode[t]) for t in episodes}


def test_full_state_fiche_round_trips_and_reaches_the_answer(tiny_backbone, episodes):
    bb = tiny_backbone
    ep = episodes["t2"][0]
    system = TunedStateSystem(bb, provider_for(bb, trained_tokens=7), "replay_fixture")
    fiche = system.consolidate(ep["transcript"], None)
    size = int(np.prod(wkv_shape(bb.layout)))
    assert len(fiche) == ENTRY_BYTES * size           # the full state: every entry kept
    assert system.declared_tokens == 7                # the tuning's tokens are declared
    wanted = fixture_state(bb.layout, ep["transcript"]).ravel()
    np.testing.assert_array_equal(unpack_topk(fiche, size), wanted)
    # The restored state is the tuned WKV with zero token shifts, and it changes the model's output.
    state = state_with_wkv(bb, wanted)
    assert all(float(state[3 * i].abs().sum()) == 0 for i in range(bb.n_layer))
    np.testing.assert_array_equal(state[1].numpy(), wanted.reshape(wkv_shape(bb.layout))[0])
    tokens = bb.tokenizer.encode(f"{ep['header']}\n")
    tuned_logits, _ = bb.prefill(tokens, state)
    zero_logits, _ = bb.prefill(tokens, None)
    assert not torch.allclose(tuned_logits, zero_logits)
    # answer() is exactly a greedy decode from that state, after the header.
    q = ep["queries"][0]["prompt"]
    system.decode = Decode(max_new_tokens=4)
    _, after_header = bb.prefill(tokens, state)
    manual = bb.generate(bb.tokenizer.encode(q), after_header, max_new_tokens=4, keep_state=False).text
    assert system.answer(fiche, q, ep["header"]) == manual


def test_ceiling_runs_every_recipe_on_every_task_through_the_harness(tiny_backbone, episodes, controls, decode):
    bb = tiny_backbone
    recipes = [Recipe("replay_tune", provider_for(bb, 10)), Recipe("replay_banc", provider_for(bb, 10**6), True)]
    result, records = ceiling(bb, episodes, recipes, controls, 10, decode)
    assert result["budget_bytes"] is None
    assert set(result["recipes"]) == {"replay_tune", "replay_banc"}
    size = int(np.prod(wkv_shape(bb.layout)))
    for name, rec in result["recipes"].items():
        assert rec["out_of_contract"] is (name == "replay_banc")
        for task, cell in rec["tasks"].items():
            assert cell["fiche_bytes"]["max"] == ENTRY_BYTES * size
            assert cell["budget_bytes"] is None
            assert cell["out_of_contract"] is (name == "replay_banc")
            mine = [r for r in records if r["system"] == name and r["task"] == task]
            assert len(mine) == len(episodes[task][0]["queries"])
            # the figures come from the kept responses and the reused control: recomputed here
            # from their verdicts, without the fold
            for got, want in ((cell["score_B"], direct_score(task, mine)),
                              (cell["score_A"], direct_score(task, controls[task]))):
                assert got == want if want is None else got == pytest.approx(want, abs=1e-6)
            assert [e["episode"] for e in cell["episodes"]] == sorted({r["episode"] for r in mine})
    assert {r["declared_tokens"] for r in records if r["system"] == "replay_banc"} == {10**6}


def test_an_in_contract_recipe_over_the_cap_is_a_violation(tiny_backbone, episodes, controls, decode):
    bb = tiny_backbone
    with pytest.raises(BudgetViolation, match="over the cap"):
        ceiling(bb, {"t2": episodes["t2"]}, [Recipe("replay_tune", provider_for(bb, 10**6))], controls, 10, decode)


def test_bits_curve_packs_to_each_budget(tiny_backbone, episodes, controls, decode):
    bb = tiny_backbone
    size = int(np.prod(wkv_shape(bb.layout)))
    budgets = [120, 960, 4096, None]
    result, records = bits_curve(bb, "t2", episodes["t2"], Recipe("replay_banc", provider_for(bb), True),
                                 budgets, controls["t2"], 10, decode["t2"])
    assert result["task"] == "t2" and result["recipe"] == "replay_banc" and result["out_of_contract"] is True
    assert [p["split"] for p in result["points"]] == ["120B", "960B", "4096B", "full"]
    assert [p["budget_bytes"] for p in result["points"]] == budgets
    assert [p["fiche_bytes"]["max"] for p in result["points"]] == [120, 960, 4096, ENTRY_BYTES * size]
    assert len(records) == len(budgets) * len(episodes["t2"][0]["queries"])
    # top-k: the 15 entries of a 120-byte fiche are the 15 largest in magnitude
    ep = episodes["t2"][0]
    fiche120 = TunedStateSystem(bb, provider_for(bb), "x").consolidate(ep["transcript"], 120)
    kept = unpack_topk(fiche120, size)
    full = fixture_state(bb.layout, ep["transcript"]).ravel()
    assert np.count_nonzero(kept) == 15
    assert np.abs(full[kept != 0]).min() >= np.sort(np.abs(full))[-15]


def test_control_responses_run_when_not_given(tiny_backbone, episodes, controls, decode, monkeypatch):
    """Without control responses the control is run on the same episodes with the same decode,
    and score A is that run's; given responses are used as they are, and nothing is run."""
    import urd.controls.evaluate as evaluate

    bb = tiny_backbone
    calls = []

    def spy(*args, **kwargs):
        calls.append(args[:4])
        return run_control(*args, **kwargs)

    monkeypatch.setattr(evaluate, "run_control", spy)
    recipe = Recipe("r", provider_for(bb))
    result, _ = bits_curve(bb, "t1", episodes["t1"], recipe, [None], None, 10, decode["t1"])
    assert calls == [(bb, "t1", episodes["t1"], decode["t1"])]
    point = result["points"][0]
    # tiny's random weights recall no seen key in session A: A is 0, so B/A has no value
    assert [r["verdict"] for r in controls["t1"]] == ["wrong", "wrong"]
    assert point["score_A"] == direct_score("t1", controls["t1"]) == 0.0
    assert point["retention"] is None and "score A (in-session control) is 0" in point["retention_undefined"]
    # the same figures as from the control's responses handed over
    given, _ = bits_curve(bb, "t1", episodes["t1"], recipe, [None], controls["t1"], 10, decode["t1"])
    assert given["points"] == result["points"] and len(calls) == 1
    # handed-over responses are what score A is folded from: one of two seen keys recalled
    doctored = [{**r, "response": " " + r["expected"]} if i == 0 else r for i, r in enumerate(controls["t1"])]
    given, _ = bits_curve(bb, "t1", episodes["t1"], recipe, [None], doctored, 10, decode["t1"])
    assert len(calls) == 1
    assert given["points"][0]["score_A"] == 0.5
    assert given["points"][0]["retention"] == pytest.approx(point["score_B"] / 0.5, abs=1e-6)


def test_provider_output_is_checked(tiny_backbone):
    layout = tiny_backbone.layout
    with pytest.raises(InputError, match="shape"):
        as_tuned(np.zeros(7, dtype=np.float32), layout)
    bad = np.zeros(wkv_shape(layout), dtype=np.float32)
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(InputError, match="finite"):
        as_tuned(bad, layout)
    per_layer = [torch.ones(wkv_shape(layout)[1:]) for _ in range(layout.n_layer)]
    assert as_tuned(per_layer, layout).wkv.shape == wkv_shape(layout)


def test_artifact_provider_reads_verifies_and_fails_loudly(tmp_path, tiny_backbone):
    layout = tiny_backbone.layout
    transcript = "Record: the code for bazor is 0123456789AB.\n"
    state = fixture_state(layout, transcript)
    d = artifact_dir(tmp_path, "replay_banc", transcript)
    d.mkdir(parents=True)
    np.save(d / "time_state.npy", state)
    from urd.core.io import sha256_file

    costs = {"steps": 64, "trained_tokens": 393216, "artifact_sha256": sha256_file(d / "time_state.npy")}
    (d / "costs.json").write_text(json.dumps(costs))
    provider = ArtifactProvider(tmp_path, "replay_banc", "time_state.npy")
    got = as_tuned(provider(transcript), layout)
    np.testing.assert_array_equal(got.wkv, state)
    assert got.trained_tokens == 393216
    assert d.name == transcript_sha256(transcript)
    # .pt works too
    torch.save(torch.from_numpy(state), d / "time_state.pt")
    costs["artifact_sha256"] = sha256_file(d / "time_state.pt")
    (d / "costs.json").write_text(json.dumps(costs))
    np.testing.assert_array_equal(as_tuned(ArtifactProvider(tmp_path, "replay_banc", "time_state.pt")(transcript), layout).wkv, state)
    # a flipped byte in the state, a missing artifact: loud
    data = bytearray((d / "time_state.pt").read_bytes())
    data[-1] ^= 1
    (d / "time_state.pt").write_bytes(bytes(data))
    with pytest.raises(InputError, match="SHA-256"):
        ArtifactProvider(tmp_path, "replay_banc", "time_state.pt")(transcript)
    with pytest.raises(InputError, match="missing"):
        provider("another transcript")


def test_artifact_names_are_known_when_the_dag_is_built(urd_config):
    from urd.data.calibrate import episodes_text

    cfg = {**urd_config, "evaluate_episodes": 2}
    eps = [json.loads(line) for line in episodes_text(urd_config, "t2").splitlines()]
    assert evaluated_transcript_digests(cfg, "t2") == [transcript_sha256(e["transcript"]) for e in eps[:2]]
    assert len(evaluated_transcript_digests(urd_config, "t1")) == urd_config["episodes"]

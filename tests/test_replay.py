"""Replay baselines: recipes against the contract, the tuning job's artifact, the systems that read
it, and the out_of_contract label from costs.json to summary.json. Tiny backbone, T2 transcripts."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from urd.backbone import wkv_fla
from urd.backbone.rwkv7_torch import RWKV7
from urd.backbone.tokenizer import encode
from urd.core.errors import DigestMismatch, InputError
from urd.core.io import atomic_write_jsonl, sha256_bytes
from urd.cost.estimate import tune_resources, tune_step_seconds
from urd.data import calibrate
from urd.harness.runner import run_control, run_system
from urd.harness.summarize import main as summarize_main
from urd.replay.artifact import RUN_FIELDS, read_artifact
from urd.replay.costs import fold_costs
from urd.replay.recipe import resolve
from urd.replay.tune import checkpoint_choice, estimated_peak_mb
from urd.replay.tune import main as tune_main
from urd.session.context import Decode
from urd.session.contract import BudgetViolation
from urd.systems import registry
from urd.systems.packing import ENTRY_BYTES, capacity, pack_topk, unpack_topk
from urd.workflow import replay as plan

OPT = {"lr_init": 1.0, "lr_final": 0.01, "grad_clip": 1.0, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8}


# ------------------------------------------------------------------ recipes (no model)

def test_repo_recipes_meet_the_contract_arithmetic(urd_config):
    s = plan.settings(urd_config, "0.1b", "replay_tune")
    tune = resolve(s, "replay_tune", "0.1b", 1837, 10)
    assert (tune.steps, tune.ctx, tune.trained_tokens, tune.token_cap) == (10, 1837, 18370, 18370)
    assert not tune.out_of_contract
    banc = resolve(plan.settings(urd_config, "0.1b", "replay_banc"), "replay_banc", "0.1b", 2048, 10)
    # the seed's arithmetic: 64 x 6144 = 393,216 = 19.2 x (10 x 2,048)
    assert (banc.steps, banc.ctx, banc.trained_tokens, banc.out_of_contract) == (64, 6144, 393216, True)
    assert banc.trained_tokens / banc.token_cap == pytest.approx(19.2)
    # tiny: reduced, still in / out of contract as declared
    tiny_tune = resolve(plan.settings(urd_config, "tiny", "replay_tune"), "replay_tune", "tiny", 170, 10)
    assert tiny_tune.trained_tokens == 170 and not tiny_tune.out_of_contract
    tiny_banc = resolve(plan.settings(urd_config, "tiny", "replay_banc"), "replay_banc", "tiny", 170, 10)
    assert tiny_banc.out_of_contract and tiny_banc.steps == 4


def test_an_in_contract_recipe_over_the_cap_is_refused_naming_the_key():
    with pytest.raises(InputError, match=r"replay.recipes.r \(scale s\): expected steps x ctx <= 10 x 100 "
                                         r"transcript tokens = 1000 .*got '11 x 100 = 1100'"):
        resolve({**OPT, "steps": 11}, "r", "s", 100, 10)
    # the default is the most the contract allows, whatever ctx is
    assert resolve({**OPT, "ctx": 300}, "r", "s", 100, 10).steps == 3
    with pytest.raises(InputError, match=r"\.steps: expected an explicit step count"):
        resolve({**OPT, "out_of_contract": True}, "r", "s", 100, 10)
    with pytest.raises(InputError, match=r"replay.optimizer.lr_init"):
        resolve({"steps": 1}, "r", "s", 100, 10)


def test_windows_cycle_over_the_transcript_and_lr_decays():
    r = resolve({**OPT, "ctx": 4, "steps": 4}, "r", "s", 10, 10)
    toks = list(range(10))
    assert [r.window(toks, i) for i in range(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5]]
    long = resolve({**OPT, "ctx": 25, "steps": 2, "out_of_contract": True}, "r", "s", 10, 1)
    assert long.window(toks, 1) == toks[5:] + toks + toks  # starts at 25 mod 10, 2.5 copies
    assert r.lr(0) == 1.0 and r.lr(3) == pytest.approx(0.01) and r.lr(1) > r.lr(2)


def test_topk_fiche_of_a_01b_tuned_state():
    n = 12 * 12 * 64 * 64
    assert n == 589_824 and capacity(120, n) == 15 and capacity(960, n) == 120
    flat = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    fiche = pack_topk(flat, 120)
    assert len(fiche) == 15 * ENTRY_BYTES == 120
    back = unpack_topk(fiche, n)
    kept = np.flatnonzero(back)
    assert len(kept) == 15 and set(kept) == set(np.argsort(-np.abs(flat))[:15])
    assert np.array_equal(back[kept], flat[kept])


def test_tuning_resources_are_integer_estimates_priced_where_the_job_runs(urd_config):
    # 0.1b replay_banc on a GPU: 64 steps of ctx 6,144 at the measured 49,440 tokens/s (7.95 s) +
    # 60 s load + 52 s compile = 119.95 s -> 120 GPU seconds; the run-time limit in minutes: 2 x 2 + 10
    res = tune_resources(urd_config, "0.1b", 64, 6144, "cluster")
    assert res == {"gpu": 1, "gpu_seconds": 120, "cpu_seconds": 0, "runtime": 14, "mem_mb": 8000}
    assert tune_resources(urd_config, "0.1b", 64, 6144, "cuda") == res
    # on the CPU here: 64 x 6,144 at 55 tokens/s + 10 s load = 7,159.3 s -> CPU seconds, no GPU
    cpu = tune_resources(urd_config, "0.1b", 64, 6144, "cpu")
    assert cpu == {"gpu": 0, "gpu_seconds": 0, "cpu_seconds": 7160, "runtime": 2 * 120 + 10, "mem_mb": 8000}
    # a scale measured on one device only is priced at that figure on the other
    assert tune_resources(urd_config, "tiny", 1, 300, "cluster")["gpu_seconds"] == \
        tune_resources(urd_config, "tiny", 1, 300, "cpu")["cpu_seconds"] == 2  # 300 / 750 + 1 s, whole
    with pytest.raises(InputError, match=r"train_speed.nosuch"):
        tune_resources(urd_config, "nosuch", 1, 1)


def test_a_tuning_job_is_placed_where_the_command_line_sends_it(tmp_path, monkeypatch):
    from urd.cost.placement import cuda_visible, placement

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)  # `--profile slurm` resolves as at the repo root
    assert placement(["results/urd/tiny/summary.json", "-n"], cuda=False) == "cpu"
    assert placement(["results/urd/tiny/summary.json", "-n"], cuda=True) == "cuda"
    assert placement(["--profile", "slurm", "-n", "results/urd/tiny/summary.json"], cuda=False) == "cluster"
    assert placement(["--executor", "slurm", "results/urd/tiny/summary.json"], cuda=False) == "cluster"
    assert placement(None, cuda=False) == "cpu"  # not a command line (the API): local
    gpus = tmp_path / "gpus"
    assert not cuda_visible({}, gpus)
    (gpus / "0000:00:1e.0").mkdir(parents=True)
    assert cuda_visible({}, gpus) and not cuda_visible({"CUDA_VISIBLE_DEVICES": ""}, gpus)


def test_a_tuning_step_is_priced_at_its_ctx_from_the_measured_points():
    speed = {"tokens_per_s": [[6000, 3000], [2000, 2000]]}  # 1 s a step at 2,000; 2 s at 6,000
    assert tune_step_seconds(speed, 2000) == pytest.approx(1.0)
    assert tune_step_seconds(speed, 4000) == pytest.approx(1.5)  # linear between the points
    assert tune_step_seconds(speed, 500) == pytest.approx(1.0)  # below: the first point's seconds
    assert tune_step_seconds(speed, 12000) == pytest.approx(4.0)  # past: the last point's speed
    assert tune_step_seconds({"tokens_per_s": 1000}, 500) == pytest.approx(0.5)  # one figure: any ctx


# ------------------------------------------------------------------ tuning jobs on tiny

@pytest.fixture(scope="module")
def t2_data(urd_config, tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "t2.jsonl"
    calibrate.write_data(urd_config, "t2", path)
    ep = calibrate.t2_episode(urd_config, 0)
    return path, ep, sha256_bytes(ep["transcript"].encode("utf-8"))


@pytest.fixture(scope="module")
def keep_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)  # the tuning CLI sets its own; give the session back its count


def tune(checkpoint, data, sha, recipe, settings, out, episode=0, *extra):
    return tune_main([
        "--checkpoint", str(checkpoint), "--data", str(data), "--task", "t2", "--episode", str(episode),
        "--sha256", sha, "--recipe", recipe, "--scale", "tiny", "--settings", json.dumps({**OPT, **settings}),
        "--factor", "10", "--threads", "1", "--device", "cpu", "--out-dir", str(out), *extra,
    ])


@pytest.fixture(scope="module")
def artifacts(tiny_checkpoint, t2_data, tmp_path_factory, keep_threads):
    """An in-contract artifact (2 passes over the transcript) and an out-of-contract one."""
    data, _, sha = t2_data
    root = tmp_path_factory.mktemp("artifacts")
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 2}, root / "replay_tune" / sha) == 0
    assert tune(tiny_checkpoint, data, sha, "replay_banc", {"steps": 2, "ctx": 900, "out_of_contract": True},
                root / "replay_banc" / sha) == 0
    return root


def test_tuning_is_deterministic_and_lowers_the_transcript_loss(tiny_checkpoint, t2_data, artifacts, tmp_path):
    data, ep, sha = t2_data
    first = artifacts / "replay_tune" / sha
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 2}, tmp_path / sha) == 0
    a, b = read_artifact(first), read_artifact(tmp_path / sha)
    # same inputs, same thread count: the same bytes (no randomness is consumed)
    assert (first / "time_state.npy").read_bytes() == (tmp_path / sha / "time_state.npy").read_bytes()
    strip = lambda c: {k: v for k, v in c.items() if k not in RUN_FIELDS}
    assert strip(a.costs) == strip(b.costs)
    T = len(encode(ep["transcript"]))
    assert a.costs["trained_tokens"] == 2 * T and a.costs["token_cap"] == 10 * T
    assert a.costs["steps"] == 2 and a.costs["ctx"] == T and a.costs["out_of_contract"] is False
    assert a.costs["device"].startswith("cpu") and a.costs["torch_threads"] == 1
    # auto on the CPU runs the chunked WKV, and the record says which path ran
    assert a.costs["wkv"] == {"path": "chunked", "requested": "auto", "chunk": 64}
    assert a.costs["precision"] == "fp32"
    assert a.costs["artifact_sha256"] == sha256_bytes((first / "time_state.npy").read_bytes())
    # the learned state does what tuning is for: the transcript is likelier from it than from zero
    m = RWKV7.load(tiny_checkpoint)
    with torch.no_grad():
        zero = m.loss(encode(ep["transcript"]), m.zero_time_state()).item()
        tuned = m.loss(encode(ep["transcript"]), torch.from_numpy(a.state)).item()
    assert tuned < zero - 0.01, (zero, tuned)


def test_bf16_tuning_is_recorded_and_lands_near_the_fp32_state(tiny_checkpoint, t2_data, artifacts, tmp_path):
    data, _, sha = t2_data
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 2}, tmp_path / sha, 0, "--precision", "bf16") == 0
    fp32, bf16 = read_artifact(artifacts / "replay_tune" / sha), read_artifact(tmp_path / sha)
    assert bf16.costs["precision"] == "bf16" and fp32.costs["precision"] == "fp32"
    # another precision, other bytes (hence its own record), but nearly the same learned state: Adam's
    # first steps at lr 1 are sign-like, so a component whose gradient is near zero may flip (0.995 seen)
    assert bf16.costs["artifact_sha256"] != fp32.costs["artifact_sha256"]
    a, b = (torch.from_numpy(x.state).flatten().double() for x in (fp32, bf16))
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.98
    assert bf16.costs["losses"] == pytest.approx(fp32.costs["losses"], rel=1e-3)


# The tuning job on another WKV path lands where the chunked CPU job does. On CUDA it runs as the
# rule runs it there (config replay.on_cuda: fla's kernels through `auto`, bf16, recomputation by
# the memory estimate) and is held as bf16 products are, above; here, the token-by-token path
# takes the same check to float32 rounding.
CUDA_PATH = pytest.mark.skipif(wkv_fla.unavailable("cuda") is not None,
                               reason=f"the tuning job on CUDA: {wkv_fla.unavailable('cuda')}")


@pytest.mark.parametrize("device, wkv, ran, cosine, rel", [
    pytest.param("cpu", "sequential", "sequential", 0.99999, 1e-5, id="cpu-sequential"),
    pytest.param("cuda", "auto", "fla", 0.98, 1e-2, id="cuda-auto", marks=CUDA_PATH),
])
def test_the_tuning_job_on_another_path_learns_the_chunked_state(tiny_checkpoint, t2_data, artifacts, tmp_path,
                                                                   urd_config, device, wkv, ran, cosine, rel):
    data, _, sha = t2_data
    on_cuda = urd_config["replay"]["on_cuda"]
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 2}, tmp_path / sha, 0, "--device", device,
                "--wkv", wkv, "--cuda-precision", on_cuda["precision"],
                "--cuda-checkpoint-layers", str(on_cuda["checkpoint_layers"]).lower()) == 0
    ref, got = read_artifact(artifacts / "replay_tune" / sha), read_artifact(tmp_path / sha)
    assert ref.costs["wkv"]["path"] == "chunked" and ref.costs["device"].startswith("cpu")
    assert got.costs["wkv"] == {**got.costs["wkv"], "path": ran, "requested": wkv}
    assert got.costs["device"].startswith("cpu") == (device == "cpu")
    assert got.costs["precision"] == (on_cuda["precision"] if device == "cuda" else "fp32")
    assert got.costs["trained_tokens"] == ref.costs["trained_tokens"]
    a, b = (torch.from_numpy(x.state).flatten().double() for x in (ref, got))
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > cosine
    assert got.costs["losses"] == pytest.approx(ref.costs["losses"], rel=rel)


def test_the_cuda_settings_leave_a_cpu_job_as_it_was(tiny_checkpoint, t2_data, artifacts, tmp_path):
    data, _, sha = t2_data
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 2}, tmp_path / sha, 0,
                "--cuda-precision", "bf16", "--cuda-checkpoint-layers", "true") == 0
    ref, got = read_artifact(artifacts / "replay_tune" / sha), read_artifact(tmp_path / sha)
    assert (tmp_path / sha / "time_state.npy").read_bytes() == (artifacts / "replay_tune" / sha / "time_state.npy").read_bytes()
    assert got.costs["precision"] == "fp32"
    assert got.costs["checkpoint_layers"] == ref.costs["checkpoint_layers"]
    assert got.costs["checkpoint_layers"]["ran"] is False and got.costs["checkpoint_layers"]["requested"] is False


def test_auto_recomputes_blocks_only_where_the_estimated_peak_passes_half_the_gpu():
    from urd.backbone.shapes import rwkv7_shapes

    def params(n_layer, n_embd):
        return sum(math.prod(v) for v in rwkv7_shapes(n_layer, n_embd, 64, 65536).values())

    # the estimate against the peaks measured on an H200 (fla, bf16, no recomputation, ctx 6,144;
    # peak_gpu_mb / 1024, in GiB)
    assert estimated_peak_mb(params(12, 768), 12, 768, 6144) == pytest.approx(6.4 * 1024, rel=0.05)
    peak = estimated_peak_mb(params(24, 1024), 24, 1024, 6144)
    assert peak == pytest.approx(16.4 * 1024, rel=0.05)
    assert checkpoint_choice("auto", peak, 80 * 1024) is False  # an H100 holds it twice over
    assert checkpoint_choice("auto", peak, 24 * 1024) is True  # a 24 GB card would pass its half
    assert checkpoint_choice("auto", peak, None) is False
    assert checkpoint_choice(True, 1, 80 * 1024) is True and checkpoint_choice(False, 10**6, 1) is False


def test_tuning_refuses_an_unknown_precision_naming_the_key(tiny_checkpoint, t2_data, tmp_path, capsys):
    data, _, sha = t2_data
    assert tune(tiny_checkpoint, data, sha, "replay_tune", {"steps": 1}, tmp_path / "x", 0, "--precision", "fp16") == 1
    assert "replay.precision" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_tuning_refuses_a_transcript_that_is_not_the_one_named(tiny_checkpoint, t2_data, tmp_path, capsys):
    data, _, sha = t2_data
    assert tune(tiny_checkpoint, data, "0" * 64, "replay_tune", {"steps": 1}, tmp_path / "x") == 1
    err = capsys.readouterr().err
    assert f"{data}: t2 episode 0 transcript SHA-256: expected {'0' * 64}" in err and sha in err
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------ systems reading artifacts

def system(name, backbone, root):
    return registry.build(name, backbone, settings={"artifacts": str(Path(root) / name)})


def one_episode(urd_config, queries=2):
    ep = calibrate.t2_episode(urd_config, 0)
    return {**ep, "queries": ep["queries"][:queries]}


def test_replay_cells_declare_trained_tokens_and_label_out_of_contract_up_to_summary(
        tiny_backbone, urd_config, artifacts, tmp_path):
    ep = one_episode(urd_config)
    decode = Decode(max_new_tokens=3)
    root = tmp_path / "results"
    atomic_write_jsonl(root / "control/t2/responses.jsonl", run_control(tiny_backbone, "t2", [ep], decode))
    for name in ("replay_tune", "replay_banc"):
        costs = read_artifact(artifacts / name / artifacts.joinpath(name).iterdir().__next__().name).costs
        recs = run_system(tiny_backbone, system(name, tiny_backbone, artifacts), "t2", [ep], "over", 120, 10, decode)
        for r in recs:
            assert r["fiche_bytes"] == 120 and r["metered_tokens"] == 0  # nothing tuned in the cell
            assert r["declared_tokens"] == costs["trained_tokens"]
            assert r["out_of_contract"] is (name == "replay_banc")
        atomic_write_jsonl(root / f"{name}/t2/over/responses.jsonl", recs)
    banc = recs[0]
    assert banc["declared_tokens"] > banc["token_cap"]  # 2 x 900 > 10 x 170: over the cap, measured anyway
    responses = sorted(str(p) for p in root.rglob("responses.jsonl"))
    assert summarize_main(["--scale", "tiny", "--responses", *responses, "--out", str(root / "summary.json")]) == 0
    summary = json.loads((root / "summary.json").read_text())
    assert summary["out_of_contract_systems"] == ["replay_banc"]
    cells = summary["cells"]
    assert cells["replay_banc"]["t2"]["over"]["out_of_contract"] is True
    assert cells["replay_tune"]["t2"]["over"]["out_of_contract"] is False
    table = fold_costs(sorted(artifacts.glob("*/*/costs.json")))["recipes"]
    assert table["replay_banc"]["out_of_contract"] is True and table["replay_tune"]["out_of_contract"] is False
    assert table["replay_banc"]["cap_ratio_max"] > 1 >= table["replay_tune"]["cap_ratio_max"]
    assert table["replay_tune"]["precisions"] == ["fp32"] and table["replay_tune"]["rows"][0]["precision"] == "fp32"
    row = table["replay_banc"]["rows"][0]  # the tuning loss at the first and last step, as the artifact has it
    assert (row["loss_first"], row["loss_last"]) == (costs["losses"][0], costs["losses"][-1])
    assert table["replay_banc"]["loss_first_mean"] == pytest.approx(costs["losses"][0], abs=1e-4)


def test_the_harness_fails_an_in_contract_replay_over_the_cap(tiny_backbone, urd_config, artifacts, tmp_path):
    # an out-of-contract artifact relabelled as in contract: the system declares its real tokens,
    # and the harness, not the system, stops it
    sha = next((artifacts / "replay_banc").iterdir()).name
    forged = tmp_path / "replay_tune" / sha
    shutil.copytree(artifacts / "replay_banc" / sha, forged)
    costs = json.loads((forged / "costs.json").read_text())
    costs["recipe"]["name"], costs["out_of_contract"] = "replay_tune", False
    (forged / "costs.json").write_text(json.dumps(costs))
    with pytest.raises(BudgetViolation, match=r"declared 1800 consolidation tokens, over the cap of 1700"):
        run_system(tiny_backbone, system("replay_tune", tiny_backbone, tmp_path), "t2",
                   [one_episode(urd_config, 1)], "over", 120, 10, Decode(2))


def test_artifact_problems_are_named(tiny_backbone, urd_config, artifacts, tmp_path):
    ep = one_episode(urd_config, 1)
    sha = next((artifacts / "replay_banc").iterdir()).name
    with pytest.raises(InputError, match=rf"{tmp_path}/replay_tune/{sha}/costs.json: <file>: expected a tuning artifact"):
        system("replay_tune", tiny_backbone, tmp_path).consolidate(ep["transcript"], 120)
    # a replay_banc pointed at replay_tune's artifacts: wrong recipe
    shutil.copytree(artifacts / "replay_tune", tmp_path / "replay_banc")
    with pytest.raises(InputError, match=r"recipe.name: expected replay_banc, got 'replay_tune'"):
        system("replay_banc", tiny_backbone, tmp_path).consolidate(ep["transcript"], 120)
    state = tmp_path / "replay_banc" / sha / "time_state.npy"
    data = bytearray(state.read_bytes())
    data[-1] ^= 1
    state.write_bytes(bytes(data))
    with pytest.raises(DigestMismatch, match="time_state.npy: SHA-256 mismatch"):
        read_artifact(state.parent)
    with pytest.raises(InputError, match=r"settings.artifacts: expected the directory of its tuning artifacts"):
        registry.build("replay_tune", tiny_backbone).consolidate(ep["transcript"], 120)


def test_answer_starts_from_the_unpacked_tuned_state(tiny_backbone, urd_config, artifacts):
    ep = one_episode(urd_config, 1)
    sysm = system("replay_tune", tiny_backbone, artifacts)
    tuned = read_artifact(next((artifacts / "replay_tune").iterdir())).state
    full = sysm.consolidate(ep["transcript"], None)  # the ceiling control: no budget
    assert len(full) == tuned.size * ENTRY_BYTES
    state = sysm.state_from_fiche(full)
    L = tiny_backbone.n_layer
    for i in range(L):
        assert np.array_equal(state[3 * i + 1].numpy(), tuned[i])  # WKV slots: the tuned state
        assert not state[3 * i].any() and not state[3 * i + 2].any()  # token shifts stay zero
    header = encode(ep["header"] + "\n")
    zero_logits, zero_after = tiny_backbone.prefill(header, None)
    logits, after = tiny_backbone.prefill(header, state)
    assert (logits - zero_logits).abs().max() > 1e-3
    assert any((a - z).abs().max() > 1e-3 for a, z in zip(after, zero_after))
    # at 120 bytes only 15 entries survive, the largest
    small = sysm.state_from_fiche(sysm.consolidate(ep["transcript"], 120))
    assert sum(int(torch.count_nonzero(small[3 * i + 1])) for i in range(L)) == 15
    # and the system's answer runs from it
    assert isinstance(sysm.answer(full, ep["queries"][0]["prompt"], ep["header"]), str)


def test_the_controls_read_the_same_artifacts(urd_config, artifacts):
    # the ceiling and bits-curve controls (urd.controls) take their tuned states from these files
    from urd.controls.artifacts import ArtifactProvider

    ep = one_episode(urd_config, 1)
    for name in ("replay_tune", "replay_banc"):
        tuned = ArtifactProvider(artifacts, name, urd_config["controls"]["state_file"])(ep["transcript"])
        art = read_artifact(next((artifacts / name).iterdir()))
        assert np.array_equal(tuned.wkv, art.state) and tuned.trained_tokens == art.costs["trained_tokens"]

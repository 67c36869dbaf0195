"""Rung 2 through the real harness, in this process: chain data, the prior, the symbolic
reference system's arithmetic, the sweep's frontier and FLOPs, the dose recipes, the config checks.
The workflow itself is tests/test_workflow_urd2.py."""

from __future__ import annotations

import copy
import hashlib

import pytest

from urd.core.errors import InputError
from urd.core.manifest import read_manifest
from urd.data import chains as chain_data
from urd.rung2 import chains, dose, flops, pareto, plan
from urd.session.context import Decode
from urd.session.handle import ModelHandle
from urd.systems import registry
from urd.systems.base import MemorySystem
from urd.systems.symbolic import T1_ENTRY, Symbolic, pack_t1, t1_entries, unpack_t1
from urd.tables.bootstrap import Bootstrap

BOOT = Bootstrap(resamples=200, level=0.95, seed=1)


def _spec(urd_config, chains_n=2, sessions=3):
    spec = chain_data.data_spec(urd_config)
    return {**spec, "chains": {"chains": chains_n, "sessions": sessions}}


def _no_model():
    return ModelHandle(loader=lambda: (_ for _ in ()).throw(AssertionError("the model was loaded")))


# --- data -----------------------------------------------------------------------------------
def test_chain_data_regenerates_byte_for_byte_as_the_manifest_pins(urd_config, tmp_path, repo):
    pinned = read_manifest(repo / chain_data.MANIFEST)
    spec = chain_data.data_spec(urd_config)
    written = [p for v in chain_data.VARIANTS for p in chain_data.write(spec, v, tmp_path)]
    assert len(written) == len(pinned) == 54
    for rel in written:
        assert hashlib.sha256((tmp_path / rel).read_bytes()).hexdigest() == pinned[str(rel)], rel


def test_pinning_then_checking_passes_and_a_changed_byte_is_named(tmp_path, monkeypatch, capsys):
    from urd.core.errors import DigestMismatch
    from urd.core.manifest import pin_or_check

    monkeypatch.chdir(tmp_path)
    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for f in files:
        f.write_text(f"{f.name}\n")
    pin_or_check("m.sha256", ["a.jsonl", "b.jsonl"], pin=True, check=True)
    assert capsys.readouterr().out.count(": OK") == 2
    files[1].write_text("B\n")
    pin_or_check("m.sha256", ["a.jsonl", "b.jsonl"], pin=False, check=False)  # neither asked: nothing read
    with pytest.raises(DigestMismatch, match="b.jsonl"):
        pin_or_check("m.sha256", ["a.jsonl", "b.jsonl"], pin=False, check=True)


def test_a_chain_never_reuses_a_key_and_its_conventions_conflict_only_where_asked(urd_config):
    spec = _spec(urd_config, chains_n=2, sessions=6)
    for c in range(2):
        t1 = chain_data.chain(spec, "t1", c)
        keys = [{p["key"] for p in s["pairs"]} | {q["key"] for q in s["queries"]} for s in t1]
        assert sum(map(len, keys)) == len(set().union(*keys)), "a key appears in two sessions of a chain"
        t2 = chain_data.chain(spec, "t2", c)
        assert len({s["rule"]["category"] for s in t2}) == 6 and len({s["rule"]["marker"] for s in t2}) == 6
        conflict = chain_data.chain(spec, "t2_conflict", c)
        assert len({s["rule"]["category"] for s in conflict}) == 1
        assert len({s["rule"]["marker"] for s in conflict}) == 6
    # chain 1's session 3 does not depend on how many chains or sessions are generated
    assert chain_data.chain(_spec(urd_config, 6, 6), "t1", 1)[2] == chain_data.chain(_spec(urd_config, 2, 3), "t1", 1)[2]
    with pytest.raises(InputError, match="at most 6 sessions for variant t2"):
        chain_data.chain(_spec(urd_config, 1, 7), "t2", 0)


# --- the symbolic system ----------------------------------------------------------------------
def test_symbolic_packs_ten_bytes_a_key_hot_keys_first(urd_config):
    from urd.data import calibrate

    ep = calibrate.t1_episode(urd_config, 0)
    entries = t1_entries(ep["transcript"])
    assert {k for k, _ in entries[:8]} == {p["key"] for p in ep["pairs"] if p["hot"]}
    assert all(unpack_t1(pack_t1(k, v)) == (k, v) for k, v in entries)
    system = Symbolic(_no_model())
    for budget, kept in ((0, 0), (79, 7), (80, 8), (640, 64), (5000, 64)):
        assert len(system.consolidate(ep["transcript"], budget)) == kept * T1_ENTRY


_CONTROLS: dict = {}  # the in-session control of a variant's sessions, computed once


def _run_chain(system, backbone, spec, variant, budget, n):
    """Every boundary of a chain through the harness (the workflow's jobs, in one process)."""
    from urd.data import views

    task = chain_data.task_of(variant)
    data = chain_data.sessions_by_index(spec, variant)
    view_a = {k: [views.session_a(e) for e in eps] for k, eps in data.items()}
    view_b = {k: [views.session_b(e) for e in eps] for k, eps in data.items()}
    responses, prior = [], None
    decode = Decode(max_new_tokens=12)
    for k in range(1, n + 1):
        recs = chains.consolidate(system, task, view_a[k], "x", budget, 10, k, prior)
        chained = [(r, chain_data_fiche(r)) for r in recs]
        fresh = None
        if k > 1:
            f = chains.consolidate(system, task, view_a[k], "x", budget, 10, k, None)
            fresh = [(r, chain_data_fiche(r)) for r in f]
        raw = chains.answer(system, {j: view_b[j] for j in range(1, k + 1)}, chained, fresh, k, decode)
        files = {(k, False): recs, **({(k, True): [r for r, _ in fresh]} if fresh else {})}
        responses += chains.judge(task, {j: data[j] for j in range(1, k + 1)}, raw, files, system.name, "x", "raw")
        prior = chained
    if variant not in _CONTROLS:
        raw = chains.control(backbone, view_a, view_b, decode)
        _CONTROLS[variant] = chains.judge(task, data, raw, None, "control", None, "ctl")
    control = _CONTROLS[variant]
    return chains.fold_chain(task, n, [2, n], responses, control, BOOT)


def chain_data_fiche(rec):
    from urd.harness import fiches

    return fiches.read_one(rec)


@pytest.fixture(scope="module")
def chain_runs(tiny_backbone, urd_config):
    spec = _spec(urd_config, chains_n=2, sessions=3)
    out = {}
    for variant, budget in (("t1", 640), ("t1", 1280), ("t1", 720), ("t2_conflict", 8), ("t2", 4), ("t2", 8)):
        out[(variant, budget)] = _run_chain(Symbolic(ModelHandle(tiny_backbone)), tiny_backbone, spec, variant, budget, 3)
    return out


def test_the_symbolic_chain_gives_the_r_matrix_arithmetic_predicts(chain_runs):
    # 640 B = 64 entries: the newest session only. 1,280 B: the last two. 720 B: the last one and
    # the previous one's 8 hot keys (15 of 20 seen-key queries: 0.75).
    assert chain_runs[("t1", 640)]["R"] == [[1, None, None], [0, 1, None], [0, 0, 1]]
    assert chain_runs[("t1", 1280)]["R"] == [[1, None, None], [1, 1, None], [0, 1, 1]]
    assert chain_runs[("t1", 720)]["R"] == [[1, None, None], [0.75, 1, None], [0, 0.75, 1]]
    # T2: 4 bytes a convention. A conflicting convention replaces the old one whatever the budget;
    # distinct ones are kept while the budget holds them (4 B: one, 8 B: two).
    assert chain_runs[("t2_conflict", 8)]["R"] == [[1, None, None], [0, 1, None], [0, 0, 1]]
    assert chain_runs[("t2", 4)]["R"] == [[1, None, None], [0, 1, None], [0, 0, 1]]
    assert chain_runs[("t2", 8)]["R"] == [[1, None, None], [1, 1, None], [0, 1, 1]]


def test_backward_forward_transfer_and_age_follow_from_the_matrix(chain_runs):
    t = chain_runs[("t1", 1280)]
    # BWT(2) = R[2][1] - R[1][1] = 0; BWT(3) = mean(R[3][1] - R[1][1], R[3][2] - R[2][2]) = -0.5
    assert t["transfer"]["2"]["backward"]["mean"] == 0
    assert t["transfer"]["3"]["backward"]["mean"] == -0.5
    assert chain_runs[("t1", 640)]["transfer"]["3"]["backward"]["mean"] == -1
    assert chain_runs[("t1", 720)]["transfer"]["3"]["backward"]["mean"] == -0.625  # mean(-1, -0.25)
    # the prior never helps the symbolic system learn a new session: FWT = 0 exactly
    assert all(t["transfer"][n]["forward"]["mean"] == 0 for n in ("2", "3"))
    assert t["fresh"] == [None, 1, 1]
    assert t["by_age"]["1"] == {"mean": 1.0, "pairs": 2, "relative": 1.0}
    assert t["by_age"]["2"] == {"mean": 0.0, "pairs": 1, "relative": 0.0}
    assert t["chains"] == 2 and t["sessions"] == 3


class _Recorder(MemorySystem):
    """Writes what it was given into its fiche: the prior's length and the transcript's."""

    name = "recorder"

    def __init__(self, backbone, settings=None, takes_prior=True):
        super().__init__(backbone, settings)
        self.calls = []

    def consolidate(self, transcript, budget_bytes, prior=None):
        self.calls.append(prior)
        return (b"P" if prior else b"") + b"x"

    def answer(self, fiche, query, header):
        return "NONE"


class _Rung1Only(_Recorder):
    def consolidate(self, transcript, budget_bytes):
        self.calls.append("no prior parameter")
        return b"x"


def test_the_prior_reaches_a_system_that_takes_it_and_a_rung1_system_is_run_as_it_is(urd_config):
    from urd.data import views

    data = chain_data.sessions_by_index(_spec(urd_config, 2, 2), "t1")
    a = {k: [views.session_a(e) for e in eps] for k, eps in data.items()}
    s = _Recorder(_no_model())
    first = [(r, chain_data_fiche(r)) for r in chains.consolidate(s, "t1", a[1], "x", 8, 10, 1, None)]
    assert not any(r["fresh"] for r, _ in first)  # the first boundary has nothing before it
    second = chains.consolidate(s, "t1", a[2], "x", 8, 10, 2, first)
    assert s.calls == [None, None, b"x", b"x"]
    assert [r["fiche_bytes"] for r in second] == [2, 2]
    assert [r["prior_sha256"] for r in second] == [r["fiche_sha256"] for r, _ in first]
    fresh = chains.consolidate(s, "t1", a[2], "x", 8, 10, 2, None)
    assert s.calls[-2:] == [None, None] and all(r["fresh"] for r in fresh)
    old = _Rung1Only(_no_model())
    chains.consolidate(old, "t1", a[2], "x", 8, 10, 2, first)
    assert old.calls == ["no prior parameter"] * 2
    with pytest.raises(InputError, match="previous boundary's fiche of every chain"):
        chains.consolidate(s, "t1", a[2], "x", 8, 10, 2, first[:1])


def test_retrieval_and_gzip_tail_carry_the_prior_newest_first():
    from urd.systems.gzip_tail import GzipTail
    from urd.systems.retrieval import Retrieval

    r = Retrieval(_no_model())
    old = r.consolidate("Session log.\nH\nold line\n", 100)
    assert r.consolidate("Session log.\nH\nnew line\nnew line\nnew2\n", 100, prior=old) == b"new line\nnew2\nold line"
    assert r.consolidate("Session log.\nH\nnew line\n", 12, prior=old) == b"new line"
    g = GzipTail(_no_model())
    import gzip

    kept = g.consolidate("second session\n", None, prior=g.consolidate("first session\n", None))
    assert gzip.decompress(kept) == b"first session\nsecond session\n"


# --- the Pareto sweep -----------------------------------------------------------------------
def _p(system, score, bits, fl, status="ok"):
    return {"system": system, "score": score, "bits": bits, "flops": fl, "status": status}


def test_dominance_needs_one_strict_improvement_and_ties_share_the_frontier():
    a, b = _p("a", 0.5, 100, 0), _p("b", 0.5, 100, 0)
    assert not pareto.dominates(a, b) and not pareto.dominates(b, a)
    better = _p("c", 0.6, 100, 0)
    assert pareto.dominates(better, a)
    assert not pareto.dominates(_p("d", 0.9, 200, 0), a)  # better score, more bits: no
    assert not pareto.dominates(_p("e", 0.5, 100, 5), a)  # more FLOPs
    out = _p("f", 1.0, 0, 0, status="disqualified")
    assert pareto.frontier([a, b, better, out]) == [False, False, True, False]
    assert pareto.frontier([a, b]) == [True, True]


def test_the_sweep_scores_by_arithmetic_and_disqualifies_a_cap_it_breaks(tiny_backbone, urd_config):
    from urd.data import calibrate, views

    eps = [calibrate.t1_episode(urd_config, i) for i in range(2)]
    a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
    n = 1000
    tables = {}
    for name in ("symbolic", "vanilla", "summary"):
        system = registry.build(name, ModelHandle(tiny_backbone), settings={"max_new_tokens": 2})
        recs = pareto.consolidate(system, "t1", a, [80, 640], [0, 10])
        points = {}
        for r in recs:
            if "violation" not in r:
                points.setdefault((r["budget_point"], r["cap_factor"]), []).append((r, chain_data_fiche(r)))
        violations = {(r["budget_point"], r["cap_factor"]): r["violation"] for r in recs if "violation" in r}
        raw = pareto.answer(system, b, points, Decode(max_new_tokens=12)) if points else []
        judged = pareto.judge("t1", eps, raw, points, name, "raw") if points else []
        tables[name] = {"points": pareto.fold_system("t1", judged, violations, n, BOOT, name, False)}
    # summary reads the transcript: over a cap of 0 x the transcript, disqualified, the message kept
    summ = {(p["budget_bytes"], p["cap_factor"]): p for p in tables["summary"]["points"]}
    assert summ[(80, 0)]["status"] == "disqualified" and "over the cap of 0" in summ[(80, 0)]["reason"]
    assert summ[(80, 10)]["status"] == "ok" and summ[(80, 10)]["flops"] == 2 * n * summ[(80, 10)]["metered_tokens"]
    sym = {(p["budget_bytes"], p["cap_factor"]): p for p in tables["symbolic"]["points"]}
    assert sym[(80, 0)]["score"] == 0.75 and sym[(80, 0)]["bits"] == 640 and sym[(80, 0)]["flops"] == 0
    assert sym[(640, 10)]["score"] == 1 and sym[(640, 10)]["bits"] == 5120
    folded = pareto.fold("t1", tables)
    on = {f"{p['system']} {p['budget_bytes']}@{p['cap_factor']}" for p in folded["points"] if p["frontier"]}
    # vanilla (0 bits, 0 FLOPs) and every symbolic point; summary is dominated or disqualified
    assert on == {f"{s} {b}@{c}" for s in ("symbolic", "vanilla") for b in (80, 640) for c in (0, 10)}


def test_a_sweep_written_in_one_batch_gives_each_points_fiches_tokens_and_violations(tiny_backbone, urd_config,
                                                                                      capsys):
    """summary writes every (budget, cap) point in one batch, each row stopping at its own
    limits: the records are those of each point written alone, metered tokens included."""
    from urd.data import calibrate, views
    from urd.harness.runner import consolidate_cell, consolidate_points
    from urd.session.contract import BudgetViolation

    # transcripts cut short, so that the last point's notes (up to 4096 bytes) would pass its cap
    # of 2 x the transcript: they stop where the cap would be passed
    a = [{**ep, "transcript": ep["transcript"][:300]}
         for ep in (views.session_a(calibrate.t1_episode(urd_config, i)) for i in range(2))]
    points = [(pareto.point_label(b, c), b, c) for b in (30, 120, 480) for c in (0, 1, 10)] + [("4096B@2x", 4096, 2)]
    together = consolidate_points(registry.build("summary", ModelHandle(tiny_backbone)), "t1", a, points)
    assert "consolidated at 10 points (one batch)" in capsys.readouterr().err  # not point by point
    alone = []
    for split, budget, cap in points:
        try:
            alone.append(consolidate_cell(registry.build("summary", ModelHandle(tiny_backbone)), "t1", a, split,
                                          budget, cap))
        except BudgetViolation as exc:
            alone.append(exc)
    assert [str(x) if isinstance(x, BudgetViolation) else x for x in together] == \
           [str(x) if isinstance(x, BudgetViolation) else x for x in alone]
    kept = [recs for recs in together if not isinstance(recs, BudgetViolation)]
    assert len(kept) == 4 and len({r["fiche_sha256"] for recs in kept for r in recs}) == 8  # two notes a point
    assert {r["fiche_bytes"] for r in kept[0]} == {30} and max(r["fiche_bytes"] for r in kept[2]) > 120
    assert all(r["metered_tokens"] <= r["token_cap"] < 4096 // 10 for r in kept[3])
    assert min(r["token_cap"] - r["metered_tokens"] for r in kept[3]) <= 1


class _Overspill(MemorySystem):
    """Exempt from the token cap (a diagnostic), never from the byte budget."""

    name = "overspill"
    out_of_contract = True

    def consolidate(self, transcript, budget_bytes):
        return b"x" * (budget_bytes + 1)

    def answer(self, fiche, query, header):
        return "NONE"


def test_a_disqualified_point_carries_its_systems_contract_label(tiny_backbone, urd_config):
    from urd.data import calibrate, views

    a = [views.session_a(calibrate.t1_episode(urd_config, 0))]
    (rec,) = pareto.consolidate(_Overspill(ModelHandle(tiny_backbone)), "t1", a, [80], [10])
    assert "over the 80-byte budget" in rec["violation"] and rec["out_of_contract"] is True  # the summary's label


class _SharedWork(MemorySystem):
    """A sweep that reads one shared prompt for all its points, scoped to none of them."""

    name = "shared_work"

    def consolidate(self, transcript, budget_bytes):
        return b""

    def consolidate_sweep(self, transcripts, points):
        self.backbone.generate_groups([(None, [self.backbone.tokenizer.encode("shared notes")])], max_new_tokens=1)
        return [[(b"", self.settings.get("declare", 0)) for _ in transcripts] for _ in points[: self.settings.get("n")]]


def test_a_sweeps_unscoped_work_is_charged_to_every_point_and_a_short_answer_is_refused(tiny_backbone, urd_config):
    from urd.data import calibrate, views
    from urd.harness.runner import consolidate_points
    from urd.session.contract import BudgetViolation

    a = [views.session_a(calibrate.t1_episode(urd_config, i)) for i in range(2)]
    points = [("30B@10x", 30, 10), ("120B@10x", 120, 10)]
    shared = tiny_backbone.tokenizer.encode("shared notes")
    out = consolidate_points(_SharedWork(ModelHandle(tiny_backbone)), "t1", a, points)
    assert all(isinstance(x, BudgetViolation) for x in out)  # declared 0: each row pays for the shared read
    assert all(f"declared 0 consolidation tokens but the backbone processed {len(shared)}" in str(x) for x in out)
    ok = consolidate_points(_SharedWork(ModelHandle(tiny_backbone), settings={"declare": len(shared)}), "t1", a, points)
    assert [[r["metered_tokens"] for r in recs] for recs in ok] == [[len(shared)] * 2] * 2
    with pytest.raises(InputError, match="consolidate_sweep"):
        consolidate_points(_SharedWork(ModelHandle(tiny_backbone), settings={"n": 1}), "t1", a, points)


def test_flops_are_two_n_a_forward_token_and_six_n_a_trained_one(tiny_checkpoint):
    import torch

    state = torch.load(tiny_checkpoint, map_location="cpu", weights_only=True)
    n = sum(t.numel() for t in state.values())
    assert flops.parameter_count(str(tiny_checkpoint)) == n
    assert flops.consolidation(n, 100, 10) == 2 * n * 100 + 6 * n * 10


# --- dose -----------------------------------------------------------------------------------
def test_a_dose_recipe_trains_its_multiple_of_the_cap():
    from urd.replay.recipe import resolve

    opt = {"lr_init": 1.0, "lr_final": 0.01, "grad_clip": 1.0, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8}
    base = {**opt, "ctx": 256, "steps": 4, "out_of_contract": True}
    half = resolve({**base, "dose": 0.5}, "dose0.5", "tiny", 1800, 10)
    assert (half.steps, half.out_of_contract) == (35, False) and half.trained_tokens <= 9000
    # at d = 1, 18,080 / 256 = 70.6 steps: rounding would pass the cap, so an in-contract dose floors
    full = resolve({**base, "dose": 1}, "dose1", "tiny", 1808, 10)
    assert (full.steps, full.out_of_contract) == (70, False) and full.trained_tokens <= 18080
    big = resolve({**base, "dose": 19.2}, "dose19.2", "tiny", 1800, 10)
    assert (big.steps, big.out_of_contract) == (round(19.2 * 18000 / 256), True)
    # under one step of the base context (0.1B: ctx 6,144 on a 170-token T2 transcript, cap 1,700)
    short = resolve({**base, "ctx": 6144, "dose": 0.5}, "dose0.5", "0.1b", 170, 10)
    assert (short.steps, short.ctx, short.out_of_contract) == (1, 850, False)
    assert resolve({**base, "ctx": 6144, "dose": 2}, "dose2", "0.1b", 170, 10).trained_tokens == 3400
    assert [dose.recipe_name(d) for d in (0.5, 1, 19.2, 40)] == ["dose0.5", "dose1", "dose19.2", "dose40"]
    assert dose.dose_of("dose19.2") == 19.2 and dose.dose_of("replay_banc") is None


def test_a_scales_dose_recipe_is_the_one_its_tuning_jobs_train(urd_config):
    from urd.replay.recipe import recipe_settings
    from urd.workflow import replay as replay_plan

    config = copy.deepcopy(urd_config)
    config["urd2"]["scales"]["tiny"].setdefault("dose", {})["recipe"] = "replay_tune"
    plan.check(config)
    replay = config["replay"]
    for scale, base in (("tiny", "replay_tune"), ("0.1b", "replay_banc")):
        assert plan.dose_spec(config, scale)["recipe"] == base  # what the summary names
        want = {**recipe_settings(replay, scale, base, where="config"), "dose": 2}
        assert replay_plan.settings(config, scale, "dose2") == want  # what the tuning job trains


# --- the config -----------------------------------------------------------------------------
@pytest.mark.parametrize("edit, field", [
    (lambda u: u["pareto"].update(systems=["replay_tune"]), "urd2.pareto (scale learned).systems"),
    (lambda u: u["scales"]["tiny"]["chains"].update(lengths=[2, 9]), "urd2.chains (scale tiny).lengths"),
    (lambda u: u["chains"].update(sessions=7), "urd2.chains (scale 0.1b).sessions"),
    (lambda u: u["chains"].update(systems=["nonesuch"]), "systems"),
    # every variant's data is generated: t2's limit binds on the data even where t2 is not evaluated
    (lambda u: u["data"].update(sessions=7), "urd2.data.sessions"),
    (lambda u: u["scales"]["tiny"].setdefault("dose", {}).update(recipe="nonesuch"), "urd2.dose (scale tiny).recipe"),
])
def test_a_rung2_config_that_cannot_be_measured_is_refused_naming_the_key(urd_config, edit, field):
    config = copy.deepcopy(urd_config)
    edit(config["urd2"])
    with pytest.raises(InputError) as err:
        plan.check(config)
    assert field in str(err.value)
    plan.check(urd_config)  # the shipped config passes


# --- tables and figures ---------------------------------------------------------------------
def _pareto_summary():
    pts = []
    for system, scores in (("vanilla", [0, 0, 0]), ("symbolic", [0.75, 1, 1]), ("gzip_tail", [0.1, 0.3, 0.35]),
                           ("retrieval", [0.2, 0.5, 0.55])):
        for (budget, score) in zip((80, 640, 960), scores):
            for cap in (0, 10):
                bits = 0 if system == "vanilla" else 8 * budget * (0.66 if system == "symbolic" else 1)
                pts.append({"system": system, "budget_bytes": budget, "cap_factor": cap, "status": "ok",
                            "score": score, "ci_low": score, "ci_high": score, "bits": bits,
                            "flops": 0 if system in ("vanilla", "symbolic") else 1e9 * cap, "out_of_contract": False})
    pts.append({"system": "summary", "budget_bytes": 80, "cap_factor": 0, "status": "disqualified",
                "reason": "over the cap", "score": None, "bits": None, "flops": None})
    folded = pareto.fold("t1", {"all": {"points": pts}})
    return {"tasks": {"t1": folded, "t2": pareto.fold("t2", {"all": {"points": [dict(p) for p in pts]}})},
            "n_params": 1000, "flops_formula": flops.FORMULA, "dominance": "d", "budgets": [80], "caps": [0]}


def _dose_summary():
    doses = {}
    for d in (0.5, 1, 2, 5, 10, 19.2, 40):
        r = min(1.0, d / 40)
        doses[dose.recipe_name(d)] = {"dose": d, "out_of_contract": d > 1, "tasks": {
            "t1": {"retention": r / 2, "dose_measured": {"min": d, "max": d}},
            "t2": {"retention": r, "rate_trigger": r, "rate_non_trigger": r * 0.9, "difference": r * 0.1,
                   "dose_measured": {"min": d, "max": d}}}}
    return {"doses": doses, "recipe": "replay_banc", "method": "m"}


def test_rung2_figures_label_every_point_clear_of_ticks_and_each_other():
    from urd.tables import urd2 as figs
    from urd.tables.labels import overlaps
    from urd.tables.sources import Source

    src = Source("tiny", "p.json", "0" * 64, _pareto_summary())
    fig, axes, anns = figs.pareto_figure(src, 100, "footer")
    for ax in axes:
        mine = [a for a in anns if a.axes is ax]
        assert mine and overlaps(fig, ax, mine) == []
    groups = figs._grouped(src.data["tasks"]["t1"]["points"])
    assert len([a for a in anns if a.axes is axes[0]]) == len(groups)  # every drawn point labelled
    src = Source("tiny", "d.json", "0" * 64, _dose_summary())
    fig, ax, anns = figs.dose_figure(src, 100, "footer")
    assert len(anns) == 7 * 4 and overlaps(fig, ax, anns) == []
    doc = figs.pareto_document([Source("tiny", "p.json", "0" * 64, _pareto_summary())], "abc")
    assert "disqualified: over the cap" in doc.markdown()


def test_published_lists_the_rung2_parts_the_config_names(urd_config):
    from urd.tables.targets import published_files

    files = published_files(urd_config)
    for part in ("chains", "pareto", "dose"):
        assert f"results/urd/tables/urd2_{part}.md" in files
    assert "results/urd/figures/urd2_pareto_learned.png" in files
    assert "results/urd/figures/urd2_chains_learned.png" not in files
    fewer = published_files({**urd_config, "publish": {**urd_config["publish"], "urd2": ["dose"]}})
    assert [f for f in fewer if "urd2" in f] == ["results/urd/tables/urd2_dose.md", "results/urd/tables/urd2_dose.html",
                                                 "results/urd/figures/urd2_dose_learned.png"]


@pytest.mark.parametrize("name", ["summary", "state_carry"])
def test_the_answer_job_is_priced_at_the_distinct_fiches_the_sweep_writes(tiny_backbone, urd_config, name):
    """The sweep's answer job decodes each distinct qualified fiche of an episode once
    (pareto.answer); the plan counts them from the system's declaration: summary's notes are the
    same wherever their budget and length limit are, state_carry's state at every cap that
    admits it, and a point over its cap has none."""
    from urd.data import calibrate, views

    task = "t2"  # T1's 1,850-token transcripts take minutes on tiny; the plan's rule is the same
    p = plan.settings(urd_config, "tiny", "pareto")
    a = [views.session_a(calibrate.t2_episode(urd_config, 0))]
    settings = urd_config.get("system_settings", {}).get(name, {})
    system = registry.build(name, ModelHandle(tiny_backbone), settings=settings)
    recs = pareto.consolidate(system, task, a, p["budgets"], p["caps"])
    written = {r["fiche_sha256"] for r in recs if "violation" not in r}
    assert len(recs) == len(p["budgets"]) * len(p["caps"]) > len(written)  # the collapse is real
    assert plan._distinct_fiches(urd_config, "tiny", name, task, p) == len(written)

"""Rung 2's folds on judged records whose figures are known by arithmetic: no model, no
workflow. The chain matrix with its control, retention, transfer intervals and ages; a sweep
point's axes; a dose point's rates; the offline rescore catching each kind of change."""

from __future__ import annotations

import json

import pytest

from urd.core.errors import InputError
from urd.core.io import atomic_write_jsonl
from urd.rung2 import chains, dose, pareto, summaries
from urd.tables.bootstrap import Bootstrap

BOOT = Bootstrap(resamples=400, level=0.9, seed=7)
VALUE = "0123456789AB"  # a T1 value: the judge reads it back as correct


def _t1(episode: int, correct: int, seen: int = 4, **extra) -> list[dict]:
    """`seen` seen-key replies of one episode, `correct` of them right, plus one unseen query."""
    recs = [{"task": "t1", "episode": episode, "kind": "hot", "expected": VALUE, "query_id": f"{episode}-{i}",
             "response": VALUE if i < correct else "NONE", "verdict": "correct" if i < correct else "abstained",
             **extra} for i in range(seen)]
    return recs + [{"task": "t1", "episode": episode, "kind": "unseen", "expected": None, "query_id": f"{episode}-u",
                    "response": "NONE", "verdict": "abstained", **extra}]


# chain c's correct answers (of 4) after boundary k on session j, and the fresh consolidation's
CHAINED = {(1, 1): [4, 4, 0, 4], (2, 1): [2, 4, 0, 1], (2, 2): [4, 3, 4, 4],
           (3, 1): [0, 1, 0, 0], (3, 2): [2, 3, 4, 1], (3, 3): [4, 4, 4, 2]}
FRESH = {(2, 2): [4, 4, 4, 4], (3, 3): [3, 4, 4, 4]}
CONTROL = {1: [4, 4, 2, 4], 2: [0, 0, 0, 0], 3: [4, 4, 4, 4]}


def _chain_records(ooc=False):
    responses = []
    for table, fresh in ((CHAINED, False), (FRESH, True)):
        for (k, j), per_chain in table.items():
            for c, correct in enumerate(per_chain):
                responses += _t1(c, correct, boundary=k, session=j, fresh=fresh, out_of_contract=ooc,
                                 budget_bytes=640, fiche_bytes=10 * (k + c))
    control = [r for j, per_chain in CONTROL.items() for c, n in enumerate(per_chain) for r in _t1(c, n, session=j)]
    return responses, control


def _mean(xs):
    return sum(xs) / len(xs)


def test_the_chain_fold_gives_the_matrix_its_control_retention_transfer_and_ages():
    responses, control = _chain_records()
    fig = chains.fold_chain("t1", 3, [1, 2, 3], responses, control, BOOT)
    r = {key: _mean(v) / 4 for key, v in CHAINED.items()}
    assert fig["R"] == [[r[1, 1], None, None], [r[2, 1], r[2, 2], None], [r[3, 1], r[3, 2], r[3, 3]]]
    assert fig["control_A"] == [0.875, 0.0, 1.0]
    assert fig["fresh"] == [None, 1.0, 0.9375]
    # R / A; session 2's control scored 0: no retention there, never a division by zero
    assert fig["retention"] == [[round(r[1, 1] / 0.875, 6), None, None], [round(r[2, 1] / 0.875, 6), None, None],
                                [round(r[3, 1] / 0.875, 6), None, r[3, 3]]]
    # backward transfer per chain: mean over j < m of R[m][j] - R[j][j]; forward: R[j][j] - F[j]
    bwt3 = [_mean([(CHAINED[3, 1][c] - CHAINED[1, 1][c]) / 4, (CHAINED[3, 2][c] - CHAINED[2, 2][c]) / 4])
            for c in range(4)]
    fwt3 = [_mean([(CHAINED[2, 2][c] - FRESH[2, 2][c]) / 4, (CHAINED[3, 3][c] - FRESH[3, 3][c]) / 4])
            for c in range(4)]
    t = fig["transfer"]
    assert t["1"] == {"backward": None, "forward": None}  # one session: nothing to transfer
    assert t["2"]["backward"]["mean"] == round(_mean([(CHAINED[2, 1][c] - CHAINED[1, 1][c]) / 4 for c in range(4)]), 6)
    assert t["3"]["backward"]["mean"] == round(_mean(bwt3), 6) and t["3"]["backward"]["chains"] == 4
    # the 90 % percentile interval of 400 resamples of the chains (seed 7), pinned: a change of
    # method, level or draws moves it
    assert (t["3"]["backward"]["ci_low"], t["3"]["backward"]["ci_high"]) == (-0.8125, -0.1875)
    assert t["3"]["forward"]["mean"] == round(_mean(fwt3), 6)
    assert (t["3"]["forward"]["ci_low"], t["3"]["forward"]["ci_high"]) == (-0.1875, 0.0625)
    assert t["3"]["backward"]["ci_low"] < t["3"]["backward"]["mean"] < t["3"]["backward"]["ci_high"]
    assert chains._interval([0.25] * 5 + [None], BOOT) == {"mean": 0.25, "ci_low": 0.25, "ci_high": 0.25, "chains": 5}
    ages = fig["by_age"]
    assert ages["0"] == {"mean": round(_mean([r[1, 1], r[2, 2], r[3, 3]]), 6), "pairs": 3,
                         "relative": 1.0}
    assert ages["1"]["relative"] == round((r[2, 1] + r[3, 2]) / (r[1, 1] + r[2, 2]), 6)
    assert ages["2"] == {"mean": r[3, 1], "pairs": 1, "relative": round(r[3, 1] / r[1, 1], 6)}
    assert fig["fiche_bytes"] == {"1": 25.0, "2": 35.0, "3": 45.0} and fig["chains"] == 4
    assert fig["out_of_contract"] is False
    assert chains.fold_chain("t1", 3, [3], *_chain_records(ooc=True), BOOT)["out_of_contract"] is True


def test_a_chain_with_no_seen_key_query_is_left_out_of_the_transfer_not_counted_as_zero():
    responses, control = _chain_records()
    # chain 9 was asked only unseen keys: it has no score anywhere, so no transfer either
    unscored = [r for k, j, f in {(r["boundary"], r["session"], r["fresh"]) for r in responses}
                for r in _t1(9, 0, seen=0, boundary=k, session=j, fresh=f, out_of_contract=False, budget_bytes=640,
                             fiche_bytes=0)]
    fig = chains.fold_chain("t1", 3, [3], responses + unscored, control, BOOT)
    assert fig["chains"] == 5 and fig["transfer"]["3"]["backward"]["chains"] == 4
    assert fig["transfer"] == chains.fold_chain("t1", 3, [3], responses, control, BOOT)["transfer"]


def test_a_t2_control_below_chance_gives_no_retention():
    def t2(episode, applied_trigger, applied_other, **extra):
        return [{"task": "t2", "episode": episode, "kind": kind, "marker": "@@", "query_id": f"{episode}-{kind}",
                 "response": "@@ yes" if hit else "no", "verdict": "applied" if hit else "not_applied", **extra}
                for kind, hit in (("trigger", applied_trigger), ("non_trigger", applied_other))]

    responses = t2(0, True, False, boundary=1, session=1, fresh=False, out_of_contract=False, budget_bytes=4,
                   fiche_bytes=4)
    fig = chains.fold_chain("t2", 1, [1], responses, t2(0, False, True, session=1), BOOT)
    assert fig["R"] == [[1.0]] and fig["control_A"] == [-1.0] and fig["retention"] == [[None]]


def test_an_age_whose_sessions_all_scored_zero_has_no_relative_retention():
    responses, control = _chain_records()
    zero = [dict(rec, response="NONE") if rec["session"] == 1 and rec["boundary"] == 1 else rec for rec in responses]
    ages = chains.fold_chain("t1", 3, [3], zero, control, BOOT)["by_age"]
    assert ages["2"] == {"mean": chains._r(_mean(CHAINED[3, 1]) / 4), "pairs": 1, "relative": None}


@pytest.mark.parametrize("drop, lengths, named", [
    ((2, 2, True), [3], r"boundary 2 \(fresh\)"),
    ((3, 1, False), [3], "boundary 3, session 1"),
    (None, [2, 4], "urd2.chains.lengths"),
])
def test_a_chain_fold_missing_a_cell_or_asked_past_its_sessions_names_it(drop, lengths, named):
    responses, control = _chain_records()
    kept = [r for r in responses if (r["boundary"], r["session"], r["fresh"]) != drop]
    with pytest.raises(InputError, match=named):
        chains.fold_chain("t1", 3, lengths, kept, control, BOOT)


def test_judging_a_chain_refuses_a_session_it_has_no_data_for_and_a_control_without_every_session():
    data = {1: [{"episode": 0}], 2: [{"episode": 0}]}
    with pytest.raises(InputError, match="session 3"):
        chains.judge("t1", data, [{"session": 3, "boundary": 3, "fresh": False}], {(3, False): []}, "s", "x", "raw")
    with pytest.raises(InputError, match="control replies for sessions \\[1, 2\\]"):
        chains.judge("t1", {1: [], 2: []}, [], None, "control", None, "ctl")


def test_select_keeps_the_first_chains():
    eps = [{"episode": i} for i in range(5)]
    assert chains.select(eps, {"chains": 2}) == eps[:2] and chains.select(eps, {"chains": None}) == eps


# --- the Pareto sweep -----------------------------------------------------------------------
def _sweep_records(ooc=False):
    out = []
    for ep, (fiche, metered, correct) in enumerate(((100, 10, 4), (300, 30, 1))):
        out += _t1(ep, correct, budget_point=480, cap_factor=10, fiche_bytes=fiche, metered_tokens=metered,
                   sandbox_answer="bwrap", out_of_contract=ooc)
    return out


def test_a_sweep_point_has_the_mean_score_bits_flops_and_the_largest_fiche():
    violation = {(480, 0): "BudgetViolation: over the cap of 0 x the transcript"}
    pts = pareto.fold_system("t1", _sweep_records(), violation, 1000, BOOT, "mine", False)
    assert [(p["cap_factor"], p["status"]) for p in pts] == [(0, "disqualified"), (10, "ok")]
    assert pts[0]["reason"] == violation[(480, 0)] and pts[0]["score"] is None
    p = pts[1]
    assert (p["score"], p["bits"], p["fiche_bytes_max"], p["metered_tokens"]) == (0.625, 1600, 300, 20)
    assert p["flops"] == (2 * 1000 * 10 + 2 * 1000 * 30) / 2 and p["episodes"] == 2
    assert p["sandbox"] == ["bwrap"]


def test_the_sweep_refuses_replies_for_other_points_and_a_fiche_file_without_its_point(tmp_path):
    with pytest.raises(InputError, match="replies for the 2 qualified points"):
        pareto.judge("t1", [], _sweep_records(), {(480, 10): [], (960, 10): []}, "mine", "raw")
    bad = tmp_path / "fiches.jsonl"
    v = {"budget_point": 480, "cap_factor": 10, "violation": "v", "out_of_contract": False}
    atomic_write_jsonl(bad, [v, {"budget_point": 480, "violation": "v"}])
    with pytest.raises(InputError, match="line 2: expected budget_point and cap_factor"):
        pareto.read_points(bad)
    atomic_write_jsonl(bad, [v, {**v, "cap_factor": 0, "out_of_contract": None}])
    with pytest.raises(InputError, match="line 2: expected a violation record"):
        pareto.read_points(bad)
    with pytest.raises(InputError, match="episode 5"):
        pareto.answer(None, [{"episode": 0}], {(480, 10): [({"episode": 5, "fiche_sha256": "x"}, b"")]}, None)


# --- dose -----------------------------------------------------------------------------------
def test_a_dose_point_reports_the_trigger_rates_their_difference_and_the_measured_dose():
    eps = [{"declared_tokens": 900, "token_cap": 1800}, {"declared_tokens": 1000, "token_cap": 1800}]
    cell = {"episodes": eps, "retention": 0.5, "score_A": 0.4, "score_B": 0.2, "declared_tokens": 1900,
            "rate_trigger_B": 0.75, "rate_non_trigger_B": 0.25, "rate_trigger_A": 1.0, "rate_non_trigger_A": 0.0}
    t2 = dose.point("t2", 0.5, cell)
    assert (t2["rate_trigger"], t2["rate_non_trigger"], t2["difference"]) == (0.75, 0.25, 0.5)
    assert t2["dose_measured"] == {"min": 0.5, "max": round(1000 / 1800, 6)}
    assert "difference" not in dose.point("t1", 0.5, cell)
    for bad in (0, -1):
        with pytest.raises(InputError, match="urd2.dose.doses"):
            dose.recipe_name(bad)


# --- the offline rescore --------------------------------------------------------------------
def _sweep_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a summary names its inputs from the directory it ran in
    atomic_write_jsonl("mine.jsonl", [*_sweep_records(), {"budget_point": 480, "cap_factor": 0, "violation": "v",
                                                          "out_of_contract": False}])
    saved = summaries.sweep_summary({"mine:t1": "mine.jsonl"}, 1000, [480], [0, 10], BOOT)
    (tmp_path / "summary.json").write_text(json.dumps(saved))
    return tmp_path / "summary.json"


def test_a_sweep_is_labelled_out_of_contract_by_its_records_and_mixed_labels_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    violation = {"budget_point": 480, "cap_factor": 0, "violation": "v"}
    atomic_write_jsonl("t1.jsonl", [*_sweep_records(ooc=True), {**violation, "out_of_contract": True}])
    atomic_write_jsonl("t2.jsonl", [{**violation, "task": "t2", "out_of_contract": True}])
    out = summaries.sweep_summary({"mine:t1": "t1.jsonl", "mine:t2": "t2.jsonl"}, 1000, [480], [0, 10], BOOT)
    assert out["provenance"]["out_of_contract"] == {"mine": True}
    assert [p["out_of_contract"] for t in ("t1", "t2") for p in out["tasks"][t]["points"]] == [True] * 3
    atomic_write_jsonl("t2.jsonl", [{**violation, "out_of_contract": False}])  # the other task says otherwise
    with pytest.raises(InputError, match="t2.jsonl: out_of_contract: expected the label mine's other sweeps carry"):
        summaries.sweep_summary({"mine:t1": "t1.jsonl", "mine:t2": "t2.jsonl"}, 1000, [480], [0, 10], BOOT)
    atomic_write_jsonl("t1.jsonl", [*_sweep_records(ooc=True), {**violation, "out_of_contract": False}])
    with pytest.raises(InputError, match="t1.jsonl: out_of_contract: expected one label"):
        summaries.sweep_summary({"mine:t1": "t1.jsonl"}, 1000, [480], [0, 10], BOOT)


def test_the_rescore_is_identical_on_untouched_files_and_names_each_kind_of_change(tmp_path, monkeypatch):
    path = _sweep_summary(tmp_path, monkeypatch)
    assert summaries.rescore(path) == [] and summaries.main(["--rescore", str(path)]) == 0
    saved = json.loads(path.read_text())
    # a figure edited in the summary: only the figures differ
    edited = json.loads(json.dumps(saved))
    edited["tasks"]["t1"]["points"][1]["score"] = 0.9
    path.write_text(json.dumps(edited))
    assert [p.split(":")[0] for p in summaries.rescore(path)] == ["tasks"]
    assert summaries.main(["--rescore", str(path)]) == 1
    path.write_text(json.dumps(saved))
    # a stored verdict that the judge would not give: the figures fold from fresh verdicts, so
    # only the file's digest and the verdict say so
    recs = [json.loads(line) for line in (tmp_path / "mine.jsonl").read_text().splitlines()]
    recs[0]["verdict"] = "wrong"
    atomic_write_jsonl(tmp_path / "mine.jsonl", recs)
    problems = summaries.rescore(path)
    assert len(problems) == 2 and "mine.jsonl: SHA-256 differs" in problems[0]
    assert "1 stored verdicts differ" in problems[1] and "(first: 0-0)" in problems[1]
    # a reply changed: digest and figures
    recs[0].update(verdict="abstained", response="NONE")
    atomic_write_jsonl(tmp_path / "mine.jsonl", recs)
    assert [p.split(":")[0] for p in summaries.rescore(path)] == ["mine.jsonl", "tasks"]

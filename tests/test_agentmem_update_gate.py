"""update-gate: the registered sets, three gates from one set of answers, the bars,
the regression reading and the unbarred rows."""

import json
import shutil

import pytest
from conftest import REPO

from urd.agentmem import update_gate
from urd.agentmem.scoring import score_set
from urd.core.errors import DigestMismatch
from urd.data.agentmem import pair_sets as pairs_mod
from urd.stores import settings as settings_mod


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    s = settings_mod.with_overrides(base, {"work_dir": str(tmp_path_factory.mktemp("ug")), "calibration_dir": str(REPO / "calibration/agentmem")})
    return update_gate.run_suite("scripted", s, log=lambda line: None)


def test_the_four_sets_are_registered_with_their_sizes():
    rows = pairs_mod.load_set_rows(REPO / "calibration/agentmem")
    assert {name: len(r) for name, r in rows.items()} == {"development": 38, "heldout": 19, "past-values": 15, "past-marker-heldout": 17}
    info = pairs_mod.set_info(REPO / "calibration/agentmem")
    assert [n for n, i in info.items() if i["heldout"]] == ["heldout", "past-marker-heldout"]


def test_a_set_whose_bytes_changed_after_registration_is_refused(tmp_path, monkeypatch):
    shutil.copytree(pairs_mod.PAIRS_DIR, tmp_path / "pairs")
    edited = tmp_path / "pairs" / "heldout.json"
    edited.write_text(edited.read_text().replace("Tampere", "Turku", 1))
    monkeypatch.setattr(pairs_mod, "PAIRS_DIR", tmp_path / "pairs")
    with pytest.raises(DigestMismatch, match="heldout.json"):
        pairs_mod.load_set_rows(REPO / "calibration/agentmem")


def test_every_pair_is_asked_three_times_with_both_probes(report):
    assert report["samples_per_pair"] == 3
    for s in report["sets"].values():
        for row in s["rows"]:
            assert len(row["samples"]) == 3
            for sample in row["samples"]:
                assert sample["contradiction"] in (True, False) and sample["slot"] in ("CHANGES", "FIXED", "DIFFERENT")
    assert report["usage"]["calls"] == 89 * 3 * 2 + sum(
        1 for s in report["sets"].values() for r in s["rows"] for x in r["samples"] if x["update_first"] == "CHANGES"
    )


def test_the_scripted_arm_meets_every_bar_under_the_production_gate(report):
    assert report["verdict"]["bars_met"] is True
    tallies = {n: s["scores"]["gates"]["production"] for n, s in report["sets"].items()}
    assert (tallies["development"]["positives_retired"], tallies["development"]["control_samples"]) == (10, 57)
    assert tallies["heldout"]["control_samples"] == 33 and tallies["heldout"]["positive_misses"] == ["retro-slot"]
    assert (tallies["past-values"]["positives"], tallies["past-values"]["control_samples"]) == (5, 24)
    assert (tallies["past-marker-heldout"]["positives"], tallies["past-marker-heldout"]["control_samples"]) == (5, 27)
    assert all(t["control_retirements"] == 0 for t in tallies.values())
    assert all(s["scores"]["regression"] for s in report["sets"].values())


def test_the_other_gates_are_scored_from_the_same_answers(report):
    past = report["sets"]["past-values"]["scores"]["gates"]
    assert not past["changes-only"]["ok"] and past["changes-only"]["controls_retired"] == ["restated-rent", "worked-until"]
    dev = report["sets"]["development"]["scores"]["gates"]["before-1.187"]
    assert (dev["positives_retired"], dev["positives"]) == (1, 10)


def test_the_unbarred_past_value_without_a_marker_is_reported(report):
    row = report["sets"]["past-marker-heldout"]["scores"]["reported"]["rent-in-year"]
    assert row["expected"] == "report" and row["production"] == 3 and row["samples"] == 3


def _row(rid, expected, slots, contradictions, older="The user lives in Porto.", cls="dated-update"):
    return {
        "id": rid, "class": cls, "expected": expected, "older": older, "newer": "n",
        "samples": [{"contradiction": c, "slot": s} for s, c in zip(slots, contradictions)],
    }


def test_a_positive_needs_two_of_three_and_only_a_held_out_set_forgives_one_miss():
    rows = [
        _row("a", "changes", ["CHANGES", "CHANGES", "FIXED"], [False] * 3),
        _row("b", "changes", ["CHANGES", "FIXED", "FIXED"], [False] * 3),
        _row("c", "not_changes", ["DIFFERENT"] * 3, [False] * 3),
    ]
    assert score_set(rows, heldout=True)["bar"] is True
    dev = score_set(rows, heldout=False)
    assert dev["bar"] is False and dev["gates"]["production"]["positive_misses"] == ["b"]


def test_any_control_retirement_fails_the_bar_and_regression_names_what_production_added():
    marked = "The user lived in Porto until 2024."
    rows = [
        _row("p", "changes", ["CHANGES"] * 3, [False] * 3),
        _row("kept-by-marker", "not_changes", ["CHANGES"] * 3, [False] * 3, older=marked),
        _row("added", "not_changes", ["DIFFERENT", "CHANGES", "DIFFERENT"], [False] * 3),
        _row("both", "not_changes", ["CHANGES", "DIFFERENT", "DIFFERENT"], [True] * 3),
    ]
    scores = score_set(rows, heldout=False)
    assert scores["bar"] is False
    assert scores["gates"]["production"]["controls_retired"] == ["added", "both"]
    assert scores["controls_added_by_production"] == ["added"] and scores["regression"] is False


def test_rescore_reproduces_the_scores_with_no_call(report):
    again = update_gate.rescore(report)
    assert again["sets"] == report["sets"] and again["verdict"] == report["verdict"] and again["rescored"] == {"calls": 0}
    assert json.loads(json.dumps(again)) == again

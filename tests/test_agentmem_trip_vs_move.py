"""trip-vs-move end to end on the scripted arm: both cases, three gates, the clock,
rescoring, and what a report carries."""

import dataclasses
import json

import pytest
from conftest import REPO

from urd.agentmem import trip_vs_move
from urd.agentmem.checks import NotRescorable
from urd.agentmem.scripted import ScriptedTable
from urd.core.io import pretty_json
from urd.stores import settings as settings_mod

QUIET = {"log": lambda line: None}


def make_settings(tmp_path, **changes):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(
        base, {"work_dir": str(tmp_path / "work"), "calibration_dir": str(REPO / "calibration/agentmem"), **changes}
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each case under the production gate and the rule before 1.187, run once."""
    tmp = tmp_path_factory.mktemp("tvm")
    s = make_settings(tmp)
    return {
        (case, gate): trip_vs_move.run_suite(case, "scripted", s, gate=gate, **QUIET)
        for case in ("reader", "mid-trip")
        for gate in ("production", "before-1.187")
    }


@pytest.mark.parametrize("case", ["reader", "mid-trip"])
def test_production_gate_passes_every_run_and_meets_the_bar(reports, case):
    report = reports[(case, "production")]
    v = report["verdict"]
    assert (v["move_passed"], v["move_runs"], v["trip_alone_passed"], v["trip_alone_runs"]) == (3, 3, 2, 2)
    assert v["bar_met"] is True
    for run in report["runs"]:
        assert run["passed"] is True and run["incomplete"] is None and run["invalid"] is None
        assert run["usage"]["refused"] == {} and run["usage"]["spent_usd"] == 0


@pytest.mark.parametrize("case, current", [
    ("reader", ["The user lives in Delhi."]),
    ("mid-trip", [
        "The user lives in Lajpat Nagar, Delhi.",
        "Kamla's Kitchen is a ten-minute walk from the user's flat in Lajpat Nagar, Delhi.",
        "The user plans to fly back home to Delhi on Thursday, 2026-10-15.",
    ]),
])
def test_the_rule_before_1_187_fails_the_move_with_the_residence_current(reports, case, current):
    report = reports[(case, "before-1.187")]
    assert report["verdict"]["bar_met"] is False
    for run in report["runs"]:
        if run["variant"] == "move":
            assert run["passed"] is False
            assert run["checks"]["i_delhi_residence_or_flight"] == current
            assert not any(e["kind"] == "UPDATE_SUPERSESSION" for e in run["events"])
        else:
            assert run["passed"] is True


def test_mid_trip_before_1_187_also_leaves_the_trip_current(reports):
    move = reports[("mid-trip", "before-1.187")]["runs"][0]
    assert move["checks"]["iii_trip_current"] == ["The user is in Mumbai for a week for work, as of 2026-10-08."]


def test_the_move_retires_home_and_trip_and_consolidation_restates_what_relied_on_them(reports):
    move = reports[("mid-trip", "production")]["runs"][0]
    by_id = {c["id"]: c for c in move["claims"]}
    retired = {(by_id[c]["content"], by_id[c]["reason"]) for c in by_id if by_id[c]["status"] == "RETIRED"}
    assert ("The user lives in Lajpat Nagar, Delhi.", "updated") in retired
    assert ("The user is in Mumbai for a week for work, as of 2026-10-08.", "updated") in retired
    assert ("The user plans to fly back home to Delhi on Thursday, 2026-10-15.", "restated") in retired
    restatements = [c for c in move["claims"] if c["restatement"]]
    assert len(restatements) == 2 and all(c["status"] == "ACTIVE" and c["anchor"] and c["restates"] for c in restatements)
    assert all(by_id[c["restates"]]["retired_by"] == c["id"] for c in restatements)
    supersessions = [e["payload"] for e in move["events"] if e["kind"] == "UPDATE_SUPERSESSION"]
    assert all(p["answers"]["update_first"] == p["answers"]["update_second"] == "CHANGES" for p in supersessions)
    assert "contradiction" not in supersessions[0]["answers"]  # production asks it only behind a marker


def test_reports_carry_notes_purposes_checks_claims_events_and_usage(reports):
    report = reports[("reader", "production")]
    registry = json.loads((REPO / "calibration/agentmem/notes.json").read_text())["notes"]
    assert [(n["name"], n["sha256"]) for n in report["notes"]] == [
        (name, registry[name]["sha256"]) for name in ("reader-01.md", "reader-02-moved.md")
    ]
    assert set(report["purposes"].values()) == {"scripted"} and not report["mixed"]
    assert report["checks_version"] == 3 and report["gate"] == "production" and report["clock"]["mode"] == "fixed"
    assert report["arm"] == "scripted" and report["remarks"]
    run = report["runs"][0]
    assert {"checks", "claims", "events", "usage", "notes_read"} <= set(run)
    assert {e["kind"] for e in run["events"]} <= {"UPDATE_SUPERSESSION", "DEPENDENT_CLAIM_EXAMINED"}


def test_the_reading_clock_is_pinned_to_the_write_ups_date_by_default(reports, tmp_path):
    week = "The user is in Mumbai for a week, as of 2026-09-01."
    report = reports[("reader", "production")]
    assert report["clock"] == {"mode": "fixed", "read_at": "2026-10-13"}
    alone = next(r for r in report["runs"] if r["variant"] == "trip-alone")
    kept = next(c for c in alone["claims"] if c["content"] == week)
    # read after the week ended: its end date is not kept, as the write-up's runs stored it
    assert kept["read_at"] == "2026-10-13" and kept["valid_until"] is None and kept["stated_until"] == "2026-09-08"
    by_note = trip_vs_move.run_suite(
        "reader", "scripted", make_settings(tmp_path, **{"store.read_at": None}), runs={"move": 0, "trip-alone": 1}, **QUIET,
    )
    assert by_note["clock"] == {"mode": "note-date", "read_at": None}
    claim = next(c for c in by_note["runs"][0]["claims"] if c["content"] == week)
    assert claim["valid_until"] == "2026-09-08" and claim["read_at"] == "2026-09-01"


def test_a_move_that_retires_the_home_but_not_the_week_fails_check_iii_under_the_default_clock(tmp_path):
    week = "The user is in Mumbai for a week, as of 2026-09-01."
    table = ScriptedTable.load()
    update = dict(table.update)
    key = next(k for k in update if k[0] == week and "moved to Mumbai" in k[1])
    update[key] = ("DIFFERENT", "DIFFERENT")  # the move leaves the week standing
    reanchor = {**table.reanchor, ("The user lives in Delhi.", week): ("HOLDS", None)}  # and consolidation keeps it
    variant = dataclasses.replace(table, update=update, reanchor=reanchor)
    one = {"runs": {"move": 1, "trip-alone": 0}, **QUIET}
    pinned = trip_vs_move.run_suite("reader", "scripted", make_settings(tmp_path / "a"), table=variant, **one)["runs"][0]
    assert pinned["passed"] is False and pinned["checks"]["iii_trip_current"] == [week]
    assert pinned["checks"]["i_delhi_residence_or_flight"] == []  # the home was retired
    # read at each note's own date, the week keeps its end (before the move) and passes check iii
    lenient = trip_vs_move.run_suite(
        "reader", "scripted", make_settings(tmp_path / "b", **{"store.read_at": None}), table=variant, **one
    )["runs"][0]
    assert lenient["checks"]["iii_trip_current"] == [] and lenient["passed"] is True


def test_rescore_reproduces_the_report_and_spends_nothing(reports, tmp_path):
    for key, report in reports.items():
        again = trip_vs_move.rescore(report, report["checks_version"])
        assert again["runs"] == report["runs"] and again["verdict"] == report["verdict"], key
        assert again["rescored"] == {"from_checks_version": 3, "calls": 0}
    v1 = trip_vs_move.rescore(reports[("mid-trip", "production")], 1)
    assert v1["checks_version"] == 1 and v1["verdict"]["bar_met"] is True
    assert "residence_claims" in next(r for r in v1["runs"] if r["variant"] == "trip-alone")["checks"]
    with pytest.raises(NotRescorable):
        trip_vs_move.rescore(reports[("reader", "production")], 1)


def test_a_restatement_kept_back_leaves_the_old_flat_current_and_fails_the_move(tmp_path):
    """The seed's failing case, produced by the store: the re-anchor check finds the
    restated walk contradicting another standing claim about the restaurant."""
    table = ScriptedTable.load()
    walk = next(r for (r, c), v in table.reanchor.items() if v[1] and "Kamla" in v[1])
    restated = table.reanchor[(walk, "Kamla's Kitchen is a ten-minute walk from the user's flat in Lajpat Nagar, Delhi.")][1]
    favourite = "Kamla's Kitchen is the user's favourite restaurant."
    contradiction = dict(table.contradiction)
    contradiction[frozenset((favourite, restated))] = "YES"
    report = trip_vs_move.run_suite(
        "mid-trip", "scripted", make_settings(tmp_path), table=dataclasses.replace(table, contradiction=contradiction),
        runs={"move": 1, "trip-alone": 0}, **QUIET,
    )
    run = report["runs"][0]
    assert run["passed"] is False
    assert run["checks"]["i_delhi_residence_or_flight"] == ["Kamla's Kitchen is a ten-minute walk from the user's flat in Lajpat Nagar, Delhi."]
    held = [e["payload"] for e in run["events"] if e["payload"].get("outcome") == "unrestated"]
    assert len(held) == 1 and held[0]["why"].startswith("the restatement contradicts")
    assert held[0]["other_id"] != held[0]["winner_id"] and run["checks"]["ii_kept_back_by_winner"] == []


def test_a_request_the_table_cannot_answer_is_refused_counted_and_leaves_the_run_incomplete(tmp_path):
    table = ScriptedTable.load()
    update = {k: v for k, v in table.update.items() if "moved to Mumbai" not in k[1]}
    report = trip_vs_move.run_suite(
        "reader", "scripted", make_settings(tmp_path), table=dataclasses.replace(table, update=update), **QUIET
    )
    move = report["runs"][0]
    assert move["passed"] is None and "scripted arm refused" in move["incomplete"]
    assert move["usage"]["refused"] == {"update": 1}
    assert report["verdict"]["bar_met"] is None and report["verdict"]["incomplete"] == 3


def test_reports_are_byte_identical_across_reruns(reports, tmp_path):
    again = trip_vs_move.run_suite("reader", "scripted", make_settings(tmp_path), **QUIET)
    assert pretty_json(again) == pretty_json(reports[("reader", "production")])


def test_scripted_answers_follow_the_data_not_the_instructions(reports, tmp_path, monkeypatch):
    from urd.stores.reference import prompts

    for name in ("EXTRACT_INSTRUCTIONS", "UPDATE_INSTRUCTIONS", "CONTRADICTION_INSTRUCTIONS", "REANCHOR_INSTRUCTIONS", "REANCHOR_CHECK_INSTRUCTIONS"):
        monkeypatch.setattr(prompts, name, f"Reworded {name.lower()}: <MAX_CLAIMS> at most.")
    again = trip_vs_move.run_suite("mid-trip", "scripted", make_settings(tmp_path), **QUIET)
    assert again["runs"] == reports[("mid-trip", "production")]["runs"]

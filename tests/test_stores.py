"""Bring your own store: the interface, the reference store through it (bytes unchanged), the two
baselines failing where the write-up says, plug-ins (the documented example and this file's), their errors,
labels and estimates, and the cross-store table."""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta

import pytest
from conftest import REPO

from urd.agentmem import table as table_mod
from urd.agentmem import trip_vs_move, update_gate
from urd.agentmem.runtime import routes_for
from urd.core.errors import InputError
from urd.core.io import pretty_json
from urd.stores import baselines, registry
from urd.stores import settings as settings_mod
from urd.stores.base import MemoryStore, claim_row

QUIET = {"log": lambda line: None}
LIVE = "claude-sonnet-5-5"
THIS = __name__  # plug-ins below are registered as f"{THIS}:Class"


def make_settings(tmp_path, plugins=None, **changes):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(base, {
        "work_dir": str(tmp_path / "work"), "calibration_dir": str(REPO / "calibration/agentmem"),
        "stores.plugins": dict(plugins or {}), **changes,
    })


def by_variant(report):
    return {v: [r["passed"] for r in report["runs"] if r["variant"] == v] for v in ("move", "trip-alone")}


# --- the reference store through the interface ---------------------------------------------

@pytest.mark.parametrize("case", ["reader", "mid-trip"])
def test_the_reference_stores_trip_vs_move_report_is_byte_identical_to_the_stored_one(tmp_path, case):
    report = trip_vs_move.run_suite(case, "scripted", make_settings(tmp_path), **QUIET)
    stored = (REPO / f"tests/golden/trip-vs-move-{case}-scripted.json").read_text()
    assert pretty_json(report) == stored


def test_the_reference_stores_update_gate_report_is_byte_identical_to_the_stored_one(tmp_path):
    report = update_gate.run_suite("scripted", make_settings(tmp_path), **QUIET)
    assert pretty_json(report) == (REPO / "tests/golden/update-gate-scripted.json").read_text()


# --- the baselines -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def baseline_reports(tmp_path_factory):
    s = make_settings(tmp_path_factory.mktemp("baselines"))
    return {(store, case): trip_vs_move.run_suite(case, "scripted", s, store=store, **QUIET)
            for store in ("replace_latest", "keep_all") for case in ("reader", "mid-trip")}


@pytest.mark.parametrize("case", ["reader", "mid-trip"])
def test_replace_latest_fails_the_trip_and_passes_the_move(baseline_reports, case):
    report = baseline_reports[("replace_latest", case)]
    assert by_variant(report) == {"move": [True] * 3, "trip-alone": [False] * 2}
    for run in report["runs"]:
        if run["variant"] == "trip-alone":  # the trip retired the home: (a) fails
            assert run["checks"]["missing"][0] == "a_home_in_delhi" and run["checks"]["a_home_in_delhi"] == []
    assert report["verdict"]["bar_met"] is False


@pytest.mark.parametrize("case", ["reader", "mid-trip"])
def test_keep_all_fails_the_move_and_passes_the_trip(baseline_reports, case):
    report = baseline_reports[("keep_all", case)]
    assert by_variant(report) == {"move": [False] * 3, "trip-alone": [True] * 2}
    for run in report["runs"]:
        assert all(c["status"] == "ACTIVE" for c in run["claims"])
        if run["variant"] == "move":  # Delhi is still home, and the week still current
            assert run["checks"]["i_delhi_residence_or_flight"] and run["checks"]["iii_trip_current"]


def test_a_baseline_report_names_its_store_and_check_ii_is_measured(baseline_reports):
    report = baseline_reports[("replace_latest", "reader")]
    assert report["store"] == {"name": "replace_latest", "class": "urd.stores.baselines:ReplaceLatest",
                               "kind": "built-in", "spend": "metered", "update_decision": True}
    move = report["runs"][0]
    assert "not_measurable" not in move["checks"] and move["events"]
    assert {e["kind"] for e in move["events"]} == {"UPDATE_SUPERSESSION"}


@pytest.mark.parametrize("store, retired", [("keep_all", False), ("replace_latest", True)])
def test_baseline_update_decisions_are_scored_on_the_registered_sets(tmp_path, store, retired):
    report = update_gate.run_suite("scripted", make_settings(tmp_path), store=store, **QUIET)
    assert report["gates"] == ["store"] and report["verdict"]["bars_met"] is False
    dev = report["sets"]["development"]
    tally = dev["scores"]["gates"]["store"]
    if retired:  # two places in one pair: the newer retires the older, control or not
        assert tally["control_retirements"] > 0
    else:
        assert tally["positives_retired"] == 0 and tally["control_retirements"] == 0
        assert tally["positive_misses"] and len(tally["positive_misses"]) == tally["positives"]
    assert update_gate.rescore(report)["verdict"] == report["verdict"]
    golden = json.loads((REPO / "tests/golden/update-gate-scripted.json").read_text())
    assert table_mod._gate_cell(report) == "0 of 4" and table_mod._gate_cell(golden) == "4 of 4"


# --- plug-ins ------------------------------------------------------------------------------------

class NoEvents(MemoryStore):
    """Keeps every user line as one ACTIVE claim; keeps no events."""

    def __init__(self, run):
        super().__init__(run)
        self.kept = []

    def deposit(self, note, read_at):
        self.kept += [claim_row(line[6:], note.name) for line in note.text.splitlines() if line.startswith("User: ")]

    def consolidate(self):
        (self.directory / "consolidated").write_text("yes\n")  # its own run directory is writable

    def rows(self):
        return self.kept


class RaisesOnSecondNote(NoEvents):
    def deposit(self, note, read_at):
        if self.kept:
            raise RuntimeError("the store's disk is full")
        super().deposit(note, read_at)


class FailsToOpen(NoEvents):
    def __init__(self, run):
        raise OSError("cannot open the store's database")


class FailsToOpenDeciding(FailsToOpen):
    def decides_update(self, older, newer, sample):
        return False


class BadRows(NoEvents):
    def rows(self):
        return [{**r, "status": "active"} for r in self.kept]


class OwnModel(NoEvents):
    own_model = True


class AsksOffTable(NoEvents):
    """Asks the model a request no scripted table holds."""

    def deposit(self, note, read_at):
        from urd.llm import Request

        self.llm.ask(Request("extract", "Summarise.", f"<raw>{note.text}</raw>", 64, self.run.replica))
        super().deposit(note, read_at)


class NotABool(NoEvents):
    def decides_update(self, older, newer, sample):
        return "yes"


class ReadsTheSampleName(NoEvents):
    """Retires when the sample's name says the pair is a move: the answer key, if it leaked."""

    seen: tuple = ()

    def decides_update(self, older, newer, sample):
        type(self).seen += (sample,)
        return any(word in sample for word in ("move", "res-", "positive", "development"))


class ReadsTheRunsNames(NoEvents):
    """Keeps only the latest note's claims (what passes a move) when anything it is handed about
    its run names the variant; else keeps everything: the answer key, if it leaked. (Its
    directory's parents are the suite's, the same for every run, so they hold no key.)"""

    seen: tuple = ()
    KEY = ("move", "trip", "alone", "home")

    def __init__(self, run):
        super().__init__(run)
        type(self).seen += (run.replica, run.directory.name, repr(dict(run.options)))

    def deposit(self, note, read_at):
        type(self).seen += (note.name,)
        super().deposit(note, read_at)

    def rows(self):
        told = any(word in text for text in type(self).seen[-4:] for word in self.KEY)
        latest = self.kept[-1]["sources"] if self.kept else []
        return [r for r in self.kept if r["sources"] == latest] if told else self.kept


# --- user-style stores for urd's stricter checks: each passes the write-up's checks somewhere ---

_TRIP = re.compile(r"for a week|\btrip\b|staying at")
_HOME = re.compile(r"\b(?:flat|home|live|lives)\b")


class TripAware(MemoryStore):
    """A claim a sentence; a note that says the user moved retires the claims naming the old city
    and the trip's. Keeps no events."""

    home_facts_too = False  # retire every claim about the old home, not only those naming the city
    trip_ends_when_told = False  # a trip claim's end date: its note's own date (the trip stored as over)
    trip_kept_with_its_end = False  # a week's claim ends a week after its note, and the move leaves it

    def __init__(self, run):
        super().__init__(run)
        self.kept = []

    def deposit(self, note, read_at):
        said = baselines.clauses(note.text)
        if any("moved to" in c for c in said):
            for row in self.kept:
                text = row["content"]
                trip = bool(_TRIP.search(text)) and not self.trip_kept_with_its_end
                if row["status"] == "ACTIVE" and ("Delhi" in text or trip or (self.home_facts_too and _HOME.search(text))):
                    row["status"] = "RETIRED"
        for c in said:
            until = None
            if _TRIP.search(c) and self.trip_ends_when_told:
                until = note.date
            elif "for a week" in c and self.trip_kept_with_its_end:
                until = note.date + timedelta(days=7)
            self.kept.append(claim_row(c, note.name, valid_until=until))

    def consolidate(self):
        pass

    def rows(self):
        return [dict(r) for r in self.kept]


class HomeAware(TripAware):
    home_facts_too = True


class EndsTheTripAtOnce(HomeAware):
    trip_ends_when_told = True


class KeepsTheEndedTrip(HomeAware):
    trip_kept_with_its_end = True


class NewestNoteWins(TripAware):
    """Every note retires every claim before it."""

    def deposit(self, note, read_at):
        for row in self.kept:
            row["status"] = "RETIRED"
        self.kept += [claim_row(c, note.name) for c in baselines.clauses(note.text)]


class NoRows(MemoryStore):
    def deposit(self, note, read_at):
        pass

    def consolidate(self):
        pass


def plugin(name, cls):
    return {name: f"{THIS}:{cls.__name__}"}


def test_a_store_defined_here_runs_through_the_suite_and_check_ii_is_not_measurable(tmp_path):
    s = make_settings(tmp_path, plugin("mine", NoEvents))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="mine", **QUIET)
    assert by_variant(report) == {"move": [False] * 3, "trip-alone": [True] * 2}
    move = report["runs"][0]
    assert move["events"] is None and move["checks"]["not_measurable"] == ["ii_kept_back_by_winner"]
    assert move["checks"]["ii_kept_back_by_winner"].startswith("not measurable")
    assert "not_measurable" not in report["runs"][3]["checks"]  # trip-alone reads no events
    run_dir = trip_vs_move.blind_run("reader", "move", 1)
    assert (tmp_path / f"work/stores/trip-vs-move/reader/scripted/store-mine/{run_dir}/consolidated").exists()
    rows = table_mod.rows([("r.json", report)], [])
    assert rows[0][8] == "not measurable" and rows[0][table_mod.HEADER.index("update-gate sets at bar")] == "not measured"


def test_a_store_that_raises_mid_run_leaves_every_run_incomplete_never_a_pass(tmp_path):
    s = make_settings(tmp_path, plugin("flaky", RaisesOnSecondNote))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="flaky", **QUIET)
    moves = [r for r in report["runs"] if r["variant"] == "move"]
    assert all(r["passed"] is None for r in moves)
    assert moves[0]["incomplete"] == "ingest reader-02-moved.md: store flaky raised RuntimeError: the store's disk is full"
    assert moves[0]["claims"]  # what the store held before it failed is kept
    assert report["verdict"]["bar_met"] is None and report["verdict"]["incomplete"] == 3


def test_a_store_that_cannot_be_created_leaves_its_runs_incomplete(tmp_path):
    s = make_settings(tmp_path, plugin("closed", FailsToOpen))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="closed", **QUIET)
    assert {r["incomplete"] for r in report["runs"]} == {
        "creating the store: store closed raised OSError: cannot open the store's database"}
    assert all(r["passed"] is None and r["claims"] == [] for r in report["runs"])


def test_rows_the_checks_cannot_read_make_the_run_incomplete_naming_the_field(tmp_path):
    s = make_settings(tmp_path, plugin("bad", BadRows))
    run = trip_vs_move.run_suite("reader", "scripted", s, store="bad", **QUIET)["runs"][0]
    assert run["passed"] is None
    assert "rows()[0].status is 'active', expected 'ACTIVE' or 'RETIRED'" in run["incomplete"]


def test_a_store_with_its_own_model_is_labelled_not_metered_and_not_priced(tmp_path):
    s = make_settings(tmp_path, plugin("own", OwnModel))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="own", **QUIET)
    assert report["store"]["spend"] == "not metered" and report["spend"]["metered"] is False
    assert any(r.startswith("Spend not metered") for r in report["remarks"])
    assert {row[-1] for row in table_mod.rows([("r.json", report)], [])} == {"not metered"}
    est = trip_vs_move.estimate(s, routes_for(LIVE, s), "reader", gate="production", runs=s.runs, store="own")
    assert est.usd is None and est.cents == 0 and "not priced" in est.line()


def test_a_live_estimate_prices_a_plug_ins_scripted_call_graph_or_says_why_not(tmp_path):
    s = make_settings(tmp_path, {**plugin("mine", NoEvents), **plugin("off", AsksOffTable)})
    routes = routes_for(LIVE, s)
    free = trip_vs_move.estimate(s, routes, "reader", gate="production", runs=s.runs, store="mine")
    assert free.source == "call graph" and free.calls == 0 and free.usd == 0
    off = trip_vs_move.estimate(s, routes, "reader", gate="production", runs=s.runs, store="off")
    assert off.usd is None and "cannot run offline" in off.note and "no extraction entry" not in off.note
    reference = trip_vs_move.estimate(s, routes, "reader", gate="production", runs=s.runs)
    assert reference.usd > 0 and reference.suite == "trip-vs-move reader"


def test_a_store_learns_nothing_of_the_pair_from_the_sample_it_is_handed(tmp_path):
    s = make_settings(tmp_path, {**plugin("peek", ReadsTheSampleName), **plugin("never", NoEvents)})
    ReadsTheSampleName.seen = ()
    report = update_gate.run_suite("scripted", s, store="peek", **QUIET)
    assert set(ReadsTheSampleName.seen) == {"sample-1", "sample-2", "sample-3"}
    # deciding by the name retires nothing: every set scores as a store that never retires
    decisions = [x["retires"] for st in report["sets"].values() for row in st["rows"] for x in row["samples"]]
    assert decisions and not any(decisions)


def test_a_store_learns_nothing_of_the_variant_or_case_from_the_names_it_is_handed(tmp_path):
    s = make_settings(tmp_path, {**plugin("peek", ReadsTheRunsNames), **plugin("never", NoEvents)})
    ReadsTheRunsNames.seen = ()
    report = trip_vs_move.run_suite("reader", "scripted", s, store="peek", **QUIET)
    seen = ReadsTheRunsNames.seen
    assert not [x for x in seen if any(w in x for w in ReadsTheRunsNames.KEY)], seen
    # runs are still told apart (a replica per run), and a note's real name comes back in the rows
    replicas = {x for x in seen if x.startswith("run-")}
    assert len(replicas) == 5 and {"note-1.md", "note-2.md"} <= set(seen)
    assert {src for r in report["runs"] for c in r["claims"] for src in c["sources"]} == {
        "reader-01.md", "reader-02-moved.md"}
    # deciding by the names earns nothing: it scores as the store that keeps everything
    never = trip_vs_move.run_suite("reader", "scripted", make_settings(tmp_path / "n", plugin("never", NoEvents)),
                                   store="never", **QUIET)
    assert by_variant(report) == by_variant(never) == {"move": [False] * 3, "trip-alone": [True] * 2}


def test_update_gate_refuses_a_store_without_a_decision_and_scores_a_bad_answer_incomplete(tmp_path):
    s = make_settings(tmp_path, {**plugin("mine", NoEvents), **plugin("odd", NotABool)})
    with pytest.raises(InputError, match="decides_update"):
        update_gate.run_suite("scripted", s, store="mine", **QUIET)
    report = update_gate.run_suite("scripted", s, store="odd", **QUIET)
    assert "decides_update returned 'yes'" in report["incomplete"] and report["verdict"]["bars_met"] is None
    closed = update_gate.run_suite("scripted", make_settings(tmp_path / "c", plugin("closed", FailsToOpenDeciding)),
                                   store="closed", **QUIET)
    assert closed["incomplete"] == "store closed raised OSError: cannot open the store's database"
    assert all(not s["complete"] and s["scores"] is None for s in closed["sets"].values())


@pytest.mark.parametrize("spec, message", [
    ("no_such_module:Store", "a module Python can import"),
    (f"{THIS}:Missing", "a class Missing"),
    (f"{THIS}:plugin", "a class plugin"),
    (f"{THIS}:NoRows", "lacks rows"),
    ("urd.llm:Routes", "MemoryStore"),
    ("no-colon", "'module:Class'"),
])
def test_a_broken_plug_in_fails_resolution_in_one_line_naming_its_key(spec, message):
    with pytest.raises(InputError) as err:
        registry.resolve("mine", {"mine": spec}, "config/agentmem.yaml")
    text = str(err.value)
    assert "agentmem.stores.plugins.mine" in text and message in text and "\n" not in text


def test_a_plug_in_cannot_take_a_built_in_name_and_an_unknown_store_is_refused():
    with pytest.raises(InputError, match="a name no built-in store has"):
        registry.resolve("keep_all", {"keep_all": f"{THIS}:NoEvents"})
    with pytest.raises(InputError, match="a known store"):
        registry.resolve("nobody", {})


# --- the documented example, exactly as written ------------------------------------------------

def test_the_documented_example_store_runs_as_written(tmp_path, monkeypatch):
    readme = (REPO / "docs/agentmem.md").read_text()
    code = re.search(r"```python\n(# my_stores\.py\n.*?)```", readme, re.S).group(1)
    (tmp_path / "my_stores.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_stores", None)
    s = make_settings(tmp_path, {"shared_subject": "my_stores:SharedSubject"})
    for case in ("reader", "mid-trip"):
        report = trip_vs_move.run_suite(case, "scripted", s, store="shared_subject", **QUIET)
        assert by_variant(report) == {"move": [False] * 3, "trip-alone": [True] * 2}  # as docs/agentmem.md says
        move = report["runs"][0]
        assert move["checks"]["i_delhi_residence_or_flight"] and not move["checks"]["iii_trip_current"]
        assert move["checks"]["not_measurable"] == ["ii_kept_back_by_winner"]
        assert move["usage"]["calls"] == len(report["notes"])  # one metered extraction a note
    est = trip_vs_move.estimate(s, routes_for(LIVE, s), "reader", gate="production", runs=s.runs, store="shared_subject")
    assert est.source == "call graph" and est.calls == 3 * 2 + 2 * 1 and est.usd > 0


# --- the table ------------------------------------------------------------------------------

def test_the_table_counts_each_check_over_the_runs_and_refuses_checks_version_1(baseline_reports, tmp_path):
    rows = table_mod.rows([("k.json", baseline_reports[("keep_all", "reader")])], [])
    header = table_mod.HEADER
    move = dict(zip(header, rows[0]))
    trip = dict(zip(header, rows[1]))
    assert move["runs passed"] == "0 of 3" and move["i no Delhi home"] == "0/3" and move["iv move kept"] == "3/3"
    assert move["iii trip over"] == "0/3" and move["ii restatements"] == "3/3" and move["update-gate sets at bar"] == "not measured"
    assert move["a home"] == "-" and trip["a home"] == "2/2" and trip["b trip"] == "2/2" and trip["runs passed"] == "2 of 2"
    replaced = dict(zip(header, table_mod.rows([("r.json", baseline_reports[("replace_latest", "reader")])], [])[1]))
    assert replaced["a home"] == "0/2" and replaced["b trip"] == "2/2" and replaced["iii trip over"] == "-"
    mid = dict(zip(header, table_mod.rows([("m.json", baseline_reports[("replace_latest", "mid-trip")])], [])[1]))
    assert mid["b trip"] == "0/2"  # the flight home, a place too, retired the week in Mumbai
    old = json.loads(json.dumps(baseline_reports[("keep_all", "reader")]))
    old["checks_version"] = 1
    with pytest.raises(InputError, match="checks_version"):
        table_mod.rows([("old.json", old)], [])


def test_the_reference_stores_update_decision_is_its_gate_on_the_same_probe_answers(tmp_path):
    from urd.agentmem.runtime import build_llm
    from urd.agentmem.scoring import retirements
    from urd.llm import Meter
    from urd.stores.base import StoreRun
    from urd.stores.reference import ReferenceStore

    s = make_settings(tmp_path)
    golden = json.loads((REPO / "tests/golden/update-gate-scripted.json").read_text())
    llm = build_llm(s, routes_for("scripted", s), Meter())
    (tmp_path / "run").mkdir()
    for gate in ("production", "before-1.187"):
        store = ReferenceStore(StoreRun(tmp_path / "run" / gate, llm, "update-gate", s, {"gate": gate}))
        decided = {(name, row["id"]): sum(store.decides_update(row["older"], row["newer"], f"{name}/{row['id']}/sample-{i}")
                                          for i in range(1, 4))
                   for name, st in golden["sets"].items() for row in st["rows"]}
        store.close()
        expected = {(name, row["id"]): retirements(row, gate) for name, st in golden["sets"].items() for row in st["rows"]}
        assert decided == expected and 0 < sum(decided.values()) < 3 * len(decided)


def test_an_incomplete_run_says_why_in_one_line_for_the_jobs_log(tmp_path):
    from urd.agentmem.cli import incomplete_lines

    s = make_settings(tmp_path, plugin("flaky", RaisesOnSecondNote))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="flaky", **QUIET)
    lines = incomplete_lines("trip-vs-move", "scripted", report)
    assert lines[0] == ("trip-vs-move on scripted, store flaky: incomplete: run move-1: ingest reader-02-moved.md: "
                        "store flaky raised RuntimeError: the store's disk is full")
    assert len(lines) == 3  # each move run; the trip-alone runs (one note) completed
    odd = update_gate.run_suite("scripted", make_settings(tmp_path / "u", plugin("odd", NotABool)), store="odd", **QUIET)
    assert incomplete_lines("update-gate", "scripted", odd) == [
        f"update-gate on scripted, store odd: incomplete: {odd['incomplete']}"]
    assert incomplete_lines("update-gate", "scripted", {**odd, "incomplete": None}) == []


def test_the_stores_table_shows_an_incomplete_runs_checks_as_incomplete_never_held(tmp_path):
    s = make_settings(tmp_path, plugin("flaky", RaisesOnSecondNote))
    report = trip_vs_move.run_suite("reader", "scripted", s, store="flaky", **QUIET)
    move, trip = table_mod.rows([("r.json", report)], [])
    why = "incomplete (ingest reader-02-moved.md: store flaky raised RuntimeError: the store's disk is full)"
    assert move[4] == "0 of 3 (3 incomplete or invalid)"
    assert [c for c in move[5:11] if c != "-"] == [why] * 4  # checks i to iv, none scored from salvage
    assert trip[5:7] != [why] * 2 and "incomplete" not in " ".join(trip[5:11])  # trip-alone runs finished


# --- urd's stricter checks -------------------------------------------------------------------------

URD = table_mod.HEADER.index("urd's stricter checks")


@pytest.mark.parametrize(("store", "case", "variant", "write_up", "urd"), [
    # what each catches, where the write-up's checks pass the store
    (TripAware, "mid-trip", "move", "3 of 3", "0/3 (failed: i+)"),  # "a ten-minute walk from my flat" active
    (NewestNoteWins, "reader", "move", "3 of 3", "0/3 (failed: v)"),  # the dinner request retired with the home
    (EndsTheTripAtOnce, "reader", "trip-alone", "2 of 2", "0/2 (failed: b+)"),  # the trip over the day it is told
    (KeepsTheEndedTrip, "reader", "move", "3 of 3", "0/3 (failed: iii+)"),  # the ended week left active
    # what they must not catch: a user's store that retires the old home's facts, in both cases
    (HomeAware, "mid-trip", "move", "3 of 3", "3/3"),
    (HomeAware, "mid-trip", "trip-alone", "2 of 2", "2/2"),
    (HomeAware, "reader", "move", "3 of 3", "3/3"),
    (HomeAware, "reader", "trip-alone", "2 of 2", "2/2"),
    (TripAware, "reader", "move", "3 of 3", "3/3"),  # the reader's home note holds no fact of the flat
])
def test_urds_stricter_checks_catch_what_the_write_ups_pass_and_leave_a_trip_aware_store(tmp_path, store, case, variant,
                                                                                         write_up, urd):
    name = store.__name__.lower()
    report = trip_vs_move.run_suite(case, "scripted", make_settings(tmp_path, plugin(name, store)), store=name, **QUIET)
    row = next(r for r in table_mod.rows([("r.json", report)], []) if r[3] == variant)
    assert (row[4], row[URD]) == (write_up, urd)


def test_the_reference_store_and_the_write_ups_failures_read_the_same_in_urds_column(baseline_reports, tmp_path):
    cells = {}
    for case in ("reader", "mid-trip"):
        ref = trip_vs_move.run_suite(case, "scripted", make_settings(tmp_path / case), **QUIET)
        for r in table_mod.rows([("ref.json", ref)], []):
            cells[("reference", case, r[3])] = r[URD]
        for store in ("replace_latest", "keep_all"):
            for r in table_mod.rows([("b.json", baseline_reports[(store, case)])], []):
                cells[(store, case, r[3])] = (r[4], r[URD])
    assert {k: v for k, v in cells.items() if k[0] == "reference"} == {
        ("reference", c, v): ("3/3" if v == "move" else "2/2") for c in ("reader", "mid-trip") for v in ("move", "trip-alone")}
    # a run the write-up's checks fail never passes urd's column
    assert cells[("replace_latest", "reader", "trip-alone")] == ("0 of 2", "0/2")
    assert cells[("keep_all", "reader", "move")] == ("0 of 3", "0/3 (failed: i+, iii+)")
    # replace_latest passes the write-up's mid-trip move, keeping the flat's walk: urd's i+ catches it
    assert cells[("replace_latest", "mid-trip", "move")] == ("3 of 3", "0/3 (failed: i+)")

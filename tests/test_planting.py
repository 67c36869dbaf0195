"""The planting suite: the seeded world, the SQLite store's due dates, the judge's calibration
stop, the baseline gate, the factor-credit rule, fabricated citations, and the live path
through the anthropic SDK against a fake Messages API (never the network)."""

import copy
import json
import math
from typing import ClassVar

import pytest
from conftest import REPO
from fake_messages_api import FakeMessagesAPI

from urd.agentmem import settings as settings_mod
from urd.agentmem.runtime import NotConfirmed, build_llm, routes_for
from urd.core.errors import InputError
from urd.core.io import sha256_file
from urd.core.manifest import read_manifest
from urd.llm import Meter
from urd.planting import arms, judge, report, suite, world
from urd.planting.scripted import PlantingResponder
from urd.planting.store import Store, TermOrder

MASTER_SEED = 20260807
MODEL = "claude-sonnet-5-5"
QUIET = {"log": lambda line: None}


def settings(tmp_path, **changes):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(base, {
        "work_dir": str(tmp_path / "work"),
        "planting.judge.calibration_set": str(REPO / "calibration/planting/judge-v1.json"),
        "planting.judge.registry": str(REPO / "calibration/planting/judge_sets.sha256"), **changes})


@pytest.fixture(scope="module")
def world_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("planting") / "world.jsonl"
    world.write_world(path, MASTER_SEED, world.Shape(), world.load_roster())
    return path


@pytest.fixture(scope="module")
def scripted_report(world_file, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    return suite.run_suite("scripted", settings(tmp), world_path=world_file, **QUIET)


# --- the world ---------------------------------------------------------------------------------

def test_the_world_is_the_manifests_bytes_and_twins_differ_only_at_the_plants(world_file, tmp_path):
    pinned = read_manifest(REPO / "calibration/planting/manifest.sha256")["data/planting/world.jsonl"]
    assert sha256_file(world_file) == pinned
    again = tmp_path / "again.jsonl"
    world.write_world(again, MASTER_SEED, world.Shape(), world.load_roster())
    assert again.read_bytes() == world_file.read_bytes()

    w = world.read_world(world_file)
    assert len(w) == 6 * 3 * 6 and all(len(evs) == 6 * 40 for evs in w.values())
    for seed in (1, 4):
        for c in world.load_roster()["characters"]:
            planted, twin, sorry = (w[(seed, v, c["id"])] for v in ("planted", "unplanted", "apologised"))
            differ = [(a.id, a.plant) for a, b in zip(planted, twin) if a.text != b.text]
            assert sorted(p for _, p in differ) == ["identity", "promise", "wound"]
            assert all(a.id == b.id for a, b in zip(planted, twin))
            assert {p: i for i, p in differ}["wound"].startswith("ev-S1-")
            assert {p: i for i, p in differ}["promise"].startswith("ev-S2-")
            extra = [(b.term, b.plant) for a, b in zip(planted, sorry) if a.text != b.text]
            assert extra == [(3, "apology")]
            assert not any(c["plants"][p]["text"] in e.text for e in twin for p in world.PLANTS)
    other = tmp_path / "other.jsonl"
    world.write_world(other, MASTER_SEED + 1, world.Shape(), world.load_roster())
    assert other.read_bytes() != world_file.read_bytes()


# --- the store ---------------------------------------------------------------------------------

def _ev(term, n, text, due=None, closes=None, category="school"):
    return world.Event(1, "planted", "c1", term, n, category, text, due_term=due, closes=closes)


def test_the_store_advances_term_by_term_and_derives_the_due_promises():
    with Store() as s:
        with pytest.raises(TermOrder, match="term 2 written after term 0"):
            s.write_term("w", "c1", 2, [_ev(2, 1, "x")])
        s.write_term("w", "c1", 1, [_ev(1, 1, "lend a kite", due=2, category="promise"),
                                    _ev(1, 2, "lend a comic", due=3, category="promise"),
                                    _ev(1, 3, "paint the backdrop", due=4, category="promise")])
        s.write_term("w", "c1", 2, [_ev(2, 1, "lent the kite", closes="ev-S1-1", category="promise")])
        assert [p.id for p in s.due_promises("w", "c1", 3)] == ["ev-S1-2"]  # kept one gone, later one not due
        with pytest.raises(InputError, match="closes"):
            s.write_term("w", "c1", 3, [_ev(3, 1, "lent it again", closes="ev-S1-1")])
        s.write_term("w", "c1", 3, [_ev(3, 1, "rain")])
        due = s.due_promises("w", "c1", 4)
        assert [(p.id, p.due_term) for p in due] == [("ev-S1-2", 3), ("ev-S1-3", 4)]
        assert "overdue since term 3" in due[0].line(4) and "due this term" in due[1].line(4)
        with pytest.raises(TermOrder, match="only terms up to 3"):
            s.due_promises("w", "c1", 5)
        with pytest.raises(TermOrder):
            s.write_term("w", "c1", 3, [_ev(3, 2, "again")])
        assert s.has_id("w", "c1", "ev-S1-2") and not s.has_id("w", "c1", "ev-1-2")


def test_the_variants_due_promises_differ_only_by_the_planted_one(world_file):
    """Every ordinary promise and every keeping sits in the same slot in all three variants of
    every world, so a promise table never differs between a world and its twin or its apology."""
    w = world.read_world(world_file)
    for seed in range(1, 7):
        for c in world.load_roster()["characters"]:
            shape = {v: [(e.id, e.due_term, e.closes) for e in w[(seed, v, c["id"])]
                         if (e.due_term or e.closes) and e.plant is None] for v in world.VARIANTS}
            assert shape["planted"] == shape["unplanted"] == shape["apologised"], (seed, c["id"])


def test_the_planted_promise_is_in_the_decision_terms_table_from_the_store(world_file, tmp_path):
    w = world.read_world(world_file)
    c = world.load_roster()["characters"][0]
    with Store(tmp_path / "s.sqlite") as s:
        for variant in ("planted", "unplanted"):
            for term in range(1, 7):
                s.write_term(variant, "c1", term, [e for e in w[(1, variant, "c1")] if e.term == term])
        planted = s.due_promises("planted", "c1", 7)
        twin = s.due_promises("unplanted", "c1", 7)
    assert c["plants"]["promise"]["text"] in [p.text for p in planted]
    assert c["plants"]["promise"]["text"] not in [p.text for p in twin]
    assert [p.id for p in planted if p.text != c["plants"]["promise"]["text"]] == [p.id for p in twin]


# --- the default scripted run ------------------------------------------------------------------

def test_the_scripted_run_passes_calibration_and_gate_and_fills_every_number(scripted_report):
    r = scripted_report
    assert r["status"] == "complete" and r["stop"] is None
    assert (r["calibration"]["correct"], r["calibration"]["items"], r["calibration"]["required"]) == (19, 20, 19)
    assert r["calibration"]["misses"][0]["kind"] == "paraphrased positive"
    assert r["gate"]["passed"] and r["gate"]["worst"]["hits"] <= 2
    assert [n["arm"] for n in r["numbers"]] == ["full", "full+table", "layered"]
    for n in r["numbers"]:
        assert n["decisions"] == {"planted": 36, "unplanted": 36, "apologised": 36}
        assert n["net_hits"] == sum(n["hits"].values()) - sum(n["unplanted_hits"].values())
        assert n["net_hits_per_1k_tokens"] == round(n["net_hits"] / (n["prompt_tokens_median"] / 1000), 2)
        # the layered arm's summary is part of its token cost; a verbatim arm builds its context for free
        assert (n["strategy_tokens_median"] > 0) == (n["arm"] == "layered")
        assert n["net_hits_per_1k_total_tokens"] == round(n["net_hits"] / (n["total_tokens_median"] / 1000), 2)
        iv = n["net_hits_interval"]
        assert iv["low"] <= iv["point"] == n["net_hits"] <= iv["high"] and iv["units"] == 36
    by = {n["arm"]: n for n in r["numbers"]}
    # the full arms show every event, so the scripted characters invent IDs there; layered does not
    assert by["full"]["fabricated_citations"] > 0 and by["layered"]["fabricated_citations"] == 0
    assert by["layered"]["prompt_tokens_median"] < by["full"]["prompt_tokens_median"]
    assert sum(by["layered"]["unplanted_hits"].values()) > 0  # the scripted judge's one misjudgement
    assert by["full"]["counterfactual_wound"]["difference"]["point"] > 0
    assert any(by["full"]["citations"][p] != by["full"]["judged_influence"][p] for p in world.PLANTS)
    assert [c["factor"] for c in r["factor_credits"]] == ["promise_table", "history"]
    assert r["not_credited"] == [{"from": "full", "to": "layered", "differ_in": ["history", "promise_table"],
                                  "why": "the arms differ in more than one feature: no factor is credited"}]
    assert r["meter"]["spent_usd"] == 0 and r["leaks"] == []


def test_numbers_follow_from_the_decisions_alone(scripted_report):
    """Recount the full arm's hits, citations and fabrications from the raw decisions."""
    ds = [d for d in scripted_report["decisions"] if d["arm"] == "full"]
    n = scripted_report["numbers"][0]
    for p in world.PLANTS:
        hits = sum(any(x["shaped"] for x in d["judged"][p]) for d in ds if d["variant"] == "planted")
        cited = sum(d["plant_ids"][p] in [c for it in d["intents"] for c in it["cites"]] for d in ds if d["variant"] == "planted")
        assert (n["hits"][p], n["citations"][p]) == (hits, cited)
    ids = {key: {e.id for e in evs} for key, evs in world.read_world(scripted_report["world"]["path"]).items()}
    fabricated = [c for d in ds if d["variant"] == "planted"
                  for c in sorted({c for it in d["intents"] for c in it["cites"]})
                  if c not in ids[(d["seed"], "planted", d["character"])]]
    assert n["fabricated_citations"] == len(fabricated) > 0


def test_fabricated_ids_are_the_cited_ids_the_store_does_not_hold(world_file, tmp_path):
    """A character that cites a real ID, the same ID without its S, and one past the term's
    end: only the last two are fabricated."""
    class Citing(PlantingResponder):
        def _decide(self, data):
            return json.dumps({"intents": [{"intent": "Go outside.", "cites": ["ev-S2-7", "ev-2-7", "ev-S6-41"]}]})

    s = settings(tmp_path, **{"planting.world.seeds": 1})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    run = suite.Run(s, "scripted", world_path=one, responder=Citing(world.load_roster()), **QUIET)
    run.fill_store()
    d = run.decide("planted", run.arms[0], run.roster["characters"][0], 1)
    assert d["fabricated"] == ["ev-2-7", "ev-S6-41"]
    assert [len(r) for r in d["judged"].values()] == [1, 1, 1]


def test_a_run_stopped_part_way_subtracts_only_paired_twins():
    """Net hits and their interval come from the same (character, seed) units: a planted
    decision without its twin, or a twin without its planted decision, counts for nothing."""
    def d(variant, character, seed, shaped):
        return {"arm": "full", "variant": variant, "character": character, "seed": seed, "prompt_tokens": 1000,
                "tokens_measured": False, "parsed": True, "intents": [{"intent": "x", "cites": []}], "plant_ids": {},
                "fabricated": [], "judged": {p: [{"shaped": shaped and p == "promise", "specific": ""}]
                                             for p in world.PLANTS}}
    decisions = [d("unplanted", c, 1, True) for c in ("c1", "c2", "c3", "c4")] + \
        [d("planted", c, 1, True) for c in ("c1", "c2")] + [d("planted", "c5", 1, True)]
    n = report.arm_numbers(decisions, "full", 3.0)
    assert n["paired_units"] == 2 and n["hits"]["promise"] == 2 and n["unplanted_hits"]["promise"] == 2
    assert n["net_hits"] == 0 == n["net_hits_interval"]["point"]
    none = report.arm_numbers([d("unplanted", "c1", 1, True)], "full", 3.0)
    assert none["net_hits"] is None and none["net_hits_per_1k_tokens"] is None


# --- the stops ---------------------------------------------------------------------------------

def test_a_plant_that_collides_with_the_motivation_stops_the_run_at_the_gate(world_file, tmp_path):
    roster = copy.deepcopy(world.load_roster())
    tomas = roster["characters"][1]
    tomas["defaults"] = [tomas["plants"]["wound"]["intent"]] * 4  # what he would say anyway
    r = suite.run_suite("scripted", settings(tmp_path), world_path=world_file, roster=roster, **QUIET)
    assert r["status"] == "stopped" and r["stop"]["at"] == "baseline gate"
    why = r["stop"]["why"]
    assert "wound planted for c2 (Tomas)" in why and tomas["plants"]["wound"]["text"] in why
    assert "arm full" in why and "6/6" in why
    assert {d["variant"] for d in r["decisions"]} == {"unplanted"}  # no planted world was shown


def test_a_judge_below_the_calibration_bar_stops_the_run_before_judging(world_file, tmp_path):
    r = suite.run_suite("scripted", settings(tmp_path), world_path=world_file, responder=PlantingResponder(world.load_roster(), "topical"), **QUIET)
    assert r["status"] == "stopped" and r["stop"]["at"] == "calibration"
    assert not r["calibration"]["passed"] and r["calibration"]["correct"] < 19
    assert any(m["kind"] == "hard negative" and m["ruled"] is True for m in r["calibration"]["misses"])
    assert r["decisions"] == [] and r["meter"]["calls"] == 20


def test_a_failed_call_marks_the_run_failed_and_a_world_that_does_not_fit_costs_nothing(world_file, tmp_path):
    class Gap(PlantingResponder):  # a table with a hole: the scripted arm refuses the request
        def _summarize(self, events):
            return None, "no summary in this table"

    r = suite.run_suite("scripted", settings(tmp_path), world_path=world_file, responder=Gap(world.load_roster()),
                        **QUIET)
    assert r["status"] == "failed" and "no summary in this table" in r["stop"]["why"]
    lines = world_file.read_text().splitlines()
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:-1]) + "\n")  # one event missing from the last stream
    with pytest.raises(InputError, match="events of .* 40 a term"):
        suite.run_suite("scripted", settings(tmp_path), world_path=short, **QUIET)
    with pytest.raises(InputError, match="worlds"):
        suite.run_suite("scripted", settings(tmp_path, **{"planting.world.seeds": 5}), world_path=world_file, **QUIET)


def test_a_calibration_set_that_is_not_the_registered_one_is_refused(world_file, tmp_path):
    forged = tmp_path / "judge-v1.json"
    data = json.loads((REPO / "calibration/planting/judge-v1.json").read_text())
    data["items"] = [i for i in data["items"] if i["kind"] != "hard negative"] * 2
    forged.write_text(json.dumps(data))
    with pytest.raises(InputError, match="SHA-256"):
        suite.run_suite("scripted", settings(tmp_path, **{"planting.judge.calibration_set": str(forged)}),
                        world_path=world_file, **QUIET)


def test_harvest_turns_the_twins_false_positives_into_the_next_registered_version(scripted_report, tmp_path):
    registry = tmp_path / "judge_sets.sha256"
    registry.write_text((REPO / "calibration/planting/judge_sets.sha256").read_text())
    v1 = tmp_path / "judge-v1.json"
    v1.write_bytes((REPO / "calibration/planting/judge-v1.json").read_bytes())
    cal = judge.load_set(v1, registry)
    new = judge.harvest(scripted_report, cal, tmp_path / "judge-v2.json", registry)
    harvested = new["items"][len(cal["items"]):]
    misjudged = world.load_roster()["scripted_judge"]["misjudges"][0]
    assert new["version"] == 2 and [(h["event"], h["intent"]) for h in harvested] == [(misjudged["event"], misjudged["intent"])]
    assert all(h["kind"] == "hard negative" and not h["expected"] for h in harvested)
    v2 = judge.load_set(tmp_path / "judge-v2.json", registry)  # registered, so it loads
    # the scripted judge keeps its misjudgement: calibrated on v2 it no longer passes
    s = settings(tmp_path)
    llm = build_llm(s, routes_for("scripted", s), Meter(), responder=PlantingResponder(world.load_roster()))
    with pytest.raises(judge.CalibrationFailed, match=r"19/21 .* item 20 \(hard negative\) ruled True"):
        judge.calibrate(llm, v2, max_tokens=100, min_correct=math.ceil(0.95 * 21))
    with pytest.raises(InputError, match="never overwritten"):
        judge.harvest(scripted_report, cal, tmp_path / "judge-v2.json", registry)


# --- factor credits ----------------------------------------------------------------------------

def test_a_factor_is_credited_only_between_arms_that_differ_in_exactly_it():
    a = arms.Arm("a", {"history": "verbatim", "promise_table": False})
    b = arms.Arm("b", {"history": "verbatim", "promise_table": True})
    c = arms.Arm("c", {"history": "layered", "promise_table": True})
    d = arms.Arm("d", {"history": "layered", "promise_table": False})
    single, multi = arms.credit_pairs([a, b, c, d])
    assert [(x.name, y.name, f) for x, y, f in single] == [
        ("a", "b", "promise_table"), ("a", "d", "history"), ("b", "c", "history"), ("c", "d", "promise_table")]
    assert [(x.name, y.name, f) for x, y, f in multi] == [("a", "c", ["history", "promise_table"]),
                                                          ("b", "d", ["history", "promise_table"])]
    numbers = {name: {"hits": {"wound": 1, "promise": hp, "identity": 2}, "net_hits": net}
               for name, hp, net in (("a", 11, 38), ("b", 16, 37), ("c", 26, 49), ("d", 20, 40))}
    credits, refused = report.factor_credits([a, b, c], numbers)
    assert [(x["factor"], x["credit"]["promise"], x["credit"]["net_hits"]) for x in credits] == [
        ("promise_table", 5, -1), ("history", 10, 12)]
    assert refused[0]["differ_in"] == ["history", "promise_table"]
    with pytest.raises(InputError, match="history"):
        arms.arms_from({"arms": {"x": {"history": "compressed", "promise_table": False}}})


# --- the live path -----------------------------------------------------------------------------

@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-planting-test-key")


def test_a_live_run_goes_through_the_sdk_measures_tokens_and_replays_for_nothing(world_file, tmp_path, key):
    s = settings(tmp_path, **{"planting.world.seeds": 1})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    with pytest.raises(NotConfirmed):
        suite.run_suite(MODEL, s, world_path=one, **QUIET)
    api = FakeMessagesAPI(PlantingResponder(world.load_roster()))
    r = suite.run_suite(MODEL, s, world_path=one, yes=True, http_client=api.client(), **QUIET)
    assert r["status"] == "complete", r["stop"]
    fresh = sum(row["calls"] for row in r["meter"]["by_purpose"] if not row["replayed"])
    assert fresh == len(api.requests) and r["meter"]["spent_usd"] > 0  # a repeated request replays from the cache
    n = r["numbers"][0]
    assert n["prompt_tokens_source"] == "measured usage"
    decide = [d for d in r["decisions"] if d["arm"] == "full" and d["variant"] == "planted"]
    # the fake bills a quarter token a byte of the user turn, plus the instructions as a cache write
    assert all(d["tokens_measured"] and d["prompt_tokens"] > 1000 for d in decide)
    # the estimate (the scripted call graph at list prices) is within 2x of what the run spent
    est = suite.estimate(s, routes_for(MODEL, s), master_seed=MASTER_SEED)
    assert 0.5 <= est.usd / r["meter"]["spent_usd"] <= 2.0
    again = suite.run_suite(MODEL, s, world_path=one, yes=True, http_client=FakeMessagesAPI().client(), **QUIET)
    assert again["meter"]["spent_usd"] == 0 and again["numbers"] == r["numbers"]
    # re-judging the stored run with another judge pays for the judge's calls only
    other = FakeMessagesAPI(PlantingResponder(world.load_roster()))
    rejudged = suite.run_suite(MODEL, s, world_path=one, yes=True, pins={"judge": "claude-sonnet-4-6"},
                               http_client=other.client(), **QUIET)
    paid = {row["purpose"] for row in rejudged["meter"]["by_purpose"] if not row["replayed"]}
    assert paid == {"judge"} and rejudged["routes"]["judge"] == "claude-sonnet-4-6" and rejudged["leaks"] == []
    assert [d["intents"] for d in rejudged["decisions"]] == [d["intents"] for d in r["decisions"]]


def test_the_ceiling_stops_a_live_run_and_the_report_says_incomplete(world_file, tmp_path, key):
    s = settings(tmp_path, **{"planting.world.seeds": 1, "spend.max_usd_planting": 0.05})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    api = FakeMessagesAPI(PlantingResponder(world.load_roster()))
    r = suite.run_suite(MODEL, s, world_path=one, yes=True, http_client=api.client(), **QUIET)
    assert r["status"] == "incomplete" and r["stop"]["at"] == "ceiling"
    assert 0 < r["meter"]["spent_usd"] <= 0.05


def test_the_cli_runs_stops_tabulates_and_refuses_another_suites_report(world_file, tmp_path, capsys):
    from urd.planting.cli import main

    s = settings(tmp_path)
    report = tmp_path / "report.json"
    assert main(["run", "--model", "scripted", "--world", str(world_file), "--settings", json.dumps(s.raw),
                 "--output", str(report)]) == 0
    out = {fmt: tmp_path / f"t.{fmt}" for fmt in ("md", "csv", "html", "png")}
    assert main(["tables", str(report), *(a for k, v in out.items() for a in (f"--{k}", str(v)))]) == 0
    assert out["csv"].read_text().splitlines()[0].startswith("model,arm,prompt tokens (median)")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"suite": "update-gate"}))
    assert main(["tables", str(other), *(a for k, v in out.items() for a in (f"--{k}", str(v)))]) == 2
    assert "suite" in capsys.readouterr().err
    # a stopped run writes its report and exits 1, for the workflow to fail on
    raw = json.loads(json.dumps(s.raw))
    raw["planting"]["gate"]["max_unplanted_hits"] = 0  # the scripted judge's one misjudgement trips it
    stopped = tmp_path / "stopped.json"
    assert main(["run", "--model", "scripted", "--world", str(world_file), "--settings", json.dumps(raw),
                 "--output", str(stopped)]) == 1
    assert json.loads(stopped.read_text())["stop"]["at"] == "baseline gate"


# --- context strategies as plug-ins ---------------------------------------------------------------

class VerbatimWithTable(arms.ContextStrategy):
    """The `full+table` arm, written as a plug-in: every event, then the due promises."""

    features: ClassVar[dict] = {"history": "verbatim", "promise_table": True}

    def sections(self, view):
        events = view.store.events(view.world, view.character, list(range(1, view.decision_term)))
        due = view.store.due_promises(view.world, view.character, view.decision_term)
        return [("events", "\n".join(e.line() for e in events) or "none"),
                ("due_promises", "\n".join(p.line(view.decision_term) for p in due) or "none")]


class Summarised(VerbatimWithTable):
    """Adds a model-written summary of the whole past (a call through the run's LLM layer)."""

    features: ClassVar[dict] = {"history": "verbatim", "promise_table": True, "summary": True}

    def sections(self, view):
        lines = "\n".join(e.line() for e in view.store.events(view.world, view.character, [1, 2]))
        return [*super().sections(view), ("middle_summary", view.summarize(lines, 1, 2))]


class NoFeatures(arms.ContextStrategy):
    def sections(self, view):
        return []


def test_a_strategy_plug_in_with_a_built_ins_features_is_credited_as_the_built_in(world_file, tmp_path,
                                                                                    scripted_report):
    plugged = {"full": {"history": "verbatim", "promise_table": False},
               "mine": {"strategy": f"{__name__}:VerbatimWithTable"},
               "layered": {"history": "layered", "promise_table": True},  # summarises another stretch first
               "summarised": {"strategy": f"{__name__}:Summarised"}}
    r = suite.run_suite("scripted", settings(tmp_path, **{"planting.arms": plugged}), world_path=world_file, **QUIET)
    assert r["status"] == "complete"
    numbers = {n["arm"]: n for n in r["numbers"]}
    built_in = {n["arm"]: n for n in scripted_report["numbers"]}
    assert numbers["mine"]["hits"] == built_in["full+table"]["hits"]  # the same sections, the same decisions
    credit = {(c["from"], c["to"]): c for c in r["factor_credits"]}
    reference = {(c["from"], c["to"]): c for c in scripted_report["factor_credits"]}
    assert credit[("full", "mine")]["credit"] == reference[("full", "full+table")]["credit"]
    assert credit[("mine", "summarised")]["factor"] == "summary"
    assert ("full", "summarised") not in credit  # two features apart: refused, named
    assert any(x["from"] == "full" and x["to"] == "summarised" and x["differ_in"] == ["promise_table", "summary"]
               for x in r["not_credited"])
    assert {a["name"]: a.get("strategy") for a in r["arms"]}["mine"] == f"{__name__}:VerbatimWithTable"
    summarised = [d for d in r["decisions"] if d["arm"] == "summarised"]
    assert len(summarised) == 6 * 6 * 3 and all(d["strategy_calls"] == 1 for d in summarised)  # a summary a world
    assert all(d["strategy_tokens"] > 0 and not d["strategy_tokens_measured"] for d in summarised)
    assert all(d["strategy_calls"] == 0 and d["strategy_tokens"] == 0 for d in r["decisions"] if d["arm"] == "mine")
    # the summary is in the arm's token cost: the whole cost per decision, and net hits per 1K of it
    s, m = numbers["summarised"], numbers["mine"]
    assert s["strategy_tokens_median"] > 0 and m["strategy_tokens_median"] == 0 and s["strategy_calls"] == 36
    assert m["total_tokens_median"] == m["prompt_tokens_median"]
    assert s["total_tokens_median"] > s["prompt_tokens_median"]
    assert s["net_hits_per_1k_total_tokens"] == round(s["net_hits"] / (s["total_tokens_median"] / 1000), 2)


def test_a_strategy_plug_in_that_declares_no_features_or_does_not_import_is_refused():
    with pytest.raises(InputError, match="declaring features"):
        arms.arms_from({"arms": {"x": {"strategy": f"{__name__}:NoFeatures"}}})
    with pytest.raises(InputError, match="importable module"):
        arms.arms_from({"arms": {"x": {"strategy": "no_such_module:S"}}})
    with pytest.raises(InputError, match="lacks sections"):
        arms.arms_from({"arms": {"x": {"strategy": "urd.planting.arms:ContextStrategy"}}})


def test_two_arms_with_the_same_features_are_listed_not_silently_dropped():
    same = {"history": "verbatim", "promise_table": True}
    x, y = arms.Arm("x", same), arms.Arm("y", dict(same))
    assert arms.credit_pairs([x, y]) == ([], [(x, y, [])])
    numbers = {n: {"hits": {p: 0 for p in ("wound", "promise", "identity")}, "net_hits": 0} for n in ("x", "y")}
    _, refused = report.factor_credits([x, y], numbers)
    assert refused == [{"from": "x", "to": "y", "differ_in": [],
                        "why": "the arms declare the same features: there is no factor to credit"}]

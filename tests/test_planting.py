"""The planting suite: the seeded world, the SQLite store's due dates, the judge's calibration
stop, the baseline gate, the factor-credit rule, fabricated citations, and the live path
through the anthropic SDK against a fake Messages API (never the network)."""

import copy
import json
import math
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import REPO
from fake_messages_api import FakeMessagesAPI

from urd.agentmem.runtime import RUN_MARKER, NotConfirmed, build_llm, open_run, routes_for
from urd.core.errors import InputError
from urd.core.io import pretty_json, sha256_file
from urd.core.manifest import read_manifest
from urd.llm import Meter
from urd.planting import arms, judge, prompts, render, report, suite, world
from urd.planting.routes import routes as planting_routes
from urd.planting.scripted import PlantingResponder
from urd.planting.store import Store, TermOrder
from urd.stores import settings as settings_mod

MASTER_SEED = 20260807
MODEL = "claude-sonnet-5-5"
QUIET = {"log": lambda line: None}


FEATURES_HISTORY = arms.FEATURES["history"]


def settings(tmp_path, **changes):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(base, {
        "work_dir": str(tmp_path / "work"),
        "planting.judge.calibration_set": str(REPO / "calibration/planting/judge-v2.json"),
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


def test_each_arm_shows_a_plants_twin_exactly_where_and_as_it_shows_the_plant(world_file, tmp_path):
    """The unplanted baseline is a twin only if its context differs from the planted one by the
    plant's text alone: the twin stands in the plant's category, so every arm keeps, summarises
    or drops it as it does the plant (the layered arm's distant past keeps categories, not events)."""
    w = world.read_world(world_file)
    s = settings(tmp_path)
    shape = world.Shape()
    layout = arms.Layout.from_settings(s.raw["planting"], shape.terms)
    roster = world.load_roster()
    reached = {}
    with Store() as store:
        for c in roster["characters"]:
            for variant in ("planted", "unplanted"):
                events = w[(1, variant, c["id"])]
                for term in range(1, shape.terms + 1):
                    store.write_term(variant, c["id"], term, [e for e in events if e.term == term])
        for history in FEATURES_HISTORY:
            for c in roster["characters"]:
                view = {v: arms.DecisionView(store, v, c["id"], shape.decision_term, layout,
                                             lambda lines, a, b: lines)  # the summary's input, as it is
                        for v in ("planted", "unplanted")}
                shown = {v: arms.feature_sections({"history": history, "promise_table": False}, view[v]) for v in view}
                for (label, planted), (same, twin) in zip(shown["planted"], shown["unplanted"]):
                    assert label == same
                    a, b = planted.splitlines(), twin.splitlines()
                    assert len(a) == len(b), f"{history} {label}: the twin is not where the plant is"
                    for x, y in zip(a, b):
                        if x != y:
                            plant = next(p for p in world.PLANTS if c["plants"][p]["text"] in x)
                            assert x.replace(c["plants"][plant]["text"], "") == y.replace(c["plants"][plant]["twin"], "")
                            reached[(history, label, plant)] = reached.get((history, label, plant), 0) + 1
    # the layered arm's distant past keeps the plants' categories: the wound and identity plants
    # (terms 1-2) reach it, and so do their twins
    assert {k for k in reached if k[0] == "layered"} >= {("layered", "distant_past", "wound"),
                                                         ("layered", "distant_past", "identity")}
    assert {k[2] for k in reached if k[0] == "verbatim"} == set(world.PLANTS)


# --- the default scripted run ------------------------------------------------------------------

def test_the_scripted_run_passes_calibration_and_gate_and_fills_every_number(scripted_report):
    r = scripted_report
    assert r["status"] == "complete" and r["stop"] is None
    assert (r["calibration"]["correct"], r["calibration"]["items"], r["calibration"]["required"]) == (19, 20, 19)
    assert r["calibration"]["misses"][0]["kind"] == "paraphrased positive"
    assert r["calibration"]["intents_per_call"] == 3 and r["calibration"]["companions_ruled_shaped"] == 0
    assert r["calibration_set"]["hard_negatives"] == {"harvested": 0, "hand-written": 10}
    assert r["gate"]["passed"] and r["gate"]["worst"]["hits"] == 2 and r["gate"]["max_unplanted_hits"] == 2
    assert r["gate"]["over_bar"] == [] and r["gate"]["worst"]["plant"] == "identity"
    assert [n["arm"] for n in r["numbers"]] == ["full", "full+table", "layered", "layered-seeded"]
    for n in r["numbers"]:
        assert n["decisions"] == {"planted": 36, "unplanted": 36, "apologised": 36}
        assert n["net_hits"] == sum(n["hits"].values()) - sum(n["unplanted_hits"].values())
        assert n["net_hits_per_1k_tokens"] == round(n["net_hits"] / (n["prompt_tokens_median"] / 1000), 2)
        # the layered arm's summary is part of its token cost; a verbatim arm builds its context for free
        assert (n["strategy_tokens_median"] > 0) == n["arm"].startswith("layered")
        assert n["net_hits_per_1k_total_tokens"] == round(n["net_hits"] / (n["total_tokens_median"] / 1000), 2)
        iv = n["net_hits_interval"]
        assert iv["low"] <= iv["point"] == n["net_hits"] <= iv["high"] and (iv["units"], iv["characters"]) == (36, 6)
        per = n["net_hits_per_1k_tokens_interval"]
        assert per["low"] <= per["point"] == n["net_hits_per_1k_tokens"] <= per["high"]
        assert n["short_replies"] == n["unparsed_decisions"] == n["judge_off_protocol"] == 0
    by = {n["arm"]: n for n in r["numbers"]}
    # the full arms show every event, so the scripted characters invent IDs there; layered does not
    assert by["full"]["fabricated_citations"] == by["full"]["fabricated_no_such_event"] > 0
    assert by["full"]["fabricated_not_shown"] == 0 and by["layered"]["fabricated_citations"] == 0
    # the character-level bootstrap: wider than resampling the 36 units as independent (27 to 47)
    assert (by["full"]["net_hits_interval"]["low"], by["full"]["net_hits_interval"]["high"]) == (8, 49)
    # every factor credit has its interval; the promise table is credited with promise hits
    table = next(c for c in r["factor_credits"] if c["factor"] == "promise_table")
    assert table["credit"]["promise"] == by["full+table"]["hits"]["promise"] - by["full"]["hits"]["promise"] > 0
    assert table["intervals"]["promise"]["low"] > 0 and table["intervals"]["net_hits"]["low"] > 0
    assert all(iv["low"] <= iv["point"] <= iv["high"] for c in r["factor_credits"] for iv in c["intervals"].values())
    assert by["layered"]["prompt_tokens_median"] < by["full"]["prompt_tokens_median"]
    assert sum(by["layered"]["unplanted_hits"].values()) > 0  # the scripted judge's one misjudgement
    assert by["full"]["counterfactual_wound"]["difference"]["point"] > 0
    assert any(by["full"]["citations"][p] != by["full"]["judged_influence"][p] for p in world.PLANTS)
    assert [c["factor"] for c in r["factor_credits"]] == ["promise_table", "history", "keep"]
    assert [(x["from"], x["to"], x["differ_in"]) for x in r["not_credited"]] == [
        ("full", "layered", ["history", "promise_table"]), ("full", "layered-seeded", ["history", "keep", "promise_table"]),
        ("full+table", "layered-seeded", ["history", "keep"])]
    assert r["meter"]["spent_usd"] == 0 and r["leaks"] == []


def test_the_seeded_keep_row_shows_how_much_of_the_layered_win_rests_on_knowing_the_plants(scripted_report, world_file):
    """The sensitivity row: a layered arm whose distant past keeps as many categories, drawn by
    each world's seed without knowledge of the plants. Its context keeps only the drawn
    categories' early events (the same set in a world and its twins), and its credit against
    the study's layered arm is the feature `keep`, with its interval."""
    r = scripted_report
    lay = r["layered_layout"]["seeded_keep"]
    drawn = lay["keep_categories_by_seed"]
    assert lay["arms"] == ["layered-seeded"] and sorted(drawn) == [str(s) for s in range(1, 7)]
    configured = r["layered_layout"]["keep_categories"]
    assert all(len(v) == len(configured) for v in drawn.values()) and len({tuple(v) for v in drawn.values()}) > 1
    assert any(set(v) != set(configured) for v in drawn.values())
    assert {k: [p for p in world.PLANTS if world.PLANT_CATEGORY[p] in v] for k, v in drawn.items()} == \
        lay["plants_kept_in_distant_past_by_seed"]
    # the study's recipe keeps every plant's category; the draw keeps fewer, and wins less
    by = {n["arm"]: n for n in r["numbers"]}
    assert by["layered-seeded"]["net_hits"] < by["layered"]["net_hits"]
    keep = next(c for c in r["factor_credits"] if c["factor"] == "keep")
    assert (keep["from"], keep["to"]) == ("layered", "layered-seeded")
    assert keep["credit"]["net_hits"] == by["layered-seeded"]["net_hits"] - by["layered"]["net_hits"]
    assert keep["intervals"]["net_hits"]["low"] <= keep["credit"]["net_hits"] <= keep["intervals"]["net_hits"]["high"]
    # what the arm showed, seed by seed: the wound (always in term 1, the distant past) reaches
    # the seeded arm only in the seeds whose draw kept its category, and the study's arm in all
    def wound_hits(arm, seed):
        return sum(any(x["shaped"] for x in d["judged"]["wound"]) for d in r["decisions"]
                   if d["arm"] == arm and d["seed"] == seed and d["variant"] == "apologised")

    for seed in range(1, 7):
        kept = "conflict" in drawn[str(seed)]
        assert (wound_hits("layered-seeded", seed) > 0) == kept and wound_hits("layered", seed) > 0, seed
    # the draw is the seed's alone: the layout gives it again, whatever else changes
    s = settings(Path(r["world"]["path"]).parent)
    layout = arms.Layout.from_settings(s.raw["planting"], world.Shape().terms)
    assert list(layout.for_seed(4, world.load_roster()["filler"]["weights"]).keep_categories) == drawn["4"]
    with pytest.raises(InputError, match="keep"):
        arms.arms_from({"arms": {"x": {"history": "verbatim", "promise_table": False, "keep": "seeded"}}})
    with pytest.raises(InputError, match="keep"):
        arms.arms_from({"arms": {"x": {"history": "layered", "promise_table": False, "keep": "chosen"}}})
    with pytest.raises(InputError, match="colour"):
        arms.arms_from({"arms": {"x": {"history": "layered", "promise_table": False, "colour": 1}}})


def test_numbers_follow_from_the_decisions_alone(scripted_report):
    """Recount the full arm's hits, citations and fabrications from the raw decisions."""
    ds = [d for d in scripted_report["decisions"] if d["arm"] == "full"]
    n = scripted_report["numbers"][0]
    for p in world.PLANTS:
        shown = "apologised" if p == "wound" else "planted"  # the study's wound was apologised
        hits = sum(any(x["shaped"] for x in d["judged"][p]) for d in ds if d["variant"] == shown)
        cited = sum(d["plant_ids"][p] in [c for it in d["intents"] for c in it["cites"]] for d in ds if d["variant"] == shown)
        assert (n["hits"][p], n["citations"][p]) == (hits, cited)
    cf = n["counterfactual_wound"]
    assert n["hits"]["wound"] == cf["apologised"] and cf["difference"]["point"] == cf["not_apologised"] - cf["apologised"]
    ids = {key: {e.id for e in evs} for key, evs in world.read_world(scripted_report["world"]["path"]).items()}
    fabricated = [c for d in ds if d["variant"] == "planted"
                  for c in sorted({c for it in d["intents"] for c in it["cites"]})
                  if c not in ids[(d["seed"], "planted", d["character"])]]
    assert n["fabricated_citations"] == len(fabricated) > 0


def test_every_count_has_its_interval_from_the_same_draws(scripted_report):
    """Per-plant hits, unplanted hits and fabricated citations get an interval as net hits does:
    each holds its count, and each is the same two-stage bootstrap over the same units."""
    for n in scripted_report["numbers"]:
        for p in world.PLANTS:
            iv = n["hits_interval"][p]
            assert iv["low"] <= iv["point"] == n["hits"][p] <= iv["high"] and (iv["units"], iv["characters"]) == (36, 6)
        iv = n["unplanted_hits_interval"]
        assert iv["low"] <= iv["point"] == sum(n["unplanted_hits"].values()) <= iv["high"]
        iv = n["fabricated_citations_interval"]
        assert iv["low"] <= iv["point"] == n["fabricated_citations"] <= iv["high"]
    full = next(n for n in scripted_report["numbers"] if n["arm"] == "full")
    # a count that varies between characters has a real width; one that never varies has none
    assert full["hits_interval"]["promise"]["low"] < full["hits"]["promise"] < full["hits_interval"]["promise"]["high"]
    assert full["hits_interval"]["identity"]["low"] < full["hits_interval"]["identity"]["high"]
    row = next(r for r in render.rows(scripted_report) if r[1] == "full")
    cell = row[render.HEADER.index("promise 95% CI")]
    assert cell == f"{full['hits_interval']['promise']['low']:.4g} to {full['hits_interval']['promise']['high']:.4g}"


def test_fabricated_ids_are_the_cited_ids_the_prompt_did_not_show(world_file, tmp_path):
    """A character cites a real ID of term 2, the same without its S, one past the term's end, and
    a real ID of term 4: the verbatim arm showed the first and the last; the layered arm dropped
    the first and summarised the last away, so there they are fabricated too, counted apart from
    the IDs no event has."""
    class Citing(PlantingResponder):
        def _decide(self, data):
            return json.dumps({"intents": [{"intent": "Go outside.", "cites": ["ev-S2-7", "ev-2-7", "ev-S6-41",
                                                                               "ev-S4-12"]}]})

    s = settings(tmp_path, **{"planting.world.seeds": 1})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    routes = planting_routes("scripted", s)
    opened = open_run(s, routes, ceiling_usd=None).open(("planting", "scripted"), tmp_path / "run",
                                                        responder=Citing(world.load_roster()))
    run = suite.Run(s, "scripted", routes, world_path=one, **QUIET).attach(opened)
    run.fill_store()
    by = {a.name: a for a in run.arms}
    c = run.roster["characters"][0]
    full = run.decide("planted", by["full"], c, 1)
    assert full["fabricated"] == ["ev-2-7", "ev-S6-41"] and full["fabricated_no_such_event"] == ["ev-2-7", "ev-S6-41"]
    assert full["fabricated_not_shown"] == [] and full["short"]
    assert [len(r) for r in full["judged"].values()] == [1, 1, 1]
    layered = run.decide("planted", by["layered"], c, 1)
    assert layered["fabricated"] == ["ev-2-7", "ev-S2-7", "ev-S4-12", "ev-S6-41"]
    # in the store, but a family event of the distant past (not a kept category) and one summarised away
    assert layered["fabricated_not_shown"] == ["ev-S2-7", "ev-S4-12"]
    n = report.arm_numbers([full, {**full, "variant": "apologised"}, {**full, "variant": "unplanted"}], "full", 3.0)
    assert (n["fabricated_citations"], n["fabricated_no_such_event"], n["short_replies"]) == (2, 2, 3)
    assert suite.shown("ev-S1-10: x", "ev-S1-1") is False and suite.shown("a ev-S1-1 (term", "ev-S1-1")


def test_a_run_stopped_part_way_subtracts_only_paired_twins():
    """Net hits and their interval come from the same (character, seed) units, decided in the
    planted, the apologised and the unplanted world: a planted decision without its twin, a twin
    without its planted decision, or a unit the run stopped before apologising, counts for nothing."""
    def d(variant, character, seed, shaped):
        return {"arm": "full", "variant": variant, "character": character, "seed": seed, "prompt_tokens": 1000,
                "tokens_measured": False, "parsed": True, "intents": [{"intent": "x", "cites": []}], "plant_ids": {},
                "fabricated": [], "judged": {p: [{"shaped": shaped and p == "promise", "specific": ""}]
                                             for p in world.PLANTS}}
    decisions = [d("unplanted", c, 1, True) for c in ("c1", "c2", "c3", "c4")] + \
        [d(v, c, 1, True) for c in ("c1", "c2") for v in ("planted", "apologised")] + [d("planted", "c5", 1, True)] + \
        [d("planted", "c3", 1, True)]  # c3: stopped before its apologised world
    n = report.arm_numbers(decisions, "full", 3.0)
    assert n["paired_units"] == 2 and n["hits"]["promise"] == 2 and n["unplanted_hits"]["promise"] == 2
    assert n["net_hits"] == 0 == n["net_hits_interval"]["point"]
    none = report.arm_numbers([d("unplanted", "c1", 1, True)], "full", 3.0)
    assert none["net_hits"] is None and none["net_hits_per_1k_tokens"] is None


# --- the stops ---------------------------------------------------------------------------------

def test_every_decision_shows_the_motivation_and_a_plant_worded_into_it_trips_the_gate(world_file, tmp_path):
    roster = copy.deepcopy(world.load_roster())
    tomas = roster["characters"][1]
    # the write-up's round four: a wound worded into the character's own motivation
    tomas["motivation"] = f"keep {tomas['plants']['wound']['specific']}"
    recorded = []
    r = suite.run_suite("scripted", settings(tmp_path), world_path=world_file, roster=roster, record=recorded, **QUIET)
    assert r["status"] == "stopped" and r["stop"]["at"] == "baseline gate" and r["gate"]["passed"] is False
    why = r["stop"]["why"]
    assert "wound planted for c2 (Tomas)" in why and tomas["plants"]["wound"]["text"] in why
    assert "arm full" in why and "6/6" in why and "2/6 of the seeds" in why
    assert {(x["arm"], x["character"], x["plant"]) for x in r["gate"]["over_bar"]} == {
        (arm, "c2", "wound") for arm in ("full", "full+table", "layered", "layered-seeded")}
    assert {d["variant"] for d in r["decisions"]} == {"unplanted"}  # no planted world was shown
    decide = [q for q in recorded if q.purpose == "decide"]
    assert len(decide) == 4 * 6 * 6 and all("<motivation" in q.user for q in decide)
    assert sum(f"keep {tomas['plants']['wound']['specific']}" in q.user for q in decide) == 4 * 6


GOLDEN = REPO / "tests/golden/planting-scripted-seeds-1.json"


def golden_report(tmp_path, monkeypatch) -> str:
    """A scripted one-seed run's report, free of this machine's paths: the config's relative paths
    resolve from the repository, and the world's folder (a temporary one) is dropped."""
    monkeypatch.chdir(REPO)
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    s = settings_mod.with_overrides(base, {"work_dir": str(tmp_path / "work"), "planting.world.seeds": 1})
    one = tmp_path / "world.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    out = suite.run_suite("scripted", s, world_path=one, **QUIET)
    out["world"]["path"] = one.name
    return pretty_json(out)


def test_the_scripted_planting_report_is_byte_identical_to_the_stored_one(tmp_path, monkeypatch):
    assert golden_report(tmp_path, monkeypatch) == GOLDEN.read_text()


def test_the_gate_bar_is_a_share_of_the_seeds():
    assert [suite.gate_bar("2/6", n) for n in (3, 6, 12, 1)] == [1, 2, 4, 0]
    assert suite.gate_bar("0/6", 6) == 0


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
    data = json.loads((REPO / "calibration/planting/judge-v2.json").read_text())
    data["items"] = [i for i in data["items"] if i["kind"] != "hard negative"] * 2
    forged.write_text(json.dumps(data))
    with pytest.raises(InputError, match="SHA-256"):
        suite.run_suite("scripted", settings(tmp_path, **{"planting.judge.calibration_set": str(forged)}),
                        world_path=world_file, **QUIET)


def test_harvest_lists_candidates_and_only_the_accepted_enter_the_next_registered_version(scripted_report, tmp_path):
    registry = tmp_path / "judge_sets.sha256"
    registry.write_text((REPO / "calibration/planting/judge_sets.sha256").read_text())
    v2 = tmp_path / "judge-v2.json"
    v2.write_bytes((REPO / "calibration/planting/judge-v2.json").read_bytes())
    cal = judge.load_set(v2, registry)
    found = judge.candidates(scripted_report)
    misjudged = world.load_roster()["scripted_judge"]["misjudges"][0]
    assert [(c["event"], c["intent"]) for c in found["candidates"]] == [(misjudged["event"], misjudged["intent"])]
    assert found["candidates"][0]["ruling"]["shaped"] is True and found["candidates"][0]["decision"] is None
    # nothing enters unreviewed: the reviewer, then every decision, named where missing
    with pytest.raises(InputError, match="reviewed_by"):
        judge.harvest(found, cal, tmp_path / "judge-v3.json", registry, where="c.json")
    found["reviewed_by"] = "a person reading the twin's filler"
    with pytest.raises(InputError, match=r"candidates\[0\]\.decision"):
        judge.harvest(found, cal, tmp_path / "judge-v3.json", registry, where="c.json")
    assert not (tmp_path / "judge-v3.json").exists()
    rejected = {**found, "candidates": [{**found["candidates"][0], "decision": "reject"}]}
    assert judge.accepted(rejected, "c.json") == []
    found["candidates"][0]["decision"] = "accept"
    new = judge.harvest(found, cal, tmp_path / "judge-v3.json", registry, where="c.json")
    harvested = new["items"][len(cal["items"]):]
    assert new["version"] == 3 and [(h["event"], h["intent"]) for h in harvested] == [(misjudged["event"], misjudged["intent"])]
    assert harvested[0] | {"source": None} == {"event": misjudged["event"], "intent": misjudged["intent"], "expected": False,
                                             "kind": "hard negative", "origin": "harvested", "model": "scripted",
                                             "source": None, "accepted_by": "a person reading the twin's filler"}
    v3 = judge.load_set(tmp_path / "judge-v3.json", registry)  # registered, so it loads
    assert v3["hard_negatives"] == {"harvested": 1, "hand-written": 10}
    assert report.on_misjudgements(v3["items"], "scripted") == {
        "harvested_from_characters_model": 1, "required_own_misjudgements": 5, "calibrated_on_own_misjudgements": False}
    assert report.on_misjudgements(v3["items"], MODEL)["harvested_from_characters_model"] == 0  # another model's
    # the scripted judge keeps its misjudgement: calibrated on v3 it no longer passes
    s = settings(tmp_path)
    llm = build_llm(s, routes_for("scripted", s), Meter(), responder=PlantingResponder(world.load_roster()))
    with pytest.raises(judge.CalibrationFailed, match=r"19/21 .* item 20 \(hard negative\) ruled True"):
        judge.calibrate(llm, v3, max_tokens=100, min_correct=math.ceil(0.95 * 21))
    with pytest.raises(InputError, match="never overwritten"):
        judge.harvest(found, cal, tmp_path / "judge-v3.json", registry)


def test_a_live_table_says_its_judge_is_not_calibrated_on_the_systems_own_misjudgements(scripted_report, tmp_path):
    live = copy.deepcopy(scripted_report) | {"model": MODEL}
    live["judge_model"] = {"characters": MODEL, "judge": "claude-sonnet-4-6", "relation": "same family"}
    assert live["calibration_set"]["calibrated_on_own_misjudgements"] is False  # v2: none harvested
    (tmp_path / "live.json").write_text(json.dumps(live))
    title = render.document([(str(tmp_path / "live.json"), live)]).markdown().splitlines()[0]
    assert title.endswith(f"(judge not calibrated on this system's misjudgements: {MODEL})")
    live["calibration_set"]["calibrated_on_own_misjudgements"] = True
    title = render.document([(str(tmp_path / "live.json"), live)]).markdown().splitlines()[0]
    assert "not calibrated" not in title


# --- factor credits ----------------------------------------------------------------------------

def _decision(arm, variant, character, seed, shaped=(), tokens=1000):
    """A judged decision: the plants in `shaped` scored."""
    return {"arm": arm, "variant": variant, "character": character, "seed": seed, "prompt_tokens": tokens,
            "tokens_measured": False, "parsed": True, "intents": [{"intent": "x", "cites": []}] * 3, "plant_ids": {},
            "fabricated": [], "judged": {p: [{"shaped": p in shaped, "specific": ""}] for p in world.PLANTS}}


def test_a_factor_is_credited_only_between_arms_that_differ_in_exactly_it_on_net_hits():
    a = arms.Arm("a", {"history": "verbatim", "promise_table": False})
    b = arms.Arm("b", {"history": "verbatim", "promise_table": True})
    c = arms.Arm("c", {"history": "layered", "promise_table": True})
    d = arms.Arm("d", {"history": "layered", "promise_table": False})
    single, multi = arms.credit_pairs([a, b, c, d])
    assert [(x.name, y.name, f) for x, y, f in single] == [
        ("a", "b", "promise_table"), ("a", "d", "history"), ("b", "c", "history"), ("c", "d", "promise_table")]
    assert [(x.name, y.name, f) for x, y, f in multi] == [("a", "c", ["history", "promise_table"]),
                                                          ("b", "d", ["history", "promise_table"])]
    # b scores the promise in 2 planted decisions and in both their twins (the character sheet's,
    # not memory's); a scores it once, without twin: raw hits say b +1, net hits say b -1
    decisions = []
    for ch in ("c1", "c2"):
        decisions += [_decision("a", v, ch, 1, ("promise",) if ch == "c1" else ()) for v in ("planted", "apologised")]
        decisions += [_decision("a", "unplanted", ch, 1)]
        decisions += [_decision("b", v, ch, 1, ("promise",)) for v in ("planted", "apologised", "unplanted")]
        decisions += [_decision("c", v, ch, 1, ("promise", "wound")) for v in ("planted", "apologised")]
        decisions += [_decision("c", "unplanted", ch, 1)]
    credits, refused = report.factor_credits([a, b, c], decisions)
    assert [(x["factor"], x["credit"]["promise"], x["credit"]["wound"], x["credit"]["net_hits"]) for x in credits] == [
        ("promise_table", -1, 0, -1), ("history", 2, 2, 4)]
    assert credits[1]["intervals"]["net_hits"]["point"] == 4 and credits[1]["units"] == 2
    assert refused[0]["differ_in"] == ["history", "promise_table"]
    with pytest.raises(InputError, match="history"):
        arms.arms_from({"arms": {"x": {"history": "compressed", "promise_table": False}}})


# --- the live path -----------------------------------------------------------------------------

@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-planting-test-key")


def test_a_live_run_goes_through_the_sdk_measures_tokens_and_replays_for_nothing(world_file, tmp_path, key, monkeypatch):
    s = settings(tmp_path, **{"planting.world.seeds": 1})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    earlier = s.work_dir / "planting" / MODEL  # an earlier run's store
    earlier.mkdir(parents=True)
    (earlier / RUN_MARKER).write_text("")
    (earlier / "store.sqlite").write_text("kept")

    def unread(*args, **kwargs):
        raise AssertionError("the roster was read before the run was confirmed")

    with monkeypatch.context() as m:
        m.setattr(suite, "load_roster", unread)
        with pytest.raises(NotConfirmed):
            suite.run_suite(MODEL, s, world_path=one, **QUIET)
    assert (earlier / "store.sqlite").read_text() == "kept"
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
    est = suite.estimate(s, planting_routes(MODEL, s), master_seed=MASTER_SEED)
    assert 0.5 <= est.usd / r["meter"]["spent_usd"] <= 2.0
    again = suite.run_suite(MODEL, s, world_path=one, yes=True, http_client=FakeMessagesAPI().client(), **QUIET)
    # the same run again sends nothing and reports the same run (its spend was the target's)
    assert again["meter"] == r["meter"] and again["numbers"] == r["numbers"]
    # by default the judge is not the characters' model: the other priced one (no other family is priced)
    assert r["routes"]["judge"] == "claude-sonnet-4-6" and r["routes"]["decide"] == MODEL
    assert r["judge_model"] == {"characters": MODEL, "judge": "claude-sonnet-4-6", "relation": "same family"}
    (tmp_path / "r.json").write_text(json.dumps(r))
    assert "characters' own model" not in render.document([(str(tmp_path / "r.json"), r)]).markdown().splitlines()[0]
    # re-judging the stored run with another judge (here the characters' own) pays for the judge's calls only
    other = FakeMessagesAPI(PlantingResponder(world.load_roster()))
    rejudged = suite.run_suite(MODEL, s, world_path=one, yes=True, pins={"judge": MODEL},
                               http_client=other.client(), **QUIET)
    paid = {row["purpose"] for row in rejudged["meter"]["by_purpose"] if not row["replayed"]}
    assert paid == {"judge"} and rejudged["routes"]["judge"] == MODEL and rejudged["leaks"] == []
    assert [d["intents"] for d in rejudged["decisions"]] == [d["intents"] for d in r["decisions"]]
    assert rejudged["judge_model"]["relation"] == "same model"
    (tmp_path / "j.json").write_text(json.dumps(rejudged))
    title = render.document([(str(tmp_path / "j.json"), rejudged)]).markdown().splitlines()[0]
    assert f"(judged by the characters' own model: {MODEL})" in title and "not calibrated" in title


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
    raw["planting"]["gate"]["max_unplanted"] = "0/6"  # the scripted judge's one misjudgement trips it
    stopped = tmp_path / "stopped.json"
    argv = ["run", "--model", "scripted", "--world", str(world_file), "--settings", json.dumps(raw), "--output", str(stopped)]
    assert main(argv) == 1
    kept = json.loads(stopped.read_text())
    assert kept["status"] == "stopped" and kept["stop"]["at"] == "baseline gate" and kept["gate"]["passed"] is False
    assert "baseline gate: the identity planted for c1 (Mara)" in capsys.readouterr().err  # the log holds the reason
    # what the workflow passes: the job succeeds, so Snakemake keeps the report for reading
    assert main([*argv, "--stopped-ok"]) == 0 and json.loads(stopped.read_text())["status"] == "stopped"
    # and the tables refuse it by name, with the reason
    assert main(["tables", str(report), str(stopped), *(a for k, v in out.items() for a in (f"--{k}", str(v)))]) == 2
    err = capsys.readouterr().err
    assert f"{stopped}: status" in err and "stopped at the baseline gate" in err


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


class ReadsTheWorldName(VerbatimWithTable):
    """Shows the due promises only where the world's name says the plant is there: the answer key,
    if it leaked."""

    seen: ClassVar[set] = set()

    def sections(self, view):
        type(self).seen.add(view.world)
        planted = view.world.endswith(("/planted", "/apologised"))
        return super().sections(view) if planted else super().sections(view)[:1]


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


def test_a_strategy_learns_nothing_of_the_variant_from_the_world_it_is_handed(world_file, tmp_path):
    ReadsTheWorldName.seen = set()
    plugged = {"full": {"history": "verbatim", "promise_table": False},
               "peek": {"strategy": f"{__name__}:ReadsTheWorldName"}}
    r = suite.run_suite("scripted", settings(tmp_path, **{"planting.arms": plugged}), world_path=world_file, **QUIET)
    seen = ReadsTheWorldName.seen
    assert len(seen) == 6 * len(world.VARIANTS)  # a world per seed and variant, told apart
    assert not [w for w in seen if any(v in w for v in (*world.VARIANTS, "seed"))], seen
    # acting on the name earns nothing: it scores as the arm it is without the table
    numbers = {n["arm"]: n for n in r["numbers"]}
    assert numbers["peek"]["hits"] == numbers["full"]["hits"]


def test_a_strategy_plug_in_that_declares_no_features_or_does_not_import_is_refused():
    with pytest.raises(InputError, match="declaring features"):
        arms.arms_from({"arms": {"x": {"strategy": f"{__name__}:NoFeatures"}}})
    with pytest.raises(InputError, match="a module Python can import"):
        arms.arms_from({"arms": {"x": {"strategy": "no_such_module:S"}}})
    with pytest.raises(InputError, match="lacks sections"):
        arms.arms_from({"arms": {"x": {"strategy": "urd.planting.arms:ContextStrategy"}}})


def test_two_built_in_arms_with_the_same_features_are_refused_and_a_plug_in_twin_is_listed():
    same = {"history": "verbatim", "promise_table": True}
    with pytest.raises(InputError, match=r"y: expected features no other built-in arm declares \(x declares"):
        arms.arms_from({"arms": {"x": same, "y": dict(same)}})
    two = arms.arms_from({"arms": {"x": same, "mine": {"strategy": f"{__name__}:VerbatimWithTable"}}})
    assert arms.credit_pairs(two) == ([], [(two[0], two[1], [])])
    decisions = [_decision(arm, v, "c1", 1) for arm in ("x", "mine") for v in ("planted", "unplanted")]
    _, refused = report.factor_credits(two, decisions)
    assert refused == [{"from": "x", "to": "mine", "differ_in": [],
                        "why": "the arms declare the same features: there is no factor to credit"}]


class Varying(PlantingResponder):
    """A live model's replies as far as the estimate cares: every decision's intents its own
    (numbered), so no two judge requests repeat; the scripted tables otherwise."""

    def __init__(self, roster):
        super().__init__(roster)
        self.n = 0

    def _decide(self, data):
        reply = json.loads(super()._decide(data))
        for it in reply["intents"]:
            self.n += 1
            it["intent"] = f"{it['intent']} (take {self.n})"
        return json.dumps(reply)


def test_the_live_estimate_prices_the_distinct_requests_a_live_run_makes(tmp_path, key):
    """Against a fake API whose replies vary, the run's requests are the estimate's, one for one,
    and its bill is within 25 % of the estimate, stated at the fake's four bytes a token and its
    replies' lengths (the stated assumptions aside, what is left is the call graph)."""
    s = settings(tmp_path, **{"planting.world.seeds": 1, "estimate.bytes_per_token": 4.0})
    one = tmp_path / "one.jsonl"
    world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    api = FakeMessagesAPI(Varying(world.load_roster()))
    r = suite.run_suite(MODEL, s, world_path=one, yes=True, http_client=api.client(), **QUIET)
    assert r["status"] == "complete", r["stop"]
    billed = {row["purpose"]: row for row in r["meter"]["by_purpose"] if not row["replayed"]}
    s = settings_mod.with_overrides(s, {f"estimate.output_tokens.{p}": round(row["output_tokens"] / row["calls"])
                                        for p, row in billed.items()})
    est = suite.estimate(s, planting_routes(MODEL, s), master_seed=MASTER_SEED)
    judge_requests = [q for q in api.requests if prompts.JUDGE_INSTRUCTIONS[:60] in q.content.decode()]
    assert len(judge_requests) == 20 + sum(len(d["judged"]) for d in r["decisions"])  # calibration, then one a plant
    assert est.calls == len(api.requests)
    assert 0.75 <= est.usd / r["meter"]["spent_usd"] <= 1.25, (est.usd, r["meter"]["spent_usd"])
    # the layered arm asks for the same summary in worlds whose stretch is the same: the replay
    # cache answers the repeats, and the estimate prices them once, as the run sends them
    assert len(suite.call_graph(s, MASTER_SEED)) > est.calls
    # with the cache off every request goes out, and the estimate prices every one
    off = settings_mod.with_overrides(s, {"llm.replay_cache": False, "work_dir": str(tmp_path / "off")})
    api = FakeMessagesAPI(Varying(world.load_roster()))
    assert suite.run_suite(MODEL, off, world_path=one, yes=True, http_client=api.client(), **QUIET)["status"] == "complete"
    est = suite.estimate(off, planting_routes(MODEL, off), master_seed=MASTER_SEED)
    assert est.calls == len(api.requests) == len(suite.call_graph(off, MASTER_SEED))


def test_a_live_targets_estimate_prices_a_whole_run_when_the_scripted_arm_trips(tmp_path):
    tripping = settings(tmp_path, **{"planting.gate.max_unplanted": "0/6"})
    est = suite.estimate(tripping, routes_for(MODEL, tripping), master_seed=MASTER_SEED)
    passing = settings(tmp_path)
    assert est.usd == suite.estimate(passing, routes_for(MODEL, passing), master_seed=MASTER_SEED).usd > 5
    assert "the scripted arm tripped (baseline gate), priced as a run that passes it" in est.line()


# --- intervals ---------------------------------------------------------------------------------

UNITS = [(f"c{c}", s) for c in range(1, 7) for s in range(1, 7)]
VALUES = [(c - 2) * (s % 2 + 1) for c in range(1, 7) for s in range(1, 7)]  # characters differ far more than seeds


def test_the_cluster_bootstrap_draws_characters_then_seeds_from_the_stated_seed():
    plan = report.cluster_plan((6,) * 6)
    assert plan.shape == (10_000, 36)
    assert plan[:2, :12].tolist() == [[20, 20, 20, 22, 20, 18, 29, 25, 27, 25, 26, 27],
                                      [1, 4, 4, 3, 3, 4, 28, 26, 28, 27, 26, 28]]
    # each drawn block of six holds one character's seeds only
    assert all(len({i // 6 for i in row[k:k + 6]}) == 1 for row in plan[:50].tolist() for k in range(0, 36, 6))
    ragged = report.cluster_plan((2, 3))  # a run stopped part way: the padding position is 5
    assert ragged[:3].tolist() == [[1, 1, 5, 0, 0, 5], [0, 0, 5, 1, 1, 5], [3, 4, 2, 0, 0, 5]]


def test_intervals_are_the_stated_percentiles_of_the_cluster_draws():
    """Golden values: a unit-level bootstrap, another level, another seed or the clock move them."""
    assert report.interval(UNITS, VALUES) == {"point": 81.0, "low": 6.0, "high": 154.0, "units": 36, "characters": 6}
    assert report.interval(list(reversed(UNITS)), list(reversed(VALUES)))["low"] == 6.0  # aligned by unit, not order
    rs = report.Resampled(UNITS)
    tokens = [1000 + (c * 100 if s < 6 else 9000) for c in range(1, 7) for s in range(1, 7)]
    point, draws = rs.per_1k(VALUES, tokens)
    assert point == 57.86 == round(81 / (1400 / 1000), 2)  # the median prompt, not the mean (3000)
    assert rs.interval(point, draws) == {"point": 57.86, "low": 5.0, "high": 100.625, "units": 36, "characters": 6}


def test_an_arms_token_figures_are_medians():
    decisions = [_decision("a", v, f"c{i}", 1, tokens=t) for i, t in enumerate((1000, 1000, 7000)) for v in
                 ("planted", "apologised", "unplanted")]
    n = report.arm_numbers(decisions, "a", 3.0)
    assert n["prompt_tokens_median"] == 1000 == n["total_tokens_median"]


# --- calibration standard ------------------------------------------------------------------------

def _set(tmp_path, mutate):
    data = json.loads((REPO / "calibration/planting/judge-v2.json").read_text())
    mutate(data)
    path = tmp_path / "judge-v9.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["items"].pop(), "items: expected at least 20"),
    (lambda d: d.update(items=[i for i in d["items"] if i["kind"] != "hard negative"] * 2), "hard negatives: expected at least 5"),
    (lambda d: d.update(items=[i for i in d["items"] if i["kind"] == "hard negative"] * 2), "positives: expected at least 5"),
    (lambda d: d["items"][12].pop("origin"), r"items\[12\].origin"),
    (lambda d: d["items"][12].update(origin="harvested", source=None), r"items\[12\].source"),
    (lambda d: d.pop("companions"), "companions"),
])
def test_a_calibration_set_below_the_studys_standard_is_refused_at_registration_and_load(tmp_path, mutate, field):
    path, registry = _set(tmp_path, mutate), tmp_path / "judge_sets.sha256"
    with pytest.raises(InputError, match=field):
        judge.register(path, registry)
    assert not registry.exists()
    registry.write_text(f"{sha256_file(path)}  {path.name}\n")  # registered by hand: still refused
    with pytest.raises(InputError, match=field):
        judge.load_set(path, registry)


def test_the_judge_is_calibrated_in_the_runs_shape_of_three_intents(tmp_path):
    path, registry = _set(tmp_path, lambda d: None), tmp_path / "judge_sets.sha256"
    judge.register(path, registry)
    cal = judge.load_set(path, registry)
    s = settings(tmp_path)
    recorded = []
    llm = build_llm(s, routes_for("scripted", s), Meter(), responder=PlantingResponder(world.load_roster()),
                    record=recorded)
    result = judge.calibrate(llm, cal, max_tokens=100, min_correct=19)
    assert result["correct"] == 19 and result["intents_per_call"] == 3
    assert len(recorded) == 20 and all(q.user.count("<intent_") == 3 for q in recorded)
    # the item's intent turns through the three positions
    where = [next(k for k in (1, 2, 3) if item["intent"] in q.user.split(f"<intent_{k}")[1].split("</intent_")[0])
             for item, q in zip(cal["items"], recorded)]
    assert where[:6] == [1, 2, 3, 1, 2, 3]


# --- stated choices and refusals ----------------------------------------------------------------

def test_a_world_that_does_not_fit_is_refused_before_the_previous_store_is_cleared(world_file, tmp_path):
    s = settings(tmp_path, **{"planting.world.seeds": 5})
    run_dir = tmp_path / "work/planting/scripted"
    run_dir.mkdir(parents=True)
    (run_dir / "store.sqlite").write_bytes(b"the previous run's store")
    with pytest.raises(InputError, match="worlds"):
        suite.run_suite("scripted", s, world_path=world_file, **QUIET)
    assert (run_dir / "store.sqlite").read_bytes() == b"the previous run's store"


def test_the_layered_arms_kept_categories_are_stated_and_a_dropped_plant_is_lost(world_file, tmp_path):
    s = settings(tmp_path, **{"planting.layered.keep_categories": ["promise", "recognition"],
                              "planting.arms": {"layered": {"history": "layered", "promise_table": True}}})
    r = suite.run_suite("scripted", s, world_path=world_file, **QUIET)
    lay = r["layered_layout"]
    assert lay["plants_dropped_from_distant_past"] == ["wound"] and lay["distant_terms"] == [1, 2]
    n = r["numbers"][0]
    assert n["hits"]["wound"] == 0 and n["hits"]["promise"] == 36  # the wound (term 1, conflict) is never shown


def test_the_scripted_tables_say_they_test_the_harness(scripted_report, tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(scripted_report))
    md = render.document([(str(path), scripted_report)]).markdown()
    assert md.splitlines()[0].endswith("(the scripted arm: a test of the harness, not findings about a model)")
    assert "## scripted (tests the harness, not a model): complete" in md
    assert "hard negatives 0 harvested, 10 hand-written" in md and "at most 2/6 unplanted hits" in md
    row = next(r for r in render.rows(scripted_report) if r[1] == "full")
    assert row[render.HEADER.index("fabricated citations (not shown / no such event)")].endswith("(0 / 36)")


def test_the_v1_calibration_set_is_refused_in_one_line_naming_the_version_and_the_way_on():
    from urd.planting import judge

    with pytest.raises(InputError) as err:
        judge.load_set(REPO / "calibration/planting/judge-v1.json", REPO / "calibration/planting/judge_sets.sha256")
    said = str(err.value)
    assert "\n" not in said and "version: expected 2 or later" in said and "got 1" in said
    assert "judge-v2.json" in said and "python -m urd.planting harvest" in said


def test_the_judge_defaults_to_another_model_another_family_where_one_is_priced(tmp_path):
    from urd.planting import routes

    assert routes.other_model("claude-sonnet-5-5", ["claude-sonnet-5-5", "claude-sonnet-4-6", "claude-haiku-4-5"],
                              "c") == "claude-haiku-4-5"
    assert routes.other_model("claude-sonnet-5-5", ["claude-sonnet-5-5", "claude-sonnet-4-6"], "c") == "claude-sonnet-4-6"
    with pytest.raises(InputError, match="judge.model"):
        routes.other_model("claude-sonnet-5-5", ["claude-sonnet-5-5"], "c")
    s = settings(tmp_path)
    assert routes.routes(MODEL, s).by_purpose["judge"] == "claude-sonnet-4-6"
    assert routes.routes(MODEL, settings(tmp_path, **{"planting.judge.model": "same"})).by_purpose["judge"] == MODEL
    assert routes.routes(MODEL, s, {"judge": MODEL}).by_purpose["judge"] == MODEL  # a pin decides
    assert routes.routes("scripted", s).by_purpose["judge"] == "scripted"
    assert [routes.relation(MODEL, j) for j in (MODEL, "claude-sonnet-4-6", "claude-haiku-4-5")] == [
        "same model", "same family", "another family"]


def _three(arm, variant, character, seed, slots):
    """A decision of three intents; `slots[i]`: the plants the judge ruled intent i shaped by."""
    return {"arm": arm, "variant": variant, "character": character, "seed": seed, "prompt_tokens": 1000,
            "tokens_measured": False, "parsed": True, "intents": [{"intent": f"i{i}", "cites": []} for i in range(3)],
            "plant_ids": {}, "fabricated": [],
            "judged": {p: [{"shaped": p in s, "specific": ""} for s in slots] for p in world.PLANTS}}


def test_identity_crowded_out_of_its_slots_in_one_arm_is_flagged_not_readable_alone():
    taken = [("promise",), ("wound",), ("promise",)]  # all three slots another plant's
    free = [("promise",), ("identity",), ()]
    decisions = []
    for ch in ("c1", "c2", "c3", "c4", "c5", "c6"):
        for seed in (1, 2):
            for variant in ("planted", "apologised", "unplanted"):
                twin = variant == "unplanted"
                decisions.append(_three("a", variant, ch, seed, [()] * 3 if twin else taken))
                decisions.append(_three("b", variant, ch, seed, [()] * 3 if twin else free))
    a, b = report.arm_numbers(decisions, "a", 3.0), report.arm_numbers(decisions, "b", 3.0)
    assert a["crowded_out"] == {"wound": 0, "promise": 0, "identity": 12} and a["hits"]["identity"] == 0
    assert b["crowded_out"]["identity"] == 0 and b["hits"]["identity"] == 12
    flag = report.slot_crowding([a, b])
    assert flag["identity_readable_alone"] is False and "a 12 (12 to 12) against b 0 (0 to 0)" in flag["why"]
    assert report.slot_crowding([b, b | {"arm": "c"}]) == {"identity_readable_alone": True, "why": None}
    # one slot left free: not crowded out, whatever the other two hold
    assert report.crowded(_three("a", "planted", "c1", 1, [("promise",), ("wound",), ()]), "identity") == 0


def test_an_independent_recount_of_the_decisions_matches_every_figure_of_the_report(scripted_report, tmp_path, capsys):
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    import planting_recount

    path = tmp_path / "report.json"
    path.write_text(json.dumps(scripted_report))
    assert planting_recount.main([str(path)]) == 0
    said = capsys.readouterr().out
    assert "every figure recounted equal" in said and said.count("\n") == 4 * 9 + 1  # 4 arms, 9 columns
    tampered = copy.deepcopy(scripted_report)
    tampered["numbers"][2]["hits"]["identity"] += 1
    path.write_text(json.dumps(tampered))
    assert planting_recount.main([str(path)]) == 1
    assert "layered      hits identity" in capsys.readouterr().out

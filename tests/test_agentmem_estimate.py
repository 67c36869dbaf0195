"""The estimate: pure, in whole cents for the planned-spend line, from a measured profile
when one exists, else from the scripted arm's call graph at list prices; the bound stays."""


import pytest
from conftest import REPO

from urd.agentmem import trip_vs_move, update_gate
from urd.agentmem.runtime import open_run, routes_for
from urd.core.errors import InputError
from urd.cost import agentmem as estimate
from urd.stores import settings as settings_mod
from urd.workflow.agentmem import trip_vs_move_cents, update_gate_cents

BASE = settings_mod.load(REPO / "config/agentmem.yaml")
RUNS = {"move": 3, "trip-alone": 2}


def tvm(settings=BASE, model="claude-sonnet-5-5", case="reader", gate="production", runs=RUNS, profile=None, pins=None):
    return trip_vs_move.estimate(settings, routes_for(model, settings, pins), case, gate=gate, runs=runs, profile=profile)


def test_the_scripted_arm_costs_nothing():
    assert tvm(model="scripted").cents == 0 and tvm(model="scripted").source == "free"
    assert update_gate_cents(BASE.raw, "scripted") == 0


def test_the_estimate_is_the_scripted_call_graph_priced_and_rounded_up():
    a, b = tvm(), tvm()
    assert a == b and a.source == "call graph" and a.cents == trip_vs_move_cents(BASE.raw, "reader", "claude-sonnet-5-5")
    assert a.cents >= a.usd * 100 > a.cents - 1
    per = a.per_variant_usd
    assert a.usd == pytest.approx(3 * per["move"] + 2 * per["trip-alone"])
    assert tvm(runs={"move": 6, "trip-alone": 4}).usd == pytest.approx(2 * a.usd)
    assert tvm(case="mid-trip").usd > a.usd
    assert "US$" in a.line() and "call graph" in a.line()


def test_the_estimate_agrees_with_the_scripted_arms_recorded_calls_within_2x(tmp_path):
    """Price, by hand, every call the scripted arm records when it really runs the reader case."""
    from urd.agentmem import trip_vs_move
    from urd.llm.request import FRAMING_TOKENS

    recorded = []
    scratch = settings_mod.with_overrides(BASE, {"work_dir": str(tmp_path / "work"), "llm.replay_cache": False})
    trip_vs_move.run_store(
        open_run(scratch, routes_for("scripted", BASE), ceiling_usd=None, record=recorded), tmp_path / "run",
        case_name="reader", variant="move", index=1, gate="production", checks_version=2,
    )
    assert len(recorded) >= 5 and {r.purpose for r in recorded} >= {"extract", "update", "reanchor"}
    price = BASE.prices.price("claude-sonnet-5-5")
    out = BASE.raw["estimate"]["output_tokens"]
    by_hand = sum(((len(r.system.encode()) + len(r.user.encode())) / 3.0 + FRAMING_TOKENS) * price.input / 1e6
                  + min(out[r.purpose], r.max_tokens) * price.output / 1e6 for r in recorded)
    move = tvm().per_variant_usd["move"]
    assert by_hand / 2 <= move <= by_hand * 2


def test_the_estimate_is_within_2x_of_what_the_write_up_measured():
    # the write-up (000): reader US$0.21 and US$0.22 for the protocol; mid-trip about US$0.75 and
    # US$1.10; the update-gate's four sets US$1.75 and US$1.86 (list prices, 2026-10-12/13)
    for model, reader, mid, gate in (("claude-sonnet-5-5", 0.21, 0.75, 1.75), ("claude-sonnet-4-6", 0.22, 1.10, 1.86)):
        for got, measured in ((tvm(model=model).usd, reader), (tvm(model=model, case="mid-trip").usd, mid),
                              (update_gate.estimate(BASE, routes_for(model, BASE), samples=3).usd, gate)):
            assert measured / 2 <= got <= measured * 2, (model, got, measured)


def test_the_estimate_follows_prices_output_lengths_and_caching():
    dearer = tvm(model="claude-sonnet-4-6")
    assert dearer.usd > tvm().usd
    longer = settings_mod.with_overrides(BASE, {"estimate.output_tokens.extract": 3600})
    assert tvm(longer).usd > tvm().usd
    pinned = tvm(pins={"extract": "claude-sonnet-4-6"})
    assert tvm().usd < pinned.usd < dearer.usd
    # instructions reach the cacheable length only when the threshold is low: then reads are cheap
    cached = settings_mod.with_overrides(BASE, {"estimate.min_cacheable_tokens": 100})
    assert tvm(cached).usd != tvm().usd


def test_the_bound_stays_available_and_reads_far_above_the_estimate():
    routes = routes_for("claude-sonnet-5-5", BASE)
    bound = estimate.trip_vs_move_bound(BASE, routes, "reader", gate="production", runs=RUNS)
    assert bound.source == "bound" and bound.usd > 10 * tvm().usd
    assert estimate.trip_vs_move_bound(BASE, routes, "reader", gate="changes-only", runs=RUNS).usd < bound.usd


def test_a_model_without_a_price_names_the_missing_field():
    with pytest.raises(InputError, match=r"agentmem\.prices: usd_per_mtok\.claude-unpriced"):
        tvm(model="claude-unpriced")


def test_a_measured_profile_replaces_the_bound():
    usage = {"by_purpose": {"extract": {"input_tokens": 1_000_000, "output_tokens": 100_000}}, "source": "a live report"}
    profile = {"trip-vs-move": {"reader": {"claude-sonnet-5-5": {"move": usage, "trip-alone": usage}}}}
    est = tvm(profile=profile)
    assert est.source == "profile" and est.usd == pytest.approx(5 * (2.0 + 1.0))
    assert tvm(profile=profile, pins={"update": "claude-sonnet-4-6"}).source == "call graph"  # a mixture was not measured


def test_update_gate_estimate_counts_the_calls_the_gate_really_makes():
    routes = routes_for("claude-sonnet-5-5", BASE)
    three = update_gate.estimate(BASE, routes, samples=3)
    # every sample asks the contradiction and the update probe; the confirmation only after a change
    assert three.source == "call graph" and 89 * 3 * 2 < three.calls < 89 * 3 * 3
    assert update_gate.estimate(BASE, routes, samples=6).usd == pytest.approx(2 * three.usd, rel=0.01)
    bound = estimate.update_gate_bound(BASE, routes, samples=3)
    assert bound.calls == 89 * 3 * 3 and bound.usd > 5 * three.usd


def test_the_update_gate_estimate_halves_when_its_calls_go_in_message_batches():
    routes = routes_for("claude-sonnet-5-5", BASE)
    plain = update_gate.estimate(BASE, routes, samples=3)
    batched = update_gate.estimate(settings_mod.with_overrides(BASE, {"llm.batches": True}), routes, samples=3)
    assert batched.usd == pytest.approx(plain.usd / 2) and "Message Batches" in batched.line()

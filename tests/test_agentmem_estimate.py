"""The estimate: pure, in whole cents for the planned-spend line, from a measured profile
when one exists, else from the stated bound."""


import pytest
from conftest import REPO

from urd.agentmem import settings as settings_mod
from urd.agentmem.runtime import routes_for
from urd.agentmem.smk import trip_vs_move_cents, update_gate_cents
from urd.core.errors import InputError
from urd.cost import agentmem as estimate

BASE = settings_mod.load(REPO / "config/agentmem.yaml")
RUNS = {"move": 3, "trip-alone": 2}


def tvm(settings=BASE, model="claude-sonnet-5-5", case="reader", gate="production", runs=RUNS, profile=None, pins=None):
    return estimate.trip_vs_move(settings, routes_for(model, settings, pins), case, gate=gate, runs=runs, profile=profile)


def test_the_scripted_arm_costs_nothing():
    assert tvm(model="scripted").cents == 0 and tvm(model="scripted").source == "free"
    assert update_gate_cents(BASE.raw, "scripted") == 0


def test_the_bound_is_pure_rounded_up_and_scales_with_the_protocol():
    a, b = tvm(), tvm()
    assert a == b and a.source == "bound" and a.cents == trip_vs_move_cents(BASE.raw, "reader", "claude-sonnet-5-5")
    assert a.cents >= a.usd * 100 > a.cents - 1
    per = a.per_variant_usd
    assert a.usd == pytest.approx(3 * per["move"] + 2 * per["trip-alone"])
    assert tvm(runs={"move": 6, "trip-alone": 4}).usd == pytest.approx(2 * a.usd)
    assert tvm(case="mid-trip").usd > a.usd  # three notes bound more pairs than two
    assert tvm(gate="changes-only").usd < a.usd  # two probes a pair instead of three
    assert "US$" in a.line() and "bound" in a.line()


def test_the_bound_follows_prices_and_output_budgets():
    dearer = tvm(model="claude-sonnet-4-6")
    assert dearer.usd > tvm().usd
    bigger = settings_mod.with_overrides(BASE, {"llm.max_tokens.update": 4096})
    assert tvm(bigger).usd > tvm().usd
    pinned = tvm(pins={"extract": "claude-sonnet-4-6"})
    assert tvm().usd < pinned.usd < dearer.usd


def test_a_model_without_a_price_names_the_missing_field():
    with pytest.raises(InputError, match=r"agentmem\.prices: usd_per_mtok\.claude-unpriced"):
        tvm(model="claude-unpriced")


def test_a_measured_profile_replaces_the_bound():
    usage = {"by_purpose": {"extract": {"input_tokens": 1_000_000, "output_tokens": 100_000}}, "source": "a live report"}
    profile = {"trip-vs-move": {"reader": {"claude-sonnet-5-5": {"move": usage, "trip-alone": usage}}}}
    est = tvm(profile=profile)
    assert est.source == "profile" and est.usd == pytest.approx(5 * (2.0 + 1.0))
    assert tvm(profile=profile, pins={"update": "claude-sonnet-4-6"}).source == "bound"  # a mixture was not measured


def test_update_gate_bound_covers_every_row_three_calls_a_sample():
    s = settings_mod.load(REPO / "config/agentmem.yaml")
    routes = routes_for("claude-sonnet-5-5", s)
    three = estimate.update_gate(s, routes, samples=3)
    assert three.calls == 89 * 3 * 3 and three.source == "bound"
    assert estimate.update_gate(s, routes, samples=6).usd == pytest.approx(2 * three.usd)

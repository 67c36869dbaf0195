"""What the Snakemake rules need at parse time for the LLM suites (agent memory, planting): the
settings as one argument, each target's spend estimate in whole US cents, the stores a target
may name (resolved and checked here, so a bad plug-in fails the DAG), and output paths."""

from __future__ import annotations

from collections.abc import Mapping

from ..agentmem import trip_vs_move, update_gate
from ..agentmem.runtime import routes_for, still_to_spend
from ..core.config import merged_source
from ..core.io import canonical_json
from ..cost import agentmem as estimate_mod
from ..stores import registry
from ..stores.settings import for_job, validate

CASES = ("reader", "mid-trip")

#: A model name as a target path segment: no slash, no spaces.
MODEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
STORE_PATTERN = registry.NAME_PATTERN
SOURCE = merged_source("config/agentmem.yaml")


def settings_json(agentmem: Mapping) -> str:
    return canonical_json(agentmem)


def _settings(agentmem: Mapping):
    return validate(agentmem, "config['agentmem']")


def check_store(agentmem: Mapping, store: str) -> str:
    """``store``, once it resolves to a class with the interface (else one line naming the key)."""
    registry.resolve(store, agentmem["stores"]["plugins"], SOURCE)
    return store


def store_code(agentmem: Mapping, store: str) -> list[str]:
    """The modules whose code a store's report depends on: the suites' entry and the store's own."""
    return ["urd.agentmem.__main__", registry.store_module(store, agentmem["stores"]["plugins"])]


def check_update_store(agentmem: Mapping, store: str) -> str:
    """``store``, once it resolves and has an update decision for the update-gate suite."""
    if not has_update_decision(agentmem, store):
        from ..core.errors import InputError

        raise InputError(SOURCE, f"agentmem.stores ({store})",
                         f"a store with {registry.UPDATE_DECISION}(older, newer, sample) for update-gate", "none")
    return store


def table_stores(agentmem: Mapping) -> list[str]:
    """The stores the cross-store table shows, each checked."""
    return [check_store(agentmem, s) for s in agentmem["stores"]["table"]]


def has_update_decision(agentmem: Mapping, store: str) -> bool:
    return registry.has_update_decision(registry.resolve(store, agentmem["stores"]["plugins"], SOURCE))


# A target's estimate is what a run of it would still spend: the call graph's price, less what its
# ledgers were billed for the same run (replayed for nothing on a rerun), within its ceilings.

def trip_vs_move_estimate(agentmem: Mapping, case: str, model: str, store: str = registry.REFERENCE) -> estimate_mod.Estimate:
    s = for_job(_settings(agentmem), "trip-vs-move", case=case, store=store, model=model)
    routes, gate = routes_for(model, s), s.raw["trip_vs_move"]["gate"]
    est = trip_vs_move.estimate(s, routes, case, gate=gate, runs=s.runs, store=store, profile=estimate_mod.load_profile(s))
    return still_to_spend(s, routes, trip_vs_move.ledger_targets(case, model, gate, store, s.runs), est,
                          s.raw["spend"]["max_usd_per_run"])


def update_gate_estimate(agentmem: Mapping, model: str, store: str = registry.REFERENCE) -> estimate_mod.Estimate:
    s = for_job(_settings(agentmem), "update-gate", store=store, model=model)
    routes = routes_for(model, s)
    est = update_gate.estimate(s, routes, samples=s.raw["update_gate"]["samples"], store=store,
                               profile=estimate_mod.load_profile(s))
    return still_to_spend(s, routes, [update_gate.ledger_target(model, store)], est, s.raw["spend"]["max_usd_update_gate"])


def trip_vs_move_cents(agentmem: Mapping, case: str, model: str, store: str = registry.REFERENCE) -> int:
    return trip_vs_move_estimate(agentmem, case, model, store).cents


def update_gate_cents(agentmem: Mapping, model: str, store: str = registry.REFERENCE) -> int:
    return update_gate_estimate(agentmem, model, store).cents


def planting_estimate(agentmem: Mapping, model: str, master_seed: int) -> estimate_mod.Estimate:
    from ..planting import suite
    from ..planting.routes import routes as planting_routes

    s = for_job(_settings(agentmem), "planting", model=model)
    routes = planting_routes(model, s)
    return still_to_spend(s, routes, [suite.ledger_target(model)], suite.estimate(s, routes, master_seed=master_seed),
                          float(s.raw["spend"]["max_usd_planting"]))


def planting_cents(agentmem: Mapping, model: str, master_seed: int) -> int:
    return planting_estimate(agentmem, model, master_seed).cents


def planting_arms(agentmem: Mapping) -> list[str]:
    """The planting arms' names, each built-in checked and each plug-in strategy resolved."""
    from ..planting import arms

    return [a.name for a in arms.arms_from(agentmem["planting"], f"{SOURCE}: agentmem.planting.arms")]

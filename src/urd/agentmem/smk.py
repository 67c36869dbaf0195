"""What the Snakemake rules need at parse time for the LLM suites (agent memory, planting): the
settings as one argument, each target's spend estimate in whole US cents, and output paths."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.io import canonical_json
from ..cost import agentmem as estimate_mod
from .runtime import routes_for
from .settings import validate

#: The published planting tables and figure (rules/planting.smk, the `published` target).
PLANTING_TABLES = {fmt: f"results/planting/tables/planting.{fmt}" for fmt in ("md", "csv", "html", "png")}

#: A model name as a target path segment: no slash, no spaces.
MODEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def settings_json(agentmem: Mapping) -> str:
    return canonical_json(agentmem)


def trip_vs_move_estimate(agentmem: Mapping, case: str, model: str) -> estimate_mod.Estimate:
    s = validate(agentmem, "config['agentmem']")
    return estimate_mod.trip_vs_move(
        s, routes_for(model, s), case, gate=s.raw["trip_vs_move"]["gate"], runs=s.runs, profile=estimate_mod.load_profile(s)
    )


def update_gate_estimate(agentmem: Mapping, model: str) -> estimate_mod.Estimate:
    s = validate(agentmem, "config['agentmem']")
    return estimate_mod.update_gate(
        s, routes_for(model, s), samples=s.raw["update_gate"]["samples"], profile=estimate_mod.load_profile(s)
    )


def trip_vs_move_cents(agentmem: Mapping, case: str, model: str) -> int:
    return trip_vs_move_estimate(agentmem, case, model).cents


def update_gate_cents(agentmem: Mapping, model: str) -> int:
    return update_gate_estimate(agentmem, model).cents


def planting_estimate(agentmem: Mapping, model: str, master_seed: int) -> estimate_mod.Estimate:
    s = validate(agentmem, "config['agentmem']")
    return estimate_mod.planting(s, routes_for(model, s), master_seed=master_seed)


def planting_cents(agentmem: Mapping, model: str, master_seed: int) -> int:
    return planting_estimate(agentmem, model, master_seed).cents

"""Rung 2 — dose-response per scale: the replay_banc recipe at several doses.

A dose d is the trained tokens as a multiple of the contract cap (factor x the transcript's
tokens): the write-up's nightly recipe is about 19.2. Each dose is a tuning recipe named
dose<d> (urd.replay.recipe: steps from d at the base recipe's context length), one tuning job
per transcript through the same rule, SLURM profile and spend line as rung 1's. Each dose is
evaluated from its entire tuned state, as the ceiling control does (urd.controls.evaluate):
retention B/A per task, and for T2 the trigger rate, the non-trigger rate and their difference,
because a disposition installed without its condition raises both (the write-up's 0.4B reading).
"""

from __future__ import annotations

import re

from ..core.errors import InputError
from ..harness.fold import _r
from ..replay.recipe import dose_out_of_contract as out_of_contract

_NAME = re.compile(r"^dose(\d+(?:\.\d+)?)$")


def recipe_name(dose: float) -> str:
    """0.5 -> dose0.5, 19.2 -> dose19.2, 1 -> dose1."""
    if not dose > 0:
        raise InputError("config", "urd2.dose.doses", "positive multiples of the cap", dose)
    return f"dose{dose:g}"


def dose_of(recipe: str) -> float | None:
    m = _NAME.match(recipe)
    return float(m.group(1)) if m else None


def evaluate(backbone, episodes: dict[str, list[dict]], doses: list[float], root: str, state_file: str,
             controls: dict[str, list[dict] | None], factor: int, decode: dict) -> tuple[dict, list[dict], dict]:
    """Every dose on every task from its full tuned state: (figures, responses, artifacts served)."""
    from ..controls.artifacts import ArtifactProvider
    from ..controls.evaluate import Recipe, evaluate_budgets

    out: dict = {"doses": {}}
    records: list[dict] = []
    served: dict = {}
    for d in doses:
        name = recipe_name(d)
        recipe = Recipe(name, ArtifactProvider(root, name, state_file), out_of_contract(d))
        tasks = {}
        for task in sorted(episodes):
            (cell,), recs = evaluate_budgets(backbone, recipe, task, episodes[task], [None], controls.get(task),
                                             factor, decode[task])
            tasks[task] = point(task, d, cell)
            records += [{**r, "dose": d} for r in recs]
        out["doses"][name] = {"dose": d, "out_of_contract": recipe.out_of_contract, "tasks": tasks}
        served[name] = recipe.provider.served
    return out, records, served


def point(task: str, dose: float, cell: dict) -> dict:
    """One (dose, task) point: retention with the control, the measured dose, and for T2 the
    rates that make the discrimination."""
    eps = cell["episodes"]
    measured = [e["declared_tokens"] / e["token_cap"] for e in eps if e["token_cap"]]
    out = {"retention": cell.get("retention"), "retention_undefined": cell.get("retention_undefined"),
           "score_A": cell["score_A"], "score_B": cell["score_B"], "episodes": len(eps),
           "trained_tokens": cell["declared_tokens"], "dose_measured": {
               "min": _r(min(measured)) if measured else None, "max": _r(max(measured)) if measured else None}}
    if task == "t2":
        t, n = cell.get("rate_trigger_B"), cell.get("rate_non_trigger_B")
        out.update(rate_trigger=t, rate_non_trigger=n, difference=None if t is None or n is None else _r(t - n),
                   rate_trigger_A=cell.get("rate_trigger_A"), rate_non_trigger_A=cell.get("rate_non_trigger_A"))
    return out

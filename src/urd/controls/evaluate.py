"""Compute the ceiling and the bits curve through the benchmark's harness.

    ceiling(backbone, episodes, recipes, controls, factor, decode)
    bits_curve(backbone, task, episodes, recipe, provider, budgets, control, factor, decode)

`episodes` are the evaluated episodes (urd.harness.run.select); `control` the in-session control's
responses for the same episodes (reused from results/urd/{scale}/control/, or None to run it
here). Each returns (figures, responses): figures as fold_cell gives them, responses the raw
records (kept beside the JSON, re-judgeable offline).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..harness.fold import fold_cell
from ..harness.runner import run_control, run_system
from ..session.context import Decode
from .tuned import TunedStateProvider, TunedStateSystem


@dataclass(frozen=True)
class Recipe:
    name: str
    provider: TunedStateProvider
    out_of_contract: bool = False


def split_label(budget: int | None) -> str:
    return "full" if budget is None else f"{budget}B"


def _control(backbone, task, episodes, decode, control):
    return control if control is not None else run_control(backbone, task, episodes, decode, label=f"control/{task}")


def evaluate_budgets(backbone, recipe: Recipe, task: str, episodes: list[dict], budgets: list[int | None],
                     control: list[dict] | None, factor: int, decode: Decode) -> tuple[list[dict], list[dict]]:
    """One fold_cell per budget, in the order given; the records of every run."""
    control = _control(backbone, task, episodes, decode, control)
    system = TunedStateSystem(backbone, recipe.provider, recipe.name, recipe.out_of_contract)
    points, records = [], []
    for budget in budgets:
        split = split_label(budget)
        recs = run_system(backbone, system, task, episodes, split, budget, factor, decode,
                          label=f"{recipe.name}/{task}/{split}")
        points.append({"split": split, **fold_cell(task, control, recs)})
        records += recs
    return points, records


def ceiling(backbone, episodes: dict[str, list[dict]], recipes: list[Recipe], controls: dict[str, list[dict] | None],
            factor: int, decode: dict[str, Decode]) -> tuple[dict, list[dict]]:
    """Every recipe on every task, from its entire tuned state (no budget)."""
    out: dict = {"budget_bytes": None, "recipe_order": [r.name for r in recipes], "recipes": {}}
    records: list[dict] = []
    for recipe in recipes:
        tasks = {}
        for task in sorted(episodes):
            (cell,), recs = evaluate_budgets(backbone, recipe, task, episodes[task], [None], controls.get(task),
                                             factor, decode[task])
            tasks[task] = cell
            records += recs
        out["recipes"][recipe.name] = {"out_of_contract": recipe.out_of_contract, "tasks": tasks}
    return out, records


def bits_curve(backbone, task: str, episodes: list[dict], recipe: Recipe, budgets: list[int | None],
               control: list[dict] | None, factor: int, decode: Decode) -> tuple[dict, list[dict]]:
    """Retention of one recipe on one task at each fiche budget (None = the full state)."""
    points, records = evaluate_budgets(backbone, recipe, task, episodes, budgets, control, factor, decode)
    return {"task": task, "recipe": recipe.name, "out_of_contract": recipe.out_of_contract,
            "budgets": budgets, "points": points}, records

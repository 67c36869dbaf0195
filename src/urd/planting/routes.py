"""A planting run's routes: the judge on another model than the characters' unless pinned.

The study names its own open weakness: one model, one judge, and they are relatives. So by
default (`agentmem.planting.judge.model: other`) the judge runs on a priced model other than the
characters', of another family where the price list has one (claude-<family>-...); `same` keeps
them together; a pin (`agentmem.llm.pins` or `--pin judge=MODEL`) decides over both, so a cached
run can still be re-judged by any model. The scripted arm is one table: its judge stays scripted.
"""

from __future__ import annotations

from ..agentmem.runtime import routes_for
from ..core.errors import InputError
from ..llm import SCRIPTED_MODEL, Routes
from ..stores.settings import Settings


def family(model: str) -> str:
    parts = model.split("-")
    return parts[1] if len(parts) > 2 and parts[0] == "claude" else model


def other_model(model: str, priced: list[str], where: str) -> str:
    others = sorted(m for m in priced if m != model)
    if not others:
        raise InputError(where, "agentmem.planting.judge.model",
                         f"a priced model other than the characters' ({model}) for the judge, or `same`", "other")
    apart = [m for m in others if family(m) != family(model)]
    return (apart or others)[0]


def routes(model: str, settings: Settings, pins: dict[str, str] | None = None) -> Routes:
    pins = dict(pins or {})
    judge = settings.raw["planting"]["judge"].get("model", "other")
    if model != SCRIPTED_MODEL and judge == "other" and "judge" not in {**settings.pins, **pins}:
        pins["judge"] = other_model(model, list(settings.raw["prices"]["usd_per_mtok"]), settings.origin)
    return routes_for(model, settings, pins)


def relation(characters: str, judge: str) -> str:
    """How the judge's model stands to the characters': the report and the table title say it."""
    if judge == characters:
        return "same model"
    return "same family" if family(judge) == family(characters) else "another family"

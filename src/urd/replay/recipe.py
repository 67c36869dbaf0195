"""A state-tuning recipe resolved for one transcript: steps, context, and the contract's verdict.

Config (`replay.recipes.<name>`, with per-scale overrides in `replay.scales.<scale>.<name>`):
    ctx:   tokens per step; null = the transcript's own length
    steps: optimiser steps; null = the most the contract allows, floor(factor x T / ctx)
    out_of_contract: true for a diagnostic recipe (measured, labelled, never ranked)
    dose:  (rung 2's dose-response, urd.rung2.dose) trained tokens as a multiple d of the cap:
           steps = floor(d x cap / ctx) for d <= 1 (in contract), round(d x cap / ctx) above (out
           of contract); where d x cap is under one step, one step of floor(d x cap) tokens.
           Replaces steps and out_of_contract
An in-contract recipe whose steps x ctx exceeds factor x T is refused here, naming the key: the
contract is checked before any tuning starts, not discovered afterwards.

Windows: step i trains on ctx consecutive tokens of the transcript repeated end to end, starting
at token (i x ctx) mod T. With ctx = T every step sees the whole transcript from its start; with
ctx > T (replay_banc: 6144 on a ~2K transcript) a step sees about three copies, as a trainer
sampling ctx-long windows from a file of the repeated transcript would. No randomness.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..core.errors import InputError

OPTIMIZER_KEYS = ("lr_init", "lr_final", "grad_clip", "beta1", "beta2", "eps")


@dataclass(frozen=True)
class Recipe:
    name: str
    steps: int
    ctx: int
    out_of_contract: bool
    transcript_tokens: int
    factor: int
    lr_init: float
    lr_final: float
    grad_clip: float
    beta1: float
    beta2: float
    eps: float

    @property
    def trained_tokens(self) -> int:
        return self.steps * self.ctx

    @property
    def token_cap(self) -> int:
        return self.factor * self.transcript_tokens

    def lr(self, step: int) -> float:
        """Cosine decay from lr_init (first step) to lr_final (last step)."""
        if self.steps == 1:
            return self.lr_init
        frac = step / (self.steps - 1)
        return self.lr_final + (self.lr_init - self.lr_final) * 0.5 * (1 + math.cos(math.pi * frac))

    def window(self, tokens: list[int], step: int) -> list[int]:
        n = len(tokens)
        start = (step * self.ctx) % n
        reps = -(-(start + self.ctx) // n)  # ceil
        return (tokens * reps)[start: start + self.ctx]

    def as_record(self) -> dict:
        rec = asdict(self)
        rec.update(trained_tokens=self.trained_tokens, token_cap=self.token_cap)
        return rec


def recipe_settings(replay: dict, scale: str, name: str, where: str = "config") -> dict:
    """The recipe's config entry with the scale's overrides and the shared optimiser applied."""
    recipes = replay.get("recipes", {})
    if name not in recipes:
        raise InputError(where, f"replay.recipes.{name}", f"a recipe (one of: {', '.join(sorted(recipes))})")
    merged = {**replay.get("optimizer", {}), **recipes[name]}
    merged.update(replay.get("scales", {}).get(scale, {}).get(name, {}))
    return merged


def dose_out_of_contract(dose: float) -> bool:
    """A dose past the cap (d > 1) trains more than the contract allows: measured, labelled,
    never ranked (rung 2's dose summary reads this too, urd.rung2.dose)."""
    return dose > 1


def resolve(settings: dict, name: str, scale: str, transcript_tokens: int, factor: int,
            where: str = "config") -> Recipe:
    key = f"replay.recipes.{name} (scale {scale})"
    T = int(transcript_tokens)
    if T < 2:
        raise InputError(where, key, "a transcript of at least 2 tokens", T)
    ctx = settings.get("ctx") or T
    if ctx < 2:
        raise InputError(where, f"{key}.ctx", "at least 2 tokens (one target)", ctx)
    ooc = bool(settings.get("out_of_contract", False))
    cap = factor * T
    steps = settings.get("steps")
    dose = settings.get("dose")
    if dose is not None:
        if not dose > 0:
            raise InputError(where, f"{key}.dose", "a positive multiple of the cap", dose)
        ooc = dose_out_of_contract(dose)
        tokens = dose * cap
        if tokens < ctx:  # one shorter step, rather than a step that overshoots the dose
            ctx, steps = max(2, math.floor(tokens)), 1
        else:
            steps = round(tokens / ctx) if ooc else math.floor(tokens / ctx)
    if steps is None:
        if ooc:
            raise InputError(where, f"{key}.steps", "an explicit step count for an out-of-contract recipe")
        steps = cap // ctx
    if steps < 1:
        raise InputError(where, f"{key}.steps", f"at least 1 step (ctx {ctx} vs cap {cap})", steps)
    if not ooc and steps * ctx > cap:
        raise InputError(
            where, key, f"steps x ctx <= {factor} x {T} transcript tokens = {cap} "
            "(or out_of_contract: true)", f"{steps} x {ctx} = {steps * ctx}",
        )
    missing = [k for k in OPTIMIZER_KEYS if k not in settings]
    if missing:
        raise InputError(where, f"replay.optimizer.{missing[0]}", "a number")
    return Recipe(name=name, steps=int(steps), ctx=int(ctx), out_of_contract=ooc, transcript_tokens=T,
                  factor=int(factor), **{k: float(settings[k]) for k in OPTIMIZER_KEYS})

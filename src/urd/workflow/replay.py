"""The tuning jobs of a scale, listed when the DAG is built.

An artifact is named by its transcript's SHA-256, so the DAG needs the hashes before any data
file exists. They are computed from the generators (urd.data.calibrate), which are deterministic and
cheap (about 50 ms for 12 episodes), rather than from a Snakemake checkpoint: a checkpoint would
hide every tuning job from `snakemake -n` on a fresh clone, and the planned GPU spend is the
figure a dry run exists to show. Consistency is still checked on the real data: the data file is
verified against calibration/manifest.sha256 before the tuning job reads it, and the job refuses
a transcript whose SHA-256 differs from the hash the DAG was built with.

Only evaluated episodes (config `evaluate_episodes`) are tuned. Token counts (the harness
tokenizer, loaded on first use) size each job's recipe and resources.

Rung 3's session-A transcripts (urd.rung3.plan.transcripts) are looked up by SHA-256 too: one
tuning rule serves both rungs, and an artifact is named by its transcript's content alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass

from ..core.errors import InputError
from ..data import TASKS
from ..replay.recipe import Recipe, recipe_settings, resolve


@dataclass(frozen=True)
class Transcript:
    task: str
    episode: int
    sha256: str


@functools.lru_cache(maxsize=8)
def _transcripts(spec_json: str) -> tuple[Transcript, ...]:
    from ..data import calibrate

    config = json.loads(spec_json)
    n = min(config["episodes"], config.get("evaluate_episodes") or config["episodes"])
    make = {"t1": calibrate.t1_episode, "t2": calibrate.t2_episode}
    out = []
    for task in TASKS:
        for i in range(n):
            text = make[task](config, i)["transcript"]
            out.append(Transcript(task, i, hashlib.sha256(text.encode("utf-8")).hexdigest()))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _tokens(spec_json: str, sha256: str) -> int:
    from ..backbone.tokenizer import count_tokens
    from ..data import calibrate

    config = json.loads(spec_json)
    t = next(t for t in _transcripts(spec_json) if t.sha256 == sha256)  # the spec holds the transcript
    make = {"t1": calibrate.t1_episode, "t2": calibrate.t2_episode}[t.task]
    return count_tokens(make(config, t.episode)["transcript"])


def _rung3(config: dict) -> dict[str, Transcript]:
    """Rung 3's evaluated session-A transcripts by SHA-256 (none without an urd3 section)."""
    if "urd3" not in config:
        return {}
    from ..rung3 import plan as urd3

    return {t.sha256: Transcript(t.family, t.episode, t.sha256) for t in urd3.transcripts(config)}


def _spec(config: dict, episodes: int | None = None) -> str:
    from ..data.calibrate import data_spec

    return json.dumps({**data_spec(config), "evaluate_episodes": episodes or config.get("evaluate_episodes")},
                      sort_keys=True)


def transcripts(config: dict, task: str | None = None, episodes: int | None = None) -> list[Transcript]:
    """The evaluated transcripts (all tasks, or one), in task then episode order: rung 1's, or
    the first `episodes` (rung 2's dose-response evaluates its own number)."""
    return [t for t in _transcripts(_spec(config, episodes)) if task is None or t.task == task]


def _most_episodes(config: dict) -> int | None:
    """Enough episodes to hold every transcript a tuning job may be asked for: rung 1's and
    every scale's dose-response."""
    from ..rung2 import plan as urd2

    counts = [config.get("evaluate_episodes") or config["episodes"], *urd2.dose_episode_counts(config)]
    return min(config["episodes"], max(counts))


def by_sha(config: dict, sha256: str) -> Transcript:
    """The evaluated transcript (rung 1's, rung 2's dose-response or rung 3's) of this SHA-256; its
    `task` is a rung-1 task or a rung-3 family."""
    for t in transcripts(config, episodes=_most_episodes(config)):
        if t.sha256 == sha256:
            return t
    if sha256 in _rung3(config):
        return _rung3(config)[sha256]
    raise InputError("config/config.yaml", "transcript", "the SHA-256 of an evaluated transcript", sha256)


def transcript_tokens(config: dict, sha256: str) -> int:
    t = by_sha(config, sha256)
    if t.task not in TASKS:  # a rung-3 family
        from ..rung3 import plan as urd3

        return urd3.transcript_tokens(config, sha256)
    return _tokens(_spec(config, _most_episodes(config)), sha256)


def replay_recipes(config: dict) -> dict[str, str]:
    """{system: recipe} for the configured systems that read tuning artifacts."""
    from ..systems import registry

    return registry.replay_recipes(config["systems"], config.get("plugins"))


def settings(config: dict, scale: str, recipe: str) -> dict:
    """A recipe's settings; a rung-2 dose recipe (dose<d>) is its base recipe at dose d."""
    from ..rung2 import dose

    d = dose.dose_of(recipe)
    if d is not None:  # the scale's base recipe: urd2.dose.recipe, or its urd2.scales.<scale> override
        from ..rung2.plan import settings as rung2_settings

        base = rung2_settings(config, scale, "dose")["recipe"]
        return {**recipe_settings(config.get("replay", {}), scale, base, where="config/config.yaml"), "dose": d}
    return recipe_settings(config.get("replay", {}), scale, recipe, where="config/config.yaml")


def recipe_for(config: dict, scale: str, recipe: str, sha256: str) -> Recipe:
    return resolve(settings(config, scale, recipe), recipe, scale, transcript_tokens(config, sha256),
                   config["consolidation_factor"], where="config/config.yaml")


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
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass

from ..core.errors import InputError
from .recipe import Recipe, recipe_settings, resolve

TASKS = ("t1", "t2")


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
    t = next(t for t in _transcripts(spec_json) if t.sha256 == sha256)
    make = {"t1": calibrate.t1_episode, "t2": calibrate.t2_episode}[t.task]
    return count_tokens(make(config, t.episode)["transcript"])


def _spec(config: dict) -> str:
    from ..data.calibrate import data_spec

    return json.dumps({**data_spec(config), "evaluate_episodes": config.get("evaluate_episodes")},
                      sort_keys=True)


def transcripts(config: dict, task: str | None = None) -> list[Transcript]:
    """The evaluated transcripts (all tasks, or one), in task then episode order."""
    return [t for t in _transcripts(_spec(config)) if task is None or t.task == task]


def by_sha(config: dict, sha256: str) -> Transcript:
    for t in transcripts(config):
        if t.sha256 == sha256:
            return t
    raise InputError("config/config.yaml", "transcript", "the SHA-256 of an evaluated transcript", sha256)


def transcript_tokens(config: dict, sha256: str) -> int:
    by_sha(config, sha256)
    return _tokens(_spec(config), sha256)


def replay_recipes(config: dict) -> dict[str, str]:
    """{system: recipe} for the configured systems that read tuning artifacts."""
    from ..systems import registry

    out = {}
    for name in config["systems"]:
        cls = registry.resolve(name, config.get("plugins"))
        if getattr(cls, "needs_artifacts", False):
            out[name] = cls.recipe
    return out


def settings(config: dict, scale: str, recipe: str) -> dict:
    return recipe_settings(config.get("replay", {}), scale, recipe, where="config/config.yaml")


def recipe_for(config: dict, scale: str, recipe: str, sha256: str) -> Recipe:
    return resolve(settings(config, scale, recipe), recipe, scale, transcript_tokens(config, sha256),
                   config["consolidation_factor"], where="config/config.yaml")


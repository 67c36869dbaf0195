"""What rung 3's rules need while the DAG is built: the jobs' spec, and which systems get a cell on
which model. Loads no model.

A system gets a cell on a reader that runs no model (the scripted reader) only if its session A
needs none (`consolidates_from_text`): summary writes its notes with the model, and state_carry
and the replay systems carry a model state, which such a reader cannot read. Those systems are
listed in the summary with the reason (`not_run`) and get no cell, never a zero. The same holds on
an LLM model (the live route, urd.rung3.live: any model priced in `agentmem.prices`): a state
cannot go to an API, and session A has no model writer there. On an RWKV-7 backbone every
system runs; a replay system reads the artifacts of rung 1's tuning rule (rules/replay.smk),
which finds rung 3's transcripts by their SHA-256 (`transcripts`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import NamedTuple

from ..core.errors import InputError
from ..data.rung3 import family
from ..systems import registry
from ..systems.base import MemorySystem
from .reader import NAME as SCRIPTED

DATA_KEYS = ("master_seed", "episodes", "triggers", "non_triggers", "work_turns", "distractors", "families", "types")
SOURCE = "config/urd3.yaml"


def plugins(config: dict) -> dict:
    """Rung 1's plug-ins and rung 3's own systems: one registry (urd.systems.registry)."""
    return {**config.get("plugins", {}), **config["urd3"]["plugins"]}


def data_dir(config: dict) -> str:
    """Where the episodes live: data/urd3 for the built-in types; a set with plug-in types makes
    other episodes, kept apart under a name drawn from the plug-ins (data/urd3/plus-<digest>)."""
    return "data/urd3" + (f"/plus-{_types_tag(config)}" if config["urd3"].get("types") else "")


def manifest(config: dict) -> str:
    """The SHA-256 manifest the episodes are checked against. A plug-in set's is written by its
    author once (python -m urd.rung3.cli calibrate --spec ... --write-manifest), then checked."""
    tag = _types_tag(config) if config["urd3"].get("types") else None
    return f"calibration/urd3/plus-{tag}.sha256" if tag else "calibration/urd3/manifest.sha256"


def _types_tag(config: dict) -> str:
    # in the config's order: the order of the types is the order episodes are drawn in
    return hashlib.sha256(json.dumps(list(config["urd3"]["types"].items())).encode()).hexdigest()[:12]


def data_spec(config: dict) -> dict:
    """What the episodes depend on: a change elsewhere must not regenerate them."""
    u = config["urd3"]
    return {"master_seed": config["master_seed"], **{k: u[k] for k in DATA_KEYS if k in u}}


def is_llm(config: dict, model: str) -> bool:
    """Whether `model` is an LLM of the live route: neither the scripted reader nor a backbone."""
    return model != SCRIPTED and model not in config["backbones"]


def systems(config: dict, model: str) -> tuple[list[str], dict[str, str]]:
    """(the systems with a cell on `model`, {system: why it has none})."""
    u, table = config["urd3"], plugins(config)
    if model not in u["models"]:
        raise InputError(SOURCE, "urd3.models", "the model of a rung-3 target", model)
    priced = config.get("agentmem", {}).get("prices", {}).get("usd_per_mtok", {})
    if is_llm(config, model) and model not in priced:
        raise InputError(SOURCE, "urd3.models", f"{SCRIPTED}, a backbone of config/config.yaml or a model priced "
                         "in config/agentmem.yaml's agentmem.prices.usd_per_mtok", model)
    run, not_run = [], {}
    for name in u["systems"]:
        cls = registry.resolve(name, table, source=SOURCE)
        if model == SCRIPTED and not cls.consolidates_from_text:
            not_run[name] = (f"{cls.__name__} consolidates with a model (or carries its state): the scripted "
                             "reader runs none and reads text only")
        elif is_llm(config, model) and not (cls.consolidates_from_text or writes_notes(config, name)):
            not_run[name] = (f"{cls.__name__} carries a model state (or reads one): on an LLM model a state "
                             "cannot go to the API")
        elif cls.context is MemorySystem.context:
            not_run[name] = (f"{cls.__name__} answers through the model itself (answer(), no context()): rung 3 "
                             "hands each episode's context to the model of the cell")
        else:
            run.append(name)
    return run, not_run


def writes_notes(config: dict, system: str) -> bool:
    """Whether the system's session A decodes text with the model (summary's notes; its class's
    notes_tokens), which an LLM can write on the live route (urd.rung3.live.LLMWriter)."""
    cls = registry.resolve(system, plugins(config), source=SOURCE)
    settings = config.get("system_settings", {}).get(system, {})
    return not getattr(cls, "needs_artifacts", False) and cls.notes_tokens(None, settings) > 0


def replay_recipes(config: dict) -> dict[str, str]:
    """{system: recipe} of rung 3's systems that read tuning artifacts (urd.systems.replay)."""
    return registry.replay_recipes(config["urd3"]["systems"], plugins(config), source=SOURCE)


class Transcript(NamedTuple):
    family: str
    episode: int
    sha256: str


@functools.lru_cache(maxsize=8)
def _transcripts(spec_json: str, n: int) -> tuple[tuple[Transcript, str], ...]:
    """(Transcript, text) of the first `n` episodes of every family (the episodes the
    live estimate draws too: `_episodes`, one cache)."""
    out = []
    for name in json.loads(spec_json)["families"]:
        for ep in _episodes(spec_json, name, n):
            text = ep["transcript"]
            out.append((Transcript(name, ep["episode"], hashlib.sha256(text.encode("utf-8")).hexdigest()), text))
    return tuple(out)


def _transcript_key(config: dict) -> tuple[str, int]:
    u = config["urd3"]
    return json.dumps(data_spec(config), sort_keys=True), min(u["episodes"], u.get("evaluate_episodes") or u["episodes"])


def transcripts(config: dict, family_name: str | None = None) -> list[Transcript]:
    """The evaluated session-A transcripts (all families, or one), named by SHA-256 from the
    generators while the DAG is built (about 20 ms an episode); the tuning job checks the data
    file's transcript against the hash."""
    return [t for t, _ in _transcripts(*_transcript_key(config)) if family_name in (None, t.family)]


@functools.lru_cache(maxsize=64)
def _tokens(spec_json: str, n: int, sha256: str) -> int:
    from ..backbone.tokenizer import count_tokens

    return count_tokens(next(text for t, text in _transcripts(spec_json, n) if t.sha256 == sha256))


def transcript_tokens(config: dict, sha256: str) -> int:
    """World-tokenizer tokens of one evaluated transcript (it sizes the tuning recipe)."""
    if sha256 not in {t.sha256 for t in transcripts(config)}:
        raise InputError(SOURCE, "transcript", "the SHA-256 of an evaluated rung-3 transcript", sha256)
    return _tokens(*_transcript_key(config), sha256)


def check(config: dict) -> None:
    """Everything rung 3 reads from the config, checked now: families and their plug-in types
    (fixtures, templates), the systems on every model."""
    u = config["urd3"]
    for name in u["families"]:
        family(name, u.get("types"), SOURCE)
    for model in u["models"]:
        curve_cells(config, model)


def spec(config: dict, model: str) -> dict:
    """The JSON every rung-3 job of `model` reads."""
    u = config["urd3"]
    _, not_run = systems(config, model)
    return {**data_spec(config), "consolidation_factor": config["consolidation_factor"],
            "decode": u["decode"], "strategy": config["strategy"],
            "plugins": plugins(config), "system_settings": config.get("system_settings", {}),
            "bootstrap": config["publish"]["bootstrap"], "evaluate_episodes": u.get("evaluate_episodes"),
            "not_run": not_run, **({"agentmem": config["agentmem"]} if is_llm(config, model) else {})}


def splits(config: dict) -> dict[str, int]:
    """Every split a cell may have, and its budget: the table's (`budgets`) and the curve's, a
    curve budget named after a table split of the same size, else `b<bytes>`."""
    u = config["urd3"]
    named = {b: n for n, b in u["budgets"].items()}
    return {**u["budgets"], **{f"b{b}": b for b in u["curve"]["budgets"] if b not in named}}


def curve_cells(config: dict, model: str) -> tuple[list[str], list[str]]:
    """(the curve's systems that have a cell on `model`, the split of each curve budget)."""
    u = config["urd3"]
    ran, _ = systems(config, model)
    named = {b: n for n, b in u["budgets"].items()}
    unknown = [s for s in u["curve"]["systems"] if s not in u["systems"]]
    if unknown:
        raise InputError(SOURCE, "urd3.curve.systems", "systems listed in urd3.systems", unknown[0])
    return [s for s in u["curve"]["systems"] if s in ran], [named.get(b, f"b{b}") for b in u["curve"]["budgets"]]


# --- what a job costs (the spend line of `snakemake -n`) ---------------------------------------
# Measured with the World tokenizer on the pinned episodes: a session-A transcript is 1.3 K tokens
# in both families (1,301 and 1,296 at episode 0), a session-B prompt 25-40.
TRANSCRIPT_TOKENS = 1400
PROMPT_TOKENS = 40
HEADER_TOKENS = 30
FICHE_BYTES_PER_TOKEN = 3.5
# The scripted reader runs no model: its jobs are process start-up and text work, 2-4 CPU-seconds
# each on this project's 2-core machine (`benchmark:` files of a build), the summary's judging and
# code runs about 10.
SCRIPTED_SECONDS = {"control": 4, "consolidate": 4, "answer": 4, "summary": 15, "curve": 15}


def queries(config: dict, family_name: str) -> int:
    """Session-B requests of one episode of the family."""
    u = config["urd3"]
    kinds = family(family_name, u.get("types"), SOURCE).kinds
    return sum(u["triggers"] + (u["non_triggers"] if k.scoped else 0) for k in kinds)


def cpu_seconds(config: dict, model: str, family_name: str, step: str, system: str | None = None,
                split: str | None = None) -> int:
    """CPU seconds of one rung-3 job: on a backbone at its measured speed (urd.cost.estimate), the
    prefill of what it reads and the batched decode of its replies; on the scripted reader, its
    measured start-up."""
    if not _local(config, model):  # an LLM's jobs: start-up and waiting on the API, no model here
        return SCRIPTED_SECONDS[step]
    from ..cost.estimate import lockstep, notes_tokens, priced_seconds

    u = config["urd3"]
    eps = u.get("evaluate_episodes") or u["episodes"]
    rows = eps * queries(config, family_name) * (PROMPT_TOKENS + u["decode"][family_name])
    if step == "control":
        return priced_seconds(config, model, prefill=eps * TRANSCRIPT_TOKENS, batched=rows)
    budget = splits(config).get(split) if split else None
    if step == "answer":
        fiche = min(TRANSCRIPT_TOKENS, int((budget or 0) / FICHE_BYTES_PER_TOKEN))
        return priced_seconds(config, model, prefill=eps * (HEADER_TOKENS + fiche), batched=rows)
    if step == "consolidate":
        cls = registry.resolve(system, plugins(config), source=SOURCE)
        if cls.consolidates_from_text or getattr(cls, "needs_artifacts", False):
            return priced_seconds(config, model)  # no model work (a replay system reads its artifact)
        written = notes_tokens({**config, "plugins": plugins(config)}, system, budget, model)
        return priced_seconds(config, model, prefill=eps * TRANSCRIPT_TOKENS,
                              **(lockstep([written] * eps) if written else {}))
    return priced_seconds(config, model)


def resources(config: dict, model: str, family_name: str, step: str, system: str | None = None,
              split: str | None = None) -> dict:
    """A job's resources: its CPU seconds (the spend line), and the memory and wall-time limit a
    cluster gives it (urd.cost.estimate.job_resources; the scripted reader's jobs hold no model)."""
    seconds = cpu_seconds(config, model, family_name, step, system, split)
    if not _local(config, model):
        return {"cpu_seconds": seconds, "mem_mb": 1000, "runtime": 10 if model == SCRIPTED else 120}
    from ..cost.estimate import job_resources

    u = config["urd3"]
    rows = (u.get("evaluate_episodes") or u["episodes"]) * queries(config, family_name)
    return {"cpu_seconds": seconds, **job_resources(config, model, seconds, rows if step != "consolidate" else 1)}


def _local(config: dict, model: str) -> bool:
    return model in config["backbones"]


# --- what a live job spends (usd_cents: the dollars of `snakemake -n`) -------------------------

def usd_cents(config: dict, model: str, family_name: str, step: str, system: str | None = None,
              split: str | None = None) -> int:
    """A rung-3 job's API spend in whole US cents: 0 but for an LLM's answer and control jobs, and
    its consolidate jobs of a system that writes notes with the model."""
    if not is_llm(config, model) or step not in ("answer", "control", "consolidate"):
        return 0
    if step == "consolidate" and not writes_notes(config, system):
        return 0
    return live_estimate(config, model, family_name, step, system, split).cents


def live_estimate(config: dict, model: str, family_name: str, step: str, system: str | None = None,
                  split: str | None = None):
    """What a live answer or control job would still spend (urd.rung3.live, its scripted twin), on
    the episodes as the seed makes them. The fiches do not exist yet: an answer's context is priced
    as the header and the transcript's last `budget` bytes (a fiche at its budget)."""
    from ..agentmem.runtime import still_to_spend
    from ..agentmem.suite import estimate
    from ..stores.settings import validate
    from . import live

    cell = f"control/{family_name}" if step == "control" else f"{system}/{family_name}/{split}"
    s = live.job_settings(validate(config["agentmem"], "config['agentmem']"), model, cell,
                          "consolidate" if step == "consolidate" else "answer")
    if step == "consolidate":  # the prompts the system sends its writer, recorded by running its session A
        sessions = _sessions_a(config, family_name)
        build = lambda handle: registry.build(system, handle, plugins(config),
                                              config.get("system_settings", {}).get(system, {}))
        items = live.notes_items(build, family_name, sessions, split, splits(config).get(split),
                                 config["consolidation_factor"])
        suite = live.Rung3Notes(s, model, items, cell, config["urd3"].get("types"))
    else:
        suite = live.Rung3Live(s, model, family(family_name, config["urd3"].get("types"), SOURCE),
                               _items(config, family_name, step, splits(config).get(split)), cell)
    routes = suite.routes(model, s, {})
    est = estimate(suite, s, routes)
    target = suite.units()[0].ledger
    return still_to_spend(s, routes, [target], est, s.raw["spend"][live.CEILING_KEY])


def _sessions_a(config: dict, family_name: str) -> list[dict]:
    from ..data import views

    n = config["urd3"].get("evaluate_episodes") or config["urd3"]["episodes"]
    return [views.session_a(ep) for ep in _episodes(json.dumps(data_spec(config), sort_keys=True), family_name, n)]


def _items(config: dict, family_name: str, step: str, budget: int | None) -> list[tuple[str, str]]:
    items = []
    n = config["urd3"].get("evaluate_episodes") or config["urd3"]["episodes"]
    for ep in _episodes(json.dumps(data_spec(config), sort_keys=True), family_name, n):
        context = ep["transcript"] if step == "control" else _fiche_sized(ep, budget)
        items += [(context, q["prompt"]) for q in ep["queries"]]
    return items


def _fiche_sized(ep: dict, budget: int | None) -> str:
    tail = ep["transcript"].encode()[-budget:].decode(errors="ignore") if budget else ep["transcript"]
    return f"{ep['header']}\n{tail}"


@functools.lru_cache(maxsize=8)
def _episodes(spec_json: str, family_name: str, n: int) -> list[dict]:
    from ..data.rung3.episodes import generate_episode

    spec = json.loads(spec_json)
    fam = family(family_name, spec.get("types"), SOURCE)
    return [generate_episode(spec["master_seed"], fam, i, spec) for i in range(n)]

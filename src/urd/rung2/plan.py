"""What rung 2 runs at a scale, known when the DAG is built (no torch, no model).

`settings(config, scale, part)` is config `urd2.<part>` with `urd2.scales.<scale>.<part>` laid over
it; `check(config)` refuses, before any job runs, what could not be measured honestly (a replay
system in the Pareto sweep, more sessions than were generated, a transfer length past the
chain). The specs are the slices of the config each job depends on, so a change elsewhere
reruns nothing. The CPU seconds are estimates at the scale's measured speed (urd.cost.estimate).
"""

from __future__ import annotations

import math

from ..core.config import merged_source
from ..core.errors import InputError
from ..cost.estimate import (
    INSTRUCTION_TOKENS,
    QUERY_TOKENS,
    TRANSCRIPT_TOKENS,
    _seconds,
    answered_at_once,
    lockstep,
    notes_tokens,
    system_class,
    task_queries,
)

PARTS = ("chains", "pareto", "dose")
SOURCE = merged_source()


def settings(config: dict, scale: str, part: str) -> dict:
    u = config["urd2"]
    return {**u[part], **u.get("scales", {}).get(scale, {}).get(part, {})}


def dose_episode_counts(config: dict) -> list[int]:
    u = config.get("urd2")
    if not u:
        return []
    return [settings(config, s, "dose")["episodes"] for s in config["backbones"]]


def check(config: dict) -> None:
    """Refuse a rung-2 config that could not be measured as asked, naming the key."""
    from ..data.chains import check_sessions
    from ..systems import registry

    data = config["urd2"]["data"]
    plugins = config.get("plugins")
    check_sessions("t2", data["sessions"])  # every variant's data is generated, t2's included
    for scale in config["backbones"]:
        c = settings(config, scale, "chains")
        where = f"urd2.chains (scale {scale})"
        if c["sessions"] > data["sessions"]:
            raise InputError(SOURCE, f"{where}.sessions", f"at most urd2.data.sessions = {data['sessions']}", c["sessions"])
        if c.get("chains") and c["chains"] > data["chains"]:
            raise InputError(SOURCE, f"{where}.chains", f"at most urd2.data.chains = {data['chains']}", c["chains"])
        late = [n for n in c["lengths"] if n > c["sessions"]]
        if late:
            raise InputError(SOURCE, f"{where}.lengths", f"lengths up to sessions = {c['sessions']}", late[0])
        p = settings(config, scale, "pareto")
        if p["episodes"] > config["episodes"]:
            raise InputError(SOURCE, f"urd2.pareto (scale {scale}).episodes", f"at most episodes = {config['episodes']}",
                             p["episodes"])
        for name in [*c["systems"], *p["systems"]]:
            registry.resolve(name, plugins, source=SOURCE)
        for name in p["systems"]:
            if getattr(registry.resolve(name, plugins), "needs_artifacts", False):
                raise InputError(SOURCE, f"urd2.pareto (scale {scale}).systems",
                                 "systems whose consolidation the cap bounds (a replay system's dose is swept by "
                                 "urd2.dose)", name)
        d = settings(config, scale, "dose")
        if d["episodes"] > config["episodes"]:
            raise InputError(SOURCE, f"urd2.dose (scale {scale}).episodes", f"at most episodes = {config['episodes']}",
                             d["episodes"])
        if d["recipe"] not in config.get("replay", {}).get("recipes", {}):
            raise InputError(SOURCE, f"urd2.dose (scale {scale}).recipe", "a recipe of replay.recipes", d["recipe"])


# --- specs ----------------------------------------------------------------------------------
def _common(config: dict, task: str, system: str | None) -> dict:
    plugins = {k: v for k, v in config.get("plugins", {}).items() if k == system}
    sys_settings = {k: v for k, v in config.get("system_settings", {}).items() if k == system}
    return {"consolidation_factor": config["consolidation_factor"], "decode": config["decode"][task],
            "strategy": config["strategy"], "plugins": plugins, "system_settings": sys_settings}


def chain_spec(config: dict, scale: str, task: str, system: str | None = None, summary: bool = False) -> dict:
    c = settings(config, scale, "chains")
    spec = {**_common(config, task, system), "chains": c.get("chains"), "task": task}
    if summary:
        spec.update(sessions=c["sessions"], lengths=c["lengths"], budgets=c["budgets"],
                    bootstrap=config["publish"]["bootstrap"])
    return spec


def sweep_spec(config: dict, scale: str, task: str, system: str | None = None) -> dict:
    p = settings(config, scale, "pareto")
    return {**_common(config, task, system), "evaluate_episodes": p["episodes"], "evaluate_queries": None,
            "budgets": p["budgets"], "caps": p["caps"], "bootstrap": config["publish"]["bootstrap"]}


def dose_spec(config: dict, scale: str) -> dict:
    d = settings(config, scale, "dose")
    return {"consolidation_factor": config["consolidation_factor"], "decode": config["decode"],
            "strategy": config["strategy"], "evaluate_episodes": d["episodes"], "evaluate_queries": None,
            "doses": d["doses"], "tasks": d["tasks"], "recipe": d["recipe"],
            "state_file": config["controls"].get("state_file", "time_state.npy"), "plugins": {}}


def dose_recipes(config: dict) -> list[str]:
    """Every dose recipe some scale asks for (the tuning rule's recipe names)."""
    from .dose import recipe_name

    if not config.get("urd2"):
        return []
    return sorted({recipe_name(d) for s in config["backbones"] for d in settings(config, s, "dose")["doses"]})


# --- estimates (CPU seconds, for the dry run's spend line) ----------------------------------
def _task_sizes(config: dict, task: str) -> tuple[int, int]:
    return TRANSCRIPT_TOKENS[task], task_queries(config, task) * (QUERY_TOKENS + config["decode"][task]["max_new_tokens"])


def _from_text(config: dict, system: str) -> bool:
    return system_class(config, system).consolidates_from_text


def _answers_with_model(config: dict, system: str) -> bool:
    return system_class(config, system).answers_with_model


def _distinct_fiches(config: dict, scale: str, system: str, task: str, p: dict) -> int:
    """How many distinct fiches an episode has across a sweep's points (what its answer job
    decodes: urd.rung2.pareto.answer decodes each distinct fiche once, and a disqualified point
    has none): one if its class declares its fiche independent of the budget, one a budget for a
    text consolidation (the cap changes nothing). A consolidation with the model: one a point it
    qualifies at (what it forwards fits the cap), except that notes are the same wherever their
    budget and their length limit are (a cap that leaves more room than the budget's notes
    take changes nothing), and a class that declares its fiche independent of the cap
    (fiche_depends_on_cap) has one a budget."""
    cls = system_class(config, system)
    if not cls.fiche_depends_on_budget:
        return 1
    if cls.consolidates_from_text:
        return len(p["budgets"])
    transcript, _ = _task_sizes(config, task)
    seen = set()
    for budget in p["budgets"]:
        notes = notes_tokens(config, system, budget, scale)
        for cap in p["caps"]:
            read, _ = _consolidate_tokens(config, scale, system, task, budget, cap)
            room = None if cap is None else cap * transcript - read
            if room is not None and room < (1 if notes else 0):
                continue  # past the cap before a token is written: disqualified, never answered
            if notes:  # notes: as long as the budget's bound or what the cap leaves
                seen.add((budget, notes if room is None else min(notes, room)))
            else:
                seen.add((budget, cap) if cls.fiche_depends_on_cap else (budget,))
    return max(1, len(seen))


def _writes_points_together(config: dict, system: str) -> bool:
    """A system with consolidate_sweep() writes every point of a sweep in one batch."""
    return callable(getattr(system_class(config, system), "consolidate_sweep", None))


def _consolidate_tokens(config: dict, scale: str, system: str, task: str, budget: int | None,
                        cap: int | None = None) -> tuple[int, int]:
    """(prefill, decode) tokens of one episode's consolidation (notes stop at the cap), as its
    system's class is priced (urd.cost.estimate.system_class)."""
    transcript, _ = _task_sizes(config, task)
    if _from_text(config, system):
        return 0, 0
    notes = notes_tokens(config, system, budget, scale)
    if notes:
        cap = config["consolidation_factor"] if cap is None else cap
        return transcript + INSTRUCTION_TOKENS, max(0, min(notes, cap * transcript - transcript))
    return transcript, 0


def chain_cpu_seconds(config: dict, scale: str, step: str, task: str, system: str | None = None,
                      split: str | None = None, boundary: int = 1) -> int:
    c = settings(config, scale, "chains")
    chains = c.get("chains") or config["urd2"]["data"]["chains"]
    transcript, rows = _task_sizes(config, task)
    if step == "consolidate":
        pre, dec = _consolidate_tokens(config, scale, system, task, c["budgets"].get(split))
        return _seconds(config, scale, prefill=chains * pre, **lockstep([dec] * chains))  # one batch a boundary
    if step == "answer":
        if not _answers_with_model(config, system):
            return _seconds(config, scale)
        answered = boundary + (1 if boundary > 1 else 0)
        return _seconds(config, scale, prefill=chains * answered * 400, batched=chains * answered * rows)
    if step == "control":
        n = c["sessions"]
        return _seconds(config, scale, prefill=chains * n * transcript, batched=chains * n * rows)
    return _seconds(config, scale)


def sweep_cpu_seconds(config: dict, scale: str, step: str, task: str, system: str | None = None) -> int:
    p = settings(config, scale, "pareto")
    eps = p["episodes"]
    transcript, rows = _task_sizes(config, task)
    if step == "consolidate":
        # each transcript read once for every point; a system with consolidate_sweep (summary)
        # writes all points' notes in one batch, the longest setting the steps; any other writes
        # a point's episodes in one batch, point after point
        tokens = [_consolidate_tokens(config, scale, system, task, b, c) for b in p["budgets"] for c in p["caps"]]
        read = 0 if _from_text(config, system) else transcript + sum(pre - transcript for pre, _ in tokens)
        if _writes_points_together(config, system):
            steps = lockstep(n for _, n in tokens for _ in range(eps))
        else:
            steps = {"steps": [seg for _, n in tokens for seg in lockstep([n] * eps)["steps"]]}
        return _seconds(config, scale, prefill=eps * read, **steps)
    if step == "answer":
        distinct = _distinct_fiches(config, scale, system, task, p)
        if not _answers_with_model(config, system):
            return _seconds(config, scale)
        return _seconds(config, scale, prefill=eps * distinct * 400, batched=eps * distinct * rows)
    return _seconds(config, scale)


def chain_rows(config: dict, scale: str, step: str, task: str, system: str | None = None,
               boundary: int = 1) -> int:
    """The states a chain job holds at once (urd.cost.estimate.cell_rows, for a chain): the
    control keeps every session's transcripts and answers one session's queries in a batch;
    a consolidation writes every chain's fiche in one batch; an answer job decodes the queries
    of every session answered after `boundary` (and the fresh fiche's) in one batch, unless
    its system answers without the model."""
    c = settings(config, scale, "chains")
    chains, q = c.get("chains") or config["urd2"]["data"]["chains"], task_queries(config, task)
    if step == "control":
        return chains * c["sessions"] + answered_at_once(chains * q, q)
    if step == "answer":
        answered = chains * (boundary + (1 if boundary > 1 else 0)) * q
        return answered_at_once(answered, q) if _answers_with_model(config, system) else 0
    return chains


def sweep_rows(config: dict, scale: str, step: str, task: str, system: str | None = None) -> int:
    """The states a sweep job holds at once: summary writes every point's notes in one batch;
    the answer job decodes every distinct (point, episode) fiche's queries in one batch."""
    p = settings(config, scale, "pareto")
    eps, points = p["episodes"], len(p["budgets"]) * len(p["caps"])
    if step == "consolidate":
        return eps * points if _writes_points_together(config, system) else eps
    if step == "answer" and _answers_with_model(config, system):
        q = task_queries(config, task)
        return answered_at_once(eps * _distinct_fiches(config, scale, system, task, p) * q, q)
    return 0


def dose_rows(config: dict, scale: str) -> int:
    """The dose job evaluates one (dose, task) at a time, every query of it in one batch."""
    d = settings(config, scale, "dose")
    return max(answered_at_once(d["episodes"] * q, q) for q in (task_queries(config, t) for t in d["tasks"]))


def dose_cpu_seconds(config: dict, scale: str) -> int:
    d = settings(config, scale, "dose")
    total = 0
    for task in d["tasks"]:
        _, rows = _task_sizes(config, task)
        total += len(d["doses"]) * (_seconds(config, scale, prefill=d["episodes"] * 400,
                                             batched=d["episodes"] * rows))
    return max(1, math.ceil(total))

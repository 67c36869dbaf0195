"""CPU-second estimates of the benchmark's jobs, for the spend line of `snakemake -n` (and, at
the end, GPU seconds of the replay tuning jobs).

A job's cost is the tokens it prefills, decodes and answers in batches at the backbone's
measured CPU speed (config `cpu_speed`), from the protocol's sizes, plus its start-up: an
estimate, stated as such, rounded up to whole seconds (Snakemake resources are integers). A
scale with no measured speed is estimated at the slowest measured one.
"""

from __future__ import annotations

import itertools
import math

from ..core.config import merged_source
from ..core.errors import InputError
from ..session.context import MAX_BATCH_ROWS

# Protocol sizes (measured on the generated data; results/urd/oracle.json has the exact ones).
TRANSCRIPT_TOKENS = {"t1": 1850, "t2": 180}
QUERY_TOKENS = 16
FICHE_CONTEXT_TOKENS = {"over": 60, "sanity": 400}
# What a consolidation forwards beyond the transcript (whose state the prefill job computed
# once): a system that writes notes (summary) reads an instruction and decodes them; the rest
# read text, the state or an artifact.
HEADER_TOKENS = 40
# the instruction after the transcript (urd.systems.summary.INSTRUCTION): read once a note
INSTRUCTION_TOKENS = 30


def _speed(config: dict, scale: str) -> dict:
    speeds = config.get("cpu_speed", {})
    if scale in speeds:
        return speeds[scale]
    if not speeds:
        return {"prefill_tokens_per_s": 100, "decode_ms_per_token": 100, "batch_tokens_per_s": 100, "startup_s": 10}
    return min(speeds.values(), key=lambda s: s["prefill_tokens_per_s"])


def task_queries(config: dict, task: str) -> int:
    """The queries of one episode of `task` (T2: its triggers and non-triggers)."""
    t2 = config["tasks"]["t2"]
    return config["queries"] if task == "t1" else t2["triggers"] + t2["non_triggers"]


def _episodes_queries(config: dict, task: str) -> tuple[int, int]:
    eps = config.get("evaluate_episodes") or config["episodes"]
    per = task_queries(config, task)
    return eps, min(per, config.get("evaluate_queries") or per)


def _seconds(config, scale, prefill=0, steps=(), batched=0) -> int:
    """prefill: tokens run as sequences; steps: (steps, rows) of a batched decode (`lockstep`),
    each step priced at its rows' measured step time (`step_ms`); batched: row-tokens of queries
    answered in a batch (every query of a cell a row); plus the job's start-up."""
    s = _speed(config, scale)
    seconds = (prefill / s["prefill_tokens_per_s"] + sum(n * step_ms(s, rows) for n, rows in steps) / 1000
               + batched / s["batch_tokens_per_s"] + s.get("startup_s", 10))
    return max(1, math.ceil(seconds))


def priced_seconds(config: dict, scale: str, prefill: int = 0, steps=(), batched: int = 0) -> int:
    """A CPU job's seconds at the scale's measured speed (what `cell_cpu_seconds` prices rung 1's
    jobs by), for the suites that price their own jobs (urd.rung3.plan)."""
    return _seconds(config, scale, prefill, steps, batched)


def step_ms(speed: dict, rows: int) -> float:
    """Milliseconds of one decode step of `rows` rows: decode_ms_per_token at one row, and the
    measured `step_ms` points ([rows, ms], benchmarks/cpu_speed.py) between, linear from point
    to point and past the last at the last slope (a step reads every weight once whatever its
    rows, so a few rows cost about one; past that each row adds its share of the products).
    Without measured points, every row past the first at the batched rate."""
    pts = [(1, speed["decode_ms_per_token"]), *sorted((int(r), float(ms)) for r, ms in speed.get("step_ms", ()))]
    if len(pts) == 1:
        return pts[0][1] + (rows - 1) * 1000 / speed["batch_tokens_per_s"]
    segments = list(itertools.pairwise(pts))
    (r0, m0), (r1, m1) = next((seg for seg in segments if rows <= seg[1][0]), segments[-1])
    return max(pts[0][1], m0 + (rows - r0) * (m1 - m0) / (r1 - r0))


def lockstep(lengths) -> dict:
    """The decode of rows that step together in one batch (urd.backbone.batch: a cell's episodes,
    a sweep's points): the longest row sets the steps, and a row leaves the batch when its own
    length is reached, so each stretch of steps runs with the rows still in it. `_seconds`'
    `steps` argument: [(steps, rows)], longest stretch last."""
    lengths = sorted((n for n in lengths if n > 0), reverse=True)
    out, done = [], 0
    for rows in range(len(lengths), 0, -1):
        n = lengths[rows - 1] - done
        if n:
            out.append((n, rows))
            done += n
    return {"steps": out}


def system_class(config: dict, system: str) -> type:
    """The class of config's system `system` (a built-in or plug-in): what it is priced as
    (urd.systems.base.MemorySystem's consolidates_from_text, answers_with_model, notes_tokens),
    whatever name it is registered under."""
    from ..systems import registry

    return registry.resolve(system, config.get("plugins"))


def notes_tokens(config: dict, system: str, budget_bytes: int | None, scale: str) -> int:
    """How many tokens one episode's consolidation by `system` is priced at: at most its own bound
    (its class's notes_tokens, at its settings), and no more than the budget's bytes hold at the
    scale's stated bytes a token (`backbones.<scale>.note_bytes_per_token`), where it states one:
    notes stop at their budget's bytes (summary passes the budget to the decoder), and a random
    model's tokens hold more bytes than the bound assumes."""
    settings = config.get("system_settings", {}).get(system, {})
    bound = system_class(config, system).notes_tokens(budget_bytes, settings)
    per = config.get("backbones", {}).get(scale, {}).get("note_bytes_per_token")
    if not bound or per is None or budget_bytes is None:
        return bound
    return min(bound, math.ceil(budget_bytes / per))


def cell_cpu_seconds(config: dict, scale: str, task: str, step: str, system: str | None = None,
                     split: str | None = None) -> int:
    """CPU seconds of one job of a cell: prefill, control, consolidate or answer."""
    eps, q = _episodes_queries(config, task)
    rows = eps * q * (QUERY_TOKENS + config["decode"][task]["max_new_tokens"])
    if step == "prefill":
        return _seconds(config, scale, prefill=eps * TRANSCRIPT_TOKENS[task])
    if step == "control":
        return _seconds(config, scale, batched=rows)
    if step == "consolidate":
        budget = config["profiles"][config["profile"]]["budgets"].get(split) if split else None
        written = notes_tokens(config, system, budget, scale)
        if not written:  # the transcript's state comes from the prefill job
            return _seconds(config, scale)
        return _seconds(config, scale, prefill=eps * INSTRUCTION_TOKENS, **lockstep([written] * eps))  # one batch
    if step == "answer":
        context = HEADER_TOKENS + FICHE_CONTEXT_TOKENS.get(split, 400)
        return _seconds(config, scale, prefill=eps * context, batched=rows)
    raise ValueError(f"unknown step {step!r}")


def controls_cpu_seconds(config: dict, scale: str, tasks: list[str], evaluations: int) -> int:
    """CPU seconds of a control job (ceiling, bits curve): each evaluation answers a task's
    queries from a tuned state, as a cell's answer job does."""
    return evaluations * sum(cell_cpu_seconds(config, scale, t, "answer") for t in tasks)


# --- a CPU job's memory and wall-time limit (what a cluster is asked for) -------------------
# A job holds the model and, while it decodes, one recurrent state per row of its batch (a
# cell's queries decode in one batch, a sweep's in batches of whole contexts of up to
# MAX_BATCH_ROWS: urd.session.context): its peak is a straight line in the rows, measured per
# scale by benchmarks/job_memory.py (config `cpu_memory`).


def answered_at_once(rows: int, group: int) -> int:
    """The query rows answer_groups holds at once: batches of whole contexts (`group` queries
    each) up to MAX_BATCH_ROWS."""
    return min(rows, max(MAX_BATCH_ROWS, group))


def cell_rows(config: dict, task: str, step: str) -> int:
    """The states a cell's job holds at once: a transcript's (prefill, and summary's notes
    written in one batch) or a query's (control and answer: every query of the cell a row; the
    control also keeps each transcript's state to branch its queries from)."""
    eps, q = _episodes_queries(config, task)
    if step in ("prefill", "consolidate"):
        return eps
    if step == "control":
        return eps + answered_at_once(eps * q, q)
    if step == "answer":
        return answered_at_once(eps * q, q)
    raise ValueError(f"unknown step {step!r}")


def _memory(config: dict, scale: str) -> dict:
    measured = config.get("cpu_memory", {})
    if scale in measured:
        return measured[scale]
    if not measured:
        raise InputError(merged_source(), "cpu_memory",
                         "a measured {model_mb, row_mb} per scale (benchmarks/job_memory.py)", "none")
    return max(measured.values(), key=lambda m: m["model_mb"])


def job_resources(config: dict, scale: str, cpu_seconds: int, rows: int) -> dict:
    """What a CPU job asks a cluster for: memory for the model and the `rows` states it holds
    at once (MB, rounded up), and a wall-time limit in minutes, twice its estimated CPU time
    plus ten (the tuning jobs' rule). A scale with no measured memory is asked for at the
    largest measured one."""
    m = _memory(config, scale)
    return {"mem_mb": math.ceil(m["model_mb"] + rows * m["row_mb"]),
            "runtime": 2 * math.ceil(cpu_seconds / 60) + 10}


# --- tuning jobs (urd.replay.tune): seconds where they run, run time and memory ---------------
# A tuning job holds its device from start to end: on a GPU (a cluster's GPU node, or a local
# CUDA device) it is billed as GPU seconds, on a machine without one as CPU seconds
# (urd.cost.placement decides where, when the DAG is built). Its length is its steps at the
# scale's measured step time on that device (config `train_speed.<scale>.cpu` or `.gpu`, each
# with its basis), plus the stated loading and, on the fla path, the kernels' compilation: each
# job is a fresh process, so each is priced its own compile (an upper bound where jobs on one
# node share Triton's cache). A scale with only a CPU figure is priced at it on a GPU too (a
# bound); one with only a GPU figure cannot be priced on the CPU, and the DAG says so.


def tune_step_seconds(speed: dict, ctx: int) -> float:
    """Seconds of one state-tuning step over `ctx` tokens. `tokens_per_s` is one figure for every
    ctx, or measured [ctx, tokens/s] points: then a step's seconds run linearly from point to
    point (a step is a fixed part, its kernels' launches, and a part a token; on a GPU at the
    0.1B shape the fixed part is most of it), take the first point's seconds below it (fewer
    tokens launch no fewer kernels) and the last point's speed past it."""
    tps = speed["tokens_per_s"]
    if isinstance(tps, (int, float)):
        return ctx / tps
    pts = sorted((int(c), int(c) / float(v)) for c, v in tps)
    if ctx <= pts[0][0]:
        return pts[0][1]
    if ctx >= pts[-1][0]:
        return ctx * pts[-1][1] / pts[-1][0]
    (c0, s0), (c1, s1) = next(seg for seg in itertools.pairwise(pts) if ctx <= seg[1][0])
    return s0 + (ctx - c0) * (s1 - s0) / (c1 - c0)


def speed_of(config: dict, scale: str, device: str) -> tuple[dict, str]:
    """(the scale's tuning speed on `device`, the device it was measured on): its own figure, or
    on a GPU, where it has none, the CPU's."""
    speeds = config.get("train_speed", {})
    if scale not in speeds:
        raise InputError("config/config.yaml", f"train_speed.{scale}",
                         "the tuning throughput of this scale (cpu and/or gpu: tokens_per_s, load_s; mem_mb)")
    entry = speeds[scale]
    if device in entry:
        return entry[device], device
    if device == "cpu":  # a GPU's figure would price the CPU's hours as minutes
        raise InputError("config/config.yaml", f"train_speed.{scale}.cpu",
                         "this scale's measured CPU tuning speed: with no GPU here its tuning jobs run on the CPU")
    return entry["cpu"], "cpu"  # a GPU is priced at the CPU's figure: a bound, not a measurement


def tune_seconds(config: dict, scale: str, steps: int, ctx: int, device: str = "gpu") -> float:
    """A tuning job's seconds on `device`: `steps` steps of `ctx` tokens, its loading and its compilation."""
    s, _ = speed_of(config, scale, device)
    return steps * tune_step_seconds(s, ctx) + s["load_s"] + s.get("compile_s", 0)


def tune_resources(config: dict, scale: str, steps: int, ctx: int, place: str = "cluster") -> dict:
    """Resources a tuning rule declares where it is placed (urd.cost.placement): on a GPU, one GPU
    (the SLURM profile routes it to the gpu partition) and the billed GPU seconds; on the CPU, the
    billed CPU seconds and no GPU; a wall-time limit in minutes with headroom, host memory."""
    from .placement import tuning_device

    device = tuning_device(place)
    seconds = max(1, math.ceil(tune_seconds(config, scale, steps, ctx, device)))
    on_gpu = device == "gpu"
    return {"gpu": int(on_gpu), "gpu_seconds": seconds if on_gpu else 0, "cpu_seconds": 0 if on_gpu else seconds,
            "runtime": 2 * math.ceil(seconds / 60) + 10, "mem_mb": config["train_speed"][scale]["mem_mb"]}

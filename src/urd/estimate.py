"""CPU-minute estimates of the benchmark's jobs, for the spend line of `snakemake -n` (and, at
the end, GPU minutes of the replay tuning jobs).

A job's cost is the tokens it prefills and decodes at the backbone's measured CPU speed
(config `cpu_speed`), from the protocol's sizes: an estimate, stated as such, rounded up to
whole minutes (Snakemake resources are integers). A scale with no measured speed is estimated
at the slowest measured one.
"""

from __future__ import annotations

import math

from .errors import InputError

# Protocol sizes (measured on the generated data; results/urd/oracle.json has the exact ones).
TRANSCRIPT_TOKENS = {"t1": 1850, "t2": 180}
QUERY_TOKENS = 16
FICHE_CONTEXT_TOKENS = {"over": 60, "sanity": 400}
CONSOLIDATION = {  # (prefill passes over the transcript, decoded tokens)
    "vanilla": (0, 0), "gzip_tail": (0, 0), "retrieval": (0, 0), "state_carry": (1, 0),
    "replay_tune": (0, 0), "replay_banc": (0, 0),  # read an artifact; tuning is its own job
}


def _speed(config: dict, scale: str) -> dict:
    speeds = config.get("cpu_speed", {})
    if scale in speeds:
        return speeds[scale]
    if not speeds:
        return {"prefill_tokens_per_s": 100, "decode_ms_per_token": 100}
    return min(speeds.values(), key=lambda s: s["prefill_tokens_per_s"])


def _episodes_queries(config: dict, task: str) -> tuple[int, int]:
    eps = config.get("evaluate_episodes") or config["episodes"]
    t2 = config["tasks"]["t2"]
    per = config["queries"] if task == "t1" else t2["triggers"] + t2["non_triggers"]
    return eps, min(per, config.get("evaluate_queries") or per)


def _minutes(config, scale, prefill, decode) -> int:
    s = _speed(config, scale)
    seconds = prefill / s["prefill_tokens_per_s"] + decode * s["decode_ms_per_token"] / 1000 + 10  # +load
    return max(1, math.ceil(seconds / 60))


def control_cpu_minutes(config: dict, scale: str, task: str) -> int:
    eps, q = _episodes_queries(config, task)
    decode = config["decode"][task]["max_new_tokens"]
    return _minutes(config, scale, eps * (TRANSCRIPT_TOKENS[task] + q * QUERY_TOKENS), eps * q * decode)


def session_b_cpu_minutes(config: dict, scale: str, task: str, system: str, split: str) -> int:
    eps, q = _episodes_queries(config, task)
    decode = config["decode"][task]["max_new_tokens"]
    if system == "summary":
        passes, written = 1, config.get("system_settings", {}).get("summary", {}).get("max_new_tokens", 64)
    else:
        passes, written = CONSOLIDATION.get(system, (1, 0))
    prefill = eps * (passes * TRANSCRIPT_TOKENS[task] + FICHE_CONTEXT_TOKENS.get(split, 400) + q * QUERY_TOKENS)
    return _minutes(config, scale, prefill, eps * (written + q * decode))


# --- tuning jobs (urd.replay.tune): GPU minutes, run time and memory ------------------------
# A tuning job is billed as GPU minutes: it holds one GPU from start to end. Its length is the
# trained tokens (forward + backward) at the scale's stated throughput (config `train_speed`,
# each entry saying whether it was measured or assumed) plus the stated start-up time.


def tune_minutes(config: dict, scale: str, trained_tokens: int) -> int:
    speeds = config.get("train_speed", {})
    if scale not in speeds:
        raise InputError("config/config.yaml", f"train_speed.{scale}",
                         "the tuning throughput of this scale (tokens_per_s, load_s, mem_mb)")
    s = speeds[scale]
    return max(1, math.ceil((trained_tokens / s["tokens_per_s"] + s["load_s"]) / 60))


def tune_resources(config: dict, scale: str, trained_tokens: int) -> dict:
    """Resources a tuning rule declares: one GPU (the SLURM profile routes it to the gpu
    partition), the billed GPU minutes, a wall-time limit with headroom, host memory."""
    minutes = tune_minutes(config, scale, trained_tokens)
    return {"gpu": 1, "gpu_minutes": minutes, "runtime": 2 * minutes + 10,
            "mem_mb": config["train_speed"][scale]["mem_mb"]}

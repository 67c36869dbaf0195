"""What the workflow needs of the `learned` backbone while the DAG is built (no torch)."""

from __future__ import annotations

import math

from ..data import calibrate, chains


def learned_backbones(config: dict) -> dict[str, dict]:
    """{checkpoint file: backbone entry} of every backbone trained here (a `train` block)."""
    return {b["file"]: {**b, "name": name} for name, b in config["backbones"].items() if "train" in b}


def learn_spec(config: dict) -> dict:
    """What a training job depends on besides its settings: the evaluated data (whose content
    the training stream excludes) and the decoding of the held-out control."""
    return {"rung1": calibrate.data_spec(config), "chains": chains.data_spec(config), "decode": config["decode"]}


# --- training settings and what a run of them costs -----------------------------------------
DEFAULTS = {
    "seed": 1, "n_layer": 2, "n_embd": 128, "tokens": 2_000_000, "lr": 2e-3, "lr_final": 2e-4,
    "warmup_steps": 100, "grad_clip": 1.0, "t1_per_step": 1, "t2_per_step": 2, "pairs_min": 4, "ramp_tokens": 1_000_000,
    "eval_every": 200, "eval_episodes": 4, "save_every": 100, "threads": 1,
    "max_minutes": 240, "max_memory_mb": 4000, "tied_head": 0, "full_loss": 0, "value_min": 12,
    "gate": 0, "gate_window": 100, "rwkv_lm_init": 0, "t1_query_all": 0, "t1_no_hot": 0,
    "branch_queries": 0, "gate_cold": 0,
}
# One-thread training time a trained token: a fixed part (the interpreter, the WKV's chunk loop,
# the data) and a part proportional to the blocks' weights. Measured on this project's 2-core
# machine (python -m urd.learn.train, one thread): 2 layers x 128 wide (463,872 block weights)
# ~4,000 tokens/s; 4 x 128 (927,488) ~2,450 tokens/s.
SECONDS_PER_TOKEN = 1.0e-4
SECONDS_PER_TOKEN_PER_BLOCK_WEIGHT = 1.5e-4 / 463_872
# Branched queries (branch_queries) run each query again from the transcript's end state:
# measured 2,037 and 2,138 tokens/s (the gated 2 x 128 runs to 25 M, records in weights/tried,
# two at a time on the 2 cores) against 3,946 for the same settings unbranched.
BRANCHED = 1.9
# Peak memory: weights, gradients and Adam's two moments (16 bytes a weight), the interpreter,
# torch and the held-out evaluation's rwkv model and batches (~790 MB), activations (~20 KB a
# token a layer at 128 wide, sequences of ~3,000 tokens). Measured peak RSS (the records in
# weights/tried and the shipped one): 907-1,179 MB at 2 x 128, the most for the published-point
# runs with branched queries; 1,113 MB at 4 x 128. (665 and 739 MB before the held-out
# evaluation ran inside training.)


def settings_of(raw: dict, where: str = "settings") -> dict:
    """Training settings with defaults filled; an unknown key or a bad value names the field."""
    from ..core.errors import InputError

    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise InputError(where, unknown[0], f"one of {', '.join(DEFAULTS)}", "an unknown key")
    s = {**DEFAULTS, **raw}
    for k, v in s.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise InputError(where, k, "a non-negative number", v)
    for k in ("seed", "n_layer", "n_embd", "tokens", "t1_per_step", "t2_per_step", "pairs_min", "eval_every",
              "eval_episodes", "save_every", "threads", "warmup_steps", "tied_head", "full_loss", "rwkv_lm_init",
              "t1_query_all", "t1_no_hot", "branch_queries", "gate_window"):
        if not isinstance(s[k], int):
            raise InputError(where, k, "an integer", s[k])
    if s["n_embd"] < 64 or s["n_embd"] % 64:
        raise InputError(where, "n_embd", "a positive multiple of the head size 64", s["n_embd"])
    if s["n_layer"] < 1 or s["threads"] < 1 or s["eval_every"] < 1 or s["save_every"] < 1:
        raise InputError(where, "n_layer/threads/eval_every/save_every", "at least 1",
                         (s["n_layer"], s["threads"], s["eval_every"], s["save_every"]))
    for k in ("tied_head", "full_loss", "rwkv_lm_init", "t1_query_all", "t1_no_hot", "branch_queries"):
        if s[k] not in (0, 1):
            raise InputError(where, k, "0 or 1", s[k])
    if not 1 <= s["t1_per_step"] + s["t2_per_step"] <= 16:
        raise InputError(where, "t1_per_step/t2_per_step", "between 1 and 16 episodes a step in all",
                         (s["t1_per_step"], s["t2_per_step"]))
    if not 4 <= s["pairs_min"] <= 64:
        raise InputError(where, "pairs_min", "between 4 and 64", s["pairs_min"])
    if not isinstance(s["value_min"], int) or not 1 <= s["value_min"] <= 12:
        raise InputError(where, "value_min", "an integer code length between 1 and the published 12", s["value_min"])
    if not 0 <= s["gate"] < 1:
        raise InputError(where, "gate", "a recall rate in [0, 1) (0: the curriculum follows ramp_tokens)", s["gate"])
    if s["gate_cold"] and (s["gate_cold"] >= 1 or not s["gate"] or s["t1_no_hot"] or s["gate_window"] < 2):
        # with no hot keys (t1_no_hot), or a window too short to hold both kinds, it could never pass
        raise InputError(where, "gate_cold", "a cold-key recall rate below 1, set only with gate, hot keys "
                         "(t1_no_hot 0) and a gate_window of at least 2", s["gate_cold"])
    if s["gate"] and (s["gate_window"] < 1 or not s["t1_per_step"]):
        raise InputError(where, "gate_window/t1_per_step", "at least 1 each: the gate judges T1's replies",
                         (s["gate_window"], s["t1_per_step"]))
    return s


# What a stage may not change: the model's shape and init, the seed, the head's rows, the
# curriculum's levels, the held-out set, the threads (the bytes depend on them) and the budget.
RUN_WIDE = ("seed", "n_layer", "n_embd", "tied_head", "rwkv_lm_init", "full_loss", "pairs_min", "value_min",
            "eval_episodes", "threads", "max_minutes", "max_memory_mb")


STAGE_KEYS = {"from_tokens", "settings", "level", "from_checkpoint"}


def stages_of(base: dict, raw, where: str = "stages") -> list[dict]:
    """A run's later stages, validated. Each begins at the first step that starts with at least
    `from_tokens` trained tokens (above the stage before's), with the settings in effect before
    it and its `settings` changed, and optionally the gated curriculum moved to `level` ([pairs,
    code length] of `levels`; required where a stage turns the gate on, so the curriculum does not
    fall back to its start). A stage starts with an empty gate window. The learning rate follows
    the stage's settings from the run's first token (raising `tokens` raises the rate along the
    longer cosine); the run ends at the last stage's `tokens`, training on at an earlier stage's
    floor until a later stage begins. With `from_checkpoint: true` a stage starts from the weights
    as the checkpoint holds them (bf16, untouched embedding rows zero) with Adam's state emptied:
    what continuing a shipped checkpoint, whose optimizer state is not kept, does
    (urd.learn.train.resume_from_checkpoint). Each item: {from_tokens, settings (all of them, as
    in effect), changes (as written), level (or None), from_checkpoint}."""
    from ..core.errors import InputError

    if not isinstance(raw, list):
        raise InputError(where, "stages", "a list of {from_tokens, settings, level, from_checkpoint}", raw)
    out, prev, last = [], base, 0
    for i, st in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(st, dict) or "from_tokens" not in st or set(st) - STAGE_KEYS:
            raise InputError(at, "from_tokens/settings/level/from_checkpoint",
                             "a mapping of from_tokens, settings, level and from_checkpoint only", st)
        start, changes, level = st["from_tokens"], st.get("settings", {}), st.get("level")
        fresh = st.get("from_checkpoint", False)
        if not isinstance(fresh, bool):
            raise InputError(at, "from_checkpoint", "true or false", fresh)
        if not isinstance(start, int) or isinstance(start, bool) or start <= last:
            raise InputError(at, "from_tokens", f"an integer token count above {last:,} (the stage before it)", start)
        if not isinstance(changes, dict):
            raise InputError(at, "settings", "a mapping of settings to change", changes)
        fixed = [k for k in RUN_WIDE if k in changes and changes[k] != base[k]]
        if fixed:
            raise InputError(f"{at}.settings", fixed[0], f"the run's own {base[fixed[0]]} (a stage cannot change "
                             f"{', '.join(RUN_WIDE)})", changes[fixed[0]])
        s = settings_of({**prev, **changes}, f"{at}.settings")
        points = levels(s)
        if level is not None and (not s["gate"] or not isinstance(level, list) or tuple(level) not in points):
            raise InputError(at, "level", "a [pairs, code length] point of the gated curriculum "
                             f"(with gate set): one of {[list(x) for x in points]}", level)
        if level is None and s["gate"] and not prev["gate"]:
            raise InputError(at, "level", "the gated curriculum's point to start at, where the stage turns the "
                             f"gate on: one of {[list(x) for x in points]}", level)
        out.append({"from_tokens": start, "settings": s, "changes": dict(changes),
                    "level": None if level is None else [int(x) for x in level], "from_checkpoint": fresh})
        prev, last = s, start
    return out


def levels(s: dict) -> list[tuple[int, int]]:
    """The gated curriculum's (pairs, code length) points, easiest first: from (pairs_min,
    value_min) the code grows by two characters, then the pairs by half, in turn, to (64, 12)."""
    pairs, length, out = s["pairs_min"], s["value_min"], []
    grow_code = True
    while True:
        out.append((pairs, length))
        if (pairs, length) == (64, 12):
            return out
        if (grow_code and length < 12) or pairs == 64:
            length = min(12, length + 2)
        else:
            pairs = min(64, max(pairs + 1, round(pairs * 1.5)))
        grow_code = not grow_code


def _weights(s: dict, blocks_only: bool) -> int:
    from ..backbone.shapes import rwkv7_shapes

    shapes = rwkv7_shapes(s["n_layer"], s["n_embd"], 64, 65536)
    return sum(math.prod(v) for k, v in shapes.items() if k.startswith("blocks.") or not blocks_only)


def estimate(s: dict) -> dict:
    """A run's one-thread minutes and peak memory (MB), from the measured figures above."""
    per_token = (SECONDS_PER_TOKEN + SECONDS_PER_TOKEN_PER_BLOCK_WEIGHT * _weights(s, True)) * (
        BRANCHED if s["branch_queries"] else 1)
    mem = 16 * _weights(s, False) / 1e6 + 790 + 20e3 * s["n_embd"] / 128 * 3000 * s["n_layer"] / 1e6
    return {"minutes": s["tokens"] * per_token / 60, "memory_mb": mem}


def run_estimate(s: dict, stages: list[dict] = ()) -> dict:
    """`estimate` of a staged run: each stage's tokens (from its from_tokens to the next stage's,
    the last to its own tokens) at its own settings' speed; `tokens`, where the run ends."""
    starts = [0] + [st["from_tokens"] for st in stages]
    each = [s] + [st["settings"] for st in stages]
    end = max(starts[-1], each[-1]["tokens"])
    minutes = sum(estimate({**x, "tokens": hi - lo})["minutes"] for x, lo, hi in zip(each, starts, starts[1:] + [end]))
    return {"minutes": minutes, "memory_mb": estimate(s)["memory_mb"], "tokens": end}


def check_budget(s: dict, where: str = "settings", stages: list[dict] = ()) -> dict:
    """Refuse, before training starts, a run its time or memory budget cannot hold (with stages,
    each stage's tokens at its own speed: run_estimate)."""
    from ..core.errors import InputError

    e = run_estimate(s, stages)
    if e["minutes"] > s["max_minutes"]:
        fit = int(e["tokens"] * s["max_minutes"] / e["minutes"])
        raise InputError(where, "tokens", f"at most ~{fit:,} tokens to fit max_minutes {s['max_minutes']} "
                         f"(~{e['minutes']:,.0f} one-thread minutes estimated)", e["tokens"])
    if e["memory_mb"] > s["max_memory_mb"]:
        raise InputError(where, "max_memory_mb", f"at least ~{e['memory_mb']:,.0f} MB for this shape",
                         s["max_memory_mb"])
    return e


def resources(backbone: dict) -> dict:
    """What the training rule declares: threads, CPU seconds, a wall-time limit and memory."""
    at = f"backbones.{backbone.get('name', '<learned>')}.train"
    s = settings_of(backbone["train"]["settings"], f"{at}.settings")
    e = check_budget(s, f"{at}.settings", stages_of(s, backbone["train"].get("stages", []), f"{at}.stages"))
    return {"threads": s["threads"], "cpu_seconds": math.ceil(e["minutes"] * 60),
            "runtime": 2 * math.ceil(e["minutes"]) + 10, "mem_mb": math.ceil(e["memory_mb"] * 1.25)}

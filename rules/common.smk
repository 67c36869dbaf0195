# Helpers and constants shared by the rules: paths, per-job inputs and params, digests. The
# rule files hold rules only. Everything here comes from urd.workflow, which loads no model.

from urd import workflow as W

ENV = "../envs/urd.yaml"

# --- data ----------------------------------------------------------------------------------
T1_DATA = f"data/{PROFILE}/t1.jsonl"
T2_DATA = "data/t2.jsonl"
DATA = {"t1": T1_DATA, "t2": T2_DATA}
MANIFEST = "calibration/manifest.sha256"
PLANTING_MANIFEST = "calibration/planting/manifest.sha256"  # the planting suite's world
# What each side of the session boundary may read (urd.data.views), pinned like the data.
SESSION_A = {t: str(W.view_path(p, "session_a")) for t, p in DATA.items()}
SESSION_B = {t: str(W.view_path(p, "session_b")) for t, p in DATA.items()}


def verified(path):
    """The stamp a consumer takes as input: it exists only if `path` matched the manifest."""
    return f"results/urd/verified/{path}.sha256"


def manifest_for(wildcards):
    if wildcards.path.startswith("models/"):
        return BACKBONE_MANIFEST
    return PLANTING_MANIFEST if wildcards.path.startswith("data/planting/") else MANIFEST


# --- backbones -----------------------------------------------------------------------------
BACKBONE_MANIFEST = "calibration/backbones.sha256"
FETCHED = {b["file"]: b for b in config["backbones"].values() if "source" in b}
GENERATED = {b["file"]: b for b in config["backbones"].values() if "generate" in b}


def model_path(scale):
    return f"models/{config['backbones'][scale]['file']}"


def fetch_args(wildcards):
    """The fetch job's pin and sources; a file missing from the manifest is refused by the job."""
    b = FETCHED[wildcards.file]
    src = b["source"]
    pinned = W.read_manifest(BACKBONE_MANIFEST).get(f"models/{b['file']}", "unpinned")
    args = ["--repo", src["repo"], "--revision", src["revision"], "--base-url", src["base_url"]]
    args += ["--file", b["file"], "--sha256", pinned]
    if b.get("size"):
        args += ["--size", str(b["size"])]
    for m in b.get("mirrors", []):
        args += ["--mirror", m]
    return args


# --- the benchmark cells -------------------------------------------------------------------
TASKS = ["t1", "t2"]
SPLITS = sorted(config["profiles"][PROFILE]["budgets"])
BUDGETS = config["profiles"][PROFILE]["budgets"]
SYSTEMS = list(config["systems"])
CELL = "results/urd/{scale}/{system}/{task}/{split}"
RUN_CODE = W.code_digest("urd.harness.run")


def cell_code(wildcards):
    """The runner's code and the cell's own system module (a plug-in's edits rerun its cells only)."""
    return W.code_digest("urd.harness.run", W.system_module(wildcards.system, config["plugins"]))


def cell_spec_json(wildcards):
    return json.dumps(W.cell_spec(config, wildcards.task, wildcards.get("system")), sort_keys=True)


def cpu_seconds(step):
    return lambda wc: W.cell_cpu_seconds(
        config, wc.scale, wc.task, step, wc.get("system"), wc.get("split")
    )


def model_inputs(wildcards):
    model = model_path(wildcards.scale)
    return {"model": model, "model_checked": verified(model)}


def prefill_files(wildcards):
    root = f"results/urd/{wildcards.scale}/prefill/{wildcards.task}"
    return {"prefill": f"{root}.json", "states": f"{root}.bin"}


def session_a_inputs(wildcards):
    return {
        **model_inputs(wildcards),
        "sessions": SESSION_A[wildcards.task],
        "checked": verified(SESSION_A[wildcards.task]),
    }


def control_inputs(wildcards):
    task = wildcards.task
    return {
        **session_a_inputs(wildcards),
        **prefill_files(wildcards),
        "prompts": SESSION_B[task],
        "checked": [verified(SESSION_A[task]), verified(SESSION_B[task])],
    }


def consolidate_inputs(wildcards):
    # replay systems also read their tuning artifacts
    return {**session_a_inputs(wildcards), **prefill_files(wildcards), **replay_inputs(wildcards)}


def answer_inputs(wildcards):
    return {
        **model_inputs(wildcards),
        "prompts": SESSION_B[wildcards.task],
        "checked": verified(SESSION_B[wildcards.task]),
        "fiches": f"results/urd/{wildcards.scale}/{wildcards.system}/{wildcards.task}/{wildcards.split}/fiches.jsonl",
    }


def judge_inputs(wildcards):
    w = wildcards
    cell = f"results/urd/{w.scale}/{w.system}/{w.task}/{w.split}" if "system" in w.keys() else None
    out = {"data": DATA[w.task], "checked": verified(DATA[w.task])}
    if cell:
        return {**out, "raw": f"{cell}/raw.jsonl", "fiches": f"{cell}/fiches.jsonl"}
    return {**out, "raw": f"results/urd/{w.scale}/control/{w.task}/raw.jsonl"}


def summary_inputs(wildcards):
    root = f"results/urd/{wildcards.scale}"
    cells = dict(system=SYSTEMS, task=TASKS, split=SPLITS)
    return {
        "control": expand(f"{root}/control/{{task}}/responses.jsonl", task=TASKS),
        "cells": expand(f"{root}/{{system}}/{{task}}/{{split}}/responses.jsonl", **cells),
        "fiches": expand(f"{root}/{{system}}/{{task}}/{{split}}/fiches.jsonl", **cells),
        "model_checked": verified(model_path(wildcards.scale)),
        "manifest": MANIFEST,
    }


def summary_static(wildcards):
    modules = [W.system_module(s, config["plugins"]) for s in SYSTEMS]
    return json.dumps(
        {
            "config_sha256": W.config_digest(config),
            "code_sha256": W.code_digest("urd.harness.run", *modules),
            "master_seed": config["master_seed"],
            "checkpoint": config["backbones"][wildcards.scale]["file"],
        },
        sort_keys=True,
    )


# --- replay baselines ----------------------------------------------------------------------
REPLAY = W.replay_plan.replay_recipes(config)  # {system: recipe}
REPLAY_RECIPES = sorted(set(REPLAY.values()))
REPLAY_SETTINGS = config.get("replay", {})


def replay_artifact(scale, recipe, sha, name="costs.json"):
    return f"artifacts/replay/{scale}/{recipe}/{sha}/{name}"


def replay_inputs(wildcards):
    """Session-A inputs of a replay system: the artifacts of every evaluated episode."""
    recipe = REPLAY.get(wildcards.system)
    if recipe is None:
        return {}
    shas = [t.sha256 for t in W.replay_plan.transcripts(config, wildcards.task)]
    names = ("costs.json", "time_state.npy")
    return {
        "artifacts": [replay_artifact(wildcards.scale, recipe, s, n) for s in shas for n in names]
    }


def replay_artifacts_dir(wildcards):
    recipe = REPLAY.get(wildcards.system)
    return f"artifacts/replay/{wildcards.scale}/{recipe}" if recipe else ""


def tune_resource(key):
    # estimated from the recipe's trained tokens at the scale's stated throughput (urd.cost.estimate)
    def value(wc):
        tuning = W.replay_plan.recipe_for(config, wc.scale, wc.recipe, wc.sha)
        return W.tune_resources(config, wc.scale, tuning.trained_tokens)[key]

    return value


def tune_inputs(wildcards):
    t = W.replay_plan.by_sha(config, wildcards.sha)
    return {**model_inputs(wildcards), "data": DATA[t.task], "checked": verified(DATA[t.task])}


def replay_costs_inputs(wildcards):
    transcripts = W.replay_plan.transcripts(config)
    return [
        replay_artifact(wildcards.scale, r, t.sha256) for r in REPLAY_RECIPES for t in transcripts
    ]


# --- tables, figures and controls ----------------------------------------------------------
T = W.tables
PUB_SCALES = T.published_scales(config)
BOOT = json.dumps(config["publish"]["bootstrap"], sort_keys=True)
DPI = config["publish"]["dpi"]
TABLES_CODE = W.code_digest("urd.tables.__main__")
SUMMARY = "results/urd/{scale}/summary.json"
CTL = config["controls"]
# the controls load the replay systems by name (their out_of_contract label)
CONTROLS_CODE = W.code_digest("urd.controls.__main__", "urd.systems.replay")
CEIL_RECIPES = CTL["ceiling"]["recipes"]
BITS = CTL["bits_curve"]


def control_job_inputs(recipes, tasks):
    def inputs(wildcards):
        model = model_path(wildcards.scale)
        out = {"model": model, "checked": [verified(model)] + [verified(DATA[t]) for t in tasks]}
        for t in tasks:
            out[f"data_{t}"] = DATA[t]
            out[f"control_{t}"] = f"results/urd/{wildcards.scale}/control/{t}/responses.jsonl"
        out["artifacts"] = [
            f for r in recipes for f in T.artifact_files(config, wildcards.scale, r, tasks)
        ]
        return out

    return inputs


def control_params(task):
    """The cell spec (decode lengths for every task) and the provenance known at DAG time."""

    def params(wildcards):
        static = {
            "config_sha256": W.config_digest(config),
            "code_sha256": CONTROLS_CODE,
            "master_seed": config["master_seed"],
            "checkpoint": config["backbones"][wildcards.scale]["file"],
        }
        spec = W.cell_spec(config, task) | {"decode": config["decode"]}
        return {
            "spec": json.dumps(spec, sort_keys=True),
            "static": json.dumps(static, sort_keys=True),
        }

    return params

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
    if wildcards.path.startswith("data/urd2/"):
        return URD2_MANIFEST
    if wildcards.path.startswith("data/urd3/"):
        return URD3_MANIFEST
    return PLANTING_MANIFEST if wildcards.path.startswith("data/planting/") else MANIFEST


# --- backbones -----------------------------------------------------------------------------
BACKBONE_MANIFEST = "calibration/backbones.sha256"
FETCHED = {b["file"]: b for b in config["backbones"].values() if "source" in b}
GENERATED = {b["file"]: b for b in config["backbones"].values() if "generate" in b}
LEARNED = W.learned_backbones(config)  # trained here (urd.learn): unpacked if shipped, else trained
try:
    for _b in LEARNED.values():  # a bad training setting fails here, naming it, not in the job
        W.learn_resources(_b)
except W.UrdError as exc:
    raise WorkflowError(f"urd config: {exc}") from None


def learned_check(scale):
    """The learned backbone's check record (which check passed at use), or nothing."""
    file = config["backbones"][scale]["file"]
    return [f"results/urd/verified/models/{file}.check.json"] if file in LEARNED else []


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
TASKS = list(W.TASKS)
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


def job_resources(seconds, rows):
    """A CPU job's resources: its estimated CPU seconds (the spend line) and, from them and the
    states it holds at once, the memory and wall-time limit a cluster gives it
    (urd.cost.estimate.job_resources). `seconds`, `rows`: functions of the wildcards."""

    def resource(key):
        return lambda wc: W.job_resources(config, wc.scale, seconds(wc), rows(wc))[key]

    return {"cpu_seconds": seconds, "mem_mb": resource("mem_mb"), "runtime": resource("runtime")}


def cell_resources(step):
    seconds = lambda wc: W.cell_cpu_seconds(
        config, wc.scale, wc.task, step, wc.get("system"), wc.get("split")
    )
    return job_resources(seconds, lambda wc: W.cell_rows(config, wc.task, step))


def answer_rows(tasks):
    """A control job answers one task's cell at a time: its largest."""
    return max(W.cell_rows(config, t, "answer") for t in tasks)


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


def receipts(outputs):
    """The receipts the runner wrote beside these outputs of plug-in jobs (urd.core.receipt)."""
    return [str(o).removesuffix(".jsonl") + ".receipt.json" for o in outputs]


def judge_inputs(wildcards):
    w = wildcards
    cell = f"results/urd/{w.scale}/{w.system}/{w.task}/{w.split}" if "system" in w.keys() else None
    out = {"data": DATA[w.task], "checked": verified(DATA[w.task])}
    if cell:
        files = {"raw": f"{cell}/raw.jsonl", "fiches": f"{cell}/fiches.jsonl"}
        return {**out, **files, "receipts": receipts(files.values())}
    return {**out, "raw": f"results/urd/{w.scale}/control/{w.task}/raw.jsonl"}


def summary_inputs(wildcards):
    root = f"results/urd/{wildcards.scale}"
    cells = dict(system=SYSTEMS, task=TASKS, split=SPLITS)
    return {
        "control": expand(f"{root}/control/{{task}}/responses.jsonl", task=TASKS),
        "cells": expand(f"{root}/{{system}}/{{task}}/{{split}}/responses.jsonl", **cells),
        "fiches": expand(f"{root}/{{system}}/{{task}}/{{split}}/fiches.jsonl", **cells),
        "model_checked": verified(model_path(wildcards.scale)),
        "model_check": learned_check(wildcards.scale),
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
# every recipe a tuning job may run: rung 1's, rung 2's doses (urd.rung2.dose) and rung 3's
TUNE_RECIPES = sorted(
    set(REPLAY_RECIPES)
    | set(W.urd2.dose_recipes(config))
    | set(W.urd3.replay_recipes(config).values())
)
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


# where tuning jobs run (urd.cost.placement): a cluster's GPU node, a local GPU, or the CPU here
TUNE_PLACE = W.placement(sys.argv[1:])


def tune_resource(key):
    # estimated from the recipe's steps and ctx at the scale's measured throughput on the device
    # the job runs on (urd.cost.estimate)
    def value(wc):
        tuning = W.replay_plan.recipe_for(config, wc.scale, wc.recipe, wc.sha)
        return W.tune_resources(config, wc.scale, tuning.steps, tuning.ctx, TUNE_PLACE)[key]

    return value


def tune_inputs(wildcards):
    t = W.replay_plan.by_sha(config, wildcards.sha)
    data = DATA[t.task] if t.task in DATA else U3_A[t.task]  # a rung-1 task or a rung-3 family
    return {**model_inputs(wildcards), "data": data, "checked": verified(data)}


def writeup_inputs(wildcards):
    """What decides whether a cell is comparable at a scale (urd.tables.writeup.not_comparable):
    its replay tuning losses, and a learned backbone's training record (its head's rows)."""
    out = {"costs": f"results/urd/{wildcards.scale}/replay_costs.json"} if REPLAY_RECIPES else {}
    if "train" in config["backbones"].get(wildcards.scale, {}):  # a backbone trained here
        out["record"] = f"{model_path(wildcards.scale)}.train.json"
    return out


def replay_costs_inputs(wildcards):
    # both files of each artifact: the fold reads the state to check the artifact whole
    transcripts = W.replay_plan.transcripts(config)
    names = ("costs.json", "time_state.npy")
    return [
        replay_artifact(wildcards.scale, r, t.sha256, n)
        for r in REPLAY_RECIPES
        for t in transcripts
        for n in names
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


# --- rung 2: chains, the Pareto sweep, dose-response (rules/urd2.smk) ----------------------
U2 = W.urd2
URD2_MANIFEST = "calibration/urd2/manifest.sha256"
CHAIN_VARIANTS = list(W.chain_data.VARIANTS)
CHAIN_SESSIONS = config["urd2"]["data"]["sessions"]
CHAIN_ROOT = "results/urd2/{scale}/chains"
U2_SYSTEMS = sorted(
    {
        s
        for scale in config["backbones"]
        for part in ("chains", "pareto")
        for s in U2.settings(config, scale, part)["systems"]
    }
)
U2_SPLITS = sorted(
    {s for scale in config["backbones"] for s in U2.settings(config, scale, "chains")["budgets"]}
)
URD2_CODE = W.code_digest("urd.rung2.cli")


def chain_file(variant, k, side=None):
    return str(W.chain_data.session_path(variant, int(k), side))


def chain_data_files():
    return [str(p) for p in W.chain_data.all_paths(W.chain_data.data_spec(config), CHAIN_VARIANTS)]


def chains_of(wildcards):
    return U2.settings(config, wildcards.scale, "chains")


def u2_code(wildcards):
    return W.code_digest("urd.rung2.cli", W.system_module(wildcards.system, config["plugins"]))


def chain_task(wildcards):
    return W.chain_data.task_of(wildcards.variant)


def chain_spec_json(wildcards):
    spec = U2.chain_spec(config, wildcards.scale, chain_task(wildcards), wildcards.get("system"))
    return json.dumps(spec, sort_keys=True)


def chain_views(variant, side, n):
    files = [chain_file(variant, k, side) for k in range(1, n + 1)]
    return {"views": files, "checked": [verified(f) for f in files]}


def chain_control_inputs(wildcards):
    n = chains_of(wildcards)["sessions"]
    a = chain_views(wildcards.variant, "session_a", n)
    b = chain_views(wildcards.variant, "session_b", n)
    return {
        **model_inputs(wildcards),
        "sessions": a["views"],
        "prompts": b["views"],
        "checked": a["checked"] + b["checked"],
    }


def chain_cell(wildcards):
    w = wildcards
    return f"results/urd2/{w.scale}/chains/{w.system}/{w.variant}/{w.split}"


def chain_consolidate_inputs(wildcards):
    """Session k's session-A view, and the fiches of boundary k-1 (none when fresh, or k = 1)."""
    k = int(wildcards.step[1:])
    view = chain_file(wildcards.variant, k, "session_a")
    out = {**model_inputs(wildcards), "sessions": view, "checked": verified(view)}
    if wildcards.step.startswith("b") and k > 1:
        out["prior"] = f"{chain_cell(wildcards)}/b{k - 1}/fiches.jsonl"
    return out


def chain_answer_inputs(wildcards):
    k = int(wildcards.k)
    b = chain_views(wildcards.variant, "session_b", k)
    out = {
        **model_inputs(wildcards),
        "prompts": b["views"],
        "checked": b["checked"],
        "fiches": f"{chain_cell(wildcards)}/b{k}/fiches.jsonl",
    }
    if k > 1:
        out["fresh"] = f"{chain_cell(wildcards)}/f{k}/fiches.jsonl"
    return out


def chain_judge_inputs(wildcards):
    n = chains_of(wildcards)["sessions"]
    data = [chain_file(wildcards.variant, k) for k in range(1, n + 1)]
    out = {"data": data, "checked": [verified(f) for f in data]}
    if "system" not in wildcards.keys():
        return {
            **out,
            "raw": f"{CHAIN_ROOT.format(scale=wildcards.scale)}/control/{wildcards.variant}/raw.jsonl",
        }
    cell = chain_cell(wildcards)
    steps = [f"b{k}" for k in range(1, n + 1)] + [f"f{k}" for k in range(2, n + 1)]
    return {
        **out,
        "raw": [f"{cell}/b{k}/raw.jsonl" for k in range(1, n + 1)],
        "fiches": [f"{cell}/{s}/fiches.jsonl" for s in steps],
        "receipts": receipts(
            [f"{cell}/b{k}/raw.jsonl" for k in range(1, n + 1)]
            + [f"{cell}/{s}/fiches.jsonl" for s in steps]
        ),
    }


def chain_summary_cells(scale):
    c = U2.settings(config, scale, "chains")
    root = CHAIN_ROOT.format(scale=scale)
    return {
        f"{s}:{v}:{sp}": f"{root}/{s}/{v}/{sp}/responses.jsonl"
        for s in c["systems"]
        for v in c["variants"]
        for sp in c["budgets"]
    }


def chain_summary_controls(scale):
    root = CHAIN_ROOT.format(scale=scale)
    c = U2.settings(config, scale, "chains")
    return {v: f"{root}/control/{v}/responses.jsonl" for v in c["variants"]}


def chain_summary_inputs(wildcards):
    return {
        "cells": list(chain_summary_cells(wildcards.scale).values()),
        "controls": list(chain_summary_controls(wildcards.scale).values()),
    }


def chain_summary_args(wildcards):
    cells = chain_summary_cells(wildcards.scale)
    controls = chain_summary_controls(wildcards.scale)
    return ["--cell", *[f"{k}={p}" for k, p in cells.items()]] + [
        "--control",
        *[f"{v}={p}" for v, p in controls.items()],
    ]


def u2_static(wildcards):
    return json.dumps(
        {
            "config_sha256": W.config_digest(config),
            "code_sha256": URD2_CODE,
            "master_seed": config["master_seed"],
            "checkpoint": config["backbones"][wildcards.scale]["file"],
        },
        sort_keys=True,
    )


def sweep_cell(wildcards):
    w = wildcards
    return f"results/urd2/{w.scale}/pareto/{w.system}/{w.task}"


def sweep_answer_inputs(wildcards):
    return {
        **model_inputs(wildcards),
        "prompts": SESSION_B[wildcards.task],
        "checked": verified(SESSION_B[wildcards.task]),
        "fiches": f"{sweep_cell(wildcards)}/fiches.jsonl",
    }


def sweep_priority(step):
    """A sweep job's scheduling priority: its estimated CPU seconds to the end of its chain (a
    consolidation's own and its answer's), so that with cores to spare the longest chain starts
    first and the run does not end on one note decoding alone."""
    steps = ("consolidate", "answer") if step == "consolidate" else ("answer",)
    return lambda wc: sum(
        U2.sweep_cpu_seconds(config, wc.scale, s, wc.task, wc.system) for s in steps
    )


def sweep_spec_json(wildcards):
    spec = U2.sweep_spec(config, wildcards.scale, wildcards.task, wildcards.get("system"))
    return json.dumps(spec, sort_keys=True)


def sweep_cells(scale):
    p = U2.settings(config, scale, "pareto")
    root = f"results/urd2/{scale}/pareto"
    return {f"{s}:{t}": f"{root}/{s}/{t}/responses.jsonl" for s in p["systems"] for t in p["tasks"]}


def sweep_summary_inputs(wildcards):
    return {**model_inputs(wildcards), "cells": list(sweep_cells(wildcards.scale).values())}


def dose_artifacts(scale):
    d = U2.settings(config, scale, "dose")
    shas = [
        t.sha256
        for task in d["tasks"]
        for t in W.replay_plan.transcripts(config, task, episodes=d["episodes"])
    ]
    names = ("costs.json", CTL["state_file"])
    recipes = [W.dose.recipe_name(x) for x in d["doses"]]
    return [replay_artifact(scale, r, s, n) for r in recipes for s in shas for n in names]


def dose_inputs(wildcards):
    d = U2.settings(config, wildcards.scale, "dose")
    data = {f"data_{t}": DATA[t] for t in d["tasks"]}
    return {
        **model_inputs(wildcards),
        **data,
        "checked": [verified(DATA[t]) for t in d["tasks"]],
        "artifacts": dose_artifacts(wildcards.scale),
    }

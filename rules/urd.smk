# urd rung 1: the oracle ceiling and session statistics.


rule oracle:
    input:
        t1=T1_DATA,
        t2=T2_DATA,
        manifest=MANIFEST,
        checked=[verified(T1_DATA), verified(T2_DATA)],
    output:
        "results/urd/oracle.json",
    params:
        spec=json.dumps(
            {**data_spec(config), "profiles": config["profiles"]}, sort_keys=True
        ),
        code=code_digest("urd.oracle", "urd.tasks", "urd.backbone.tokenizer"),
    shell:
        "{PY} -m urd.oracle --spec {params.spec:q} --t1 {input.t1} --t2 {input.t2}"
        " --manifest {input.manifest} --out {output}"


# --- the benchmark: control (score A), session B per system x split, fold -------------------

from urd.estimate import control_cpu_minutes, session_b_cpu_minutes
from urd.run import cell_spec
from urd.systems.registry import resolve as resolve_system

TASKS = ["t1", "t2"]
SPLITS = sorted(config["profiles"][PROFILE]["budgets"])
BUDGETS = config["profiles"][PROFILE]["budgets"]
SYSTEMS = list(config["systems"])
DATA = {"t1": T1_DATA, "t2": T2_DATA}
HARNESS_CODE = code_digest(
    "urd.run", "urd.harness", "urd.systems", "urd.backbone.adapter", "urd.backbone.state",
    "urd.backbone.rwkv_pkg", "urd.backbone.tokenizer", "urd.tasks", "urd.replay.artifact",
    "urd.controls.tuned",
)

# A system that does not exist or lacks the interface fails here, before any model is loaded.
for _name in SYSTEMS:
    resolve_system(_name, config["plugins"], source="config/config.yaml (systems)")


wildcard_constraints:
    scale="|".join(re.escape(s) for s in config["backbones"]),
    task="t1|t2",
    split="|".join(SPLITS),
    system="|".join(SYSTEMS),


def cell_inputs(wildcards):
    model = model_path(wildcards.scale)
    data = DATA[wildcards.task]
    return {"model": model, "data": data, "checked": [verified(model), verified(data)]}


rule control:
    input:
        unpack(cell_inputs),
    output:
        "results/urd/{scale}/control/{task}/responses.jsonl",
    params:
        spec=lambda wc: json.dumps(cell_spec(config, wc.task), sort_keys=True),
        code=HARNESS_CODE,
    resources:
        cpu_minutes=lambda wc: control_cpu_minutes(config, wc.scale, wc.task),
    log:
        "logs/urd/{scale}/control/{task}.log",
    shell:
        "{PY} -m urd.run --checkpoint {input.model} --task {wildcards.task} --data {input.data}"
        " --system control --spec {params.spec:q} --out {output} 2> {log}"


def session_b_inputs(wildcards):
    # replay systems also read their tuning artifacts (replay_inputs: rules/replay.smk)
    return {**cell_inputs(wildcards), **replay_inputs(wildcards)}


rule session_b:
    input:
        unpack(session_b_inputs),
    output:
        "results/urd/{scale}/{system}/{task}/{split}/responses.jsonl",
    params:
        spec=lambda wc: json.dumps(cell_spec(config, wc.task), sort_keys=True),
        budget=lambda wc: BUDGETS[wc.split],
        artifacts=lambda wc: replay_artifacts_arg(wc),
        code=HARNESS_CODE,
    resources:
        cpu_minutes=lambda wc: session_b_cpu_minutes(
            config, wc.scale, wc.task, wc.system, wc.split
        ),
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.log",
    shell:
        "{PY} -m urd.run --checkpoint {input.model} --task {wildcards.task} --data {input.data}"
        " --system {wildcards.system} --split {wildcards.split} --budget {params.budget}"
        " --spec {params.spec:q} {params.artifacts} --out {output} 2> {log}"


def summary_inputs(wildcards):
    root = f"results/urd/{wildcards.scale}"
    return {
        "control": expand(f"{root}/control/{{task}}/responses.jsonl", task=TASKS),
        "cells": expand(
            f"{root}/{{system}}/{{task}}/{{split}}/responses.jsonl",
            system=SYSTEMS, task=TASKS, split=SPLITS,
        ),
        "model_checked": verified(model_path(wildcards.scale)),
        "manifest": MANIFEST,
    }


rule summary:
    input:
        unpack(summary_inputs),
    output:
        "results/urd/{scale}/summary.json",
    params:
        root="results/urd/{scale}",
        static=lambda wc: json.dumps(
            {
                "config_sha256": config_digest(config),
                "code_sha256": HARNESS_CODE,
                "master_seed": config["master_seed"],
                "checkpoint": config["backbones"][wc.scale]["file"],
            },
            sort_keys=True,
        ),
        code=code_digest("urd.summarize", "urd.harness.fold", "urd.harness.scoring"),
    shell:
        "{PY} -m urd.summarize --scale {wildcards.scale} --root {params.root}"
        " --static {params.static:q} --checkpoint-stamp {input.model_checked}"
        " --manifest {input.manifest} --out {output}"

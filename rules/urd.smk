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
        code=code_digest("urd.oracle"),
    shell:
        "{PY} -m urd.oracle --spec {params.spec:q} --t1 {input.t1} --t2 {input.t2}"
        " --manifest {input.manifest} --verified {input.checked} --out {output}"


# --- the benchmark -----------------------------------------------------------------------
# prefill (each transcript's state, once) -> control (score A)
#                                          -> consolidate (session A: fiches) -> answer (session B)
# -> judge (replies + expected answers = responses.jsonl) -> summary.
# consolidate reads the session-A view (transcripts); answer is a fresh process that reads the
# session-B view (header, prompts) and the fiches, nothing else.

from urd.estimate import cell_cpu_seconds
from urd.run import cell_spec
from urd.systems.registry import resolve as resolve_system, system_module

TASKS = ["t1", "t2"]
SPLITS = sorted(config["profiles"][PROFILE]["budgets"])
BUDGETS = config["profiles"][PROFILE]["budgets"]
SYSTEMS = list(config["systems"])
DATA = {"t1": T1_DATA, "t2": T2_DATA}
RUN_CODE = code_digest("urd.run")


def cell_code(wildcards):
    """The runner's code and the cell's own system module (a plug-in's edits rerun its cells only)."""
    return code_digest("urd.run", system_module(wildcards.system, config["plugins"]))
CELL = "results/urd/{scale}/{system}/{task}/{split}"

# A system that does not exist or lacks the interface fails here, before any model is loaded.
for _name in SYSTEMS:
    resolve_system(_name, config["plugins"], source="config/config.yaml (systems)")
# ... and so does every registered plug-in, listed or not
for _name in config["plugins"]:
    resolve_system(_name, config["plugins"], source="config/config.yaml (plugins)")


wildcard_constraints:
    scale="|".join(re.escape(s) for s in config["backbones"]),
    task="t1|t2",
    split="|".join(SPLITS),
    system="|".join(SYSTEMS),


def _spec(wc):
    return json.dumps(cell_spec(config, wc.task), sort_keys=True)


def model_inputs(wildcards):
    model = model_path(wildcards.scale)
    return {"model": model, "model_checked": verified(model)}


def prefill_index(wildcards):
    return f"results/urd/{wildcards.scale}/prefill/{wildcards.task}.json"


rule prefill:
    input:
        unpack(model_inputs),
        sessions=lambda wc: SESSION_A[wc.task],
        checked=lambda wc: verified(SESSION_A[wc.task]),
    output:
        index="results/urd/{scale}/prefill/{task}.json",
        states="results/urd/{scale}/prefill/{task}.bin",
    params:
        spec=_spec,
        code=RUN_CODE,
    resources:
        cpu_seconds=lambda wc: cell_cpu_seconds(config, wc.scale, wc.task, "prefill"),
    log:
        "logs/urd/{scale}/prefill/{task}.log",
    shell:
        "{PY} -m urd.run prefill --checkpoint {input.model} --sessions {input.sessions}"
        " --spec {params.spec:q} --verified {input.model_checked} {input.checked}"
        " --out {output.index} 2> {log}"


rule control:
    input:
        unpack(model_inputs),
        sessions=lambda wc: SESSION_A[wc.task],
        prompts=lambda wc: SESSION_B[wc.task],
        checked=lambda wc: [verified(SESSION_A[wc.task]), verified(SESSION_B[wc.task])],
        prefill=prefill_index,
        states=lambda wc: prefill_index(wc).replace(".json", ".bin"),
    output:
        "results/urd/{scale}/control/{task}/raw.jsonl",
    params:
        spec=_spec,
        code=RUN_CODE,
    resources:
        cpu_seconds=lambda wc: cell_cpu_seconds(config, wc.scale, wc.task, "control"),
    log:
        "logs/urd/{scale}/control/{task}.log",
    shell:
        "{PY} -m urd.run control --checkpoint {input.model} --sessions {input.sessions}"
        " --prompts {input.prompts} --prefill {input.prefill} --spec {params.spec:q}"
        " --verified {input.model_checked} {input.checked} --out {output} 2> {log}"


def consolidate_inputs(wildcards):
    # replay systems also read their tuning artifacts (replay_inputs: rules/replay.smk)
    return {
        **model_inputs(wildcards),
        "sessions": SESSION_A[wildcards.task],
        "checked": verified(SESSION_A[wildcards.task]),
        "prefill": prefill_index(wildcards),
        "states": prefill_index(wildcards).replace(".json", ".bin"),
        **replay_inputs(wildcards),
    }


rule consolidate:
    input:
        unpack(consolidate_inputs),
    output:
        CELL + "/fiches.jsonl",
    params:
        spec=_spec,
        budget=lambda wc: BUDGETS[wc.split],
        artifacts=lambda wc: replay_artifacts_arg(wc),
        code=cell_code,
    resources:
        cpu_seconds=lambda wc: cell_cpu_seconds(
            config, wc.scale, wc.task, "consolidate", wc.system, wc.split
        ),
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.consolidate.log",
    shell:
        "{PY} -m urd.run consolidate --checkpoint {input.model} --sessions {input.sessions}"
        " --prefill {input.prefill} --task {wildcards.task} --system {wildcards.system}"
        " --split {wildcards.split} --budget {params.budget} --spec {params.spec:q}"
        " {params.artifacts} --verified {input.model_checked} {input.checked} --out {output} 2> {log}"


rule answer:
    input:
        unpack(model_inputs),
        prompts=lambda wc: SESSION_B[wc.task],
        checked=lambda wc: verified(SESSION_B[wc.task]),
        fiches=CELL + "/fiches.jsonl",
    output:
        CELL + "/raw.jsonl",
    params:
        spec=_spec,
        code=cell_code,
    resources:
        cpu_seconds=lambda wc: cell_cpu_seconds(
            config, wc.scale, wc.task, "answer", wc.system, wc.split
        ),
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.answer.log",
    shell:
        "{PY} -m urd.run answer --checkpoint {input.model} --prompts {input.prompts}"
        " --fiches {input.fiches} --system {wildcards.system} --spec {params.spec:q}"
        " --verified {input.model_checked} {input.checked} --out {output} 2> {log}"




# Judging reads two small files and runs no model: never worth a cluster job.
localrules:
    judge,
    judge_control,


rule judge_control:
    input:
        raw="results/urd/{scale}/control/{task}/raw.jsonl",
        data=lambda wc: DATA[wc.task],
        checked=lambda wc: verified(DATA[wc.task]),
    output:
        "results/urd/{scale}/control/{task}/responses.jsonl",
    params:
        spec=_spec,
        code=RUN_CODE,
    log:
        "logs/urd/{scale}/control/{task}.judge.log",
    shell:
        "{PY} -m urd.run judge --task {wildcards.task} --data {input.data} --raw {input.raw}"
        " --spec {params.spec:q} --verified {input.checked} --out {output} 2> {log}"


rule judge:
    input:
        raw=CELL + "/raw.jsonl",
        fiches=CELL + "/fiches.jsonl",
        data=lambda wc: DATA[wc.task],
        checked=lambda wc: verified(DATA[wc.task]),
    output:
        CELL + "/responses.jsonl",
    params:
        spec=_spec,
        code=RUN_CODE,
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.judge.log",
    shell:
        "{PY} -m urd.run judge --task {wildcards.task} --data {input.data} --raw {input.raw}"
        " --fiches {input.fiches} --spec {params.spec:q} --verified {input.checked} --out {output} 2> {log}"


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


rule summary:
    input:
        unpack(summary_inputs),
    output:
        "results/urd/{scale}/summary.json",
    params:
        static=lambda wc: json.dumps(
            {
                "config_sha256": config_digest(config),
                "code_sha256": code_digest("urd.run", *(system_module(s, config["plugins"]) for s in SYSTEMS)),
                "master_seed": config["master_seed"],
                "checkpoint": config["backbones"][wc.scale]["file"],
            },
            sort_keys=True,
        ),
        code=code_digest("urd.summarize"),
    log:
        "logs/urd/{scale}/summary.log",
    shell:
        "{PY} -m urd.summarize --scale {wildcards.scale} --static {params.static:q}"
        " --checkpoint-stamp {input.model_checked} --manifest {input.manifest}"
        " --responses {input.control} {input.cells} --fiches {input.fiches} --out {output} 2> {log}"

# Agent-memory suites: trip-vs-move and update-gate on the reference claim store.
# Needs config["agentmem"] (config/agentmem.yaml, validated by config/agentmem.schema.yaml).
# The rules only wire files to the package; `python -m urd.agentmem` does the work. This file
# also stands alone (included without rules/common.smk), so it imports what it uses itself.
from urd import workflow as W

AGENTMEM_REGISTRIES = [
    "calibration/agentmem/notes.json",
    "calibration/agentmem/pair_sets.json",
    "calibration/agentmem/checks.json",
]


rule agentmem_trip_vs_move:
    """Three move runs and two trip-alone runs of one case on one model, each on its own
    store, checked, into one report. A live model spends money: see agentmem.spend."""
    input:
        AGENTMEM_REGISTRIES,
    output:
        report="results/trip-vs-move/{case}/{model}/report.json",
    log:
        "logs/agentmem/trip-vs-move/{case}/{model}.log",
    wildcard_constraints:
        case="reader|mid-trip",
        model=W.agentmem.MODEL_PATTERN,
    conda:
        "../envs/urd.yaml"
    resources:
        usd_cents=lambda wc: W.agentmem.trip_vs_move_cents(config["agentmem"], wc.case, wc.model),
    params:
        suite=["trip-vs-move"],
        settings=lambda wc: W.agentmem.settings_json(config["agentmem"]),
        code=W.code_digest("urd.agentmem.__main__"),
        estimate=lambda wc: W.agentmem.trip_vs_move_estimate(
            config["agentmem"], wc.case, wc.model
        ).line(),
    message:
        "{params.estimate}"
    script:
        "../scripts/agentmem.py"


rule agentmem_update_gate:
    """The four registered pair sets, each pair asked three times, scored under the
    production gate, the update verdict alone, and the rule before 1.187."""
    input:
        AGENTMEM_REGISTRIES,
    output:
        report="results/update-gate/{model}/report.json",
    log:
        "logs/agentmem/update-gate/{model}.log",
    wildcard_constraints:
        model=W.agentmem.MODEL_PATTERN,
    conda:
        "../envs/urd.yaml"
    resources:
        usd_cents=lambda wc: W.agentmem.update_gate_cents(config["agentmem"], wc.model),
    params:
        suite=["update-gate"],
        settings=lambda wc: W.agentmem.settings_json(config["agentmem"]),
        code=W.code_digest("urd.agentmem.__main__"),
        estimate=lambda wc: W.agentmem.update_gate_estimate(config["agentmem"], wc.model).line(),
    message:
        "{params.estimate}"
    script:
        "../scripts/agentmem.py"

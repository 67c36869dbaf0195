# Agent-memory suites: trip-vs-move and update-gate on the reference claim store.
# Needs config["agentmem"] (config/agentmem.yaml, validated by config/agentmem.schema.yaml).
# The rules only wire files to the package; `python -m urd.agentmem` does the work.
import shlex
import sys

from urd.agentmem import smk as agentmem_smk

# The interpreter that parsed the workflow runs the jobs, so they import the same urd.
AGENTMEM_CLI = f"{shlex.quote(sys.executable)} -m urd.agentmem"
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
        model=agentmem_smk.MODEL_PATTERN,
    params:
        settings=lambda wc: agentmem_smk.settings_json(config["agentmem"]),
        code=code_digest("urd.agentmem.__main__"),
        estimate=lambda wc: agentmem_smk.trip_vs_move_estimate(config["agentmem"], wc.case, wc.model).line(),
        # The scripted arm tests the harness: its bar must hold, or the target fails.
        require_bar=lambda wc: "--require-bar" if wc.model == "scripted" else "",
    resources:
        usd_cents=lambda wc: agentmem_smk.trip_vs_move_cents(config["agentmem"], wc.case, wc.model),
    message:
        "{params.estimate}"
    shell:
        "{AGENTMEM_CLI} trip-vs-move run --case {wildcards.case} --model {wildcards.model}"
        " --settings {params.settings:q} {params.require_bar} --output {output.report} 2> {log}"


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
        model=agentmem_smk.MODEL_PATTERN,
    params:
        settings=lambda wc: agentmem_smk.settings_json(config["agentmem"]),
        code=code_digest("urd.agentmem.__main__"),
        estimate=lambda wc: agentmem_smk.update_gate_estimate(config["agentmem"], wc.model).line(),
        require_bar=lambda wc: "--require-bar" if wc.model == "scripted" else "",
    resources:
        usd_cents=lambda wc: agentmem_smk.update_gate_cents(config["agentmem"], wc.model),
    message:
        "{params.estimate}"
    shell:
        "{AGENTMEM_CLI} update-gate run --model {wildcards.model}"
        " --settings {params.settings:q} {params.require_bar} --output {output.report} 2> {log}"

# Agent-memory suites: trip-vs-move and update-gate on any store (urd.stores: the reference
# claim store, two baselines, and the plug-ins of agentmem.stores.plugins), and the cross-store
# table. Needs config["agentmem"] (config/agentmem.yaml, validated by config/agentmem.schema.yaml).
# The rules only wire files to the package; `python -m urd.agentmem` does the work. This file
# also stands alone (included without rules/common.smk), so it imports what it uses itself.
from snakemake.exceptions import WorkflowError
from urd import workflow as W

AGENTMEM = config["agentmem"]
AGENTMEM_REGISTRIES = [
    "calibration/agentmem/notes.json",
    "calibration/agentmem/pair_sets.json",
    "calibration/agentmem/checks.json",
]
# What a suite's job reads besides the registries: the schema its settings are checked against.
AGENTMEM_SCHEMA = "config/agentmem.schema.yaml"
# Every store the table names, and every registered plug-in (a single target may name one the
# table does not), is resolved and checked for the interface here, at DAG build.
try:
    TABLE_STORES = W.agentmem.table_stores(AGENTMEM)
    for _store in AGENTMEM["stores"]["plugins"]:
        W.agentmem.check_store(AGENTMEM, _store)
except W.UrdError as exc:  # one line naming the key, not a traceback
    raise WorkflowError(f"urd stores: {exc}") from None
TVM_REPORT = "results/trip-vs-move/{case}/{store}/{model}/report.json"
UG_REPORT = "results/update-gate/{store}/{model}/report.json"
TVM_RECEIPT = "results/trip-vs-move/{case}/{store}/{model}/report.receipt.json"
UG_RECEIPT = "results/update-gate/{store}/{model}/report.receipt.json"


rule agentmem_trip_vs_move:
    """Three move runs and two trip-alone runs of one case on one store and model, each on its
    own fresh store, checked, into one report. A live model spends money: see agentmem.spend."""
    input:
        AGENTMEM_REGISTRIES,
        AGENTMEM_SCHEMA,
    output:
        report=TVM_REPORT,
        receipt=TVM_RECEIPT,
    log:
        "logs/agentmem/trip-vs-move/{case}/{store}/{model}.log",
    wildcard_constraints:
        case="reader|mid-trip",
        store=W.agentmem.STORE_PATTERN,
        model=W.agentmem.MODEL_PATTERN,
    conda:
        "../envs/urd.yaml"
    resources:
        usd_cents=lambda wc: W.agentmem.trip_vs_move_cents(
            AGENTMEM, wc.case, wc.model, W.agentmem.check_store(AGENTMEM, wc.store)
        ),
    params:
        suite=["trip-vs-move"],
        settings=lambda wc: W.agentmem.settings_json(AGENTMEM),
        code=lambda wc: W.code_digest(*W.agentmem.store_code(AGENTMEM, wc.store)),
        estimate=lambda wc: W.agentmem.trip_vs_move_estimate(
            AGENTMEM, wc.case, wc.model, wc.store
        ).line(),
    message:
        "{params.estimate}"
    script:
        "../scripts/agentmem.py"


rule agentmem_update_gate:
    """The four registered pair sets, each pair asked three times. The reference store is scored
    under the production gate, the update verdict alone and the rule before 1.187; another
    store through its own update decision (decides_update)."""
    input:
        AGENTMEM_REGISTRIES,
        AGENTMEM_SCHEMA,
    output:
        report=UG_REPORT,
        receipt=UG_RECEIPT,
    log:
        "logs/agentmem/update-gate/{store}/{model}.log",
    wildcard_constraints:
        store=W.agentmem.STORE_PATTERN,
        model=W.agentmem.MODEL_PATTERN,
    conda:
        "../envs/urd.yaml"
    resources:
        usd_cents=lambda wc: W.agentmem.update_gate_cents(
            AGENTMEM, wc.model, W.agentmem.check_update_store(AGENTMEM, wc.store)
        ),
    params:
        suite=["update-gate"],
        settings=lambda wc: W.agentmem.settings_json(AGENTMEM),
        code=lambda wc: W.code_digest(*W.agentmem.store_code(AGENTMEM, wc.store)),
        estimate=lambda wc: W.agentmem.update_gate_estimate(AGENTMEM, wc.model, wc.store).line(),
    message:
        "{params.estimate}"
    script:
        "../scripts/agentmem.py"


rule agentmem_stores_table:
    """One row per store x model x case x variant: runs passed, each check, the update-gate
    bars (or 'not measured'), spend (or 'not metered')."""
    input:
        trip_vs_move=expand(
            TVM_REPORT,
            case=W.agentmem.CASES,
            store=TABLE_STORES,
            model=AGENTMEM["stores"]["publish"],
        ),
        update_gate=expand(
            UG_REPORT,
            store=[s for s in TABLE_STORES if W.agentmem.has_update_decision(AGENTMEM, s)],
            model=AGENTMEM["stores"]["publish"],
        ),
        receipts=expand(
            TVM_RECEIPT,
            case=W.agentmem.CASES,
            store=TABLE_STORES,
            model=AGENTMEM["stores"]["publish"],
        )
        + expand(
            UG_RECEIPT,
            store=[s for s in TABLE_STORES if W.agentmem.has_update_decision(AGENTMEM, s)],
            model=AGENTMEM["stores"]["publish"],
        ),
    output:
        md=report(
            W.tables.STORES_TABLES["md"],
            category="Agent-memory stores",
            subcategory="table (Markdown)",
        ),
        csv=report(
            W.tables.STORES_TABLES["csv"],
            category="Agent-memory stores",
            subcategory="table (CSV)",
        ),
        html=report(
            W.tables.STORES_TABLES["html"], category="Agent-memory stores", subcategory="table"
        ),
    log:
        "logs/agentmem/stores_table.log",
    conda:
        "../envs/urd.yaml"
    params:
        suite=["table"],
        code=W.code_digest("urd.agentmem.table"),
    script:
        "../scripts/agentmem.py"

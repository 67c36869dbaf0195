"""Job of the agent-memory rules: one suite's runs on one store and model, checked, into one
report; or the cross-store table from the reports."""
from urd.agentmem.cli import main
from urd.workflow.job import run

sm = snakemake
if sm.rule == "agentmem_stores_table":
    run(sm, main, ["table", "--trip-vs-move", sm.input.trip_vs_move, "--update-gate", sm.input.update_gate,
                   "--md", sm.output.md, "--csv", sm.output.csv, "--html", sm.output.html,
                   "--receipts", sm.input.receipts])
else:
    case = ["--case", sm.wildcards.case] if "case" in sm.wildcards.keys() else []
    bar = ["--require-bar"] if sm.wildcards.model == "scripted" and sm.wildcards.store == "reference" else []
    run(sm, main, [*sm.params.suite, "run", *case, "--store", sm.wildcards.store, "--model", sm.wildcards.model,
                   "--settings", sm.params.settings, *bar, "--output", sm.output.report])

"""Job of the agent-memory rules: one suite's runs on one model, checked, into one report."""
from urd.agentmem.cli import main
from urd.workflow.job import run

sm = snakemake
case = ["--case", sm.wildcards.case] if "case" in sm.wildcards.keys() else []
bar = ["--require-bar"] if sm.wildcards.model == "scripted" else []
run(sm, main, [*sm.params.suite, "run", *case, "--model", sm.wildcards.model,
               "--settings", sm.params.settings, *bar, "--output", sm.output.report])

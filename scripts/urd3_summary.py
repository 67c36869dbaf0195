"""Job of rule urd3_summary: every reply judged, code replies run, the cells folded."""
from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
o = sm.output
run(sm, main, ["summary", "--model", sm.wildcards.model, "--data", i.data, "--raw", i.control, i.raw,
               "--fiches", i.fiches, "--spec", sm.params.spec, "--static", sm.params.static,
               "--verified", i.checked, "--out", o.summary, "--responses", o.responses,
               "--table", o.table])

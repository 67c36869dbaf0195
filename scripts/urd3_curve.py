"""Job of rule urd3_curve: retention against budget for the text systems, as JSON and a figure."""
from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
o = sm.output
run(sm, main, ["curve", "--model", sm.wildcards.model, "--data", i.data, "--raw", i.control, i.raw,
               "--fiches", i.fiches, "--spec", sm.params.spec, "--static", sm.params.static,
               "--dpi", sm.params.dpi, "--verified", i.checked, "--out", o.curve, "--figure", o.figure])

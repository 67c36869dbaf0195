"""Job of rule answer: session B of one cell, a fresh process reading the fiches and prompts only."""
from urd.harness.run import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
run(sm, main, ["answer", "--checkpoint", i.model, "--prompts", i.prompts, "--fiches", i.fiches,
               "--system", sm.wildcards.system, "--spec", sm.params.spec,
               "--verified", i.model_checked, i.checked, "--out", sm.output[0]])

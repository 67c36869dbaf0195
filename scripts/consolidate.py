"""Job of rule consolidate: session A of one cell, writing the fiches that cross the boundary."""
from urd.harness.run import main
from urd.workflow.job import run

sm = snakemake
i, w = sm.input, sm.wildcards
artifacts = ["--artifacts", sm.params.artifacts] if sm.params.artifacts else []
run(sm, main, ["consolidate", "--checkpoint", i.model, "--sessions", i.sessions, "--prefill", i.prefill,
               "--task", w.task, "--system", w.system, "--split", w.split, "--budget", sm.params.budget,
               "--spec", sm.params.spec, *artifacts,
               "--verified", i.model_checked, i.checked, "--out", sm.output[0]])

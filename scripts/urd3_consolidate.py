"""Job of rule urd3_consolidate: session A, one fiche an episode, weighed by the contract."""
from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
w = sm.wildcards
checkpoint = ["--checkpoint", sm.input.model] if "model" in sm.input.keys() else []
artifacts = ["--artifacts", sm.params.artifacts] if sm.params.artifacts else []
run(sm, main, ["consolidate", *checkpoint, "--family", w.family, "--system", w.system, "--split", w.split,
               "--budget", sm.params.budget, "--model", w.model, "--sessions", sm.input.sessions,
               "--spec", sm.params.spec, *artifacts, "--verified", sm.input.checked, "--out", sm.output[0]])

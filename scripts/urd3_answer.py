"""Job of rule urd3_answer: session B, from the fiches and the session-B view alone."""
from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
w = sm.wildcards
checkpoint = ["--checkpoint", sm.input.model] if "model" in sm.input.keys() else []
run(sm, main, ["answer", *checkpoint, "--family", w.family, "--system", w.system, "--split", w.split, "--model", w.model,
               "--prompts", sm.input.prompts, "--fiches", sm.input.fiches, "--spec", sm.params.spec,
               "--verified", sm.input.checked, "--out", sm.output[0]])

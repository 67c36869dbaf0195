"""Job of rule urd3_control: score A, the whole transcript in context."""
from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
checkpoint = ["--checkpoint", sm.input.model] if "model" in sm.input.keys() else []
run(sm, main, ["control", *checkpoint, "--family", sm.wildcards.family, "--model", sm.wildcards.model,
               "--sessions", i.sessions, "--prompts", i.prompts, "--spec", sm.params.spec,
               "--verified", i.checked, "--out", sm.output[0]])

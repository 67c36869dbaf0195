"""Job of rule summary: one scale's cells folded into summary.json, with provenance."""
from urd.harness.summarize import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
run(sm, main, ["--scale", sm.wildcards.scale, "--static", sm.params.static,
               "--checkpoint-stamp", i.model_checked, "--manifest", i.manifest,
               *(["--checkpoint-check", i.model_check] if i.model_check else []),
               "--responses", i.control, i.cells, "--fiches", i.fiches, "--out", sm.output[0]])

"""Job of rule verify: a stamp that exists only if the file matches its manifest."""
from urd.core.verify import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["--manifest", sm.input.manifest, "--stamp", sm.output[0], sm.input.data])

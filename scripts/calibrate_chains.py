"""Job of rule calibrate_chains: every rung-2 chain session from the master seed, and its views."""
from urd.data.chains import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["--spec", sm.params.spec])

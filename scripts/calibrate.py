"""Job of rule calibrate: every episode from the master seed, and the session views."""
from urd.data.calibrate import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["--spec", sm.params.spec, "--t1", sm.output.t1, "--t2", sm.output.t2])

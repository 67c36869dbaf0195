"""Job of rule unpack_learned: the shipped learned checkpoint and its training record."""
from urd.learn.ship import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["unpack", sm.input.shipped, sm.output.model, "--record", sm.input.record, sm.output.record])

"""Job of rule replay_costs: the measured cost of every tuning artifact of a scale."""
from urd.replay.costs import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["--scale", sm.wildcards.scale, "--out", sm.output[0], sm.input])

"""Job of rule replay_costs: the measured cost of every tuning artifact of a scale."""
from urd.replay.costs import main
from urd.workflow.job import run

sm = snakemake
costs = [f for f in sm.input if f.endswith("costs.json")]  # each artifact's record; its state is an input too
run(sm, main, ["--scale", sm.wildcards.scale, "--out", sm.output[0], *costs])

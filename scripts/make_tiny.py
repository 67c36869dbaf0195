"""Job of rule make_tiny: a random-weight RWKV-7 checkpoint from a seed."""
from urd.backbone.tiny import main
from urd.workflow.job import run

sm = snakemake
gen = sm.params.gen
run(sm, main, [sm.output[0], "--seed", gen["seed"], "--n-layer", gen["n_layer"], "--n-embd", gen["n_embd"]])

"""Job of rule train_learned: the learned checkpoint trained from its seed, and its record."""
from urd.learn.train import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, [sm.output.model, "--record", sm.output.record, "--settings", sm.params.settings,
               "--stages", sm.params.stages, "--spec", sm.params.spec])

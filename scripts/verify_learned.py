"""Job of rule verify_learned: a stamp only if the learned checkpoint passes its pin or its behaviour."""
from urd.learn.check import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, [sm.input.model, "--manifest", sm.input.manifest, "--stamp", sm.output.stamp,
               "--check", sm.output.check, "--train", sm.params.train, "--spec", sm.params.spec, "--record", sm.input.record])

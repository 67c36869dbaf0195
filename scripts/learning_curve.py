"""Job of rule learning_curve: the learned backbone's held-out scores and loss against tokens."""
from urd.tables.learning import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["--record", sm.input.record, "--csv", sm.output.csv, "--png", sm.output.png,
               "--dpi", sm.params.dpi])

"""Job of rule prefill: each transcript's state, computed once per scale and task."""
from urd.harness.run import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
run(sm, main, ["prefill", "--checkpoint", i.model, "--sessions", i.sessions, "--spec", sm.params.spec,
               "--verified", i.model_checked, i.checked, "--out", sm.output.index])

"""Job of rule control: the in-session control's replies (score A)."""
from urd.harness.run import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
run(sm, main, ["control", "--checkpoint", i.model, "--sessions", i.sessions, "--prompts", i.prompts,
               "--prefill", i.prefill, "--spec", sm.params.spec,
               "--verified", i.model_checked, i.checked, "--out", sm.output[0]])

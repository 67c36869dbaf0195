"""Job of rules ceiling and bits_curve: a control evaluated from the tuning artifacts."""
from urd.controls.cli import main
from urd.workflow.job import run

sm = snakemake
i, p = sm.input, sm.params
tasks = p.tasks
run(sm, main, [p.command, "--checkpoint", i.model, "--scale", sm.wildcards.scale,
               *[("--data", f"{t}={i['data_' + t]}") for t in tasks],
               *[("--control", f"{t}={i['control_' + t]}") for t in tasks],
               *p.extra, "--artifacts", p.root, "--recipes", p.recipes, "--state-file", p.state_file,
               "--spec", p.job["spec"], "--static", p.job["static"],
               "--verified", i.checked, "--out", sm.output.json, "--responses", sm.output.responses])

"""Job of rule dose_summary: every dose's tuned state evaluated on every task."""
import json

from urd.rung2.cli import main
from urd.workflow.job import run

sm = snakemake
i, p = sm.input, sm.params
tasks = json.loads(p.spec)["tasks"]
run(sm, main, ["dose", "--checkpoint", i.model, "--scale", sm.wildcards.scale,
               "--data", *[f"{t}={i['data_' + t]}" for t in tasks], "--artifacts", p.root,
               "--spec", p.spec, "--static", p.static, "--verified", i.model_checked, i.checked,
               "--out", sm.output.json, "--responses", sm.output.responses])

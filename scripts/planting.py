"""Job of the planting rules: `python -m urd.planting <verb>` on declared files."""
from urd.planting.cli import main
from urd.workflow.job import run

sm = snakemake
output = ["--output", sm.output[0]] if sm.rule in ("planting_world", "planting_run") else []
run(sm, main, [*sm.params.args, *output])

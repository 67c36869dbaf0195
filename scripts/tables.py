"""Job of the table and figure rules: `python -m urd.tables <command>` on declared files."""
from urd.tables.cli import main
from urd.workflow.job import run

sm = snakemake
outputs = [(f"--{name}", path) for name, path in sm.output.items()]
run(sm, main, [sm.params.command, *sm.params.args, *outputs])

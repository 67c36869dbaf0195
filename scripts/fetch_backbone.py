"""Job of rule fetch_backbone: the pinned checkpoint from the Hub or a mirror."""
from urd.backbone.fetch import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, [*sm.params.args, "--dest", sm.output[0]])

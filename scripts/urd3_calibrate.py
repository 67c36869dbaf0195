"""Job of rule urd3_calibrate: rung 3's episodes from the seed (rule verify checks them against
their manifest before anything reads them)."""
from pathlib import Path

from urd.rung3.cli import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["calibrate", "--spec", sm.params.spec, "--out-dir", str(Path(sm.output.data[0]).parent)])

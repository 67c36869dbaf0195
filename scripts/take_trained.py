"""Job of rule take_trained: the checkpoint trained here (no shipped one) and its record, into models/."""
from urd.learn.ship import main
from urd.workflow.job import run

sm = snakemake
run(sm, main, ["copy", sm.input.model, sm.output.model, "--record", sm.input.record, sm.output.record])

"""Job of rules judge and judge_control: raw replies joined with the expected answers."""
from urd.harness.run import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
fiches = ["--fiches", i.fiches, "--receipts", i.receipts] if "fiches" in i.keys() else []
run(sm, main, ["judge", "--task", sm.wildcards.task, "--data", i.data, "--raw", i.raw, *fiches,
               "--spec", sm.params.spec, "--verified", i.checked, "--out", sm.output[0]])

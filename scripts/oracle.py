"""Job of rule oracle: the ceiling every system is measured against."""
from urd.data.oracle import main
from urd.workflow.job import run

sm = snakemake
i = sm.input
run(sm, main, ["--spec", sm.params.spec, "--t1", i.t1, "--t2", i.t2, "--manifest", i.manifest,
               "--verified", i.checked, "--out", sm.output[0]])

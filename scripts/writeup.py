"""Job of rule writeup_comparison: one scale's rung-1 table beside the write-up's 0.1B."""
from urd.tables.writeup import main
from urd.workflow.job import run

sm = snakemake
given = {k: ["--" + k, sm.input[k]] for k in ("costs", "record") if k in sm.input.keys()}
run(sm, main, ["--summary", sm.input.summary, "--scale", sm.wildcards.scale, "--bootstrap", sm.params.bootstrap,
               *given.get("costs", []), *given.get("record", []), "--md", sm.output.md, "--json", sm.output.json])

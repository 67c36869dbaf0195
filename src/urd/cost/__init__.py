"""One place for cost: job estimates (rung 1 and the agent-memory suites) and the planned-spend
line `snakemake -n` ends with."""

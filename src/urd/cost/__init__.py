"""One place for cost: job estimates (rung 1 and the agent-memory suites) and the planned-spend
line `snakemake -n` ends with. Imports what it prices from below (session, systems, stores, the
suites' cases and pair sets in data, llm) and core; the agent-memory suites, planting, rung 2's
plan and the workflow layer import it."""

"""One place for cost: job estimates (rung 1 and the agent-memory suites) and the planned-spend
line `snakemake -n` ends with. Imports the rooms it prices (agentmem, harness, stores, systems,
llm) and core; rung 2's plan and the workflow layer import it."""

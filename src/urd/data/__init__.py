"""The episodes: T1 and T2's seeded generators (one module a task), rung 2's chains, the
session views, `calibrate`, the oracle; and the agent-memory suites' pinned inputs (``agentmem``:
the case notes, the pair sets). Imports core and backbone (the oracle's tokenizer)."""

#: rung 1's tasks, in the order every table lists them (each generator's own TASK)
TASKS = ("t1", "t2")

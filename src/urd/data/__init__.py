"""The episodes: T1 and T2's seeded generators (one module a task), rung 2's chains, the
session views, `calibrate`, the oracle; and the agent-memory suites' pinned inputs (``agentmem``:
the case notes, the pair sets). Imports core and backbone (the oracle's tokenizer)."""

"""Memory stores the agent-memory suites put through their tests: the interface (``base``),
the registry of built-ins and plug-ins (``registry``), the suites' settings every store run is
given (``settings``, config['agentmem'] validated), urd's reference claim store (``reference``)
and two baselines without a model (``baselines``). Imports core, llm (calls and their purposes)
and data (the note a store is handed)."""

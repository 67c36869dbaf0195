"""Memory stores the agent-memory suites put through their tests: the interface (``base``),
the registry of built-ins and plug-ins (``registry``), urd's reference claim store
(``reference``) and two baselines without a model (``baselines``). Imports core and llm (and
the suites' note, settings and purposes from agentmem, climbs listed in pyproject.toml)."""

"""Memory stores the agent-memory suites put through their tests: the interface (``base``),
the registry of built-ins and plug-ins (``registry``), urd's reference claim store
(``reference``) and two baselines without a model (``baselines``)."""

"""Agent-memory suites: trip-vs-move and update-gate, run on any store of urd.stores (the
reference claim store, the baselines, plug-ins), their checks, and the cross-store table. Imports
core, llm, stores and tables (and cost's suite estimate, a climb listed in pyproject.toml); the
planting suite, cost and the workflow layer import it.
"""

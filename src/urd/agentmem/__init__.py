"""Agent-memory suites: trip-vs-move and update-gate, run on any store of urd.stores (the
reference claim store, the baselines, plug-ins), their checks, and the cross-store table. Imports
core, llm, data (the cases and pair sets), stores (and their settings), tables and cost (the suites'
estimate); the planting suite and the workflow layer import it.
"""

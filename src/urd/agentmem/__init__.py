"""Agent-memory suites: trip-vs-move and update-gate, run on any store of urd.stores (the
reference claim store, the baselines, plug-ins), their checks, and the cross-store table. Imports
core, llm, cost and stores; nothing above it but the planting suite imports it.
"""

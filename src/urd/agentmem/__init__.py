"""Agent-memory suites: trip-vs-move and update-gate on a reference claim store."""

"""The agent-memory suites' inputs: trip-vs-move's case notes (``cases``, files in ``notes/``) and
update-gate's registered pair sets (``pair_sets``, files in ``pairs/``), each verified against the
digests pinned in calibration/agentmem. Imports core only."""

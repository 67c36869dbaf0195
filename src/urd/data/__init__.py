"""urd rung-1 tasks: seeded episode generators, one module per task."""

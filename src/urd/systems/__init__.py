"""Memory systems: what a model carries across the session boundary.

Interface (all a new system needs):
    consolidate(transcript, budget_bytes) -> bytes     # session A, before the boundary
    answer(fiche, query, header) -> str               # session B, fresh context

Imports core and data (and the harness's handle and decoding settings, and for the replay
systems their tuning, climbs listed in pyproject.toml).
"""

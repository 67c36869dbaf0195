"""Memory systems: what a model carries across the session boundary.

Interface (all a new system needs):
    consolidate(transcript, budget_bytes) -> bytes     # session A, before the boundary
    answer(fiche, query, header) -> str               # session B, fresh context

Imports core, data, session (the metered handle, decoding) and replay (the tuning artifact the
replay systems read).
"""

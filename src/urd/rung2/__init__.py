"""urd rung 2: chains of sessions (retention R, backward and forward transfer), the Pareto sweep
of budgets and consolidation caps (with FLOPs), dose-response. Imports everything of rung 1 it
runs (harness, systems, replay, controls, tables, cost, data, backbone) and core; only the
workflow layer imports it."""

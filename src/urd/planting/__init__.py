"""The planting suite: context strategies judged by behaviour, with unplanted twins, one arm
per factor, a calibrated judge and a baseline gate (the third write-up in shared/seeds).

world (seeded events) -> store (SQLite, term by term) -> arms (what a character is shown)
-> suite (calibrate, twins, gate, planted, counterfactual) -> report (the numbers) -> render.
Imports core, llm, stores (the settings), agentmem (its runtime), cost (the estimate) and
tables.
"""

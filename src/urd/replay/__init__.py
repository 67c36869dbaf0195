"""Replay baselines: state-tuning of the initial WKV state on the session transcript.

recipe.py resolves a recipe (steps x context) against the contract, tune.py runs the tuning job
that writes an artifact, artifact.py reads and checks one, plan.py lists the tuning jobs of a
scale when the DAG is built. Imports core, data, backbone and systems (and rung 2's recipes, a
climb listed in pyproject.toml).
"""

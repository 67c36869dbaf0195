"""Replay baselines: state-tuning of the initial WKV state on the session transcript.

recipe.py resolves a recipe (steps x context) against the contract, tune.py runs the tuning job
that writes an artifact, artifact.py reads and checks one (the replay systems in urd.systems
read it); the tuning jobs of a scale are listed when the DAG is built by urd.workflow.replay.
Imports core and backbone.
"""

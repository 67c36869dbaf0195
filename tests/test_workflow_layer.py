"""The layer the rules import builds the DAG without loading a model or an SDK."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

HEAVY = ("torch", "rwkv", "anthropic", "huggingface_hub", "matplotlib")


def test_everything_the_rules_ask_at_dag_time_leaves_the_heavy_packages_unloaded():
    probe = f"""
import sys
from urd import workflow as W
from urd.core.config import load_config
cfg = load_config({str(REPO / "config/config.yaml")!r}, {str(REPO / "config/schema.yaml")!r})
for task in ("t1", "t2"):
    W.cell_spec(cfg, task)
    for recipe in cfg["controls"]["ceiling"]["recipes"]:
        W.tables.artifact_files(cfg, "tiny", recipe, [task])
    [t.sha256 for t in W.replay_plan.transcripts(cfg, task)]
W.tables.published_files(cfg)
W.learn_spec(cfg)
for b in W.learned_backbones(cfg).values():
    W.learn_resources(b)
for system in cfg["systems"]:
    W.resolve_system(system, cfg["plugins"])
    W.code_digest("urd.harness.run", W.system_module(system, cfg["plugins"]))
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

"""The learned backbone in the DAG: the shipped checkpoint when the repository has it, training
where it does not, a bad training setting refused when the DAG is built, and a reduced rung-1 run
on it whose summary says which check admitted the checkpoint."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REDUCED, snakemake

from urd.core.config import load_config

pytestmark = pytest.mark.slow


def _learned(workflow):
    return load_config(workflow / "config/config.yaml", workflow / "config/schema.yaml")["backbones"]["learned"]


def test_the_shipped_checkpoint_is_unpacked_and_training_runs_only_without_it(workflow):
    b = _learned(workflow)
    model = f"models/{b['file']}"
    assert (workflow / b["train"]["shipped"]).is_file(), "the repository ships the learned checkpoint"
    out = snakemake(workflow, "-n", model, check=True).stdout
    assert re.search(r"^unpack_learned\s+1$", out, re.M) and "train_learned" not in out
    (workflow / b["train"]["shipped"]).unlink()
    out = snakemake(workflow, "-n", model, check=True).stdout
    assert re.search(r"^train_learned\s+1$", out, re.M) and re.search(r"^take_trained\s+1$", out, re.M)
    # results/learn/ always trains: what an auditor runs to re-derive the shipped bytes
    out = snakemake(workflow, "-n", f"results/learn/{b['file']}", check=True).stdout
    assert re.search(r"^train_learned\s+1$", out, re.M)


def test_a_training_setting_that_cannot_fit_is_refused_when_the_dag_is_built(workflow):
    (workflow / "big.yaml").write_text("backbones: {learned: {train: {settings: {tokens: 100000000000, max_minutes: 60}}}}\n")
    proc = snakemake(workflow, "-n", "results/urd/learned/summary.json", "--configfile", "config/config.yaml", "big.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert re.search(r"urd config: backbones\.learned\.train\.settings: tokens: .*max_minutes 60", out), out
    # a stage is checked there too: it cannot change the model's shape
    (workflow / "staged.yaml").write_text("backbones: {learned: {train: {stages: [{from_tokens: 5, settings: {n_embd: 256}}]}}}\n")
    proc = snakemake(workflow, "-n", "results/urd/learned/summary.json", "--configfile", "config/config.yaml", "staged.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert re.search(r"urd config: backbones\.learned\.train\.stages\[0\]\.settings: n_embd: expected the run's own 128", out), out


def test_a_reduced_run_on_the_learned_backbone_records_its_check(workflow):
    snakemake(workflow, "results/urd/learned/summary.json", *REDUCED, "systems=[vanilla]", check=True)
    summary = json.loads((workflow / "results/urd/learned/summary.json").read_text())
    prov = summary["provenance"]
    assert prov["checkpoint_check"]["check"] == "sha256"
    pinned = (workflow / "calibration/backbones.sha256").read_text()
    assert f"{prov['checkpoint_sha256']}  models/{_learned(workflow)['file']}" in pinned

"""The DAG: data regenerates, is verified before use, and a mismatch stops everything downstream."""

from __future__ import annotations

import json

import pytest
from conftest import copy_of, copy_workflow, snakemake

pytestmark = pytest.mark.slow  # every test here runs Snakemake

ORACLE = "results/urd/oracle.json"


@pytest.fixture(scope="module")
def oracle_built(tmp_path_factory):
    """One fresh build of the oracle (data, its views, their verify stamps), for the tests that
    tamper with a copy of it."""
    wf = copy_workflow(tmp_path_factory.mktemp("oracle") / "wf")
    snakemake(wf, ORACLE, check=True)
    return wf


@pytest.fixture
def built(oracle_built, tmp_path):
    wf = copy_of(oracle_built, tmp_path / "wf")
    (wf / ORACLE).unlink()  # the consumer, to be run again on tampered inputs
    return wf


def test_oracle_target_builds_and_data_matches_the_manifest(oracle_built):
    workflow = oracle_built
    rep = json.loads((workflow / ORACLE).read_text())
    assert rep["t1_oracle"]["over"]["ceiling"] == 0.786
    assert rep["t1_oracle"]["sanity"]["ceiling"] == 1.0
    assert rep["provenance"]["master_seed"] == 20260807
    import subprocess

    # An auditor's check, with nothing but coreutils.
    out = subprocess.run(["sha256sum", "-c", "calibration/manifest.sha256"], cwd=workflow, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # A second run has nothing to do.
    again = snakemake(workflow, ORACLE, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


def _flip_byte(path, offset=100):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _assert_stopped(proc, workflow, name):
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"urd verify FAILED: {name}: SHA-256 mismatch: expected " in out
    assert ", actual " in out
    assert not (workflow / ORACLE).exists(), "the consumer ran although verification failed"


def test_a_flipped_byte_in_the_data_stops_the_dag(built):
    workflow = built
    _flip_byte(workflow / "data/c1/t1.jsonl")  # newer than its stamp: verified again, and refused
    _assert_stopped(snakemake(workflow, ORACLE), workflow, "data/c1/t1.jsonl")


def test_a_flipped_byte_in_the_manifest_stops_the_dag(built):
    workflow = built
    manifest = workflow / "calibration/manifest.sha256"
    text = manifest.read_text()
    line = next(l for l in text.splitlines() if l.endswith("data/t2.jsonl"))
    flipped = ("1" if line[0] != "1" else "2") + line[1:]
    manifest.write_text(text.replace(line, flipped))
    _assert_stopped(snakemake(workflow, ORACLE), workflow, "data/t2.jsonl")


def test_bad_config_on_the_command_line_names_the_key(workflow):
    proc = snakemake(workflow, ORACLE, "-n", "--config", "episodes=many")
    assert proc.returncode != 0
    assert "episodes: expected type integer, got 'many'" in proc.stdout + proc.stderr


def test_a_file_changed_after_verification_is_refused_whatever_its_mtime(built):
    """cp -p, rsync -a and tar keep mtimes: the consumer re-checks the digest when it reads."""
    import os

    workflow = built
    path = workflow / "data/c1/t1.jsonl"
    before = path.stat()
    _flip_byte(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    proc = snakemake(workflow, ORACLE)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "urd oracle FAILED: data/c1/t1.jsonl: SHA-256 mismatch: expected " in out, out
    assert "it changed after it was verified. Delete it and rerun (the calibrate rule rebuilds it" in out
    assert not (workflow / ORACLE).exists()


def test_a_tampered_checkpoint_names_its_own_pin_and_rule(workflow):
    model = "models/urd-tiny-rwkv7-L2-D128.pth"
    snakemake(workflow, model, check=True)
    _flip_byte(workflow / model, offset=4096)
    proc = snakemake(workflow, f"results/urd/verified/{model}.sha256")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"urd verify FAILED: {model}: SHA-256 mismatch: expected " in out
    assert "git checkout calibration/backbones.sha256" in out and "make_tiny" in out

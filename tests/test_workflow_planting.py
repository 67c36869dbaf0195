"""The planting suite as file targets: the world is generated and verified, the scripted run and
its tables build offline, and a live target's dry run prints its dollar estimate."""

import json
import re

import pytest
from conftest import snakemake

pytestmark = pytest.mark.slow  # every test here runs Snakemake

SCRIPTED = "results/planting/scripted/report.json"
LIVE = "results/planting/claude-sonnet-5-5/report.json"
TABLES = [f"results/planting/tables/planting.{fmt}" for fmt in ("md", "csv", "html", "png")]


def test_the_scripted_report_and_tables_build_offline_from_the_verified_world(workflow, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    snakemake(workflow, *TABLES, check=True)
    assert (workflow / "results/urd/verified/data/planting/world.jsonl.sha256").exists()
    report = json.loads((workflow / SCRIPTED).read_text())
    assert report["status"] == "complete" and report["calibration"]["passed"] and report["gate"]["passed"]
    from urd.workflow import sandbox

    if sandbox.unavailable() is None:  # the job ran in the sandbox, and the report says so
        assert report["sandbox"] == "bwrap"
    md = (workflow / TABLES[0]).read_text()
    assert all(f"| scripted | {arm} |" in md for arm in ("full", "full+table", "layered"))
    assert "not credited: full -> layered differ in history, promise_table" in md
    assert (workflow / TABLES[3]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A tampered world stops the run at verification, before any call.
    world = workflow / "data/planting/world.jsonl"
    world.write_text(world.read_text().replace("Mara", "Maria", 1))
    proc = snakemake(workflow, SCRIPTED, "--forcerun", "planting_run")
    assert proc.returncode != 0 and "SHA-256 mismatch" in proc.stdout + proc.stderr


def test_a_live_targets_dry_run_prints_the_estimate_and_an_unconfirmed_run_refuses(workflow, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    proc = snakemake(workflow, "-n", LIVE)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    m = re.search(r"planting on claude-sonnet-5-5: estimate US\$(\d+\.\d\d) \(call graph, (\d+) calls", text)
    assert m and 1.0 < float(m[1]) < 10.0, text
    planned = re.search(r"urd planned spend \(\d+ jobs to run\): .*API US\$(\d+\.\d\d)", text)
    assert planned and abs(float(planned[1]) - float(m[1])) <= 0.01, text  # the same estimate, in whole cents
    proc = snakemake(workflow, LIVE)
    assert proc.returncode != 0 and not (workflow / LIVE).exists()
    assert "confirm_live" in (workflow / "logs/planting/claude-sonnet-5-5.log").read_text()


def test_a_gate_stop_keeps_its_report_and_log_and_the_tables_refuse_it_by_name(workflow, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    strict = workflow / "strict-gate.yaml"
    strict.write_text('agentmem:\n  planting:\n    gate:\n      max_unplanted: "0/6"\n')
    proc = snakemake(workflow, SCRIPTED, "--configfile", "config/config.yaml", str(strict))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((workflow / SCRIPTED).read_text())  # kept: the job succeeded with a stopped run
    assert report["status"] == "stopped" and report["gate"]["passed"] is False
    assert {d["variant"] for d in report["decisions"]} == {"unplanted"}
    log = (workflow / "logs/planting/scripted.log").read_text()
    assert "stopped at the baseline gate: baseline gate: the identity planted for c1 (Mara)" in log
    proc = snakemake(workflow, TABLES[0], "--configfile", "config/config.yaml", str(strict))
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{SCRIPTED}: status" in text and "stopped at the baseline gate" in text
    assert not (workflow / TABLES[0]).exists()

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

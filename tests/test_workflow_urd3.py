"""urd rung 3 as the workflow runs it: the scripted table offline, the boundary as processes and
files, and a bad plug-in type refused when the DAG is built."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_sandbox, snakemake

from urd.core.io import atomic_write_jsonl, read_jsonl
from urd.data import views
from urd.data.rung3 import family
from urd.data.rung3.episodes import generate_episode
from urd.rung3 import score

TESTS = Path(__file__).resolve().parent
TARGET = "results/urd3/scripted/summary.json"
SPEC = {"triggers": 2, "non_triggers": 2, "work_turns": {"prefs": 10, "code": 4},
        "distractors": {"prefs": 14, "code": 12}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from conftest import copy_workflow

    wf = copy_workflow(tmp_path_factory.mktemp("urd3") / "wf")
    snakemake(wf, TARGET, check=True)
    return wf


@pytest.mark.slow
def test_the_scripted_table_builds_offline_and_reports_each_system(built):
    summary = json.loads((built / TARGET).read_text())
    assert set(summary["families"]) == {"prefs", "code"}
    for name, fam in summary["families"].items():
        assert fam["control"]["score"] == 1.0
        cells = fam["cells"]
        assert cells["oracle"]["sanity"]["retention"] == 1.0 == fam["oracle_ceiling"]["sanity"]
        assert cells["vanilla"]["over"]["retention"] == 0.0 == cells["vanilla"]["sanity"]["retention"]
        assert cells["gzip_tail"]["sanity"]["retention"] > cells["retrieval"]["sanity"]["retention"]
        assert cells["oracle"]["over"]["fiche_bytes_mean"] <= 120
        assert {"summary", "state_carry"}.isdisjoint(cells)
        if name == "code":
            assert cells["oracle"]["sanity"]["correct"] == 1.0
    assert {"summary", "state_carry"} <= set(summary["not_run"])
    table = (built / "results/urd3/scripted/table.md").read_text()
    assert "| oracle |" in table and "state_carry:" in table
    responses = read_jsonl(built / "results/urd3/scripted/responses.jsonl")
    assert len(responses) == 2 * (7 * 2 + 1) * 12 * 24
    # nothing to redo: the table is a file target
    again = snakemake(built, TARGET, "-n", check=True)
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
@needs_sandbox()
def test_every_rung3_job_ran_in_the_sandbox(built):
    for raw in (built / "results/urd3/scripted").glob("*/*/*/raw.jsonl"):
        assert {r["sandbox"] for r in read_jsonl(raw)} == {"bwrap"}, raw
    assert {r["sandbox_judge"] for r in read_jsonl(built / "results/urd3/scripted/responses.jsonl")} == {"bwrap"}


@pytest.mark.slow
def test_the_dag_shows_the_boundary(workflow):
    proc = snakemake(workflow, "-n", "--forceall", TARGET, check=True)
    jobs = {}
    for block in proc.stdout.split("\nrule ")[1:]:
        rule = block.split(":", 1)[0]
        inputs = next((l.split(":", 1)[1] for l in block.splitlines() if l.strip().startswith("input:")), "")
        jobs.setdefault(rule, []).append(inputs)
    assert len(jobs["urd3_consolidate"]) == len(jobs["urd3_answer"]) == 7 * 2 * 2
    for inputs in jobs["urd3_answer"]:
        assert "session_b.jsonl" in inputs and "fiches.jsonl" in inputs and "session_a" not in inputs
        assert "prefs.jsonl," not in inputs + "," and "code.jsonl," not in inputs + ","
    for inputs in jobs["urd3_consolidate"]:
        assert "session_a.jsonl" in inputs and "session_b" not in inputs


@pytest.mark.slow
def test_a_plug_in_type_whose_checker_accepts_its_counterpart_is_refused_by_the_dry_run(workflow):
    (workflow / "lax_types.py").write_text(
        "from dataclasses import replace\n"
        "from urd.data.rung3.prefs import TYPES\n"
        "LAX = replace(TYPES[0], name='lax', phrases=('say km', 'say miles'),\n"
        "              check=lambda side, reply: 'km' in reply or 'miles' in reply)\n")
    (workflow / "lax.yaml").write_text("urd3:\n  types: {lax: 'lax_types:LAX'}\n")
    env = {**os.environ, "PYTHONPATH": str(workflow)}
    proc = snakemake(workflow, "-n", TARGET, "--configfile", "lax.yaml", env=env)
    assert proc.returncode != 0
    line = next(l for l in (proc.stdout + proc.stderr).splitlines() if "urd config:" in l)
    assert "lax" in line and "counterpart" in line and "It is 12 km long." in line


def test_a_stash_carries_in_one_process_and_nothing_across_the_boundary(tmp_path):
    """TextStash keeps the transcript on its class. Run as one process it answers from session A;
    run as the workflow runs it (consolidate, then answer in a new process) it finds nothing."""
    from urd.harness import fiches
    from urd.rung3 import run
    from urd.rung3.reader import ScriptedReader
    from urd.systems import registry

    fam = family("prefs")
    eps = [generate_episode(20260807, fam, i, SPEC) for i in range(2)]
    plugins = {"stash": "cheats:TextStash"}
    sys.path.insert(0, str(TESTS))
    try:
        recs = run.consolidate(registry.build("stash", run.no_model("scripted"), plugins), "prefs",
                               [views.session_a(e) for e in eps[1:]], "over", 120, 10)
        raw = run.answer(lambda: registry.build("stash", run.no_model("scripted"), plugins), ScriptedReader(fam),
                         [views.session_b(e) for e in eps[1:]], [(r, fiches.read_one(r)) for r in recs])
    finally:
        sys.path.remove(str(TESTS))
    in_one = score.cell(fam, score.judge(fam, eps[1:], raw))
    assert in_one["applied_on_trigger"] > 0.9  # the cheat works when nothing separates the sessions

    atomic_write_jsonl(tmp_path / "a.jsonl", [views.session_a(e) for e in eps])
    atomic_write_jsonl(tmp_path / "b.jsonl", [views.session_b(e) for e in eps])
    spec = json.dumps({**SPEC, "consolidation_factor": 10, "plugins": plugins, "system_settings": {}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}

    def job(*args):
        proc = subprocess.run([sys.executable, "-m", "urd.rung3.cli", *args, "--spec", spec, "--model", "scripted"],
                              capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr

    job("consolidate", "--family", "prefs", "--system", "stash", "--split", "over", "--budget", "120",
        "--sessions", "a.jsonl", "--out", "fiches.jsonl")
    job("answer", "--family", "prefs", "--system", "stash", "--prompts", "b.jsonl", "--fiches", "fiches.jsonl",
        "--out", "raw.jsonl")
    across = score.cell(fam, score.judge(fam, eps, read_jsonl(tmp_path / "raw.jsonl")))
    assert across["score"] == 0.0


@pytest.mark.slow
def test_the_curve_rises_with_the_budget_and_shares_the_tables_cells(workflow):
    (workflow / "short.yaml").write_text(
        "urd3:\n  evaluate_episodes: 4\n  curve: {budgets: [120, 480, 16384], systems: [vanilla, gzip_tail, oracle]}\n")
    proc = snakemake(workflow, "results/urd3/scripted/curve.json", "--configfile", "short.yaml", check=True)
    curve = json.loads((workflow / "results/urd3/scripted/curve.json").read_text())
    by = {(s["family"], s["system"]): [p["retention"] for p in s["points"]] for s in curve["series"]}
    assert len(by) == 6 and (workflow / "results/urd3/scripted/curve.png").stat().st_size > 10_000
    for name in ("prefs", "code"):
        assert by[(name, "vanilla")] == [0.0, 0.0, 0.0]
        oracle, gzip = by[(name, "oracle")], by[(name, "gzip_tail")]
        assert oracle[0] < oracle[1] <= oracle[2] == 1.0 and gzip[0] < gzip[2] == 1.0
    # the 120-byte point is the table's `over` cell: built once
    assert (workflow / "results/urd3/scripted/oracle/prefs/over/raw.jsonl").exists()
    assert not list((workflow / "results/urd3/scripted/oracle/prefs").glob("b120"))
    assert "b480" in proc.stdout + proc.stderr or (workflow / "results/urd3/scripted/oracle/prefs/b480").is_dir()


@pytest.mark.slow
def test_a_rung1_replay_system_runs_on_rung3_from_the_tuning_rule_unchanged(workflow):
    """replay_tune on tiny: rule tune_state tunes each rung-3 transcript (found by its SHA-256),
    session A reads the artifacts and declares what they metered, session B answers from the fiche."""
    (workflow / "short.yaml").write_text("urd3:\n  evaluate_episodes: 2\n")
    cell = "results/urd3/tiny/replay_tune/prefs/over"
    snakemake(workflow, f"{cell}/raw.jsonl", "--configfile", "short.yaml", check=True)
    sessions = read_jsonl(workflow / "data/urd3/prefs.session_a.jsonl")[:2]
    fiches = read_jsonl(workflow / cell / "fiches.jsonl")
    assert [f["episode"] for f in fiches] == [0, 1]
    for ep, rec in zip(sessions, fiches):
        sha = hashlib.sha256(ep["transcript"].encode()).hexdigest()
        costs = json.loads((workflow / f"artifacts/replay/tiny/replay_tune/{sha}/costs.json").read_text())
        assert (costs["task"], costs["episode"], costs["transcript_sha256"]) == ("prefs", ep["episode"], sha)
        assert rec["declared_tokens"] == costs["trained_tokens"] <= rec["token_cap"]
        assert rec["fiche_bytes"] <= 120 and rec["metered_tokens"] == 0  # session A read, never tuned
    raw = read_jsonl(workflow / cell / "raw.jsonl")
    prompts = read_jsonl(workflow / "data/urd3/prefs.session_b.jsonl")[:2]
    assert len(raw) == sum(len(ep["queries"]) for ep in prompts) and all(isinstance(r["response"], str) for r in raw)

"""The session boundary is a file and a process: the cheats of tests/cheats.py, tried for real.

Each test runs the jobs the workflow runs (`python -m urd.harness.run consolidate|answer`) as separate
processes on a tiny checkpoint, with the cheat plugged in as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snakemake

from urd.core.io import atomic_write_jsonl, read_jsonl
from urd.data import calibrate, views
from urd.harness.run import cell_spec

TESTS = Path(__file__).resolve().parent
PLUGINS = {n: f"cheats:{c}" for n, c in (("stash", "Stash"), ("meter_reset", "MeterReset"),
                                         ("raw_forward", "RawForward"), ("featherweight", "Featherweight"),
                                         ("loose_batch", "LooseBatch"))}


@pytest.fixture(scope="module")
def cell(tmp_path_factory, urd_config, tiny_checkpoint):
    """Session-A and session-B views of two T1 episodes (3 queries each), and a spec."""
    d = tmp_path_factory.mktemp("cell")
    eps = [calibrate.t1_episode(urd_config, i) for i in range(2)]
    eps = [{**e, "queries": e["queries"][:3]} for e in eps]
    atomic_write_jsonl(d / "a.jsonl", [views.session_a(e) for e in eps])
    atomic_write_jsonl(d / "b.jsonl", [views.session_b(e) for e in eps])
    spec = {**cell_spec(urd_config, "t1"), "plugins": PLUGINS}
    return {"dir": d, "episodes": eps, "spec": json.dumps(spec), "checkpoint": str(tiny_checkpoint)}


def urd_run(cell, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "urd.harness.run", *args, "--checkpoint", cell["checkpoint"],
                           "--spec", cell["spec"]], capture_output=True, text=True, env=env, cwd=cell["dir"])


def consolidate(cell, system, out="fiches.jsonl", budget=120):
    return urd_run(cell, "consolidate", "--sessions", "a.jsonl", "--task", "t1", "--system", system,
                   "--split", "over", "--budget", str(budget), "--out", out)


def test_a_stash_on_the_system_finds_nothing_in_session_b(cell):
    # In one process the stash works: this is what the boundary has to stop.
    from urd.backbone.adapter import Backbone
    from urd.harness.runner import run_system
    from urd.session.context import Decode
    from urd.systems import registry

    sys.path.insert(0, str(TESTS))
    try:
        system = registry.build("stash", Backbone.load(cell["checkpoint"]), PLUGINS)
        same_process = run_system(system.backbone, system, "t1", cell["episodes"], "over", 120, 10, Decode(4))
    finally:
        sys.path.remove(str(TESTS))
    assert sum(r["verdict"] == "correct" for r in same_process) >= 4  # the hot keys were looked up

    # As jobs: consolidation and answering are separate processes; only the fiche file crosses.
    assert consolidate(cell, "stash").returncode == 0
    proc = urd_run(cell, "answer", "--prompts", "b.jsonl", "--fiches", "fiches.jsonl", "--system", "stash",
                   "--out", "raw.jsonl")
    assert proc.returncode == 0, proc.stderr
    raw = read_jsonl(cell["dir"] / "raw.jsonl")
    assert len(raw) == 6 and {r["response"] for r in raw} == {"NONE"}
    fiche = read_jsonl(cell["dir"] / "fiches.jsonl")
    assert [f["fiche_bytes"] for f in fiche] == [0, 0]


@pytest.mark.parametrize("system, message", [
    ("meter_reset", "the token meter is read-only"),
    ("raw_forward", r"the raw model \(model\) is not exposed to memory systems"),
    ("featherweight", r"fiche is \d{4} bytes, over the 120-byte budget"),
    ("loose_batch", r"declared 0 consolidation tokens but the backbone processed \d+"),
])
def test_meter_and_length_cheats_fail_the_job_with_a_clear_error(cell, system, message):
    import re

    proc = consolidate(cell, system, out=f"{system}.jsonl")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    plugin = re.escape(PLUGINS[system])  # a plug-in's error names its code: module:Class
    assert re.search(rf"urd consolidate FAILED: system '{system}' \({plugin}\), episode 0: {message}", last), \
        proc.stderr
    assert not (cell["dir"] / f"{system}.jsonl").exists()  # nothing half-written


def test_the_session_b_view_holds_no_answer_kind_or_transcript(urd_config):
    for task in ("t1", "t2"):
        make = calibrate.t1_episode if task == "t1" else calibrate.t2_episode
        for i in range(3):
            ep = make(urd_config, i)
            text = json.dumps(views.session_b(ep))
            assert ep["transcript"] not in text and '"kind"' not in text
            leaked = [q["expected"] for q in ep["queries"] if q["expected"] and q["expected"] in text]
            assert not leaked, leaked
            if task == "t2":
                assert ep["rule"]["marker"] not in text
            # the session-A view is the transcript, not the queries
            assert not any(q["prompt"] in json.dumps(views.session_a(ep)) for q in ep["queries"])


@pytest.mark.slow
def test_the_dag_shows_the_boundary(workflow):
    """consolidate -> answer -> judge; answer jobs never read the transcript or the answers."""
    proc = snakemake(workflow, "-n", "--forceall", "results/urd/tiny/summary.json", check=True)
    jobs = {}
    for block in proc.stdout.split("\nrule ")[1:] + proc.stdout.split("\nlocalrule ")[1:]:
        rule = block.split(":", 1)[0]
        inputs = next((line.split(":", 1)[1] for line in block.splitlines() if line.strip().startswith("input:")), "")
        output = next((line.split(":", 1)[1] for line in block.splitlines() if line.strip().startswith("output:")), "")
        jobs.setdefault(rule, []).append((inputs, output))
    assert {"prefill", "consolidate", "answer", "judge", "summary"} <= set(jobs)
    assert len(jobs["consolidate"]) == len(jobs["answer"]) == len(jobs["judge"])
    for inputs, _output in jobs["answer"]:
        assert "session_b.jsonl" in inputs and "fiches.jsonl" in inputs
        assert "session_a" not in inputs and "t1.jsonl," not in inputs + "," and "t2.jsonl," not in inputs + ","
        assert "prefill" not in inputs and "artifacts/" not in inputs
    for inputs, _output in jobs["consolidate"]:
        assert "session_a.jsonl" in inputs and "session_b" not in inputs
    summary_inputs = jobs["summary"][0][0]
    assert summary_inputs.count("fiches.jsonl") == summary_inputs.count("responses.jsonl") - 2


def test_the_prefill_cache_serves_transcripts_and_the_meter_still_counts_them(cell, tiny_backbone):
    """state_carry and summary read the transcript from the prefill job's state: the same fiche
    as reading it afresh, nothing forwarded twice, and every token still metered and declared."""
    from urd.harness import prefill
    from urd.harness.runner import consolidate_cell
    from urd.session.handle import ModelHandle
    from urd.systems import registry

    sessions = read_jsonl(cell["dir"] / "a.jsonl")
    prefill.compute(tiny_backbone, sessions, cell["dir"] / "p.bin", cell["dir"] / "p.json")
    for name in ("state_carry", "summary"):
        fresh = consolidate_cell(registry.build(name, ModelHandle(tiny_backbone), settings={"max_new_tokens": 8}),
                                 "t1", sessions, "over", 120, 10)
        cached = ModelHandle(tiny_backbone)
        prefill.load_into(cached, sessions, cell["dir"] / "p.bin", cell["dir"] / "p.json")
        before = tiny_backbone.tokens_processed
        recs = consolidate_cell(registry.build(name, cached, settings={"max_new_tokens": 8}), "t1", sessions, "over", 120, 10)
        forwarded = tiny_backbone.tokens_processed - before
        assert [r["fiche_sha256"] for r in recs] == [r["fiche_sha256"] for r in fresh], name
        assert [r["metered_tokens"] for r in recs] == [r["metered_tokens"] for r in fresh], name
        assert cached.tokens_served == sum(r["transcript_tokens"] for r in recs) > 0
        assert forwarded == sum(r["metered_tokens"] for r in recs) - cached.tokens_served, name
        for r in recs:
            assert r["transcript_tokens"] <= r["metered_tokens"] <= r["declared_tokens"], name

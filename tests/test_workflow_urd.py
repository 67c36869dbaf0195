"""urd rung 1 through Snakemake on `tiny`: a plug-in system from the README, rescore, the DAG."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import REDUCED, REPO, copy_of, readme_plugin, snakemake

pytestmark = pytest.mark.slow  # every test here runs Snakemake

TINY = "results/urd/tiny/summary.json"


@pytest.fixture()
def plugin_workflow(vanilla_built, tmp_path, monkeypatch):
    """The README's plug-in beside a reduced build of vanilla (a copy): only its own cells are new."""
    workflow = copy_of(vanilla_built, tmp_path / "wf")
    (workflow / "my_systems.py").write_text(readme_plugin())
    (workflow / "reduced.yaml").write_text(
        "plugins: {head: 'my_systems:Head'}\n"
        "systems: [vanilla, head]\n"
        "evaluate_episodes: 1\n"
        "evaluate_queries: 2\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(workflow), os.environ.get("PYTHONPATH")])))
    return workflow


def test_tiny_end_to_end_with_a_plugin_then_rescore(plugin_workflow):
    wf = plugin_workflow
    built = snakemake(wf, TINY, "--configfile", "reduced.yaml", check=True)
    # registering the plug-in reran nothing vanilla had built (its prefill, control and cells)
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", built.stdout + built.stderr, re.M))
    assert counts == {"consolidate": "4", "answer": "4", "judge": "4", "summary": "1", "total": "13"}, counts
    summary = json.loads((wf / TINY).read_text())
    assert set(summary["cells"]) == {"vanilla", "head"}
    head = summary["cells"]["head"]["t1"]["over"]
    assert len(head["episodes"]) == 1
    assert 0 < head["fiche_bytes"]["max"] <= 120
    assert head["declared_tokens"]["max"] == 0 and head["out_of_contract"] is False
    # a random-weight model scores 0 in session A: retention is undefined, with the reason
    assert head["score_A"] == 0  # tiny's seeded random weights recall nothing
    assert head["retention"] is None and "score A (in-session control) is 0" in head["retention_undefined"]
    # two queries an episode: the T2 episode starts with non-trigger queries, so no discrimination
    t2 = summary["cells"]["vanilla"]["t2"]["sanity"]
    assert t2["score_A"] is None and t2["rate_trigger_A"] is None and t2["rate_non_trigger_A"] == 0.0
    assert t2["retention"] is None and "no episode has a score A" in t2["retention_undefined"]
    prov = summary["provenance"]
    assert prov["checkpoint_sha256"] == (REPO / "calibration/backbones.sha256").read_text().split()[0]
    assert prov["master_seed"] == 20260807 and len(prov["config_sha256"]) == 64
    assert prov["packages"]["rwkv"] == "0.8.32"
    # every response line carries what an auditor needs
    line = json.loads((wf / "results/urd/tiny/head/t2/over/responses.jsonl").read_text().splitlines()[0])
    for key in ("episode", "query_id", "kind", "prompt_sha256", "response", "parsed", "expected", "verdict", "marker"):
        assert key in line
    # progress was reported per episode
    assert "episode 1/1 consolidated" in (wf / "logs/urd/tiny/head/t1/over.consolidate.log").read_text()
    assert "episode 1/1 answered" in (wf / "logs/urd/tiny/head/t1/over.answer.log").read_text()

    # editing the plug-in's module reruns its own cells and what folds them, nothing else
    with open(wf / "my_systems.py", "a") as fh:
        fh.write("\n# an edit\n")
    dry = snakemake(wf, TINY, "--configfile", "reduced.yaml", "-n", check=True)
    out = dry.stdout + dry.stderr
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
    assert counts == {"consolidate": "4", "answer": "4", "judge": "4", "summary": "1", "total": "13"}, out
    assert re.search(r"params have changed since last execution:\s+consolidate\n", out), out
    assert "system=vanilla" not in out and "system=head" in out
    (wf / "my_systems.py").write_text(readme_plugin())

    rescore = [sys.executable, "-m", "urd.harness.summarize", "--rescore", "results/urd/tiny"]
    ok = subprocess.run(rescore, cwd=wf, capture_output=True, text=True)
    assert ok.returncode == 0 and "identical" in ok.stderr

    # tamper with one raw response: the rescore sees both the verdict drift and the figures
    path = wf / "results/urd/tiny/head/t1/over/responses.jsonl"
    recs = [json.loads(l) for l in path.read_text().splitlines()]
    seen = next(r for r in recs if r["kind"] != "unseen")
    seen["response"] = " " + seen["expected"]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    bad = subprocess.run(rescore, cwd=wf, capture_output=True, text=True)
    assert bad.returncode == 1 and "DIFFERENT" in bad.stderr and "stored verdicts differ" in bad.stderr


def test_an_unknown_system_fails_before_any_model_is_loaded(workflow):
    proc = snakemake(workflow, TINY, "-n", "--config", "systems=[vanilla,nosuch]")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "systems: expected a known system" in out and "'nosuch'" in out
    assert not (workflow / "models").exists()


def test_the_real_scale_dag_is_fetch_run_fold_with_a_spend_line(workflow):
    proc = snakemake(workflow, "results/urd/0.4b/summary.json", "-n", "--profile", str(workflow / "profiles/slurm"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
    assert counts["fetch_backbone"] == "1" and counts["control"] == "2"
    cells = str(7 * 2 * 2)
    assert counts["consolidate"] == counts["answer"] == counts["judge"] == cells and counts["summary"] == "1"
    assert counts["prefill"] == counts["judge_control"] == "2"
    # the replay systems' tuning jobs: 2 recipes x 12 transcripts, sent to a GPU node by the SLURM
    # profile and billed as GPU time at the speeds measured on an H200 (config train_speed.0.4b.gpu): replay_banc 12 x ceil(64 x 6,144 / 27,449 + 90 s
    # load + 52 s compile) = 12 x 157 s, replay_tune 12 x ceil(10 x 2,048 / 9,233 + 142) = 12 x 145 s:
    # 3,624 GPU s = 1.01 h
    assert counts["tune_state"] == "24"
    assert re.search(r"urd planned spend \(124 jobs to run\): GPU 1\.01 h, CPU \d+\.\d\d h, US\$ \d+\.\d\d", out)


CKPT = "models/rwkv7-g1d-0.1b-20260129-ctx8192.pth"


@pytest.fixture()
def loopback_hub(monkeypatch):
    """A Hub on loopback, reached as RWKV users reach a mirror: through HF_ENDPOINT."""
    from loopback_http import FileServer

    with FileServer() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        yield hub


def test_the_default_revision_fetches_the_pinned_bytes_from_main(workflow, loopback_hub):
    body = b"a checkpoint this test pins itself\n" * 1000
    sha = hashlib.sha256(body).hexdigest()
    manifest = workflow / "calibration/backbones.sha256"
    manifest.write_text(re.sub(rf"^\S+(  {re.escape(CKPT)})$", sha + r"\1", manifest.read_text(), flags=re.M))
    loopback_hub.hub_file("BlinkDL/rwkv7-g1", CKPT.split("/")[1], body, commit="e" * 40)
    snakemake(workflow, CKPT, check=True)
    assert (workflow / CKPT).read_bytes() == body
    assert f"BlinkDL/rwkv7-g1@main is commit {'e' * 40}" in (workflow / f"logs/fetch/{CKPT.split('/')[1]}.log").read_text()


def test_a_hub_serving_other_bytes_than_the_pin_fails_the_job_and_leaves_nothing(workflow, loopback_hub):
    body = b"not the pinned checkpoint"
    loopback_hub.hub_file("BlinkDL/rwkv7-g1", CKPT.split("/")[1], body, commit="f" * 40)
    proc = snakemake(workflow, CKPT)
    out = proc.stdout + proc.stderr
    pinned = "e10d7b1930c2644c5c6b194444774d6d82ec8212a78763493149de09aac7d83f"
    assert proc.returncode != 0
    assert "SHA-256 mismatch" in out and pinned in out and hashlib.sha256(body).hexdigest() in out
    assert not (workflow / CKPT).exists() and not list((workflow / "models").rglob("*.pth"))


def test_a_summary_reads_only_its_declared_cells(vanilla_built, tmp_path):
    """Leftover cells of an earlier run in the folder change nothing, even outside the sandbox (the
    summary's own discipline): the same summary as the fresh build's, the sandbox setting aside."""
    wf = copy_of(vanilla_built, tmp_path / "wf")
    shutil.copytree(wf / "results/urd/tiny/vanilla", wf / "results/urd/tiny/gzip_tail")  # another system's cells
    snakemake(wf, TINY, *REDUCED, "systems=[vanilla]", "sandbox=off", "--forcerun", "summary", check=True)
    mine, fresh = (json.loads((d / TINY).read_text()) for d in (wf, vanilla_built))
    assert set(mine["cells"]) == {"vanilla"} and mine["provenance"]["sandbox"]["summary"] == "off (sandbox: off)"
    assert mine["provenance"]["sandbox"]["cells"] == fresh["provenance"]["sandbox"]["cells"]
    for summary in (mine, fresh):  # what the sandbox setting itself changes
        summary["provenance"].pop("sandbox"), summary["provenance"].pop("config_sha256")
    assert mine == fresh


def write_receipt(path, rule, label, outputs, *, cwd):
    """A receipt as the runner writes it (urd.core.receipt), its output paths relative to `cwd`."""
    import os

    from urd.core.receipt import write

    here = os.getcwd()
    os.chdir(cwd)
    try:
        write(path, rule, label, outputs)
    finally:
        os.chdir(here)


def test_a_truncated_cell_is_refused_naming_the_file(vanilla_built, tmp_path):
    workflow = copy_of(vanilla_built, tmp_path / "wf")
    raw = workflow / "results/urd/tiny/vanilla/t2/over/raw.jsonl"
    lines = raw.read_text().splitlines(keepends=True)
    raw.write_text("".join(lines[:-1]))  # one reply lost after the answer job ended
    proc = snakemake(workflow, TINY, *REDUCED, "systems=[vanilla]")
    assert proc.returncode != 0
    log = (workflow / "logs/urd/tiny/vanilla/t2/over.judge.log").read_text()
    assert "urd judge FAILED: results/urd/tiny/vanilla/t2/over/raw.jsonl: SHA-256 mismatch" in log, log
    assert "it changed after its job ended (receipt results/urd/tiny/vanilla/t2/over/raw.receipt.json)" in log, log
    # lost by the answer job itself: its runner's receipt vouches for the bytes, the judge counts the replies
    receipt = raw.with_name("raw.receipt.json")
    kept = receipt.read_text()
    write_receipt(receipt, "answer", json.loads(receipt.read_text())["sandbox"], [str(raw.relative_to(workflow))],
                  cwd=workflow)
    proc = snakemake(workflow, TINY, *REDUCED, "systems=[vanilla]")
    assert proc.returncode != 0
    log = (workflow / "logs/urd/tiny/vanilla/t2/over.judge.log").read_text()
    assert "urd judge FAILED: results/urd/tiny/vanilla/t2/over/raw.jsonl: query_id: expected a reply to each of the 2 " \
           "evaluated queries, got '1 missing (first: t2-e000-q01)'" in log, log
    assert not (workflow / "results/urd/tiny/vanilla/t2/over/responses.jsonl").exists()
    # and --rescore refuses a summary whose responses were cut after the fact
    raw.write_text("".join(lines))
    receipt.write_text(kept)
    snakemake(workflow, TINY, *REDUCED, "systems=[vanilla]", check=True)
    resp = workflow / "results/urd/tiny/vanilla/t1/sanity/responses.jsonl"
    resp.write_text("".join(resp.read_text().splitlines(keepends=True)[:-1]))
    bad = subprocess.run([sys.executable, "-m", "urd.harness.summarize", "--rescore", "results/urd/tiny"], cwd=workflow,
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "vanilla/t1/sanity/responses.jsonl: episode 0: expected the control's queries" in bad.stderr, bad.stderr


def test_every_registered_plugin_is_checked_at_parse_time(workflow):
    proc = snakemake(workflow, TINY, "-n", "--config", "plugins={ghost: 'nosuch_module:Ghost'}")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config/config.yaml (+ --configfile, --config): plugins.ghost: expected 'module:Class' naming a class Python can import (its module on PYTHONPATH, or an installed package)" in out, out


def test_a_checkout_refuses_to_run_another_checkouts_package(workflow):
    (workflow / "src/urd").mkdir(parents=True)  # this copy's own package, not the one Python imports
    proc = snakemake(workflow, TINY, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "is not this checkout's" in out and "pip install -e ." in out, out

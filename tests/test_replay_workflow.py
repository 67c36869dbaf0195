"""Replay in the repo's own DAG: one tuning job per (recipe, transcript) shared by both splits, the
exact planned spend of `snakemake -n`, and a tiny replay target's tuning job run on the gpu
partition through `snakemake --profile slurm` on a real single-node cluster (tests/slurm_cluster.py;
skipped, saying why, where SLURM cannot run), its cell consolidated from the artifact."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow
from conftest import snakemake as smk

from urd.workflow import sandbox

pytestmark = pytest.mark.slow  # every test here runs Snakemake

SRC = REPO / "src"
SMALL = ["--config", "evaluate_episodes=2", "evaluate_queries=2"]
PRICES = "(GPU US$0.60/h, CPU US$0.05/h as of 2026-11-30; API US$0.00)"


def cells(systems=("replay_tune", "replay_banc"), tasks=("t1", "t2"), splits=("over", "sanity")):
    return [f"results/urd/tiny/{s}/{t}/{p}/responses.jsonl" for s in systems for t in tasks for p in splits]


def dry_run(wd: Path, *args: str) -> tuple[dict[str, int], list[tuple], str]:
    """(job counts by rule, tuning jobs' (recipe, sha) wildcards, the spend line) of `snakemake -n`."""
    r = smk(wd, "-n", "--cores", "2", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    counts = {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", r.stdout, re.M) if m[0] != "total"}
    tunes = re.findall(r"wildcards: scale=tiny, recipe=(\w+), sha=([0-9a-f]{64})", r.stdout)
    return counts, tunes, r.stdout.rstrip("\n").splitlines()[-1]


@pytest.fixture()
def wf(tmp_path) -> Path:
    wd = copy_workflow(tmp_path / "wf")
    (wd / "slurm").symlink_to("profiles/slurm")  # as at the repo root
    return wd


def test_one_tuning_job_per_transcript_and_recipe_and_the_exact_spend(wf):
    counts, tunes, line = dry_run(wf, *SMALL, "--", *cells())
    # 8 cells (2 systems x 2 tasks x 2 splits) but 8 tuning jobs, not 16: 2 recipes x 2 tasks x
    # 2 episodes, each shared by the over and sanity cells; each cell is consolidate -> answer
    # -> judge; verify: the model, each task's data and its two views
    assert counts == {"make_tiny": 1, "calibrate": 1, "verify": 7, "prefill": 2, "tune_state": 8,
                      "consolidate": 8, "answer": 8, "judge": 8}
    assert len(set(tunes)) == len(tunes) == 8
    assert {sha for _, sha in tunes if _ == "replay_tune"} == {sha for _, sha in tunes if _ == "replay_banc"}
    # each tiny tuning job: trained tokens / 750 tokens/s + 1 s load (config train_speed.tiny.cpu),
    # in whole seconds: 2 x 4 (T1 replay_tune, ~1,840 tokens) + 2 x 2 (T2, ~175) + 4 x 3
    # (replay_banc, 1,024) = 24 s; prefill, consolidate and answer jobs: 2 s start-up + their
    # tokens, 46 CPU s in all; judge jobs bill nothing. Here, with no GPU, the tuning jobs run on
    # the CPU: 70 CPU s, $0.001
    assert line == f"urd planned spend (43 jobs to run): GPU 0.00 h, CPU 0.02 h, US$ 0.00 {PRICES}"
    # through the SLURM profile they go to a GPU node (priced at the CPU's figure, tiny's only one):
    # 24 GPU s and 46 CPU s
    counts_c, tunes_c, on_cluster = dry_run(wf, "--profile", "slurm", *SMALL, "--", *cells())
    assert (counts_c, sorted(tunes_c)) == (counts, sorted(tunes))
    assert on_cluster == f"urd planned spend (43 jobs to run): GPU 0.01 h, CPU 0.01 h, US$ 0.00 {PRICES}"


def test_dry_run_of_the_01b_summary_prints_planned_gpu_hours_and_dollars(wf):
    counts, _, line = dry_run(wf, "--profile", "slurm", "results/urd/0.1b/summary.json")
    assert counts["tune_state"] == 24  # 2 recipes x (6 T1 + 6 T2) transcripts
    # replay_banc: 12 x ceil(64 steps x 6,144 / 49,440 tokens/s + 60 s load + 52 s compile) = 12 x 120 s;
    # replay_tune, 10 passes, every transcript under ctx 2,048, so at its step time (2,048 / 16,236 s):
    # 12 x ceil(10 x 0.126 + 112) = 12 x 114 s; 2,808 GPU s = 0.78 h
    m = re.fullmatch(r"urd planned spend \(124 jobs to run\): GPU 0\.78 h, CPU (\d+\.\d\d) h, US\$ (\d+\.\d\d) "
                     + re.escape(PRICES), line)
    assert m, line
    assert float(m[2]) == pytest.approx(0.78 * 0.60 + float(m[1]) * 0.05, abs=0.01)


def squeue_partitions(env: dict) -> dict[str, set[str]]:
    """Partitions by rule of the jobs SLURM still remembers (MinJobAge), from the plugin's comments."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%P|%k"], env=env, capture_output=True,
                         text=True, check=True).stdout
    parts: dict[str, set[str]] = {}
    for line in out.splitlines():
        partition, comment = line.split("|", 1)
        m = re.match(r"rule_([a-z_]+?)(_wildcards_|$)", comment)
        if m:
            parts.setdefault(m[1], set()).add(partition)
    return parts


def test_tiny_replay_target_runs_through_the_slurm_profile(slurm_cluster, wf):
    env = {**slurm_cluster.env, "PYTHONPATH": str(SRC)}
    # The shared inputs (data, tiny checkpoint, their verify stamps) are built locally first: each
    # SLURM stage costs ~20-30 s of submission and polling (CPU routing: test_slurm_profile.py).
    inputs = ["results/urd/verified/data/t2.jsonl.sha256", "results/urd/verified/data/t2.session_b.jsonl.sha256",
              "results/urd/verified/models/urd-tiny-rwkv7-L2-D128.pth.sha256", "results/urd/tiny/prefill/t2.json"]
    small = ["--config", "evaluate_episodes=1", "evaluate_queries=2", "--"]
    pre = smk(wf, "--cores", "2", *small, *inputs)
    assert pre.returncode == 0, pre.stdout + pre.stderr
    # one cell, CI-sized (one episode, two queries): the out-of-contract diagnostic, whose label
    # must survive the trip; the fake GPU is single, so a second recipe would only queue behind it
    targets = [c.replace("responses.jsonl", "fiches.jsonl") for c in cells(("replay_banc",), ("t2",), ("over",))]
    t0 = time.monotonic()
    # as a user types it at the repo root (up to the tuning job), with the first status check after
    # 1 s rather than the profile's 5 (these jobs take seconds)
    r = smk(wf, "--profile", "slurm", "--slurm-init-seconds-before-status-checks", "1", "--until", "tune_state",
            *small, *targets, env=env, timeout=400)
    wall = time.monotonic() - t0
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{slurm_cluster.log_tail()}"
    # tuning jobs ran as SLURM jobs on the gpu partition (with its GPU)
    (art,) = wf.glob("artifacts/replay/tiny/*/*/costs.json")
    c = json.loads(art.read_text())
    assert art.parts[-3] == "replay_banc" and c["task"] == "t2" and c["episode"] == 0
    assert c["slurm_partition"] == "gpu" and c["cuda_visible_devices"] == "0" and c["slurm_job_id"].isdigit(), c
    assert c["out_of_contract"] is True
    # the compute node ran the job in the same sandbox as a workstation does, where it has one
    assert c["sandbox"] == ("bwrap" if sandbox.unavailable() is None else f"off ({sandbox.unavailable()})")
    parts = squeue_partitions(env)
    assert parts.get("tune_state") == {"gpu"} and "consolidate" not in parts, parts
    # the cell's session A, consolidated from the cluster's artifact, labelled out of contract
    local = smk(wf, "--cores", "2", *small, *targets)
    assert local.returncode == 0, local.stdout + local.stderr
    (rec,) = [json.loads(line) for line in (wf / targets[0]).open()]
    assert rec["out_of_contract"] is True and rec["metered_tokens"] == 0
    assert rec["declared_tokens"] == c["trained_tokens"]
    # the sanity cells: replay_banc's reuses its artifact, only replay_tune's recipe is left to tune
    # (one tiny tuning job on a T2 transcript: 4 GPU seconds)
    counts, tunes, line = dry_run(wf, "--config", "evaluate_episodes=1", "evaluate_queries=2", "--",
                                  *cells(systems=("replay_banc", "replay_tune"), tasks=("t2",), splits=("sanity",)))
    assert counts == {"tune_state": 1, "consolidate": 2, "answer": 2, "judge": 2}
    assert [recipe for recipe, _ in tunes] == ["replay_tune"]
    assert line.startswith("urd planned spend (7 jobs to run): GPU 0.00 h"), line  # 4 s: under 0.005 h
    print(f"tiny replay target through SLURM: {wall:.1f} s")

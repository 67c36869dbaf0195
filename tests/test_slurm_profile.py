"""The repo's SLURM profile, end to end on a real single-node cluster (tests/slurm_cluster.py).

Snakemake is started with ``--profile slurm`` exactly as a user types it at the repo root, so
the test covers the ``slurm -> profiles/slurm`` entry point, partition routing, squeue polling
and the fake GPU. The workflow lives in a temp dir that links ``slurm`` to the repo's own entry
point (not ``-d``: Snakemake resolves the profile's relative ``partitions.yaml`` against the
working directory it started in, before ``--directory`` moves it), so nothing is written into
the checkout.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import REPO, snakemake

SNAKEFILE = r"""
localrules: all

rule all:
    input: "cpu.txt", "gpu.txt"

# Each job reports where SLURM ran it (the job id proves it did not run locally), the memory
# it was given, its time limit and its CPUs.
REPORT = (
    "echo partition=$SLURM_JOB_PARTITION gpus=${{CUDA_VISIBLE_DEVICES:-none}} job=${{SLURM_JOB_ID:-none}}"
    " mem=$(squeue -h -j $SLURM_JOB_ID -o %m) limit=$(squeue -h -j $SLURM_JOB_ID -o %l)"
    " cpus=$(squeue -h -j $SLURM_JOB_ID -o %C) > {output}"
)

# declares what urd's model jobs declare (urd.cost.estimate.job_resources), in place of the
# profile's defaults (2,000 MB, 60 minutes)
rule cpu_job:
    output: "cpu.txt"
    resources: mem_mb=1500, runtime=7
    shell: REPORT

# a tuning job's threads (config replay.threads): torch runs that many, so SLURM must give them
rule gpu_job:
    output: "gpu.txt"
    threads: 2
    resources: gpu=1
    shell: REPORT
"""


def report(path: Path) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in path.read_text().split())


def test_profile_entry_points_exist():
    # `--profile slurm` is looked up relative to the working directory, not under profiles/
    assert (REPO / "slurm").resolve() == (REPO / "profiles" / "slurm").resolve()
    assert (REPO / "slurm" / "config.yaml").is_file() and (REPO / "slurm" / "partitions.yaml").is_file()


@pytest.mark.slow
def test_two_rule_workflow_routes_gpu_job_to_gpu_partition(slurm_cluster, tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "slurm").symlink_to(REPO / "slurm")
    t0 = time.monotonic()
    # the first status check after 1 s rather than the profile's 5: these jobs take a second
    r = snakemake(tmp_path, "--profile", "slurm", "--slurm-init-seconds-before-status-checks", "1", "all",
                  env=slurm_cluster.env, timeout=110)
    wall = time.monotonic() - t0
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{slurm_cluster.log_tail()}"
    cpu, gpu = report(tmp_path / "cpu.txt"), report(tmp_path / "gpu.txt")
    assert gpu["partition"] == "gpu" and gpu["gpus"] == "0", gpu
    assert cpu["partition"] == "cpu" and cpu["gpus"] == "none", cpu
    assert (cpu["mem"], cpu["limit"], cpu["cpus"]) == ("1500M", "7:00", "1"), cpu
    assert (gpu["mem"], gpu["limit"]) == ("2000M", "1:00:00"), gpu  # the profile's defaults
    assert gpu["cpus"] == "2", gpu  # the rule's threads, not a profile-wide default
    assert cpu["job"].isdigit() and gpu["job"].isdigit() and cpu["job"] != gpu["job"]
    print(f"2-rule workflow through SLURM: {wall:.1f} s (cluster set-up {slurm_cluster.setup_seconds:.2f} s)")


@pytest.mark.slow
def test_dry_run_through_profile_prints_planned_spend(tmp_path):
    # No cluster needed: `-n` swaps in the dry-run executor, but the profile is still parsed,
    # and `workflow.dryrun` must still be seen as True by the spend preview.
    (tmp_path / "Snakefile").write_text(
        "from urd.cost.spend import register_spend_preview\n"
        "register_spend_preview(workflow, {'as_of': '2026-11-30', 'gpu_usd_per_hour': 2.0, 'cpu_usd_per_hour': 0.1})\n"
        + SNAKEFILE.replace("resources: gpu=1", "resources: gpu=1, gpu_seconds=1800")
    )
    (tmp_path / "slurm").symlink_to(REPO / "slurm")
    r = snakemake(tmp_path, "--profile", "slurm", "-n", "all", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == (
        "urd planned spend (3 jobs to run): GPU 0.50 h, CPU 0.00 h, US$ 1.00 "
        "(GPU US$2.00/h, CPU US$0.10/h as of 2026-11-30; API US$0.00)"
    )

"""What a CPU job asks a cluster for: memory for the model and the states it holds at once
(config cpu_memory, measured by benchmarks/job_memory.py), and a wall-time limit from its
estimated CPU seconds; and that the workflow's model jobs declare them (a job that asks for
the SLURM profile's default 2,000 MB while it holds 4,000 states is killed mid-run)."""

from __future__ import annotations

import copy
import math
import re

import pytest
from conftest import copy_workflow, snakemake

from urd.core.errors import InputError
from urd.cost.estimate import answered_at_once, cell_cpu_seconds, cell_rows, job_resources
from urd.rung2 import plan
from urd.session.context import MAX_BATCH_ROWS
from urd.systems.state_carry import StateCarry


@pytest.fixture
def config(urd_config):
    c = copy.deepcopy(urd_config)
    c["cpu_memory"] = {"small": {"model_mb": 1000, "row_mb": 2.5, "basis": "test"},
                       "large": {"model_mb": 3000, "row_mb": 0.5, "basis": "test"}}
    return c


def test_memory_is_the_model_and_each_row_rounded_up_and_runtime_doubles_cpu_minutes(config):
    # 1000 + 101 x 2.5 = 1252.5 -> 1253 MB; 61 CPU s -> 2 minutes -> 2 x 2 + 10
    assert job_resources(config, "small", 61, 101) == {"mem_mb": 1253, "runtime": 14}
    assert job_resources(config, "small", 60, 0) == {"mem_mb": 1000, "runtime": 12}
    # a scale with no measurement is asked for at the largest measured model, not the first
    assert job_resources(config, "nosuch", 1, 2) == {"mem_mb": 3001, "runtime": 12}
    del config["cpu_memory"]
    with pytest.raises(InputError, match=r"cpu_memory.*benchmarks/job_memory.py"):
        job_resources(config, "small", 1, 1)


def test_a_cells_rows_follow_its_step_and_the_evaluated_slice(urd_config):
    c = copy.deepcopy(urd_config)
    assert (c["episodes"], c["queries"]) == (6, 25)
    t2 = c["tasks"]["t2"]["triggers"] + c["tasks"]["t2"]["non_triggers"]
    assert [cell_rows(c, "t1", s) for s in ("prefill", "consolidate", "control", "answer")] == [6, 6, 6 * 26, 150]
    assert cell_rows(c, "t2", "answer") == 6 * t2
    c.update(evaluate_episodes=2, evaluate_queries=3)
    assert cell_rows(c, "t1", "answer") == 6 and cell_rows(c, "t1", "control") == 8
    with pytest.raises(ValueError, match="nosuch"):
        cell_rows(c, "t1", "nosuch")
    # batches hold whole contexts: at most MAX_BATCH_ROWS rows, or one context's queries
    assert answered_at_once(5000, 25) == MAX_BATCH_ROWS and answered_at_once(100, 25) == 100
    assert answered_at_once(5000, 2000) == 2000


class CappedState(StateCarry):
    """A state system whose fiche depends on the consolidation cap (as one that adapts to it)."""

    fiche_depends_on_cap = True


def test_rung2_rows_count_what_one_batch_decodes(urd_config):
    c = copy.deepcopy(urd_config)
    p, ch = c["urd2"]["pareto"], c["urd2"]["chains"]
    eps, points = p["episodes"], len(p["budgets"]) * len(p["caps"])
    # 6 x 28 points x 25 = 4,200 queries, in batches of whole contexts up to MAX_BATCH_ROWS
    assert eps * points * 25 == 4200 and plan.sweep_rows(c, "0.1b", "answer", "t1", "state_carry") == MAX_BATCH_ROWS
    # a text fiche does not depend on the cap, nor does state_carry's state (it says so): one
    # decode per budget; a state system whose fiche depends on the cap, one per point
    p["episodes"] = 2
    assert plan.sweep_rows(c, "0.1b", "answer", "t1", "retrieval") == 2 * len(p["budgets"]) * 25 == 350
    assert plan.sweep_rows(c, "0.1b", "answer", "t1", "state_carry") == 350
    c["plugins"] = {"capped": "test_job_resources:CappedState"}
    qualified = len(p["budgets"]) * sum(cap is None or cap >= 1 for cap in p["caps"])  # reading fits the cap
    assert plan.sweep_rows(c, "0.1b", "answer", "t1", "capped") == min(2 * qualified * 25, MAX_BATCH_ROWS)
    p["episodes"] = eps
    assert plan.sweep_rows(c, "0.1b", "answer", "t1", "symbolic") == 0  # answers without the model
    # vanilla decodes every query from its empty fiche, the same at every point: once an episode
    assert plan.sweep_rows(c, "0.1b", "answer", "t1", "vanilla") == answered_at_once(eps * 25, 25)
    assert plan.sweep_rows(c, "0.1b", "consolidate", "t1", "summary") == eps * points  # every note at once
    assert plan.sweep_rows(c, "0.1b", "consolidate", "t1", "gzip_tail") == eps
    chains = ch["chains"] or c["urd2"]["data"]["chains"]
    # after boundary 1 session 1 alone; after boundary 3 sessions 1-3 and the fresh fiche's
    assert plan.chain_rows(c, "0.1b", "answer", "t1", "retrieval", 1) == chains * 25
    assert plan.chain_rows(c, "0.1b", "answer", "t1", "retrieval", 3) == chains * 4 * 25
    assert plan.chain_rows(c, "0.1b", "answer", "t1", "symbolic", 3) == 0
    assert plan.chain_rows(c, "0.1b", "control", "t1") == chains * (ch["sessions"] + 25)
    d = c["urd2"]["dose"]
    assert plan.dose_rows(c, "0.1b") == d["episodes"] * 25  # T1's 25 queries outnumber T2's 24


def resources(stdout: str, rule: str) -> list[dict]:
    """The wildcards and resources of each `rule` job in `snakemake -n` output."""
    out = []
    for block in stdout.split("\nrule ")[1:]:
        if block.split(":", 1)[0] != rule:
            continue
        wildcards = re.search(r"wildcards: (.*)", block)
        wc = dict(re.findall(r"(\w+)=([\w.]+)", wildcards[1])) if wildcards else {}
        res = {k: int(v) for k, v in re.findall(r"(cpu_seconds|mem_mb|runtime)=(\d+)", block)}
        threads = re.search(r"^\s+threads: (\d+)$", block, re.M)  # Snakemake prints it when not 1
        out.append({**wc, **res, "threads": int(threads[1]) if threads else 1})
    return out


@pytest.mark.slow
def test_the_model_jobs_of_the_dag_declare_their_memory_and_time(tmp_path, urd_config):
    wf = copy_workflow(tmp_path / "wf")
    r = snakemake(wf, "-n", "results/urd/0.1b/summary.json", "results/urd2/0.1b/pareto/summary.json", check=True)
    m = urd_config["cpu_memory"]["0.1b"]
    answers = resources(r.stdout, "answer")
    assert len(answers) == len(urd_config["systems"]) * 2 * 2
    for job in answers:
        rows = cell_rows(urd_config, job["task"], "answer")
        assert job["mem_mb"] == math.ceil(m["model_mb"] + rows * m["row_mb"]) > 2000  # the profile's default
        seconds = cell_cpu_seconds(urd_config, "0.1b", job["task"], "answer", job["system"], job["split"])
        assert job["cpu_seconds"] == seconds and job["runtime"] == 2 * math.ceil(seconds / 60) + 10
    for rule in ("prefill", "control", "consolidate"):
        assert all(job["mem_mb"] >= m["model_mb"] for job in resources(r.stdout, rule)), rule
    # config cpu_speed is measured at one torch thread: the thread count these jobs get (Snakemake
    # sets OMP_NUM_THREADS to a job's threads), so their declared CPU time is at that speed (rung
    # 1's model rules and the sweep's here; the chains' and dose's rules declare no threads either)
    model_rules = {rule for rule in re.findall(r"^rule (\w+):", r.stdout, re.M)
                   if any("mem_mb" in job and "cpu_seconds" in job for job in resources(r.stdout, rule))}
    assert {"prefill", "control", "consolidate", "answer", "sweep_answer"} <= model_rules
    assert {rule: {job["threads"] for job in resources(r.stdout, rule)} for rule in model_rules} == \
           {rule: {1} for rule in model_rules}
    sweeps = {job["system"]: job["mem_mb"] for job in resources(r.stdout, "sweep_answer") if job["task"] == "t1"}
    # summary's 4,200 queries: the model and a full batch; vanilla decodes its queries too
    assert sweeps["summary"] == math.ceil(m["model_mb"] + MAX_BATCH_ROWS * m["row_mb"])
    assert sweeps["vanilla"] == math.ceil(m["model_mb"] + plan.sweep_rows(urd_config, "0.1b", "answer", "t1", "vanilla")
                                          * m["row_mb"]) > math.ceil(m["model_mb"])


def test_a_system_is_priced_by_its_class_whatever_name_it_is_registered_under(urd_config):
    """A second entry of summary's class is priced as summary, at its own settings: rung 1's
    cells, rung 2's sweep (every point's notes in one batch) and chains. A class's flags, not its
    name, say what a job runs: text work, the model, or notes."""
    from urd.cost.estimate import _seconds

    c = copy.deepcopy(urd_config)
    c["plugins"] = {"notes": "urd.systems.summary:Summary", "tail": "urd.systems.gzip_tail:GzipTail",
                    "lookup": "urd.systems.symbolic:Symbolic"}
    c["system_settings"]["notes"] = copy.deepcopy(c["system_settings"]["summary"])
    start_up = _seconds(c, "0.1b")
    for split in ("over", "sanity"):
        price = cell_cpu_seconds(c, "0.1b", "t1", "consolidate", "notes", split)
        assert price == cell_cpu_seconds(c, "0.1b", "t1", "consolidate", "summary", split) > start_up
        assert plan.chain_cpu_seconds(c, "0.1b", "consolidate", "t1", "notes", split) == \
            plan.chain_cpu_seconds(c, "0.1b", "consolidate", "t1", "summary", split)
    sweep = plan.sweep_cpu_seconds(c, "0.1b", "consolidate", "t1", "notes")
    assert sweep == plan.sweep_cpu_seconds(c, "0.1b", "consolidate", "t1", "summary") > start_up
    p = c["urd2"]["pareto"]
    assert plan.sweep_rows(c, "0.1b", "consolidate", "t1", "notes") == p["episodes"] * len(p["budgets"]) * len(p["caps"])
    # its own settings: notes capped at 8 tokens cost less than summary's
    c["system_settings"]["notes"] = {"max_new_tokens": 8}
    assert start_up < cell_cpu_seconds(c, "0.1b", "t1", "consolidate", "notes", "sanity") < \
        cell_cpu_seconds(c, "0.1b", "t1", "consolidate", "summary", "sanity")
    assert plan.sweep_cpu_seconds(c, "0.1b", "consolidate", "t1", "notes") < sweep
    # text work reads no transcript; an answer from the fiche alone decodes nothing
    assert plan.sweep_cpu_seconds(c, "0.1b", "consolidate", "t1", "tail") == start_up
    assert plan.chain_cpu_seconds(c, "0.1b", "consolidate", "t1", "tail", "over") == start_up
    assert plan.sweep_cpu_seconds(c, "0.1b", "consolidate", "t1", "state_carry") > start_up
    assert plan.chain_cpu_seconds(c, "0.1b", "answer", "t1", "lookup", boundary=3) == start_up
    assert plan.chain_rows(c, "0.1b", "answer", "t1", "lookup", 3) == 0
    assert plan.chain_cpu_seconds(c, "0.1b", "answer", "t1", "vanilla", boundary=3) > start_up

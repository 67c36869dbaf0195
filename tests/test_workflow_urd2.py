"""Rung 2 through the real rules on tiny, offline, in a fresh copy of the workflow: the chains,
the Pareto sweep and the dose-response build with the reduced profile below, the symbolic
system's R matrix, backward transfer and frontier equal what arithmetic predicts, a plug-in that
reaches for earlier sessions on disk earns nothing, and the tables and figures are made."""

import json
import os

import pytest
from conftest import REPO, needs_sandbox, readme_plugin, snakemake

pytestmark = pytest.mark.slow

# The reduced profile: two chains of three T1 sessions, one model-free system plus the cheat, a
# sweep of three budgets x two caps on one episode (the README's example plug-in among its
# systems), one dose of one task (T2 chains and the other variants: tests/test_urd2.py, through
# the same harness in one process).
REDUCED_URD2 = """
plugins: {chain_reread: "cheats:ChainReread", head: "my_systems:Head"}
publish: {scales: [tiny], urd2: [chains, pareto, dose]}
urd2:
  scales:
    tiny:
      chains: {chains: 2, sessions: 3, lengths: [2, 3], variants: [t1],
               systems: [symbolic, chain_reread], budgets: {two: 1280}}
      pareto: {tasks: [t1], episodes: 1, systems: [vanilla, symbolic, gzip_tail, head],
               budgets: [80, 640, 960], caps: [0, 10]}
      dose: {tasks: [t2], episodes: 1, doses: [0.5]}
    0.1b:
      chains: {chains: 1, sessions: 2, lengths: [2], variants: [t1], systems: [symbolic], budgets: {one: 640}}
      pareto: {tasks: [t1], episodes: 1, systems: [vanilla, summary], budgets: [80], caps: [10]}
      dose: {tasks: [t2], episodes: 1, doses: [0.5, 19.2]}
"""
TARGETS = ["results/urd2/tiny/chains/summary.json", "results/urd2/tiny/pareto/summary.json",
           "results/urd2/tiny/dose/summary.json", "results/urd/tables/urd2_chains.md",
           "results/urd/tables/urd2_pareto.md", "results/urd/figures/urd2_pareto_tiny.png",
           "results/urd/tables/urd2_dose.md", "results/urd/figures/urd2_dose_tiny.png"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from conftest import copy_workflow

    from urd.workflow import sandbox

    wf = copy_workflow(tmp_path_factory.mktemp("urd2") / "wf")
    (wf / "reduced.yaml").write_text(REDUCED_URD2)
    (wf / "my_systems.py").write_text(readme_plugin())
    box = "off" if sandbox.unavailable() else "required"
    snakemake(wf, *_args(box), check=True, env=ENV)
    return wf, box


# the cheat plug-in's module, and the workflow's own folder (every job runs there) for my_systems
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "tests"), "."))}


def _args(box):
    return [*TARGETS, "--configfile", "reduced.yaml", "--config", f"sandbox={box}"]


def _load(wf, part):
    return json.loads((wf / f"results/urd2/tiny/{part}/summary.json").read_text())


def test_the_symbolic_chain_matches_arithmetic_through_the_rules(built):
    wf, box = built
    s = _load(wf, "chains")["systems"]["symbolic"]
    # 1,280 B (128 entries): the last two sessions (other budgets: tests/test_urd2.py)
    assert s["t1"]["two"]["R"] == [[1, None, None], [1, 1, None], [0, 1, 1]]
    assert s["t1"]["two"]["transfer"]["2"]["backward"]["mean"] == 0
    assert s["t1"]["two"]["transfer"]["3"]["backward"]["mean"] == -0.5
    assert s["t1"]["two"]["transfer"]["3"]["forward"]["mean"] == 0
    assert len(s["t1"]["two"]["control_A"]) == 3
    if box == "required":
        assert s["t1"]["two"]["sandbox"] == ["bwrap"]


@needs_sandbox()
def test_a_system_that_reads_earlier_sessions_from_disk_earns_nothing(built):
    wf, _ = built
    cheat = _load(wf, "chains")["systems"]["chain_reread"]["t1"]["two"]
    assert all(x in (0, None) for row in cheat["R"] for x in row)
    log = (wf / "logs/urd2/tiny/chains/chain_reread/t1/two/b3.answer.log").read_text()
    for k in (1, 2, 3):  # every session's transcript and answers: not there for the answering job
        assert f"chain_reread data/urd2/chains/t1/s{k}.jsonl: error FileNotFoundError" in log
        assert f"chain_reread data/urd2/chains/t1/s{k}.session_a.jsonl: error FileNotFoundError" in log
    assert "chain_reread checkpoint: error FileNotFoundError" in log  # the model only through the handle
    assert ": found" not in log
    # consolidating at boundary 3, session 3's transcript is there and sessions 1 and 2 are not
    log = (wf / "logs/urd2/tiny/chains/chain_reread/t1/two/b3.consolidate.log").read_text()
    assert "chain_reread data/urd2/chains/t1/s3.session_a.jsonl: found" in log
    for path in ("s1.session_a", "s2.session_a", "s1", "s2", "s3"):
        assert f"chain_reread data/urd2/chains/t1/{path}.jsonl: error FileNotFoundError" in log


def test_the_sweep_frontier_is_the_one_arithmetic_predicts(built):
    wf, _ = built
    p = _load(wf, "pareto")
    t1 = p["tasks"]["t1"]
    sym = {(q["budget_bytes"], q["cap_factor"]): q for q in t1["points"] if q["system"] == "symbolic"}
    assert {k: (q["score"], q["bits"], q["flops"]) for k, q in sym.items()} == {
        (80, 0): (0.75, 640, 0), (80, 10): (0.75, 640, 0), (640, 0): (1, 5120, 0), (640, 10): (1, 5120, 0),
        (960, 0): (1, 5120, 0), (960, 10): (1, 5120, 0)}
    # a plug-in goes through the sweep as a built-in does: every point scored and weighed, labelled
    # in contract from its own consolidation records
    head = [q for q in t1["points"] if q["system"] == "head"]
    assert len(head) == 6 and all(q["status"] == "ok" and q["bits"] > 0 for q in head)
    assert p["provenance"]["out_of_contract"] == {s: False for s in ("vanilla", "symbolic", "gzip_tail", "head")}
    # vanilla (nothing crosses, nothing spent) and every symbolic point; gzip_tail and head score 0 with bits
    on = sorted(f"{q['system']} {q['budget_bytes']}@{q['cap_factor']}" for q in t1["points"] if q["frontier"])
    assert on == sorted(f"{s} {b}@{c}" for s in ("symbolic", "vanilla") for b in (80, 640, 960) for c in (0, 10))
    assert p["n_params"] > 0 and "2 x N" in p["flops_formula"]


def test_the_dose_target_and_the_rung2_tables_build(built):
    wf, box = built
    d = _load(wf, "dose")
    point = d["doses"]["dose0.5"]
    assert point["out_of_contract"] is False and set(point["tasks"]) == {"t2"}
    t2 = point["tasks"]["t2"]
    assert 0 < t2["dose_measured"]["max"] <= 0.5 and {"rate_trigger", "rate_non_trigger", "difference"} <= set(t2)
    chains_md = (wf / "results/urd/tables/urd2_chains.md").read_text()
    assert "BWT(3)" in chains_md and "-0.500" in chains_md
    for png in ("urd2_pareto_tiny.png", "urd2_dose_tiny.png"):
        assert (wf / "results/urd/figures" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = snakemake(wf, *_args(box), "-n", env=ENV)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_dry_run_prices_every_sweep_at_a_real_scale(built):
    wf, box = built
    targets = [f"results/urd2/0.1b/{part}/summary.json" for part in ("chains", "pareto", "dose")]
    # through the SLURM profile: the dose's tuning jobs go to a GPU node (urd.cost.placement)
    proc = snakemake(wf, *targets, "--configfile", "reduced.yaml", "--config", f"sandbox={box}", "-n",
                     "--profile", str(wf / "profiles/slurm"), env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if "urd planned spend" in line or "of which" in line]
    assert lines[0].startswith("urd planned spend (") and len(lines) == 4, lines
    parts = {line.split(" (")[0].removeprefix("  of which "): line for line in lines[1:]}
    assert set(parts) == {"rung 2 chains", "rung 2 Pareto sweep", "rung 2 dose-response"}
    # the dose's two tuning jobs hold a GPU; the chains and the sweep run on CPUs
    assert "GPU 0.00 h" not in parts["rung 2 dose-response"] and "(3 jobs)" in parts["rung 2 dose-response"]
    assert "CPU 0.00 h" not in parts["rung 2 Pareto sweep"]
    here = snakemake(wf, *targets, "--configfile", "reduced.yaml", "--config", f"sandbox={box}", "-n", env=ENV)
    dose_here = next(line for line in here.stdout.splitlines() if "of which rung 2 dose-response" in line)
    assert "GPU 0.00 h" in dose_here and "CPU 0.00 h" not in dose_here  # no GPU here: CPU work
    # the longest chain starts first: a consolidation outranks its own answer, and summary's
    # notes (the longest decode of the sweep) outrank every other job
    ranks = _sweep_priorities(here.stdout)
    for (rule, system, task), rank in ranks.items():
        if rule == "sweep_consolidate":
            assert rank > ranks[("sweep_answer", system, task)] > 0, (system, task, ranks)
    top = max(ranks, key=ranks.get)
    assert top == ("sweep_consolidate", "summary", "t1"), ranks


def _sweep_priorities(dry_run):
    """(rule, system, task) -> priority of each 0.1B sweep job in a dry run's listing (Snakemake
    omits a priority of 0)."""
    ranks, job = {}, None
    for line in dry_run.splitlines():
        if line.startswith("rule "):
            job = {"rule": line[5:].rstrip(":"), "priority": 0}
        elif job is not None and line.strip().startswith("wildcards:"):
            job.update(kv.split("=") for kv in line.split(":", 1)[1].strip().split(", "))
        elif job is not None and line.strip().startswith("priority:"):
            job["priority"] = int(line.split(":")[1])
        if job and job["rule"].startswith("sweep_") and "task" in job and line.strip().startswith("resources:"):
            ranks[(job["rule"], job["system"], job["task"])] = job["priority"]
    return ranks



def test_the_chains_and_pareto_summaries_rescore_identically_and_an_edited_verdict_is_caught(built, tmp_path):
    import shutil
    import subprocess
    import sys

    wf, _ = built
    shutil.copytree(wf / "results/urd2", tmp_path / "results/urd2")  # the summaries name paths from the run's root
    summaries = [f"results/urd2/tiny/{part}/summary.json" for part in ("chains", "pareto")]

    def rescore():
        return subprocess.run([sys.executable, "-m", "urd.rung2.summaries", "--rescore", *summaries], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    proc = rescore()
    assert proc.returncode == 0 and proc.stderr.count(": identical") == 2, proc.stderr
    # one correct symbolic reply emptied: the fold judges it again, an entry of R drops, and the
    # file's digest, the figures and the stored verdict all say so; the Pareto summary is untouched
    path = tmp_path / json.loads((tmp_path / summaries[0]).read_text())["provenance"]["cells"]["symbolic:t1:two"]
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    hit = next(r for r in recs if r["verdict"] == "correct" and r["kind"] != "unseen")
    hit["response"] = ""
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    proc = rescore()
    assert proc.returncode == 1, proc.stderr
    assert "SHA-256 differs" in proc.stderr and "systems: results/urd2/tiny/chains/summary.json differs" in proc.stderr
    assert f"1 stored verdicts differ from a fresh judgement (first: {hit['query_id']})" in proc.stderr
    assert f"rescore {summaries[1]}: identical" in proc.stderr

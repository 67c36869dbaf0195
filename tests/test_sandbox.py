"""The job sandbox (urd.workflow.sandbox): a job sees its declared inputs and writes its declared
outputs, and nothing else; tried by attack through the one job wrapper every rule uses, in a
fresh process as Snakemake runs it (the Snakemake-level attacks are in test_workflow_sandbox)."""

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, needs_sandbox

from urd.workflow import sandbox

pytestmark = needs_sandbox()

DRIVER = """
import json, sys
from urd.workflow.job import run
from sandbox_probe import main

class Job:  # what Snakemake hands a script: the rule, its files, its config
    pass

spec = json.loads(sys.argv[1])
job = Job()
job.rule, job.input, job.output, job.log = spec["rule"], spec["input"], spec["output"], spec["log"]
job.config, job.wildcards = spec["config"], spec["wildcards"]
run(job, main, [spec["output"][0], *spec["actions"]])
"""


def run_job(workdir: Path, actions: list[str], *, mode="required", rule="answer", inputs=(), wildcards=None,
            out="results/cell/raw.json", env=None, config=None):
    spec = {"rule": rule, "input": list(inputs), "output": [out], "log": ["logs/job.log"],
            "config": {"sandbox": mode, **(config or {})}, "wildcards": wildcards or {}, "actions": actions}
    (workdir / Path(out).parent).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO / "src")])}
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(spec)], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120)
    log = (workdir / "logs/job.log").read_text() if (workdir / "logs/job.log").exists() else ""
    found = json.loads((workdir / out).read_text()) if proc.returncode == 0 and (workdir / out).exists() else None
    return proc.returncode, found, log


@pytest.fixture
def cell(tmp_path):
    """A working tree as session B's job meets it: its declared views and fiches, and beside them
    what it must not read: session A's view, the episodes with their answers, another cell's
    replies, a stash beside the fiches, in /tmp and in $HOME."""
    wd = tmp_path / "wf"
    files = {"data/t1.session_b.jsonl": "the prompts", "results/cell/fiches.jsonl": "the fiches",
             "data/t1.session_a.jsonl": "SESSION A", "data/t1.jsonl": "THE ANSWERS",
             "results/other/raw.json": "ANOTHER CELL", "results/cell/stash.txt": "STASHED BESIDE THE FICHES"}
    for rel, text in files.items():
        (wd / rel).parent.mkdir(parents=True, exist_ok=True)
        (wd / rel).write_text(text)
    home = tmp_path / "home"
    home.mkdir()
    (home / "stash.txt").write_text("STASHED IN HOME")
    tmp_stash = Path("/tmp") / f"urd-stash-{os.getpid()}-{tmp_path.name}"
    tmp_stash.write_text("STASHED IN TMP")
    yield wd, home, tmp_stash
    tmp_stash.unlink(missing_ok=True)


@pytest.fixture
def server():
    """A loopback server that greets each connection, for at most 10 s."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(10)

    def serve():
        try:
            while True:
                conn, _ = srv.accept()
                with conn:
                    conn.sendall(b"hello")
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


ATTACKS = ["read:data/t1.session_a.jsonl", "read:data/t1.jsonl", "read:results/other/raw.json",
           "read:results/cell/stash.txt"]


def test_session_b_sees_its_declared_files_and_nothing_else(cell, server):
    wd, home, tmp_stash = cell
    actions = ["read:data/t1.session_b.jsonl", "read:results/cell/fiches.jsonl", *ATTACKS, f"read:{tmp_stash}",
               f"read:{home}/stash.txt", f"connect:127.0.0.1:{server}", "listdir:.", "listdir:results/cell",
               "write:/tmp/mine.txt", f"write:{home}/.cache.txt", "write:results/cell/extra.txt", f"env:{sandbox.ENV}"]
    code, found, log = run_job(wd, actions, inputs=["data/t1.session_b.jsonl", "results/cell/fiches.jsonl"],
                               env={"HOME": str(home)})
    assert code == 0, log
    assert found["read:data/t1.session_b.jsonl"] == "the prompts" and found["read:results/cell/fiches.jsonl"] == "the fiches"
    for attack in [*ATTACKS, f"read:{tmp_stash}", f"read:{home}/stash.txt"]:
        assert found[attack] == "error: FileNotFoundError", attack
    assert found[f"connect:127.0.0.1:{server}"].startswith("error")  # no network
    assert found["listdir:."] == ["data", "results"]  # only the folders of declared paths
    assert sorted(found["listdir:results/cell"]) == ["fiches.jsonl"]  # a fresh output folder, the input on top
    assert found["write:/tmp/mine.txt"] == "ok" and found[f"env:{sandbox.ENV}"] == "bwrap"
    # a fresh, writable $HOME (caches), gone with the job
    assert found[f"write:{home}/.cache.txt"] == "ok" and not (home / ".cache.txt").exists()
    # the declared output is in place; what the job wrote beside it is not, and the log says so
    assert (wd / "results/cell/raw.json").is_file() and not (wd / "results/cell/extra.txt").exists()
    assert "wrote beside its declared outputs, discarded: extra.txt" in log
    assert not list((wd / ".snakemake/sandbox").iterdir())  # the staging is cleaned up


def test_a_killed_jobs_staging_is_swept_by_the_next_job_and_a_live_ones_is_not(cell):
    wd = cell[0]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    root = wd / ".snakemake/sandbox"
    stale, live, elsewhere = (root / f"{host}-{gone.pid}-aaaa", root / f"{host}-{os.getpid()}-bbbb",
                              root / f"another-host-{gone.pid}-cccc")
    for folder in (stale, live, elsewhere):
        (folder / "0").mkdir(parents=True)
        (folder / "0" / "raw.json").write_text("half-written")
    code, _, log = run_job(wd, ["read:data/t1.session_b.jsonl"], inputs=["data/t1.session_b.jsonl"])
    assert code == 0, log
    assert not stale.exists() and live.exists() and elsewhere.exists()


def test_without_the_sandbox_the_same_job_reads_everything_and_says_so(cell, server):
    wd, home, _ = cell
    code, found, log = run_job(wd, [*ATTACKS, f"connect:127.0.0.1:{server}", f"env:{sandbox.ENV}"], mode="off",
                               inputs=["data/t1.session_b.jsonl"], env={"HOME": str(home)})
    assert code == 0, log
    assert [found[a] for a in ATTACKS] == ["SESSION A", "THE ANSWERS", "ANOTHER CELL", "STASHED BESIDE THE FICHES"]
    assert found[f"connect:127.0.0.1:{server}"] == "hello"
    assert found[f"env:{sandbox.ENV}"] == "off (sandbox: off)"  # the label every output carries


def test_an_undeclared_read_fails_the_job_naming_the_path(cell):
    wd, _, _ = cell
    code, _, log = run_job(wd, ["fail-read:data/t1.session_a.jsonl"], inputs=["data/t1.session_b.jsonl"])
    assert code != 0 and not (wd / "results/cell/raw.json").exists()
    assert "rule answer reached for paths its rule does not declare: data/t1.session_a.jsonl" in log


def test_a_job_that_fetches_or_calls_a_live_model_gets_the_network_and_no_other(cell, server):
    wd, _, _ = cell
    greet = f"connect:127.0.0.1:{server}"
    assert run_job(wd, [greet], rule="fetch_backbone")[1][greet] == "hello"
    assert run_job(wd, [greet], rule="planting_run", wildcards={"model": "claude-sonnet-5-5"})[1][greet] == "hello"
    assert run_job(wd, [greet], rule="planting_run", wildcards={"model": "scripted"})[1][greet].startswith("error")


def test_required_without_a_sandbox_refuses_and_names_the_fix_and_auto_runs_labelled(cell, monkeypatch, tmp_path):
    wd, _, _ = cell
    # a machine without bubblewrap: PATH without bwrap
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    env = {"PATH": str(bare)}
    code, _, log = run_job(wd, [f"env:{sandbox.ENV}"], env=env)
    assert code == 2 and "sandbox is required but bwrap (bubblewrap) is not installed" in log
    assert "apt-get install bubblewrap" in log and not (wd / "results/cell/raw.json").exists()
    code, found, log = run_job(wd, [f"env:{sandbox.ENV}"], mode="auto", env=env)
    assert code == 0 and found[f"env:{sandbox.ENV}"] == "off (bwrap (bubblewrap) is not installed)"
    assert "WARNING: running unsandboxed" in log


def test_a_sandboxed_job_still_names_the_commit_it_ran_at(cell):
    """.git stays outside the sandbox; the wrapper hands the job the checkout's commit for its provenance."""
    wd, _, _ = cell
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=wd, check=True)
    subprocess.run([*git, "add", "data"], cwd=wd, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=wd, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=wd, capture_output=True, text=True).stdout.strip()
    code, found, log = run_job(wd, ["env:URD_GIT_COMMIT", "listdir:."], inputs=["data/t1.session_b.jsonl"])
    assert code == 0, log
    assert found["env:URD_GIT_COMMIT"] == head and ".git" not in found["listdir:."]


def test_a_job_cannot_hand_the_next_one_a_link_or_a_secret(cell, tmp_path):
    """A link among the outputs would hand the next job its target: the job fails, nothing kept.
    Standard output goes to the job's log, and the API key stays with the jobs that have the network."""
    wd, _, _ = cell
    code, _, log = run_job(wd, ["symlink:" + str(wd / "data/t1.jsonl")])
    assert code == 1 and "is or holds a symbolic link" in log
    assert not (wd / "results/cell/raw.json").exists() and not (wd / "results/cell/raw.json").is_symlink()
    secret = {"ANTHROPIC_API_KEY": "sk-ant-not-for-session-b"}
    code, found, log = run_job(wd, ["env:ANTHROPIC_API_KEY", "stdout:printed by the job"], env=secret)
    assert code == 0 and found["env:ANTHROPIC_API_KEY"] is None
    assert "printed by the job" in log
    live = run_job(wd, ["env:ANTHROPIC_API_KEY"], rule="planting_run", wildcards={"model": "claude-sonnet-5-5"},
                   env=secret)[1]
    assert live["env:ANTHROPIC_API_KEY"] == "sk-ant-not-for-session-b"


def test_an_llm_job_writes_its_own_work_folder_and_sees_no_other_job_s(tmp_path):
    """The LLM suites' work folder holds each job's replay cache, batch journal, ledgers and run
    stores: a job binds its own folder alone, so what another job left there (its cached replies,
    its ledger) cannot be read, and nothing can be left for another job to find."""
    from urd.stores.settings import job_folder

    wd = tmp_path / "wf"
    names = {"case": "reader", "store": "reference", "model": "scripted"}
    mine = job_folder("work", "trip-vs-move", names)
    others = {job_folder("work", "update-gate", {"store": "reference", "model": "scripted"}) / "llm-cache/a.json":
              "ANOTHER JOB'S CACHED REPLY",
              job_folder("work", "trip-vs-move", {**names, "case": "mid-trip"}) / "ledgers/b.jsonl": "ITS LEDGER",
              Path("work/llm-cache/old.json"): "THE OLD SHARED CACHE"}
    for rel, text in {**others, mine / "llm-cache/kept.json": "MY CACHED REPLY"}.items():
        (wd / rel).parent.mkdir(parents=True, exist_ok=True)
        (wd / rel).write_text(text)
    actions = [*(f"read:{p}" for p in others), f"read:{mine}/llm-cache/kept.json", f"write:{mine}/ledgers.jsonl",
               "write:work/planted.json", "listdir:work"]
    code, found, log = run_job(wd, actions, rule="agentmem_trip_vs_move", wildcards=names,
                               config={"agentmem": {"work_dir": "work"}}, out="results/tvm/report.json")
    assert code == 0, log
    assert all(found[f"read:{p}"].startswith("error:") for p in others), found
    assert found[f"read:{mine}/llm-cache/kept.json"] == "MY CACHED REPLY"
    assert found[f"write:{mine}/ledgers.jsonl"] == "ok" and (wd / mine / "ledgers.jsonl").read_text() == "written"
    assert not (wd / "work/planted.json").exists()  # written beside its folder: gone with the sandbox
    assert "update-gate" not in found["listdir:work"] and "llm-cache" not in found["listdir:work"]

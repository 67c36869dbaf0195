"""Kill a live run anywhere, rerun it: the same report, nothing billed twice, the ceiling held.

Each suite runs as its own command in a subprocess against the loopback Messages API
(tests/messages_server.py), is killed with SIGKILL at a tested point (mid-call, while the
server holds a reply; mid-poll of a Message Batch; right after a bill is written; between a
write's temporary file and its rename), and is run again. The rerun's report must be the
uninterrupted run's, the server must have billed every request as often as it did for the
uninterrupted run, and the target's ledger must hold what the server billed.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO
from fake_messages_api import FakeMessagesAPI
from messages_server import MessagesServer

from urd.llm.ledger import SpendLedger
from urd.planting import world
from urd.planting.scripted import PlantingResponder
from urd.stores import settings as settings_mod

MODEL = "claude-sonnet-5-5"
MASTER_SEED = 20260807
pytestmark = pytest.mark.slow


def settings_json(tmp, **changes) -> str:
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    s = settings_mod.with_overrides(base, {
        "work_dir": str(tmp / "work"), "calibration_dir": str(REPO / "calibration/agentmem"),
        "llm.batches": True, "llm.batch_poll_s": 0.02, "llm.max_retries": 1, "llm.timeout_s": 20,
        "planting.world.seeds": 1,
        "planting.judge.calibration_set": str(REPO / "calibration/planting/judge-v2.json"),
        "planting.judge.registry": str(REPO / "calibration/planting/judge_sets.sha256"), **changes})
    return json.dumps(s.raw, default=str)


def command(suite: str, tmp, **changes) -> list[str]:
    out = str(tmp / "report.json")
    common = ["--model", MODEL, "--settings", settings_json(tmp, **changes), "--yes", "--output", out]
    if suite == "trip-vs-move":
        return [sys.executable, "-m", "urd.agentmem", "trip-vs-move", "run", *common]
    if suite == "update-gate":
        return [sys.executable, "-m", "urd.agentmem", "update-gate", "run", "--samples", "1", *common]
    one = tmp / "world.jsonl"
    if not one.exists():
        world.write_world(one, MASTER_SEED, world.Shape(seeds=1), world.load_roster())
    return [sys.executable, "-m", "urd.planting", "run", "--world", str(one), *common]


def api_for(suite: str) -> FakeMessagesAPI:
    return FakeMessagesAPI(PlantingResponder(world.load_roster())) if suite == "planting" else FakeMessagesAPI()


def env(server, failpoint: str | None = None) -> dict:
    out = {k: v for k, v in os.environ.items() if k != "URD_FAILPOINT"}
    out.update(ANTHROPIC_API_KEY="sk-ant-kill-test", ANTHROPIC_BASE_URL=server.base_url)
    if failpoint:
        out["URD_FAILPOINT"] = failpoint
    return out


def run_through(suite: str, tmp, server, failpoint: str | None = None, **changes) -> subprocess.CompletedProcess:
    return subprocess.run(command(suite, tmp, **changes), env=env(server, failpoint), capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def report_of(tmp) -> dict:
    """The report, with what differs between two folders (their paths) and a killed call that may
    have been billed (in flight, counted at its worst case; checked by the tests) set aside."""
    text = (tmp / "report.json").read_text(encoding="utf-8").replace(str(tmp), "<tmp>")
    report = json.loads(text)
    for ledger in _ledger_blocks(report):
        ledger.pop("in_flight"), ledger.pop("in_flight_worst_usd")
    return report


def _ledger_blocks(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "ledger" and isinstance(v, dict):
                yield v
            else:
                yield from _ledger_blocks(v)
    elif isinstance(node, list):
        for v in node:
            yield from _ledger_blocks(v)


def job_folder(tmp, suite: str):
    """Where the command keeps the run's cache, journal and ledgers: its job's own work folder."""
    return settings_mod.job_folder(tmp / "work", suite, {"case": "reader", "store": "reference", "model": MODEL})


def ledgers(tmp) -> list[SpendLedger]:
    return [SpendLedger(p) for p in sorted((tmp / "work").rglob("*.jsonl")) if "ledgers" in p.parts]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """Each suite run once, start to end: its report and what the server billed. The three run
    at once, each against its own server (they wait on sockets as much as they compute)."""
    from concurrent.futures import ThreadPoolExecutor

    suites = ("trip-vs-move", "update-gate", "planting")
    # folders made here, not in the threads: the factory's first call makes the session's base
    # folder, and two threads making it at once made two
    folders = {suite: tmp_path_factory.mktemp(suite) for suite in suites}

    def one(suite):
        tmp = folders[suite]
        with MessagesServer(api_for(suite), lifetime_s=300) as server:
            done = run_through(suite, tmp, server)
        assert done.returncode == 0, done.stderr[-2000:]
        # the run's cache, journal, ledgers and stores: all in its job's own work folder
        kept = [p for p in (tmp / "work").rglob("*") if p.is_file()]
        assert kept and all(job_folder(tmp, suite) in p.parents for p in kept), kept[:5]
        return suite, (report_of(tmp), server.billed_requests(), server)

    with ThreadPoolExecutor(len(suites)) as pool:
        return dict(pool.map(one, suites))


def kill_when(proc, ready, timeout=120.0) -> None:
    start = time.monotonic()
    while not ready():
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.monotonic() - start < timeout, "the kill point was never reached"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


KILLS = [
    ("trip-vs-move", "mid-call"),
    ("trip-vs-move", "llm.settled:7"),
    ("trip-vs-move", "io.replace:9"),
    ("update-gate", "mid-poll"),
    ("update-gate", "llm.settled:100"),
    ("update-gate", "io.replace:50"),
    ("planting", "mid-call"),
    ("planting", "llm.settled:40"),
    ("planting", "io.replace:60"),
]


def kill_and_rerun(suite: str, where: str, tmp) -> dict:
    """Kill a live run at `where`, rerun it to the end; what the tests check of the two."""
    api = api_for(suite)
    out = {}
    with MessagesServer(api, lifetime_s=300) as server:
        if where in ("mid-call", "mid-poll"):
            if where == "mid-call":
                server.fault("hold", after=12)
                ready = server.holding.is_set
            else:
                api.batch_polls = 10**6
                ready = lambda: any(n >= 2 for n in list(api.polls.values()))
            proc = subprocess.Popen(command(suite, tmp), env=env(server), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, cwd=REPO)
            kill_when(proc, ready)
            out["killed"] = (proc.returncode, "")
            server.faults.clear()
            api.batch_polls = 0
            server.release.set()
        else:
            killed = run_through(suite, tmp, server, failpoint=where)
            out["killed"] = (killed.returncode, killed.stderr[-1500:])
        out["report_after_kill"] = (tmp / "report.json").exists()
        again = run_through(suite, tmp, server)
        out["again"] = (again.returncode, again.stderr)
        if again.returncode == 0:
            books = ledgers(tmp)
            out.update(creates=server.creates, report=report_of(tmp), billed=server.billed_requests(),
                       ledger_usd=sum(lg.billed_usd for lg in books), server_usd=server.billed_usd(_prices(tmp)),
                       in_flight=sum(len(lg.in_flight()) for lg in books))
    return out


@pytest.fixture(scope="module")
def killed_runs(tmp_path_factory):
    """Every kill point's kill and rerun, four at a time (each against its own server: they
    wait on sockets and on their own start-up as much as they compute)."""
    from concurrent.futures import ThreadPoolExecutor

    folders = {kill: tmp_path_factory.mktemp(f"{kill[0]}-{kill[1]}".replace(":", "-")) for kill in KILLS}  # as above

    def one(kill):
        return kill, kill_and_rerun(*kill, folders[kill])

    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(one, KILLS))


@pytest.mark.parametrize(("suite", "where"), KILLS, ids=[f"{s}-{w}" for s, w in KILLS])
def test_a_kill_then_a_rerun_gives_the_uninterrupted_report_and_bills_nothing_twice(suite, where, killed_runs,
                                                                                     uninterrupted):
    clean, clean_billed, clean_server = uninterrupted[suite]
    run = killed_runs[(suite, where)]
    code, err = run["killed"]
    assert code == -signal.SIGKILL, f"not killed at {where}: {err}"
    assert not run["report_after_kill"]
    code, err = run["again"]
    assert code == 0, err[-2000:]
    if where == "mid-poll":
        assert "resuming message batch msgbatch_1" in err
        assert run["creates"] == clean_server.creates  # the batch was resumed, not sent again
    assert run["report"] == clean
    assert run["billed"] == clean_billed  # nothing billed twice, nothing lost
    assert run["ledger_usd"] == pytest.approx(run["server_usd"], abs=1e-9)
    # a call killed in flight may have been billed: it stays committed at its worst case
    assert run["in_flight"] == (1 if where == "mid-call" else 0)


def _prices(tmp):
    return settings_mod.load(REPO / "config/agentmem.yaml").prices


def test_the_ceiling_holds_across_a_killed_run_and_its_rerun(tmp_path):
    ceiling = {"spend.max_usd_planting": 0.05}
    with MessagesServer(api_for("planting"), lifetime_s=300) as server:
        done = run_through("planting", tmp_path / "whole", server, **ceiling)
        assert done.returncode == 0, done.stderr[-2000:]
        whole = server.billed_usd(_prices(tmp_path))
    assert json.loads((tmp_path / "whole" / "report.json").read_text())["stop"]["at"] == "ceiling"
    with MessagesServer(api_for("planting"), lifetime_s=300) as server:
        killed = run_through("planting", tmp_path / "cut", server, failpoint="llm.settled:5", **ceiling)
        assert killed.returncode == -signal.SIGKILL
        paid_before = server.billed_usd(_prices(tmp_path))
        again = run_through("planting", tmp_path / "cut", server, **ceiling)
        assert again.returncode == 0, again.stderr[-2000:]
        report = json.loads((tmp_path / "cut" / "report.json").read_text())
        assert report["status"] == "incomplete" and report["stop"]["at"] == "ceiling"
        billed = server.billed_usd(_prices(tmp_path))
    # the two processes together spent what one would have, under the one ceiling
    assert 0 < paid_before < billed == pytest.approx(whole, abs=1e-9)
    assert billed <= 0.05 and ledgers(tmp_path / "cut")[0].committed_usd <= 0.05


def test_an_interrupted_poll_says_which_batch_it_left_and_how_to_cancel_it(tmp_path):
    api = api_for("update-gate")
    api.batch_polls = 10**6
    with MessagesServer(api, lifetime_s=120) as server:
        # Ctrl-C as a terminal sends it: a test run started in the background (no job control)
        # inherits SIGINT ignored, and Python then keeps ignoring it, so the run starts with the default
        proc = subprocess.Popen(command("update-gate", tmp_path), env={**env(server), "PYTHONFAULTHANDLER": "1"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        start = time.monotonic()
        while not any(n >= 2 for n in list(api.polls.values())):
            assert proc.poll() is None and time.monotonic() - start < 60
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # where it hangs: faulthandler prints every thread's stack on SIGABRT
            proc.send_signal(signal.SIGABRT)
            pytest.fail(f"still running 30 s after Ctrl-C; its stacks:\n{proc.communicate(timeout=30)[1][-6000:]}")
    assert proc.returncode != 0
    assert "message batch msgbatch_1 left in progress (interrupted)" in err, err[-1500:]
    assert "python -m urd.agentmem batches cancel msgbatch_1" in err
    assert (job_folder(tmp_path, "update-gate") / "llm-batches" / "msgbatch_1.json").exists()

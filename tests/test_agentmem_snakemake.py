"""The rules, through Snakemake, from a scratch working directory (a test Snakefile that
loads config/agentmem.yaml, validates it and includes rules/agentmem.smk)."""

import json
import os
import re

import pytest
from conftest import REPO
from conftest import snakemake as run_snakemake

LIVE = "results/trip-vs-move/reader/reference/claude-sonnet-5-5/report.json"
SCRIPTED = ["results/trip-vs-move/reader/reference/scripted/report.json", "results/update-gate/reference/scripted/report.json"]

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "calibration").symlink_to(REPO / "calibration")
    (tmp_path / "config").mkdir()
    (tmp_path / "config/agentmem.schema.yaml").symlink_to(REPO / "config/agentmem.schema.yaml")
    (tmp_path / "Snakefile").write_text(
        "from snakemake.utils import validate\n"
        f'configfile: "{REPO}/config/agentmem.yaml"\n'
        f'validate(config["agentmem"], "{REPO}/config/agentmem.schema.yaml")\n'
        f'include: "{REPO}/rules/agentmem.smk"\n'
    )
    return tmp_path


def snakemake(workdir, *args):
    env = dict(os.environ)
    env.pop("ANTHROPIC_API_KEY", None)  # a live arm must never be reachable from a test
    return run_snakemake(workdir, *args, env=env)


def test_dry_run_of_a_live_target_prints_the_estimate_in_dollars(workdir):
    proc = snakemake(workdir, "-n", LIVE)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "trip-vs-move reader on claude-sonnet-5-5: estimate US$" in text
    confirmed = snakemake(workdir, "-n", LIVE, "--config", "agentmem={spend: {confirm_live: true}}")
    assert confirmed.returncode == 0, confirmed.stderr


def test_scripted_targets_pass_their_bars_and_a_live_target_fails_unconfirmed(workdir):
    proc = snakemake(workdir, *SCRIPTED, "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    tvm = json.loads((workdir / SCRIPTED[0]).read_text())
    ug = json.loads((workdir / SCRIPTED[1]).read_text())
    assert tvm["verdict"]["bar_met"] is True and ug["verdict"]["bars_met"] is True
    live = snakemake(workdir, LIVE, "--cores", "1")
    assert live.returncode != 0 and not (workdir / LIVE).exists()
    log = (workdir / "logs/agentmem/trip-vs-move/reader/reference/claude-sonnet-5-5.log").read_text()
    assert "estimate US$" in log and "confirm_live" in log


BROKEN = "agentmem={stores: {plugins: {mine: 'no_such_module:Store'}, table: [reference, mine]}}"


def test_the_stores_table_builds_offline_and_a_broken_plug_in_stops_the_dag(workdir):
    proc = snakemake(workdir, "results/agentmem/tables/stores.md", "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split(" | ") for line in (workdir / "results/agentmem/tables/stores.md").read_text().splitlines()
            if line.startswith("| ") and "scripted" in line]
    passed = {(r[0][2:], r[2], r[3]): r[4] for r in rows}
    assert len(passed) == 12
    for case in ("reader", "mid-trip"):
        assert passed[("reference", case, "move")] == "3 of 3" and passed[("reference", case, "trip-alone")] == "2 of 2"
        assert passed[("replace_latest", case, "trip-alone")] == "0 of 2" and passed[("replace_latest", case, "move")] == "3 of 3"
        assert passed[("keep_all", case, "move")] == "0 of 3" and passed[("keep_all", case, "trip-alone")] == "2 of 2"
    broken = snakemake(workdir, "-n", "results/agentmem/tables/stores.md", "--config", BROKEN)
    assert broken.returncode != 0
    said = broken.stdout + broken.stderr
    assert "agentmem.stores.plugins.mine" in said and "No module named 'no_such_module'" in said
    assert "Traceback" not in said and "registry.py" not in said
    # a single target naming a plug-in the table does not: the same one line, not a traceback
    single = snakemake(workdir, "-n", "results/trip-vs-move/reader/mine/claude-sonnet-5-5/report.json",
                       "--config", BROKEN.replace(", table: [reference, mine]", ""))
    said = single.stdout + single.stderr
    assert single.returncode != 0 and "Traceback" not in said
    assert "agentmem.stores.plugins.mine" in said and "on PYTHONPATH, or an installed package" in said


def test_a_plug_in_stores_live_target_is_priced_by_the_dry_run(workdir):
    (workdir / "my_stores.py").write_text(
        "from urd.stores.base import MemoryStore, claim_row\n"
        "from urd.stores.reference import prompts, replies\n\n\n"
        "class Extracting(MemoryStore):\n"
        "    def deposit(self, note, read_at):\n"
        "        req = prompts.extraction(note.text, note.date.isoformat(), max_claims=8, max_tokens=4096,\n"
        "                                 replica=self.run.replica)\n"
        "        self.kept = [claim_row(c.content, note.name) for c in replies.extraction(self.llm.ask(req))]\n\n"
        "    def consolidate(self):\n"
        "        pass\n\n"
        "    def rows(self):\n"
        "        return self.kept\n"
    )
    plug = "agentmem={stores: {plugins: {mine: 'my_stores:Extracting'}}}"
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    env.pop("ANTHROPIC_API_KEY", None)
    target = "results/trip-vs-move/reader/mine/claude-sonnet-5-5/report.json"
    proc = run_snakemake(workdir, "-n", target, "--config", plug, env=env)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert re.search(r"trip-vs-move reader \(mine\) on claude-sonnet-5-5: estimate US\$0\.\d\d \(call graph, 8 calls", said)


FLAKY = '''from urd.stores.base import MemoryStore, claim_row


class Flaky(MemoryStore):
    """A user's store whose disk fills at its second note."""

    def __init__(self, run):
        super().__init__(run)
        self.kept = []

    def deposit(self, note, read_at):
        if self.kept:
            raise RuntimeError("the store's disk is full")
        self.kept += [claim_row(line[6:], note.name) for line in note.text.splitlines() if line.startswith("User: ")]

    def consolidate(self):
        pass

    def rows(self):
        return self.kept
'''


def test_a_store_run_that_ends_incomplete_says_why_in_snakemakes_own_output(workdir, tmp_path_factory):
    """The job succeeds (its report says incomplete, and the table shows it so); the reason must
    not wait in the log, which Snakemake prints only for a failed job."""
    plug = tmp_path_factory.mktemp("plug")
    (plug / "flaky_store.py").write_text(FLAKY)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plug), env.get("PYTHONPATH")]))
    proc = run_snakemake(workdir, "results/trip-vs-move/reader/flaky/scripted/report.json", "--config",
                         "agentmem={stores: {plugins: {flaky: 'flaky_store:Flaky'}}}", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("urd notice: ")]
    assert len(said) == 3 and said[0].startswith(  # one line for each move run; the trip-alone runs finished
        "urd notice: trip-vs-move on scripted, store flaky: incomplete: run move-1: ingest reader-02-moved.md: "
        "store flaky raised RuntimeError: the store's disk is full (rule agentmem_trip_vs_move; log logs/")
    report = json.loads((workdir / "results/trip-vs-move/reader/flaky/scripted/report.json").read_text())
    assert [bool(r["incomplete"]) for r in report["runs"]] == [True] * 3 + [False] * 2

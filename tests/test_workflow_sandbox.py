"""The boundary tried by attack through the real rules: a plug-in system (tests/cheats.py,
Exfiltrate) that stashes session A in /tmp, in $HOME, beside its fiches and with a loopback
server, and reads session B's answers from those, from session A's view, the full episodes and
other cells' outputs, and opens the checkpoint (to run the weights off the meter). Under
`sandbox: required` every channel is closed and the cell earns nothing; under `off` the same
plug-in reads the answers (which is why the label matters)."""

import json
import socket
import threading
from pathlib import Path

import pytest
from conftest import REPO, needs_sandbox, snakemake

pytestmark = [pytest.mark.slow, needs_sandbox()]  # every test here runs Snakemake

CELL = "results/urd/tiny/exfiltrate/t1/over/responses.jsonl"
ANSWER_LOG = "logs/urd/tiny/exfiltrate/t1/over.answer.log"
CONSOLIDATE_LOG = "logs/urd/tiny/exfiltrate/t1/over.consolidate.log"
READS = ("tmp", "home", "beside_fiches", "socket", "session_a_view", "episodes", "other_cells", "checkpoint")


class StashServer:
    """Loopback: PUT stores a JSON object, GET returns what was stored; stops with the test."""

    def __init__(self):
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.srv.settimeout(120)
        self.port, self.stored, self.puts = self.srv.getsockname()[1], {}, 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            for _ in range(200):  # bounded
                conn, _ = self.srv.accept()
                with conn:
                    data = b"".join(iter(lambda c=conn: c.recv(65536), b""))
                    if data.startswith(b"PUT "):
                        self.stored.update(json.loads(data[4:]))
                        self.puts += 1
                    conn.sendall(json.dumps(self.stored).encode())
        except OSError:
            pass


@pytest.fixture
def attack(workflow, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    server = StashServer()
    monkeypatch.setenv("PYTHONPATH", str(REPO / "tests"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("URD_ATTACK_PORT", str(server.port))
    (workflow / "attack.yaml").write_text("plugins: {exfiltrate: 'cheats:Exfiltrate'}\nsystems: [exfiltrate]\n"
                                          "evaluate_episodes: 1\nevaluate_queries: 4\n")
    server.tmp_stash = Path(f"/tmp/urd-exfiltrate-{server.port}.json")
    # another cell's judged replies, with their expected answers, already on disk
    other = workflow / "results/urd/tiny/control/t1/responses.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"query_id": "t1-e000-q00", "expected": "ANSWER"}) + "\n")
    yield workflow, home, server
    server.tmp_stash.unlink(missing_ok=True)
    server.srv.close()


def outcomes(log: str) -> dict[str, str]:
    return dict(line.removeprefix("exfiltrate ").split(": ", 1) for line in log.splitlines()
                if line.startswith("exfiltrate "))


def test_under_required_every_channel_is_closed_and_the_cell_earns_nothing(attack):
    wf, home, server = attack
    snakemake(wf, CELL, "--configfile", "attack.yaml", "--config", "sandbox=required", check=True)
    replies = [json.loads(line) for line in (wf / CELL).read_text().splitlines()]
    assert len(replies) == 4 and {r["response"] for r in replies} == {"NONE"}
    assert not any(r["verdict"] == "correct" and r["kind"] != "unseen" for r in replies)
    assert {r["sandbox_consolidate"] for r in replies} == {r["sandbox_answer"] for r in replies} == {"bwrap"}
    read = outcomes((wf / ANSWER_LOG).read_text())
    assert all(read[f"read {c}"].startswith("error") for c in READS), read
    # what session A wrote went nowhere session B or anyone else can see
    wrote = outcomes((wf / CONSOLIDATE_LOG).read_text())
    assert wrote["write socket"].startswith("error") and server.puts == 0
    assert not server.tmp_stash.exists() and not (home / ".urd-exfiltrate.json").exists()
    assert not (wf / "results/urd/tiny/exfiltrate/t1/over/stash.json").exists()
    assert "wrote beside its declared outputs, discarded: stash.json" in (wf / CONSOLIDATE_LOG).read_text()


def test_under_off_the_same_plug_in_reads_the_answers_and_the_cell_says_unsandboxed(attack):
    wf, home, server = attack
    snakemake(wf, CELL, "--configfile", "attack.yaml", "--config", "sandbox=off", check=True)
    replies = [json.loads(line) for line in (wf / CELL).read_text().splitlines()]
    seen = [r for r in replies if r["kind"] != "unseen"]
    assert seen and all(r["verdict"] == "correct" for r in seen)  # every seen key answered from a stash
    assert {r["sandbox_answer"] for r in replies} == {"off (sandbox: off)"}
    read = outcomes((wf / ANSWER_LOG).read_text())
    assert all(read[f"read {c}"].startswith("found") for c in READS), read
    assert server.puts == 1 and server.tmp_stash.exists() and (home / ".urd-exfiltrate.json").exists()


def test_a_rule_that_reads_a_file_it_does_not_declare_fails_naming_it(tmp_path, monkeypatch):
    """Any rule, through the one job wrapper: the undeclared read fails the job, the path named."""
    (tmp_path / "declared.txt").write_text("declared")
    (tmp_path / "undeclared.txt").write_text("not declared")
    (tmp_path / "leaky.py").write_text(
        "from sandbox_probe import main\nfrom urd.workflow.job import run\n"
        "run(snakemake, main, [snakemake.output[0], 'read:declared.txt', 'fail-read:undeclared.txt'])\n")
    (tmp_path / "Snakefile").write_text(
        'rule leaky:\n    input:\n        "declared.txt",\n    output:\n        "out/found.json",\n'
        '    log:\n        "logs/leaky.log",\n    script:\n        "leaky.py"\n')
    monkeypatch.setenv("PYTHONPATH", str(REPO / "tests"))
    proc = snakemake(tmp_path, "out/found.json", "--config", "sandbox=required")
    assert proc.returncode != 0 and not (tmp_path / "out/found.json").exists()
    log = (tmp_path / "logs/leaky.log").read_text()
    assert "rule leaky reached for paths its rule does not declare: undeclared.txt" in log
    # declared, the same read is fine
    (tmp_path / "Snakefile").write_text((tmp_path / "Snakefile").read_text().replace(
        '"declared.txt",', '"declared.txt",\n        "undeclared.txt",'))
    snakemake(tmp_path, "out/found.json", "--config", "sandbox=required", check=True)

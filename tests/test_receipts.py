"""The sandbox label is the runner's (urd.core.receipt): a plug-in that claims its unsandboxed
job ran in the sandbox (tests/cheats.py, Forger) is caught by the judge, which refuses records
whose label its job's runner did not write; an honest unsandboxed cell is judged and says so."""

import json

import pytest
from conftest import REPO, snakemake

from urd.core.errors import DigestMismatch, InputError
from urd.core.io import atomic_write_jsonl
from urd.core.receipt import vouch, write

CELL = "results/urd/tiny/{system}/t1/over"


@pytest.mark.slow
def test_a_plug_in_that_forges_the_sandbox_label_is_refused_by_the_judge(workflow, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO / "tests"))
    (workflow / "forge.yaml").write_text("plugins: {forger: 'cheats:Forger'}\nsystems: [forger, vanilla]\n"
                                         "evaluate_episodes: 1\nevaluate_queries: 4\n")
    forged, honest = CELL.format(system="forger"), CELL.format(system="vanilla")
    proc = snakemake(workflow, f"{forged}/responses.jsonl", f"{honest}/responses.jsonl", "--keep-going",
                     "--configfile", "forge.yaml", "--config", "sandbox=off")
    assert proc.returncode != 0
    # the runner wrote the receipts, over the plug-in's, with the label the job really ran under
    for stage in ("fiches", "raw"):
        got = json.loads((workflow / f"{forged}/{stage}.receipt.json").read_text())
        assert got["sandbox"] == "off (sandbox: off)" and f"{forged}/{stage}.jsonl" in got["outputs"]
    assert json.loads((workflow / f"{forged}/raw.jsonl").read_text().splitlines()[0])["sandbox"] == "bwrap"
    log = (workflow / "logs/urd/tiny/forger/t1/over.judge.log").read_text()
    assert "sandbox: expected 'off (sandbox: off)', the label its job's runner wrote" in log
    assert "got 'bwrap'" in log
    assert not (workflow / f"{forged}/responses.jsonl").exists()
    # the honest cell, under the same setting, is judged and labelled unsandboxed
    replies = [json.loads(line) for line in (workflow / f"{honest}/responses.jsonl").read_text().splitlines()]
    assert replies and {r["sandbox_answer"] for r in replies} == {r["sandbox_consolidate"] for r in replies} \
        == {"off (sandbox: off)"}


def test_vouch_refuses_a_changed_output_a_relabelled_record_and_a_malformed_receipt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    atomic_write_jsonl("raw.jsonl", [{"query_id": "q0", "sandbox": "bwrap"}, {"query_id": "q1", "sandbox": "bwrap"}])
    write("raw.receipt.json", "answer", "bwrap", ["raw.jsonl", "absent.jsonl"])
    assert vouch(["raw.receipt.json"]) == ["bwrap"]
    atomic_write_jsonl("raw.jsonl", [{"query_id": "q0", "sandbox": "bwrap"}, {"query_id": "q1", "sandbox": "x"}])
    with pytest.raises(DigestMismatch, match="changed after its job ended"):
        vouch(["raw.receipt.json"])
    write("raw.receipt.json", "answer", "bwrap", ["raw.jsonl"])  # a receipt over a relabelled record
    with pytest.raises(InputError, match="record 1: sandbox"):
        vouch(["raw.receipt.json"])
    (tmp_path / "raw.receipt.json").write_text('{"sandbox": "bwrap"}')
    with pytest.raises(InputError, match="receipt"):
        vouch(["raw.receipt.json"])


@pytest.mark.parametrize("suite", ["agentmem", "planting"])
def test_a_report_whose_label_is_not_the_runner_s_is_refused_by_the_suite_s_table(tmp_path, monkeypatch, capsys,
                                                                                 suite):
    """The agent-memory and planting reports (one JSON object each) are held to their receipts
    by the tables that read them."""
    from urd.agentmem.cli import main as agentmem_main
    from urd.planting.cli import main as planting_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.json").write_text(json.dumps({"suite": "trip-vs-move", "sandbox": "bwrap"}))
    write("report.receipt.json", "job", "off (sandbox: off)", ["report.json"])
    if suite == "agentmem":
        code = agentmem_main(["table", "--trip-vs-move", "report.json", "--md", "t.md", "--csv", "t.csv",
                              "--receipts", "report.receipt.json"])
    else:
        code = planting_main(["tables", "report.json", "--receipts", "report.receipt.json", "--md", "t.md",
                              "--csv", "t.csv", "--html", "t.html", "--png", "t.png"])
    assert code != 0
    err = capsys.readouterr().err
    assert "report.json: sandbox: expected 'off (sandbox: off)', the label its job's runner wrote" in err, err
    assert not (tmp_path / "t.md").exists()

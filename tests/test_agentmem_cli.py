"""``python -m urd.agentmem``: what the rules call."""

import json
import subprocess
import sys

import yaml
from conftest import REPO

from urd.agentmem.cli import main


def settings_json(tmp_path, **changes):
    raw = yaml.safe_load((REPO / "config/agentmem.yaml").read_text())["agentmem"]
    raw["work_dir"] = str(tmp_path / "work")
    raw["calibration_dir"] = str(REPO / "calibration/agentmem")
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return json.dumps(raw)


def test_run_then_rescore_under_every_checks_version(tmp_path, capsys):
    out = tmp_path / "results" / "report.json"
    code = main(["trip-vs-move", "run", "--case", "mid-trip", "--model", "scripted", "--settings", settings_json(tmp_path), "--require-bar", "--output", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["verdict"]["bar_met"] is True
    for version in ("1", "2", "3"):
        target = tmp_path / f"rescored-v{version}.json"
        assert main(["trip-vs-move", "rescore", str(out), "--checks-version", version, "--output", str(target)]) == 0
        assert json.loads(target.read_text())["checks_version"] == int(version)
    assert "re-scored" in capsys.readouterr().out


def test_require_bar_fails_the_rule_before_1_187(tmp_path):
    out = tmp_path / "r.json"
    args = ["trip-vs-move", "run", "--case", "reader", "--model", "scripted", "--gate", "before-1.187", "--settings", settings_json(tmp_path), "--output", str(out)]
    assert main(args) == 0 and json.loads(out.read_text())["verdict"]["bar_met"] is False
    assert main([*args, "--require-bar"]) == 1


def test_a_live_target_without_confirmation_prints_the_estimate_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "urd.agentmem", "trip-vs-move", "run", "--model", "claude-sonnet-5-5", "--settings", settings_json(tmp_path), "--output", str(out)],
        capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert "trip-vs-move reader on claude-sonnet-5-5: estimate US$" in proc.stderr and "confirm_live" in proc.stderr
    assert not out.exists()


def test_estimate_in_cents_and_clear_errors(tmp_path, capsys):
    assert main(["update-gate", "estimate", "--model", "claude-sonnet-4-6", "--settings", settings_json(tmp_path), "--cents"]) == 0
    assert int(capsys.readouterr().out.strip()) > 0
    assert main(["trip-vs-move", "estimate", "--model", "claude-x", "--settings", settings_json(tmp_path)]) == 2
    assert "usd_per_mtok.claude-x" in capsys.readouterr().err
    assert main(["update-gate", "run", "--model", "scripted", "--settings", settings_json(tmp_path, **{"update_gate.samples": 0}), "--output", str(tmp_path / "x.json")]) == 2
    assert "agentmem.update_gate.samples" in capsys.readouterr().err


def test_update_gate_run_and_rescore(tmp_path):
    out = tmp_path / "ug.json"
    assert main(["update-gate", "run", "--model", "scripted", "--settings", settings_json(tmp_path), "--require-bar", "--output", str(out)]) == 0
    assert main(["update-gate", "rescore", str(out), "--output", str(tmp_path / "again.json")]) == 0
    assert json.loads((tmp_path / "again.json").read_text())["verdict"] == json.loads(out.read_text())["verdict"]
    assert main(["trip-vs-move", "rescore", str(out), "--checks-version", "2", "--output", str(tmp_path / "no.json")]) == 2

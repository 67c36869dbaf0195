"""The published target in the DAG: tables and figures from summary.json, the report, the
controls' wiring."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
import tables_fixtures as fx
from conftest import REDUCED, copy_of, snakemake

from urd.core.io import sha256_file
from urd.workflow import sandbox

pytestmark = pytest.mark.slow  # every test here runs Snakemake

TABLE_RULES = ["retention_table", "side_metrics_table", "retention_figure_tiny", "published",
               "planting_world", "verify", "planting_run", "planting_tables",  # the planting suite builds offline
               "agentmem_trip_vs_move", "agentmem_update_gate", "agentmem_stores_table"]  # so do the stores


def _rows(path):
    return {(r["scale"], r["system"], r["task"], r["split"]): r for r in csv.DictReader(io.StringIO(path.read_text()))}


SIDE_COLUMNS = {  # side_metrics.csv column: the summary cell's figure
    "budget_bytes": ("budget_bytes", None), "confabulation_A": ("confabulation_A", None),
    "confabulation_B": ("confabulation_B", None), "rate_trigger_A": ("rate_trigger_A", None),
    "rate_trigger_B": ("rate_trigger_B", None), "rate_non_trigger_A": ("rate_non_trigger_A", None),
    "rate_non_trigger_B": ("rate_non_trigger_B", None), "fiche_bytes_mean": ("fiche_bytes", "mean"),
    "fiche_bytes_max": ("fiche_bytes", "max"), "declared_tokens_mean": ("declared_tokens", "mean"),
    "declared_tokens_max": ("declared_tokens", "max"), "metered_tokens_mean": ("metered_tokens", "mean"),
    "token_cap_mean": ("token_cap", "mean"),
}


def _assert_side_metrics_are_the_summarys(workflow, summary: dict, digest: str) -> None:
    """Every cell of the summary is one row of side_metrics.csv, with the cell's own figures."""
    rows = _rows(workflow / "results/urd/tables/side_metrics.csv")
    assert set(rows) == {("tiny", system, task, split) for system, tasks in summary["cells"].items()
                         for task, splits in tasks.items() for split in splits}
    for (_, system, task, split), row in rows.items():
        cell = summary["cells"][system][task][split]
        assert row["summary_sha256"] == digest
        assert row["out_of_contract"] == str(cell["out_of_contract"]).lower()
        for column, (key, sub) in SIDE_COLUMNS.items():
            want = cell.get(key) if sub is None else (cell.get(key) or {}).get(sub)
            got = row[column]
            assert (got == "") if want is None else (float(got) == pytest.approx(want, abs=1e-6)), (system, task, split, column)


def _redrawn_retention_figure(workflow, tmp_path, monkeypatch, systems: list[str]) -> bytes:
    """The figure the retention_figure rule must draw: the same command, from the same summary,
    with the configured bootstrap and dpi and the run's systems (the row order)."""
    from urd.core.config import load_config
    from urd.tables import cli

    publish = load_config(workflow / "config/config.yaml", workflow / "config/schema.yaml")["publish"]
    monkeypatch.chdir(workflow)  # the figure's footer names the summary as the rule gives it
    png = tmp_path / "redrawn.png"
    rc = cli.main(["retention-figure", "--summary", "tiny=results/urd/tiny/summary.json", "--scale", "tiny",
                   "--systems", ",".join(systems), "--bootstrap", json.dumps(publish["bootstrap"]),
                   "--dpi", str(publish["dpi"]), "--png", str(png)])
    assert rc == 0
    return png.read_bytes()


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ")]


def _given_summary(workflow):
    """A summary (and oracle) put in place by hand; only the table rules may run, so the
    controls (which need tuning artifacts) are switched off in this copy of the config."""
    cfg = workflow / "config/config.yaml"
    text = cfg.read_text()
    assert "\n  enabled: true" in text
    text = text.replace("\n  enabled: true", "\n  enabled: false", 1)
    assert "\n  urd2: [chains, pareto, dose]" in text  # rung 2's tables: tests/test_workflow_urd2.py
    text = text.replace("\n  urd2: [chains, pareto, dose]", "\n  urd2: []", 1)
    assert "\n  scales: [learned]" in text  # the published scale: these tables are tiny's
    cfg.write_text(text.replace("\n  scales: [learned]", "\n  scales: [tiny]", 1))
    (workflow / "results/urd/tiny").mkdir(parents=True)
    fx.write(workflow / "results/urd/tiny/summary.json", fx.published_like("tiny"))
    fx.write(workflow / "results/urd/oracle.json", {"t1_oracle": {"over": {"ceiling": 0.786}, "sanity": {"ceiling": 1.0}}})


def test_published_tables_match_their_summary_and_the_report_embeds_them(workflow, tmp_path, monkeypatch):
    _given_summary(workflow)
    snakemake(workflow, "published", "--allowed-rules", *TABLE_RULES, check=True)
    tables = workflow / "results/urd/tables"
    summary = json.loads((workflow / "results/urd/tiny/summary.json").read_text())
    digest = sha256_file(workflow / "results/urd/tiny/summary.json")
    # recompute one cell from the summary's episodes: ratio of the means
    row = _rows(tables / "retention.csv")[("tiny", "gzip_tail", "t1", "sanity")]
    eps = summary["cells"]["gzip_tail"]["t1"]["sanity"]["episodes"]
    expected = sum(e["score_B"] for e in eps) / sum(e["score_A"] for e in eps)
    assert float(row["retention"]) == pytest.approx(expected, abs=1e-6)
    assert float(row["ci_low"]) <= expected <= float(row["ci_high"])
    assert row["resamples"] == "10000" and row["summary_sha256"] == digest
    md = (tables / "retention.md").read_text()
    assert f"{100 * expected:.1f} %" in md and digest in md
    assert "## tiny" in md and "## 0.1b" not in md and "Not built, so not shown: learned, 0.1b, 0.4b." in md
    # the side metrics are the summary's cells, figure by figure, in the configured system order
    _assert_side_metrics_are_the_summarys(workflow, summary, digest)
    side_md = (tables / "side_metrics.md").read_text()
    assert "| retrieval | over | 75.0 % | 8.3 % | 100 (max 100) / 120 | 50 (max 50) | 1,000 (max 1,000) |" in side_md
    assert "| replay_banc* | sanity | 83.3 % | 0.0 % | 20.8 % | 0.0 % | 100 (max 100) / 960 | 150 (max 150) |" in side_md
    t1_rows = [line.split(" | ")[0][2:] for line in _table_lines(side_md) if " | over | " in line][:4]
    assert t1_rows == ["vanilla", "gzip_tail", "retrieval", "replay_banc*"]
    # the figure is the one drawn from this summary with the configured bootstrap, dpi and order
    from urd.core.config import load_config

    systems = load_config(workflow / "config/config.yaml", workflow / "config/schema.yaml")["systems"]
    figure = (workflow / "results/urd/figures/retention_tiny.png").read_bytes()
    assert figure[:8] == b"\x89PNG\r\n\x1a\n"
    assert figure == _redrawn_retention_figure(workflow, tmp_path, monkeypatch, systems)
    # nothing to redo; a changed summary redoes the tables
    again = snakemake(workflow, "published", "--allowed-rules", *TABLE_RULES, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr

    snakemake(workflow, "published", "--allowed-rules", *TABLE_RULES, "--report", "report.html", check=True)
    html = (workflow / "report.html").read_text()
    assert re.search(r"data:image/png[^\"']*;base64,iVBORw0KGgo", html), "the figure is not embedded"
    for name in ("retention.html", "retention.csv", "side_metrics.html", "retention_tiny.png", "planting.html", "stores.html"):
        assert name in html
    for category in ("Retention B/A", "Side metrics", "Planting", "Agent-memory stores"):
        assert category in html
    assert digest in html, "captions must name the summary's SHA-256"
    assert not re.search(r"<script[^>]+src=\"http", html), "the report must be self-contained"


def test_controls_are_wired_to_the_tuning_artifacts_when_enabled(workflow, urd_config):
    from urd.controls.artifacts import evaluated_transcript_digests

    overlay = workflow / "controls.yaml"
    overlay.write_text("controls: {enabled: true}\npublish: {scales: [tiny], bootstrap: {resamples: 1000, level: 0.95, seed: 1}, dpi: 100, urd2: []}\n")
    proc = snakemake(workflow, "published", "-n", "--configfile", "config/config.yaml", str(overlay), *REDUCED)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    sha = evaluated_transcript_digests({**urd_config, "evaluate_episodes": 1}, "t2")[0]
    # the replay tuning jobs (rules/replay.smk) make exactly the artifacts the controls read
    assert f"artifacts/replay/tiny/replay_banc/{sha}/time_state.npy" in out
    assert re.search(r"^tune_state\s+4$", out, re.M)  # 2 recipes x 2 tasks x 1 episode
    # with artifacts in place, the controls and their tables are planned
    for recipe in ("replay_tune", "replay_banc"):
        for task in ("t1", "t2"):
            for s in evaluated_transcript_digests({**urd_config, "evaluate_episodes": 1}, task):
                d = workflow / f"artifacts/replay/tiny/{recipe}/{s}"
                d.mkdir(parents=True, exist_ok=True)
                (d / "time_state.npy").write_bytes(b"")
                (d / "costs.json").write_text("{}")
    proc = snakemake(workflow, "published", "-n", "--configfile", "config/config.yaml", str(overlay), *REDUCED)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    for rule in ("ceiling", "bits_curve", "ceiling_table", "bits_curve_table", "retention_table"):
        assert re.search(rf"^{rule}\s+1$", out, re.M), rule


def test_unknown_scale_to_publish_is_refused(workflow):
    overlay = workflow / "publish.yaml"
    overlay.write_text("publish: {scales: [tiny, 2b], bootstrap: {resamples: 1000, level: 0.95, seed: 1}, dpi: 100}\n")
    proc = snakemake(workflow, "published", "-n", "--configfile", "config/config.yaml", str(overlay))
    assert proc.returncode != 0
    assert "publish.scales: expected scales among backbones (tiny, learned, 0.1b, 0.4b), got '2b'" in proc.stdout + proc.stderr


def test_published_builds_for_tiny_from_a_fresh_copy(vanilla_built, tmp_path, monkeypatch):
    """Offline, on the session's fresh reduced build of vanilla (data, backbone, control): the
    replay recipes' cells, the controls, the other suites, summary, tables, figures."""
    workflow = copy_of(vanilla_built, tmp_path / "wf")
    from urd.core.config import load_config
    from urd.tables import controls
    from urd.tables.bootstrap import Bootstrap
    from urd.tables.sources import load

    systems = ["vanilla", "replay_tune", "replay_banc"]
    # as published results are made: no job runs outside its sandbox (where this machine has one)
    box = "required" if sandbox.unavailable() is None else "auto"
    # rung 2's parts, the planting suite and the stores table are built and checked by their own
    # tests (tests/test_workflow_urd2.py, test_workflow_planting.py, test_agentmem_snakemake.py)
    snakemake(workflow, "published", *REDUCED, f"systems=[{','.join(systems)}]", f"sandbox={box}",
              "publish={scales: [tiny], urd2: []}", "agentmem={planting: {publish: []}, stores: {publish: []}}",
              check=True)
    summary = json.loads((workflow / "results/urd/tiny/summary.json").read_text())
    if box == "required":
        cells = sum(len(splits) for tasks in summary["cells"].values() for splits in tasks.values())
        assert summary["provenance"]["sandbox"] == {"summary": "bwrap", "cells": {"bwrap": cells + 2},
                                                    "all_sandboxed": True, "mixed": False}  # the cells, two controls
        assert "every job sandboxed (bwrap)" in (workflow / "results/urd/tables/retention.md").read_text()
        ceiling_prov = json.loads((workflow / "results/urd/tiny/controls/ceiling.json").read_text())["provenance"]
        assert ceiling_prov["sandbox"] == "bwrap"
    digest = sha256_file(workflow / "results/urd/tiny/summary.json")
    rows = _rows(workflow / "results/urd/tables/retention.csv")
    assert {k[1] for k in rows} == {"vanilla", "replay_tune", "replay_banc"} and len(rows) == 12
    for (_, system, task, split), row in rows.items():
        cell = summary["cells"][system][task][split]
        if cell["retention"] is None:
            # a reduced run's T2 episode may hold no trigger query: no score at all, not 0
            want = "no scored episodes" if cell["score_A"] is None else "A = 0"
            assert row["retention"] == "" and row["undefined"] == want
        else:
            assert float(row["retention"]) == pytest.approx(cell["retention"], abs=1e-6)
        for key in ("score_A", "score_B"):
            assert (row[key] == "") if cell[key] is None else (float(row[key]) == cell[key])
    tables = workflow / "results/urd/tables"
    _assert_side_metrics_are_the_summarys(workflow, summary, digest)
    side_md = (tables / "side_metrics.md").read_text()
    assert digest in side_md and "| replay_banc* | over |" in side_md
    figure = (workflow / "results/urd/figures/retention_tiny.png").read_bytes()
    assert figure == _redrawn_retention_figure(workflow, tmp_path, monkeypatch, systems)
    # the controls ran from the same tuning artifacts, against the same control responses as the
    # summary, and made their tables and figure from their JSON
    ceiling = json.loads((workflow / "results/urd/tiny/controls/ceiling.json").read_text())
    assert ceiling["budget_bytes"] is None and ceiling["recipe_order"] == ["replay_tune", "replay_banc"]
    assert set(ceiling["recipes"]) == {"replay_tune", "replay_banc"}
    for recipe, rec in ceiling["recipes"].items():
        assert rec["out_of_contract"] is (recipe == "replay_banc") and set(rec["tasks"]) == {"t1", "t2"}
        trained = {a["trained_tokens"] for a in ceiling["provenance"]["artifacts"][recipe].values()}
        for task, cell in rec["tasks"].items():
            assert cell["budget_bytes"] is None and cell["out_of_contract"] is rec["out_of_contract"]
            control = summary["cells"]["vanilla"][task]["over"]
            assert cell["score_A"] == control["score_A"] and cell["token_cap"] == control["token_cap"]
            assert [e["score_A"] for e in cell["episodes"]] == [e["score_A"] for e in control["episodes"]]
            # the tuning's own tokens are declared, as for the same recipe's budgeted cells
            assert cell["declared_tokens"] == summary["cells"][recipe][task]["over"]["declared_tokens"]
            assert cell["declared_tokens"]["max"] in trained
    boot = Bootstrap(**load_config(workflow / "config/config.yaml", workflow / "config/schema.yaml")["publish"]["bootstrap"])
    ceiling_md = (tables / "ceiling.md").read_text()
    want = controls.ceiling_document([load(str(workflow / "results/urd/tiny/controls/ceiling.json"), "tiny")], boot, None)
    assert _table_lines(ceiling_md) == _table_lines(want.markdown())
    assert [line.split(" | ")[0][2:] for line in _table_lines(ceiling_md)][1:3] == ["replay_tune, tiny", "replay_banc*, tiny"]
    bits_md = (tables / "bits_curve.md").read_text()
    want = controls.bits_document([load(str(workflow / "results/urd/tiny/controls/bits_curve.json"), "tiny")], boot, None)
    assert "replay_banc*" in bits_md and _table_lines(bits_md) == _table_lines(want.markdown())
    assert (workflow / "results/urd/figures/bits_curve.png").read_bytes()[:4] == b"\x89PNG"

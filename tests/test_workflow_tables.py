"""The published target in the DAG: tables and figures from summary.json, the report, the
controls' wiring."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
import tables_fixtures as fx
from conftest import snakemake

from urd.core.io import sha256_file

pytestmark = pytest.mark.slow  # every test here runs Snakemake

TABLE_RULES = ["retention_table", "side_metrics_table", "retention_figure_tiny", "published",
               "planting_world", "verify", "planting_run", "planting_tables",  # the planting suite builds offline
               "agentmem_trip_vs_move", "agentmem_update_gate", "agentmem_stores_table"]  # so do the stores
REDUCED = ["--config", "evaluate_episodes=1", "evaluate_queries=2"]


def _rows(path):
    return {(r["scale"], r["system"], r["task"], r["split"]): r for r in csv.DictReader(io.StringIO(path.read_text()))}


def _given_summary(workflow):
    """A summary (and oracle) put in place by hand; only the table rules may run, so the
    controls (which need tuning artifacts) are switched off in this copy of the config."""
    cfg = workflow / "config/config.yaml"
    text = cfg.read_text()
    assert "\n  enabled: true" in text
    cfg.write_text(text.replace("\n  enabled: true", "\n  enabled: false", 1))
    (workflow / "results/urd/tiny").mkdir(parents=True)
    fx.write(workflow / "results/urd/tiny/summary.json", fx.published_like("tiny"))
    fx.write(workflow / "results/urd/oracle.json", {"t1_oracle": {"over": {"ceiling": 0.786}, "sanity": {"ceiling": 1.0}}})


def test_published_tables_match_their_summary_and_the_report_embeds_them(workflow):
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
    assert "## tiny" in md and "## 0.1b" not in md and "Not built, so not shown: 0.1b, 0.4b." in md
    assert (workflow / "results/urd/figures/retention_tiny.png").read_bytes()[:4] == b"\x89PNG"
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
    overlay.write_text("controls: {enabled: true}\npublish: {scales: [tiny], bootstrap: {resamples: 1000, level: 0.95, seed: 1}, dpi: 100}\n")
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
    assert "publish.scales: expected scales among backbones (tiny, 0.1b, 0.4b), got '2b'" in proc.stdout + proc.stderr


def test_published_builds_for_tiny_from_a_fresh_copy(workflow):
    """Offline, from nothing: data, backbone, control, session B, summary, tables, figures."""
    snakemake(workflow, "published", *REDUCED, "systems=[vanilla,replay_tune,replay_banc]", check=True)
    summary = json.loads((workflow / "results/urd/tiny/summary.json").read_text())
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
    for f in ("retention.md", "side_metrics.md", "side_metrics.csv"):
        assert (workflow / "results/urd/tables" / f).stat().st_size > 0
    assert (workflow / "results/urd/figures/retention_tiny.png").exists()
    # the controls ran from the same tuning artifacts and made their tables and figure
    ceiling = json.loads((workflow / "results/urd/tiny/controls/ceiling.json").read_text())
    assert ceiling and (workflow / "results/urd/tables/ceiling.md").stat().st_size > 0
    assert "replay_banc*" in (workflow / "results/urd/tables/bits_curve.md").read_text()
    assert (workflow / "results/urd/figures/bits_curve.png").read_bytes()[:4] == b"\x89PNG"

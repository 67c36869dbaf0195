"""Tables and figures from hand-made summaries (folded by the real fold code): every published
cell is traced back to the episodes it comes from."""

from __future__ import annotations

import csv
import io
import json
import struct
import zlib

import pytest
import tables_fixtures as fx

from urd.core.rng import Stream
from urd.harness.fold import fold_cell
from urd.tables import cli, controls, figures, retention
from urd.tables.bootstrap import Bootstrap, resample_indices, retention_interval
from urd.tables.render import pct, size_label
from urd.tables.sources import load

BOOT = Bootstrap(resamples=2000, level=0.95, seed=7)


def _csv(path):
    return list(csv.DictReader(io.StringIO(path.read_text())))


@pytest.fixture()
def built(tmp_path, repo):
    """The retention and side tables of two scales, built through the CLI as the rules do."""
    s01 = fx.write(tmp_path / "results/urd/0.1b/summary.json", fx.published_like("0.1b"))
    oracle = fx.write(tmp_path / "oracle.json", {"t1_oracle": {"over": {"ceiling": 0.786}, "sanity": {"ceiling": 1.0}}})
    out = tmp_path / "tables"
    boot = json.dumps({"resamples": BOOT.resamples, "level": BOOT.level, "seed": BOOT.seed})
    rc = cli.main(["retention", "--summary", f"0.1b={s01}", "--oracle", oracle, "--systems", "vanilla,gzip_tail,retrieval",
                   "--omitted", "0.4b", "--bootstrap", boot, "--md", str(out / "r.md"), "--csv", str(out / "r.csv"),
                   "--html", str(out / "r.html"), "--caption", str(out / "r.rst")])
    assert rc == 0
    rc = cli.main(["side", "--summary", f"0.1b={s01}", "--md", str(out / "s.md"), "--csv", str(out / "s.csv"),
                   "--html", str(out / "s.html"), "--caption", str(out / "s.rst")])
    assert rc == 0
    return {"summary": s01, "out": out, "data": json.loads(open(s01).read())}


# --- bootstrap ------------------------------------------------------------------------------
def _reference_interval(a, b, resamples, seed, level):
    """An independent implementation: plain Python, the same SHA-256 draws."""
    n = len(a)
    stream = Stream("urd-bootstrap", seed, n, resamples)
    ratios, undefined = [], 0
    for _ in range(resamples):
        idx = [stream.below(n) for _ in range(n)]
        ma = sum(a[i] for i in idx) / n
        if ma == 0:
            undefined += 1
            continue
        ratios.append(sum(b[i] for i in idx) / n / ma)
    ratios.sort()

    def q(p):  # numpy's default (linear) quantile
        h = (len(ratios) - 1) * p
        lo = int(h)
        return ratios[lo] + (h - lo) * (ratios[min(lo + 1, len(ratios) - 1)] - ratios[lo])

    alpha = (1 - level) / 2
    return q(alpha), q(1 - alpha), undefined


def test_interval_matches_an_independent_computation():
    a, b = [0.5, 1.0, 0.75, 0.25, 0.5, 1.0], [0.25, 0.5, 0.25, 0.0, 0.25, 0.5]
    iv = retention_interval(a, b, BOOT)
    assert iv.point == pytest.approx(sum(b) / sum(a))
    lo, hi, undefined = _reference_interval(a, b, BOOT.resamples, BOOT.seed, BOOT.level)
    assert (iv.low, iv.high, iv.undefined_resamples) == (pytest.approx(lo), pytest.approx(hi), undefined)
    assert iv.low < iv.point < iv.high
    # deterministic: same draws every time; another seed gives other draws
    assert retention_interval(a, b, BOOT) == iv
    assert (resample_indices(6, 2000, 8) != resample_indices(6, 2000, 7)).any()


def test_the_configured_bootstrap_gives_the_stored_draws_and_interval(urd_config):
    """Golden values, computed once from this code with the configured seed and pasted here: the
    draws come from the config's seed (never the clock, never another seed), and the interval
    is the stated level's percentile interval of ratios that differ from draw to draw."""
    boot = Bootstrap()
    assert boot == Bootstrap(**urd_config["publish"]["bootstrap"]) == Bootstrap(10_000, 0.95, 20260807)
    resample_indices.cache_clear()  # drawn here, not reused from an earlier call
    idx = resample_indices(10, boot.resamples, boot.seed)
    assert idx.shape == (10_000, 10)
    assert idx[:3].tolist() == [[5, 9, 7, 7, 9, 9, 6, 0, 1, 1],
                                [6, 0, 4, 3, 5, 0, 8, 0, 1, 3],
                                [7, 5, 2, 5, 2, 4, 7, 4, 0, 8]]
    assert idx[-1].tolist() == [2, 0, 1, 0, 0, 1, 5, 5, 7, 4]
    # real-valued scores: nearly every resample has its own ratio, so the interval's ends move
    # with the draws and with the level (another seed, or the quartiles, give other numbers)
    a = [0.83, 0.41, 0.67, 0.29, 0.95, 0.52, 0.74, 0.38, 0.61, 0.17]
    b = [0.61, 0.12, 0.58, 0.07, 0.88, 0.33, 0.49, 0.20, 0.44, 0.02]
    resample_indices.cache_clear()
    iv = retention_interval(a, b, boot)
    assert iv.point == pytest.approx(0.6714542190305206, rel=1e-12, abs=1e-12)
    assert iv.low == pytest.approx(0.514418079868709, rel=1e-12, abs=1e-12)
    assert iv.high == pytest.approx(0.7836582095709571, rel=1e-12, abs=1e-12)
    assert (iv.n_episodes, iv.undefined_resamples, iv.reason) == (10, 0, None)
    # the interval follows the seed it is given: the next seed's draws give other ends
    other = retention_interval(a, b, Bootstrap(seed=boot.seed + 1))
    assert other.point == iv.point
    assert other.low == pytest.approx(0.5150703460092223, rel=1e-12, abs=1e-12)
    assert other.high == pytest.approx(0.7800013661202186, rel=1e-12, abs=1e-12)


def test_undefined_retention_is_shown_as_such():
    iv = retention_interval([0, 0, 0], [0.5, 0, 0], BOOT)
    assert (iv.point, iv.low, iv.high, iv.reason) == (None, None, None, "A = 0")
    # A is 0 on most episodes: many resamples have no ratio, so no interval either
    iv = retention_interval([0, 0, 0, 0, 0, 1.0], [0, 0, 0, 0, 0, 0.5], BOOT)
    assert iv.point == 0.5 and iv.low is None and iv.reason.startswith("A = 0 in ")
    assert iv.undefined_resamples == int((resample_indices(6, BOOT.resamples, BOOT.seed) != 5).all(axis=1).sum())
    with pytest.raises(ValueError):
        retention_interval([1, 2], [1], BOOT)


# --- retention table --------------------------------------------------------------------------
def test_a_published_cell_is_recomputed_from_the_summary(built):
    """The table matches the summary it comes from: recompute retrieval / T1 over by hand."""
    rows = {(r["system"], r["task"], r["split"]): r for r in _csv(built["out"] / "r.csv")}
    cell = built["data"]["cells"]["retrieval"]["t1"]["over"]
    a = [e["score_A"] for e in cell["episodes"]]
    b = [e["score_B"] for e in cell["episodes"]]
    row = rows[("retrieval", "t1", "over")]
    assert float(row["retention"]) == pytest.approx((sum(b) / len(b)) / (sum(a) / len(a)), abs=1e-6)
    assert float(row["retention"]) == pytest.approx(cell["retention"], abs=1e-6)   # and fold agrees
    lo, hi, _ = _reference_interval(a, b, BOOT.resamples, BOOT.seed, BOOT.level)
    assert float(row["ci_low"]) == pytest.approx(lo, abs=1e-6)
    assert float(row["ci_high"]) == pytest.approx(hi, abs=1e-6)
    assert row["n_episodes"] == "6" and row["resamples"] == "2000" and row["bootstrap_seed"] == "7"
    assert row["oracle_ceiling"] == "0.786"
    assert row["summary_sha256"] == load(built["summary"]).sha256
    # the same numbers, as text, in the Markdown and the HTML
    text = f"{pct(float(row['retention']))} [{100 * lo:.1f}, {100 * hi:.1f}]"
    md = (built["out"] / "r.md").read_text()
    assert f"| retrieval | {text} |" in md
    assert text in (built["out"] / "r.html").read_text()


def test_layout_follows_the_write_up(built):
    md = (built["out"] / "r.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0] == "| system | T1 over | T1 sanity | T2 over | T2 sanity |"
    names = [line.split(" | ")[0][2:] for line in table[1:]]
    # ranked by T1 over; identical rows share one, but an out-of-contract system is never ranked
    # with the rest: it follows them, marked; the oracle row last
    assert names == ["retrieval", "gzip_tail", "vanilla", "replay_banc*", "oracle ceiling (T1 recall bound)"]
    assert table[-1] == "| oracle ceiling (T1 recall bound) | 78.6 % | 100.0 % | — | — |"
    assert "## 0.1b" in md and "## 0.4b" not in md and "Not built, so not shown: 0.4b." in md
    rows = _csv(built["out"] / "r.csv")
    assert len(rows) == 4 * 4  # every system x task x split, never merged in the CSV
    assert {r["out_of_contract"] for r in rows if r["system"] == "replay_banc"} == {"true"}


def test_retention_n_a_when_the_control_scores_zero(tmp_path):
    summ = fx.make_summary("tiny", {"t1": [(0, 0), (0, 0)], "t2": [(0, 0), (0, 0)]},
                           {"gzip_tail": {("t1", "over"): [(0, 0), (0, 1)], ("t2", "over"): [(1, 0), (0, 0)]}})
    src = load(fx.write(tmp_path / "s.json", summ), "tiny")
    doc, cells = retention.document([src], None, BOOT, "abc")
    assert all(c.interval.point is None for c in cells)
    assert "| gzip_tail | n/a (A = 0) | n/a (A = 0) |" in doc.markdown()
    assert "oracle" not in doc.markdown().split("## tiny")[1].split("## Provenance")[0]


def test_side_metrics_come_from_the_cells(built):
    rows = {(r["system"], r["task"], r["split"]): r for r in _csv(built["out"] / "s.csv")}
    c = built["data"]["cells"]
    assert float(rows[("retrieval", "t1", "over")]["confabulation_B"]) == pytest.approx(c["retrieval"]["t1"]["over"]["confabulation_B"])
    assert float(rows[("retrieval", "t1", "over")]["confabulation_B"]) == pytest.approx(1 / 12, abs=1e-6)   # 1 of 12 unseen
    assert float(rows[("gzip_tail", "t2", "over")]["rate_trigger_B"]) == pytest.approx(8 / 24, abs=1e-6)
    md = (built["out"] / "s.md").read_text()
    assert "| retrieval | over | 75.0 % | 8.3 % |" in md
    assert "| replay_banc* | over |" in md
    assert "150 (max 150)" in md  # declared consolidation tokens


def test_captions_name_every_source_and_its_digest(built):
    cap = (built["out"] / "r.rst").read_text()
    assert load(built["summary"]).sha256 in cap
    assert "2000 resamples, seed 7" in cap
    assert "{{" not in cap and "{%" not in cap


# --- controls' tables ---------------------------------------------------------------------
def _control_cell(task, a, b, budget=None, fiche=4718592, ooc=False):
    make = {"t1": fx.t1_records, "t2": fx.t2_records}[task]
    meta = {"budget_bytes": budget, "fiche_bytes": fiche, "declared_tokens": 10, "metered_tokens": 0,
            "token_cap": 100, "out_of_contract": ooc}
    ctl = [r for e, x in enumerate(a) for r in make(e, *x, {})]
    rec = [r for e, x in enumerate(b) for r in make(e, *x, meta)]
    return fold_cell(task, ctl, rec)


def test_ceiling_table_from_hand_made_json(tmp_path):
    a2 = [(4, 1), (3, 0), (4, 1)]
    ceil = {"control": "ceiling", "scale": "0.1b", "budget_bytes": None, "recipes": {
        "replay_tune": {"out_of_contract": False, "tasks": {"t1": _control_cell("t1", [(2, 0)] * 3, [(0, 0)] * 3),
                                                            "t2": _control_cell("t2", a2, [(0, 0)] * 3)}},
        "replay_banc": {"out_of_contract": True, "tasks": {"t1": _control_cell("t1", [(2, 0)] * 3, [(1, 0)] * 3, ooc=True),
                                                           "t2": _control_cell("t2", a2, [(2, 2)] * 3, ooc=True)}}}}
    src = load(fx.write(tmp_path / "ceiling.json", ceil), "0.1b")
    md = controls.ceiling_document([src], BOOT, "abc").markdown()
    rows = [line for line in md.splitlines() if line.startswith("| replay_")]
    # in-contract recipe first; dose = declared (trained) tokens over the cap (10 / 100)
    assert rows[0] == "| replay_tune, 0.1b | 0.0 % [0.0, 0.0] | 0.0 % [0.0, 0.0] | 0.10× cap | 0.10× cap | 4,718,592 |"
    assert rows[1] == "| replay_banc*, 0.1b | 50.0 % [50.0, 50.0] | 0.0 % [0.0, 0.0] | 0.10× cap | 0.10× cap | 4,718,592 |"
    # the disposition without its condition: equal trigger and non-trigger rates in B
    assert "| replay_banc*, 0.1b | 50.0 % | 50.0 % | 91.7 % | 16.7 % |" in md


def test_bits_curve_table_and_figure_from_hand_made_json(tmp_path):
    budgets = [120, 960, 4096, 16384, 65536, 262144, 1048576, None]
    a = [(4, 1), (3, 0), (4, 1)]
    b_at = {1048576: [(2, 0), (2, 1), (1, 0)], None: [(3, 1), (3, 0), (2, 0)]}
    pts = [{"split": str(bb), **_control_cell("t2", a, b_at.get(bb, [(0, 0)] * 3), bb, bb or 4718592, True)}
           for bb in budgets]
    curve = {"control": "bits_curve", "scale": "0.1b", "task": "t2", "recipe": "replay_banc", "out_of_contract": True,
             "budgets": budgets, "points": list(reversed(pts))}   # order in the file does not matter
    path = fx.write(tmp_path / "bits_curve.json", curve)
    src = load(path, "0.1b")
    md = controls.bits_document([src], BOOT, "abc").markdown()
    assert "| fiche budget | 120 B | 960 B | 4 KB | 16 KB | 64 KB | 256 KB | 1 MB | full (4,718,592 B) |" in md
    assert "## 0.1b: T2, replay_banc*" in md
    ret = next(line for line in md.splitlines() if line.startswith("| retention"))
    cells = ret.strip("| ").split(" | ")[1:]
    assert cells[:6] == ["0.0 % [0.0, 0.0]"] * 6
    # T2 episode score = triggers applied / 4 - non-triggers applied / 4; retention = mean B / mean A
    mean_a = (0.75 + 0.75 + 0.75) / 3
    assert cells[6].startswith(pct((0.5 + 0.25 + 0.25) / 3 / mean_a) + " [")
    assert cells[7].startswith(pct((0.5 + 0.75 + 0.5) / 3 / mean_a) + " [")
    png = tmp_path / "bits.png"
    rc = cli.main(["bits-curve", "--control", f"0.1b={path}", "--bootstrap", json.dumps(BOOT.__dict__),
                   "--dpi", "80", "--png", str(png), "--md", str(tmp_path / "b.md")])
    assert rc == 0 and _png_size(png) == (560, 320)


# --- figures ------------------------------------------------------------------------------
def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _png_text_chunks(path):
    data, pos, out = path.read_bytes(), 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind in (b"tEXt", b"iTXt", b"zTXt"):
            out.append(data[pos + 8:pos + 8 + length])
        assert zlib.crc32(data[pos + 4:pos + 8 + length]) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        pos += 12 + length
    return out


def test_retention_figure_is_deterministic_and_carries_no_metadata(tmp_path):
    src = load(fx.write(tmp_path / "s.json", fx.published_like("0.1b")), "0.1b")
    cells = retention.build_cells(src, None, BOOT, ["vanilla", "gzip_tail", "retrieval"])
    one, two = tmp_path / "a.png", tmp_path / "b.png"
    figures.retention_png(cells, "0.1b", one, 100, "footer")
    figures.retention_png(cells, "0.1b", two, 100, "footer")
    assert one.read_bytes() == two.read_bytes()
    assert _png_size(one) == (800, 420)
    assert _png_text_chunks(one) == []
    # a different figure is a different file (the test can fail)
    figures.retention_png(cells[:4], "0.1b", two, 100, "footer")
    assert one.read_bytes() != two.read_bytes()


def test_labels():
    assert [size_label(b) for b in (120, 960, 4096, 16384, 1 << 20, None, 1000)] == [
        "120 B", "960 B", "4 KB", "16 KB", "1 MB", "full", "1000 B"]
    assert pct(-0.0) == "0.0 %" and pct(None) == "n/a" and pct(1.257) == "125.7 %"


def test_an_out_of_contract_system_is_never_ranked_above_the_rest(tmp_path):
    ctl = {"t1": [(2, 1), (4, 2)], "t2": [(4, 1), (3, 0)]}
    best = {("t1", "over"): [(2, 1), (4, 2)], ("t1", "sanity"): [(2, 1), (4, 2)]}
    summ = fx.make_summary("0.1b", ctl, {
        "replay_banc": {"ooc": True, **best},  # the highest retention, but out of contract
        "gzip_tail": {("t1", "over"): [(1, 1), (2, 2)], ("t1", "sanity"): [(1, 1), (2, 2)]},
        "vanilla": {("t1", "over"): [(0, 0)] * 2, ("t1", "sanity"): [(0, 0)] * 2},
    })
    doc, _ = retention.document([load(fx.write(tmp_path / "s.json", summ), "0.1b")], None, BOOT, "abc")
    rows = [line.split(" | ")[0][2:] for line in doc.markdown().splitlines() if line.startswith("| ")][1:]
    assert rows == ["gzip_tail", "vanilla", "replay_banc*"]


def test_an_undefined_retention_ranks_last_never_with_a_zero():
    """n/a is not 0 %: a system whose first column has no value follows one that retains
    nothing, whatever the given order; undefined rows keep the given order among themselves."""
    def cell(system, a, b):
        return retention.Cell("0.1b", system, "t1", "over", 120, False, None, None,
                              retention_interval(a, b, BOOT), None)

    cells = [cell("ghost", [0.0, 0.0], [0.5, 0.0]),      # control scores 0: B/A has no value
             cell("zero", [0.5, 1.0], [0.0, 0.0]),       # retains nothing: 0 %
             cell("unscored", [], []),                   # no scored episode at all
             cell("small", [0.5, 1.0], [0.25, 0.0])]     # 1/6
    assert [c.interval.point for c in cells] == [None, 0.0, None, pytest.approx(1 / 6)]
    _, body = retention.block_rows(cells, None)
    assert body == [["small", "16.7 % [0.0, 50.0]"], ["zero", "0.0 % [0.0, 0.0]"],
                    ["ghost", "n/a (A = 0)"], ["unscored", "n/a (no scored episodes)"]]


def test_the_out_of_contract_cap_ratio_is_measured_per_episode_not_a_fixed_label(tmp_path):
    ctl = {"t1": [(2, 1), (4, 2)], "t2": [(4, 1), (3, 0)]}
    summ = fx.make_summary("0.1b", ctl, {
        "replay_banc": {"ooc": True, ("t1", "over"): [(2, 1), (4, 2)], ("t2", "over"): [(4, 1), (3, 0)]},
        "vanilla": {("t1", "over"): [(0, 0)] * 2},
    })
    # transcripts of different lengths have different caps: T1 episodes at 21.3x and 22.0x, T2 at 231x
    for task, caps in (("t1", [1000, 968]), ("t2", [92, 92])):
        for e, cap in zip(summ["cells"]["replay_banc"][task]["over"]["episodes"], caps):
            e["declared_tokens"], e["token_cap"] = 21_296, cap
    doc, _ = retention.document([load(fx.write(tmp_path / "s.json", summ), "0.1b")], None, BOOT, "abc")
    text = doc.markdown()
    assert "replay_banc: T1 21.3–22.0× the cap, T2 231× the cap" in text
    assert "vanilla:" not in text and "19.2" not in text


def test_retention_is_undefined_where_score_a_is_negative():
    # T2 discrimination below chance in the control: B/A would flip its sign
    iv = retention_interval([-0.5, -0.25], [0.5, 0.25], BOOT)
    assert iv.point is None and iv.reason == "A < 0" and iv.low is None
    iv = retention_interval([0.5, -0.6, 0.2], [0.5, 0.5, 0.5], BOOT)  # mean A > 0, many resamples not
    assert iv.point is not None and iv.low is None and iv.reason.startswith("A <= 0 in ")
    ctl = [{"task": "t2", "episode": 0, "query_id": f"q{i}", "kind": k, "marker": "#x", "expected": "",
            "response": r} for i, (k, r) in enumerate([("trigger", "no"), ("non_trigger", "yes #x")])]
    cell = fold_cell("t2", ctl, [{**r, "response": "#x", "fiche_bytes": 0, "declared_tokens": 0, "metered_tokens": 0,
                                   "token_cap": 1, "out_of_contract": False, "budget_bytes": 120} for r in ctl])
    assert cell["score_A"] == -1.0 and cell["retention"] is None
    assert "negative" in cell["retention_undefined"] and "flip its sign" in cell["retention_undefined"]


def test_a_sources_line_says_how_its_jobs_ran():
    from urd.tables.sources import Source

    def line(box):
        return Source("tiny", "s.json", "0" * 64, {"provenance": {"sandbox": box}}).line()

    assert line({"summary": "bwrap", "cells": {"bwrap": 14}, "all_sandboxed": True, "mixed": False}).endswith(
        "every job sandboxed (bwrap)")
    mixed = line({"summary": "bwrap", "cells": {"bwrap": 13, "off (sandbox: off)": 1}, "all_sandboxed": False,
                  "mixed": True})
    assert "MIXED: some jobs sandboxed, some not" in mixed and "1 x off (sandbox: off)" in mixed
    assert line("bwrap").endswith("its job sandboxed (bwrap)")
    assert line("off (bwrap (bubblewrap) is not installed)").endswith("NOT sandboxed (off (bwrap (bubblewrap) is not installed))")
    assert "sandbox" not in Source("tiny", "s.json", "0" * 64, {"provenance": {}}).line()


# --- one scale beside the write-up's 0.1B ----------------------------------------------------------
def _writeup_summary(gzip_t2_over):
    ctl = {"t1": [(2, 1), (4, 2), (3, 1)], "t2": [(4, 1), (3, 0), (4, 2)]}
    zero = {(t, s): [(0, 0)] * 3 for t in ("t1", "t2") for s in ("over", "sanity")}
    return fx.make_summary("learned", ctl, {
        "retrieval": {("t1", "over"): [(1, 0), (2, 0), (1, 0)], ("t1", "sanity"): [(4, 0), (4, 0), (4, 0)],
                      ("t2", "over"): [(0, 0)] * 3, ("t2", "sanity"): [(4, 1), (3, 0), (4, 2)]},
        "gzip_tail": {("t1", "over"): [(0, 0), (1, 0), (0, 0)], ("t1", "sanity"): [(2, 0), (3, 0), (2, 0)],
                      ("t2", "over"): gzip_t2_over, ("t2", "sanity"): [(4, 1), (3, 0), (4, 2)]},
        "state_carry": zero, "vanilla": zero, "replay_banc": {"ooc": True, **zero}})


def test_writeup_comparison_quotes_the_writeup_and_decides_each_finding(tmp_path):
    from urd.tables import writeup

    boot = Bootstrap(resamples=200, level=0.95, seed=1)
    path = fx.write(tmp_path / "s.json", _writeup_summary([(2, 0), (2, 1), (3, 1)]))
    text, doc = writeup.build(path, "learned", boot)
    assert "| retrieval | 44.4 % [" in text  # T1 over: 4/9 of A, its interval, then the write-up's figure
    assert "133.3 % [100.0, 200.0] (write-up 125.7 %)" in text
    assert "| replay_banc* |" in text
    found = {f["finding"]: f["holds"] for f in doc["findings"]}
    assert found == {"retrieval wins T1": True, "gzip_tail wins T2-over": True,
                     "the state channel scores zero under contract": True, "retention above 100 % in sanity": True}
    assert doc["control"]["t1"]["mean"] == pytest.approx(0.75) and doc["control"]["t1"]["low"] <= 0.75
    # gzip_tail applying the rule no better on triggers than off them: T2-over no longer won
    path = fx.write(tmp_path / "t.json", _writeup_summary([(1, 1), (1, 1), (0, 0)]))
    _, doc = writeup.build(path, "learned", boot)
    held = {f["finding"]: f for f in doc["findings"]}
    assert not held["gzip_tail wins T2-over"]["holds"]
    assert "gzip_tail 0.0 %" in held["gzip_tail wins T2-over"]["detail"]


def test_writeup_findings_are_not_measurable_where_no_retention_is_defined(tmp_path):
    from urd.tables import writeup

    zero = {(t, s): [(0, 0)] * 2 for t in ("t1", "t2") for s in ("over", "sanity")}
    summ = fx.make_summary("learned", {"t1": [(0, 0), (0, 0)], "t2": [(0, 0), (0, 0)]},
                           {"retrieval": zero, "gzip_tail": zero, "state_carry": zero})
    text, doc = writeup.build(fx.write(tmp_path / "z.json", summ), "learned", Bootstrap(200, 0.95, 1))
    assert [f["holds"] for f in doc["findings"]] == [None] * 4
    assert text.count("not measurable (no defined retention)") == 4 and "n/a (A = 0)" in text


def test_the_interval_is_undefined_only_past_the_share_of_undefined_resamples():
    """(1 - level) / 2 of the resamples may have A = 0 and the interval still stands: at level 0.5
    and 40 resamples, 10. With A = [1, 0, 0] and seed 1, exactly 10 resamples miss episode 0."""
    from urd.tables.bootstrap import Bootstrap, retention_interval

    at = retention_interval([1, 0, 0], [1, 0, 0], Bootstrap(resamples=40, level=0.5, seed=1))
    assert at.undefined_resamples == 10 and at.low is not None and at.reason is None
    past = retention_interval([1, 0, 0], [1, 0, 0], Bootstrap(resamples=40, level=0.5, seed=0))
    assert past.undefined_resamples > 10 and past.low is None and "A = 0" in past.reason


def test_an_episode_with_score_a_but_no_score_b_is_left_out_of_the_interval():
    from urd.tables.retention import episode_pairs

    cell = {"episodes": [{"episode": 1, "score_A": 0.5, "score_B": None},
                         {"episode": 0, "score_A": 0.8, "score_B": 0.4},
                         {"episode": 2, "score_A": None, "score_B": 0.3}]}
    assert episode_pairs(cell) == ([0.8], [0.4])


def test_the_writeup_says_which_check_admitted_the_checkpoint():
    from urd.tables.writeup import checkpoint_line

    assert "SHA-256 pin" in checkpoint_line({"check": "sha256", "sha256": "ab"})
    line = checkpoint_line({"check": "behaviour", "measured": {"t1": 0.31, "t2": 0.95},
                            "pinned": {"t1": 0.329, "t2": 0.969}, "floor": {"t1": 0.3, "t2": 0.941}})
    assert "admitted by behaviour" in line
    assert "T1 0.310 (pinned 0.329, at least 0.300), T2 0.950 (pinned 0.969, at least 0.941)" in line


def test_the_control_line_splits_t1_by_key_kind():
    from urd.tables.writeup import hot_cold

    control = {"episodes": {"0": {"seen": 20, "correct": 7, "cold": 5, "cold_correct": 1},
                            "1": {"seen": 20, "correct": 4, "cold": 5, "cold_correct": 0}}}
    assert hot_cold(control) == " (hot keys 10/30, cold keys 1/10)"
    assert hot_cold({"episodes": {"0": {"seen": 20, "correct": 7, "cold_correct": 1}}}) == ""  # an older summary


def test_cells_that_cannot_show_anything_at_a_scale_are_marked_and_kept_out_of_the_findings(tmp_path):
    """A replay recipe whose tuning loss ends above a uniform guess's, and a note writer on a head
    cut to its replies' ids, are marked not comparable with the measured figures; a replay recipe
    that fitted its transcripts, or a full head, is not."""
    from urd.tables import writeup

    zero = {(t, s): [(0, 0)] * 3 for t in ("t1", "t2") for s in ("over", "sanity")}
    summ = _writeup_summary([(2, 0), (2, 1), (3, 1)])
    path = fx.write(tmp_path / "s.json", summ)
    flat = {"recipes": {"replay_banc": {"artifacts": 6, "steps": 144, "loss_first_mean": 44.2, "loss_last_mean": 43.9}}}
    text, doc = writeup.build(path, "learned", Bootstrap(200, 0.95, 1), flat, {"reply_vocabulary": 2224})
    why = doc["not_comparable"]["replay_banc"]
    assert "the loss ends at 43.90 nats a token (mean over 6 artifacts, 144 steps, from 44.20 at the first)" in why
    assert "above the 11.09 of a uniform guess" in why
    assert "2,224 of the tokenizer's 65,536 ids" in why and "| replay_banc*† |" in text
    assert "† replay_banc: not comparable at `learned`" in text
    # a loss that fell 14 % but stays far above a uniform guess's (what learned's tuning reads) is
    # not comparable; one that ends under it is; no record, no head to speak of
    fell = {"recipes": {"replay_banc": {"artifacts": 6, "steps": 144, "loss_first_mean": 44.2, "loss_last_mean": 38.0}}}
    assert "replay_banc" in writeup.not_comparable(["replay_banc"], fell, None)
    fitted = {"recipes": {"replay_banc": {"artifacts": 6, "steps": 144, "loss_first_mean": 4.2, "loss_last_mean": 2.0}}}
    assert writeup.not_comparable(["replay_banc", "summary"], fitted, None) == {}
    assert writeup.not_comparable(["replay_banc"], flat, None)["replay_banc"].endswith("tokenizer's ids")
    assert set(writeup.not_comparable(["summary", "gzip_tail"], None, {"reply_vocabulary": 2224})) == {"summary"}
    assert writeup.not_comparable(["summary"], None, {"reply_vocabulary": 65536}) == {}
    # a state system not comparable here takes no part in the state channel's finding
    summ2 = fx.make_summary("learned", {"t1": [(2, 1), (4, 2), (3, 1)], "t2": [(4, 1), (3, 0), (4, 2)]},
                            {"state_carry": zero, "replay_tune": {**zero, ("t1", "sanity"): [(1, 0), (1, 0), (1, 0)]}})
    tune_flat = {"recipes": {"replay_tune": {"artifacts": 6, "steps": 60, "loss_first_mean": 40.0, "loss_last_mean": 40.0}}}
    _, kept = writeup.build(fx.write(tmp_path / "k.json", summ2), "learned", Bootstrap(200, 0.95, 1))
    _, apart = writeup.build(fx.write(tmp_path / "a.json", summ2), "learned", Bootstrap(200, 0.95, 1), tune_flat)
    state = "the state channel scores zero under contract"
    assert {f["finding"]: f["holds"] for f in kept["findings"]}[state] is False
    held = {f["finding"]: f for f in apart["findings"]}[state]
    assert held["holds"] is True and "left out, not comparable here: replay_tune" in held["detail"]

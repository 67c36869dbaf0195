"""Point labels in figures cover neither tick labels nor each other (urd.tables.labels)."""

from __future__ import annotations

from urd.tables import figures
from urd.tables.figures import STYLE, plt
from urd.tables.labels import overlaps, place_labels

KB = 1 << 10


def _point(budget, retention):
    return {"budget_bytes": budget, "fiche_bytes": budget, "retention": retention,
            "ci_low": retention - 0.05, "ci_high": retention + 0.05}


def _collision_series():
    """Budgets 1 KB .. 256 KB and a 'full' point of 128 KB with the lowest retention (no lower
    whisker): a label hung below-right of it (the old fixed offset) lands on the 256 KB tick label."""
    points = [_point(b * KB, 0.9 - 0.05 * i) for i, b in enumerate(1 << j for j in range(9))]
    points.append({"budget_bytes": None, "fiche_bytes": 128 * KB, "retention": 0.3, "ci_low": 0.3, "ci_high": 0.35})
    return [{"label": "0.1b: T2, replay", "points": points}]


def test_full_label_clears_the_256kb_tick_label():
    with plt.rc_context(STYLE):
        fig, ax, anns = figures.bits_curve_figure(_collision_series(), 100, "footer")
        assert [a.get_text() for a in anns] == ["full\n128 KB"]
        assert overlaps(fig, ax, anns) == []
        # the case is real: the old fixed offset does cover the 256 KB tick label
        old = ax.annotate("full\n128 KB", anns[0].xy, xytext=(6, -4), textcoords="offset points",
                          fontsize=6.5, va="top")
        assert any("256 KB" in c for c in overlaps(fig, ax, [old]))
        plt.close(fig)


def test_crowded_points_get_labels_that_do_not_overlap():
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(3.0, 2.2), dpi=100)
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        fig.subplots_adjust(left=0.15, right=0.95, top=0.9, bottom=0.15)
        pts = [(4.5 + 0.3 * (i % 4), 4.0 + 0.6 * (i // 4)) for i in range(12)]
        ax.plot(*zip(*pts), "o", markersize=3)
        anns = place_labels(ax, pts, [f"p{i}" for i in range(12)], fontsize=7)
        assert len(anns) == 12 and overlaps(fig, ax, anns) == []
        plt.close(fig)


def test_label_moves_off_the_tick_label_it_would_cover():
    """Point on the x axis just left of the 5 tick: the first candidate (right of the point)
    covers the '5' tick label, so a placer that ignored tick labels would leave it there."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.0, 3.0), dpi=100)
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.set_xticks(range(11))
        fig.subplots_adjust(left=0.15, right=0.95, top=0.9, bottom=0.2)
        xy, text = (4.85, 0.0), "a\nb\nc"
        first = ax.annotate(text, xy, xytext=(5, 0), textcoords="offset points", fontsize=12, ha="left", va="center")
        assert any("tick label '5'" in c for c in overlaps(fig, ax, [first]))
        first.remove()
        anns = place_labels(ax, [xy], [text], fontsize=12)
        assert overlaps(fig, ax, anns) == []
        plt.close(fig)


def test_no_free_spot_still_places_the_label_and_reports_it():
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(1.0, 1.0), dpi=100)
        anns = place_labels(ax, [(0.5, 0.5)], ["a label far wider than the whole figure"], fontsize=9)
        assert len(anns) == 1 and any("outside the figure" in c for c in overlaps(fig, ax, anns))
        plt.close(fig)


def test_bits_curve_png_is_byte_identical(tmp_path):
    one, two = tmp_path / "a.png", tmp_path / "b.png"
    figures.bits_curve_png(_collision_series(), one, 80, "footer")
    figures.bits_curve_png(_collision_series(), two, 80, "footer")
    assert one.read_bytes() == two.read_bytes()

"""Figures as PNG, rendered deterministically: Agg backend, fixed size, DPI and font, no
metadata (matplotlib would otherwise stamp its version), so the same inputs give the same bytes.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from ..core.io import atomic_write_bytes
from .labels import place_labels
from .render import size_label

STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "urd",
    "path.simplify": False,
}
COLORS = ["#4477AA", "#88CCEE", "#CC6677", "#EE99AA", "#228833", "#CCBB44", "#AA3377", "#BBBBBB"]


def save_png(fig, path, dpi: int) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _footer(fig, text: str) -> None:
    fig.text(0.01, 0.01, text, fontsize=6.5, color="#555555", ha="left", va="bottom")


def retention_png(cells, scale: str, path, dpi: int, footer: str) -> None:
    """Grouped bars: one group per system, one bar per task x split, 95 % CI as error bars.
    An undefined retention draws no bar and says n/a."""
    cells = [c for c in cells if c.scale == scale]
    systems = list(dict.fromkeys(c.system for c in cells))
    cols = list(dict.fromkeys((c.task, c.split) for c in sorted(cells, key=lambda c: (c.task, c.budget_bytes or 0))))
    by = {(c.system, c.task, c.split): c for c in cells}
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.0, 4.2))
        width = 0.8 / max(1, len(cols))
        top = 1.0
        for j, (task, split) in enumerate(cols):
            for i, system in enumerate(systems):
                c = by.get((system, task, split))
                x = i - 0.4 + width * (j + 0.5)
                if c is None:
                    continue
                iv = c.interval
                if iv.point is None:
                    ax.text(x, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=6.5, color="#777777")
                    continue
                ax.bar(x, iv.point, width=width * 0.95, color=COLORS[j % len(COLORS)])
                if iv.point == 0:
                    ax.text(x, 0.01, "0", ha="center", va="bottom", fontsize=6.5, color="#333333")
                if iv.low is not None:
                    ax.errorbar(x, iv.point, yerr=[[iv.point - iv.low], [iv.high - iv.point]],
                                fmt="none", ecolor="#222222", elinewidth=0.8, capsize=2)
                    top = max(top, iv.high)
                top = max(top, iv.point)
        handles = [Patch(color=COLORS[j % len(COLORS)], label=f"{t.upper()} {s}") for j, (t, s) in enumerate(cols)]
        ax.legend(handles=handles, ncol=len(cols), fontsize=7, loc="upper right", frameon=False)
        ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle="--")
        ooc = {c.system for c in cells if c.out_of_contract}
        ax.set_xticks(range(len(systems)), [s + ("*" if s in ooc else "") for s in systems])
        ax.set_xlim(-0.6, len(systems) - 0.4)
        low = min([0.0] + [c.interval.low for c in cells if c.interval.low is not None])
        ax.set_ylim(low - 0.05 if low < 0 else 0.0, top * 1.15)
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_ylabel("retention B/A")
        ax.set_title(f"urd rung 1 — retention B/A, {scale} (95 % bootstrap CI; * out of contract; n/a: A = 0)")
        fig.subplots_adjust(left=0.09, right=0.98, top=0.9, bottom=0.16)
        _footer(fig, footer)
        save_png(fig, path, dpi)


BITS_TITLE = "urd rung 1 — the bits curve (95 % bootstrap CI; x: undefined, A = 0)"
BITS_XLABEL = "fiche budget (log scale; KB = 1024 B; full = the whole tuned state, top-k at k = all)"


def bits_curve_png(series: list[dict], path, dpi: int, footer: str, title: str = BITS_TITLE,
                   xlabel: str = BITS_XLABEL) -> None:
    """Retention against fiche budget on a log axis, one line per series (see bits_curve_figure)."""
    with plt.rc_context(STYLE):
        fig, _, _ = bits_curve_figure(series, dpi, footer, title, xlabel)
        save_png(fig, path, dpi)


def bits_curve_figure(series: list[dict], dpi: int, footer: str, title: str = BITS_TITLE,
                      xlabel: str = BITS_XLABEL):
    """Build the bits-curve figure; returns (fig, ax, the 'full' point annotations).

    series: [{"label", "points": [{"budget_bytes", "fiche_bytes", "retention", "ci_low", "ci_high"}]}].
    The 'full' point (no budget) is drawn at its fiche size. Undefined points are omitted and
    marked on the axis."""
    with plt.rc_context(STYLE):
        # at the saving DPI, so labels are placed against the text sizes that get drawn
        fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=dpi)
        ticks: dict[float, str] = {}
        fulls: list[tuple[tuple[float, float], str, str]] = []  # labelled last, see below
        markers: list[tuple[float, float]] = []
        for k, s in enumerate(series):
            color = COLORS[k % len(COLORS)]
            xs, ys, lo, hi = [], [], [], []
            for p in s["points"]:
                x = p["budget_bytes"] if p["budget_bytes"] is not None else p["fiche_bytes"]
                if not x:
                    continue
                if p["budget_bytes"] is not None:
                    ticks[x] = size_label(x)
                else:  # the full state: its own size, labelled at the point
                    text = f"full\n{x / (1 << 20):.1f} MB" if x >= 1 << 20 else f"full\n{x / (1 << 10):.0f} KB"
                    fulls.append(((x, p["retention"] or 0), text, color))
                markers.append((x, p["retention"] or 0))
                if p["retention"] is None:
                    ax.plot([x], [0], marker="x", color=color, linestyle="none")
                    continue
                xs.append(x)
                ys.append(p["retention"])
                lo.append(p["retention"] - p["ci_low"] if p["ci_low"] is not None else 0)
                hi.append(p["ci_high"] - p["retention"] if p["ci_high"] is not None else 0)
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", markersize=4, capsize=2, linewidth=1.2,
                        color=color, label=s["label"])
        ax.set_xscale("log")
        xs_all = [x for line in ax.get_lines() for x in line.get_xdata()]
        if xs_all:  # room on the right for the 'full' labels
            ax.set_xlim(min(xs_all) / 1.6, max(xs_all) * 3.5)
        xs_sorted = sorted(ticks)
        ax.set_xticks(xs_sorted, [ticks[x] for x in xs_sorted], rotation=0)
        ax.minorticks_off()
        ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle="--")
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("retention B/A")
        ax.set_title(title)
        legend = None
        if series:
            legend = ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(0.0, 0.93))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.22)
        _footer(fig, footer)
        # last: the placer measures the final tick labels, legend and footer
        avoid = list(fig.texts) + ([legend] if legend is not None else [])
        anns = place_labels(ax, [f[0] for f in fulls], [f[1] for f in fulls], markers=markers, avoid=avoid,
                            fontsize=6.5)
        for ann, (_, _, color) in zip(anns, fulls):
            ann.set_color(color)  # colour does not change the measured box
    return fig, ax, anns

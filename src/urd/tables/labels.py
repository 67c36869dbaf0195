"""Point labels that cover neither tick labels, axis texts, other labels nor markers.

The placer measures rendered text, so the caller places labels LAST: after axis limits,
scales, ticks, titles, legends and subplots_adjust, since any of these moves what a label must
avoid. It is greedy and deterministic: points are labelled in the order given, each taking the
first free candidate offset in a fixed order; with none free, the least-overlapping one (a
label is never dropped; `overlaps` then reports what is left).
"""

from __future__ import annotations

from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

# Offsets in points, tried in this order: nearest ring first, and on each ring the side where
# a label reads most naturally (right, then above/below, then left).
_DIRECTIONS = [  # (dx, dy, ha, va)
    (1, 0, "left", "center"), (1, 1, "left", "bottom"), (1, -1, "left", "top"),
    (0, 1, "center", "bottom"), (0, -1, "center", "top"),
    (-1, 1, "right", "bottom"), (-1, -1, "right", "top"), (-1, 0, "right", "center"),
]
_DISTANCES = (5, 9, 14, 20, 28, 38, 50)
_MARKER_PT = 6.0  # side of the box kept clear around every data point
_PAD_PT = 1.0  # clearance kept around each placed label


def _renderer(fig):
    fig.canvas.draw()  # tick labels get their final text and position only on draw
    return fig.canvas.get_renderer()


def _area(a: Bbox, b: Bbox) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _outside(box: Bbox, frame: Bbox) -> float:
    return box.width * box.height - _area(box, frame)


def _shown(text) -> bool:
    return text.get_visible() and bool(text.get_text().strip())


def _tick_labels(ax) -> list:
    """Visible, non-empty tick labels (major and minor, both sides) of ticks inside the view."""
    out = []
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        lo, hi = min(lo, hi), max(lo, hi)
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            # ticks outside the view keep stale labels that are not drawn
            if not tick.get_visible() or not lo <= tick.get_loc() <= hi:
                continue
            out += [t for t in (tick.label1, tick.label2) if _shown(t)]
    return out


def _axis_texts(ax) -> list:
    return [t for t in (ax.xaxis.label, ax.yaxis.label, ax.title) if _shown(t)]


def place_labels(ax, points, texts, *, markers=(), avoid=(), **style) -> list[Annotation]:
    """Annotate each (x, y) data point with its text and return the annotations, in order.

    markers: further (x, y) data points whose markers labels must not cover (the labelled
    points are always kept clear). avoid: further artists (legend, footer text) to keep clear
    of. style: passed to `ax.annotate` (fontsize, color, ...).
    """
    points = [tuple(p) for p in points]
    texts = list(texts)
    if len(points) != len(texts):
        raise ValueError("one text per point")
    fig = ax.figure
    renderer = _renderer(fig)
    px = fig.dpi / 72.0
    frame = fig.bbox
    fixed = [t.get_window_extent(renderer) for t in _tick_labels(ax) + _axis_texts(ax)]
    fixed += [a.get_window_extent(renderer) for a in avoid if a.get_visible()]
    half = _MARKER_PT * px / 2
    for x, y in ax.transData.transform(points + [tuple(m) for m in markers]):
        fixed.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    placed: list[Bbox] = []
    out: list[Annotation] = []
    for xy, text in zip(points, texts):
        ann = ax.annotate(text, xy, xytext=(0, 0), textcoords="offset points", **style)
        best = None
        for dist in _DISTANCES:
            for dx, dy, ha, va in _DIRECTIONS:
                ann.xyann = (dx * dist, dy * dist)
                ann.set_ha(ha)
                ann.set_va(va)
                box = ann.get_window_extent(renderer).padded(_PAD_PT * px)
                cost = _outside(box, frame) + sum(_area(box, o) for o in fixed + placed)
                if best is None or cost < best[0]:
                    best = (cost, (dx * dist, dy * dist), ha, va)
                if cost == 0:
                    break
            if best[0] == 0:
                break
        _, offset, ha, va = best
        ann.xyann = offset
        ann.set_ha(ha)
        ann.set_va(va)
        placed.append(ann.get_window_extent(renderer).padded(_PAD_PT * px))
        out.append(ann)
    return out


def overlaps(fig, ax, annotations) -> list[str]:
    """Collisions left among the given labels: label vs label, vs a tick label or axis text
    (label, title), and label outside the figure. Empty when the layout is clean."""
    renderer = _renderer(fig)
    boxes = [(a.get_text(), a.get_window_extent(renderer)) for a in annotations]
    fixed = [(f"tick label {t.get_text()!r}", t.get_window_extent(renderer)) for t in _tick_labels(ax)]
    fixed += [(f"axis text {t.get_text()!r}", t.get_window_extent(renderer)) for t in _axis_texts(ax)]
    found = []
    for i, (text, box) in enumerate(boxes):
        if _outside(box, fig.bbox) > 0:
            found.append(f"label {text!r} outside the figure")
        found += [f"label {text!r} covers {name}" for name, other in fixed if _area(box, other) > 0]
        found += [f"label {text!r} covers label {t2!r}" for t2, other in boxes[i + 1:] if _area(box, other) > 0]
    return found

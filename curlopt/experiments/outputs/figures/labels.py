"""Labels of the frontier's points: next to each point when they fit apart, numbers otherwise.

:func:`label_points` measures every label in pixels once the figure is laid
out and places the labels greedily: each at the candidate position with the
least overlap with the labels already placed, the points, the outside of the
axes and (weighted a fifth) the error bars. When the option texts cannot be
placed without overlap, the points get numbers on a ring of wider positions
instead, and the caller explains the numbers in the legend.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .frontier import FrontierPoint

__all__ = ["label_points"]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels


def _text_size(ax, renderer, text: str, fontsize: float) -> tuple[float, float]:
    probe = ax.text(0, 0, text, fontsize=fontsize)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def _area(a, b) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0.0) * max(height, 0.0)


def _place(sizes: Sequence[tuple[float, float]], centres: np.ndarray, axes_box, candidates,
          bars: Sequence[Box] = ()) -> tuple[list, float]:
    """Greedy placement: for each label the candidate centre (offset in pixels) with the least overlap.

    Overlaps with other labels, with points and with the outside of the axes
    count fully; overlaps with error bars (``bars``, rectangles in pixels) a
    fifth. Returns the offsets and the total of the full overlaps.
    """
    placed: list[Box] = []
    chosen = []
    total = 0.0
    radius = 6.0
    for (width, height), (x, y) in zip(sizes, centres):
        best = None
        for dx, dy in candidates(width, height):
            box = (x + dx - width / 2, y + dy - height / 2, x + dx + width / 2, y + dy + height / 2)
            hard = sum(_area(box, other) for other in placed)
            hard += sum(_area(box, (cx - radius, cy - radius, cx + radius, cy + radius)) for cx, cy in centres)
            inside = _area(box, (axes_box.x0, axes_box.y0, axes_box.x1, axes_box.y1))
            hard += 4.0 * (width * height - inside)
            cost = hard + 0.2 * sum(_area(box, bar) for bar in bars)
            if best is None or cost < best[0] - 1e-9:
                best = (cost, hard, dx, dy, box)
            if cost <= 0:
                break
        total += best[1]
        placed.append(best[4])
        chosen.append((best[2], best[3]))
    return chosen, total


def _beside(width: float, height: float) -> Iterator[tuple[float, float]]:
    """Candidate offsets of an option label: right, left, above, below, then the corners; close, then farther."""
    for gap in (7.0, 13.0):
        yield from ((width / 2 + gap, 0.0), (-width / 2 - gap, 0.0), (0.0, height / 2 + gap),
                    (0.0, -height / 2 - gap), (width / 2 + gap, height / 2 + gap),
                    (-width / 2 - gap, height / 2 + gap), (width / 2 + gap, -height / 2 - gap),
                    (-width / 2 - gap, -height / 2 - gap))


def _ring(width: float, height: float) -> Iterator[tuple[float, float]]:
    """Candidate offsets of a number: every 30° on rings of growing radius, starting straight above."""
    for distance in (11.0, 19.0, 28.0, 40.0, 54.0, 70.0, 90.0):
        for angle in range(90, 450, 30):
            yield distance * math.cos(math.radians(angle)), distance * math.sin(math.radians(angle))


def _bar_boxes(ax, points: Sequence["FrontierPoint"], centres: np.ndarray) -> list[Box]:
    """The error bars of the points as thin rectangles in pixels (3 pixels wide)."""
    bars = []
    for point, (x, y) in zip(points, centres):
        if math.isnan(point.regret_interval[0]):
            continue
        (x_low, y_low), (x_high, y_high) = ax.transData.transform(
            [(point.regret_interval[0], point.violation_interval[0]),
             (point.regret_interval[1], point.violation_interval[1])])
        bars += [(min(x_low, x_high), y - 1.5, max(x_low, x_high), y + 1.5),
                 (x - 1.5, min(y_low, y_high), x + 1.5, max(y_low, y_high))]
    return bars


def label_points(fig, ax, points: Sequence["FrontierPoint"], style: dict) -> bool:
    """Label the points with their varied options if the labels fit apart, else with numbers; True for numbers."""
    fig.draw_without_rendering()  # lay the figure out: the data-to-pixel transform is final from here on
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    renderer = fig.canvas.get_renderer()
    centres = ax.transData.transform([(p.regret, p.violation) for p in points])
    axes_box = ax.get_window_extent(renderer)
    to_points = 72.0 / fig.dpi
    bars = _bar_boxes(ax, points, centres)
    texts = [p.short or p.algorithm_label for p in points]
    sizes = [_text_size(ax, renderer, text, 7) for text in texts]
    offsets, cost = _place(sizes, centres, axes_box, _beside, bars)
    numbered = cost > 0
    if numbered:
        texts = [str(index + 1) for index in range(len(points))]
        sizes = [_text_size(ax, renderer, text, 7.5) for text in texts]
        offsets, _ = _place(sizes, centres, axes_box, _ring, bars)
    for point, text, (dx, dy) in zip(points, texts, offsets):
        color = style[point.algorithm][0]
        far = math.hypot(dx, dy) > 14.0
        annotation = ax.annotate(text, (point.regret, point.violation), xytext=(dx * to_points, dy * to_points),
                                 textcoords="offset points", fontsize=7.5 if numbered else 7, ha="center",
                                 va="center", color=color, zorder=4, gid=f"label:{point.label}",
                                 fontweight="bold" if numbered else "normal",
                                 arrowprops=dict(arrowstyle="-", color=color, lw=0.6, shrinkA=1, shrinkB=4,
                                                 alpha=0.7) if far else None)
        annotation.set_in_layout(False)
    return numbered

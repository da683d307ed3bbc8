"""Labels of the frontier's points: next to each point when they fit apart, numbers otherwise.

:func:`place_labels` measures every label in pixels once the figure is laid
out (its legend and size final) and places the labels greedily: each at the
candidate position with the least overlap with the labels already placed,
the markers, the notes, the outside of the axes and (weighted a fifth) the
error bars. The layout rule:
every label keeps :data:`LABEL_PAD` pixels clear of every other label, of
every marker (its drawn size and edge) and of every note. When the option
texts cannot all be placed by that rule, the points get numbers on rings of
wider positions instead (with a leader line when far from their point), and
the caller explains the numbers in the legend (and places them again: the
legend of numbers takes room from the axes). :func:`draw_labels` draws them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .style import agg_renderer

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.transforms import Bbox

    from .frontier import FrontierPoint

__all__ = ["Placement", "place_labels", "draw_labels", "LABEL_PAD"]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels

#: pixels kept clear around every label (from other labels, markers and notes), at the figure's resolution
LABEL_PAD = 2.0
#: distances (pixels) of a number from its point, tried nearest first
#: overlaps below this (square pixels) are rounding, not overlaps
_ROUNDING = 1e-6
_RING = (14.0, 20.0, 28.0, 40.0, 54.0, 70.0, 90.0, 115.0, 140.0)


def _text_size(ax: Axes, renderer: RendererBase, text: str, fontsize: float, weight: str = "normal") -> tuple[float, float]:
    probe = ax.text(0, 0, text, fontsize=fontsize, fontweight=weight)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def _area(a: Box, b: Box) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0.0) * max(height, 0.0)


def _grow(box: Box, pad: float) -> Box:
    return box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad


def _place(sizes: Sequence[tuple[float, float]], centres: np.ndarray, axes_box: Bbox,
           candidates: Callable[[float, float], Iterator[tuple[float, float]]], obstacles: Sequence[Box] = (),
           bars: Sequence[Box] = ()) -> tuple[list[tuple[float, float]], float]:
    """Greedy placement: for each label the candidate centre (offset in pixels) with the least overlap.

    A label's box grown by :data:`LABEL_PAD` must not meet the labels already
    placed (grown likewise), the ``obstacles`` (markers and notes, rectangles
    in pixels) or the outside of the axes: those overlaps count fully; overlaps
    with error bars (``bars``) a fifth. Returns the offsets and the total of
    the full overlaps (0 when every label follows the rule).
    """
    placed: list[Box] = []
    chosen = []
    total = 0.0
    for (width, height), (x, y) in zip(sizes, centres, strict=True):
        best = None
        for dx, dy in candidates(width, height):
            box = (x + dx - width / 2, y + dy - height / 2, x + dx + width / 2, y + dy + height / 2)
            grown = _grow(box, LABEL_PAD)
            hard = sum(_area(grown, _grow(other, LABEL_PAD)) for other in placed)
            hard += sum(_area(grown, other) for other in obstacles)
            inside = _area(box, (axes_box.x0, axes_box.y0, axes_box.x1, axes_box.y1))
            hard += 4.0 * (width * height - inside)
            cost = hard + 0.2 * sum(_area(box, bar) for bar in bars)
            if best is None or cost < best[0] - 1e-9:
                best = (cost, hard, dx, dy, box)
            if cost <= _ROUNDING:
                break
        assert best is not None  # every candidate generator yields at least one position
        total += best[1]
        placed.append(best[4])
        chosen.append((best[2], best[3]))
    return chosen, total


def _beside(width: float, height: float) -> Iterator[tuple[float, float]]:
    """Candidate offsets of an option label: right, left, above, below, then the corners; close, then farther."""
    for gap in (10.0, 16.0):
        yield from ((width / 2 + gap, 0.0), (-width / 2 - gap, 0.0), (0.0, height / 2 + gap),
                    (0.0, -height / 2 - gap), (width / 2 + gap, height / 2 + gap),
                    (-width / 2 - gap, height / 2 + gap), (width / 2 + gap, -height / 2 - gap),
                    (-width / 2 - gap, -height / 2 - gap))


def _ring(width: float, height: float) -> Iterator[tuple[float, float]]:
    """Candidate offsets of a number: every 30° on rings of growing radius, starting straight above."""
    for distance in _RING:
        for angle in range(90, 450, 30):
            yield distance * math.cos(math.radians(angle)), distance * math.sin(math.radians(angle))


def _bar_boxes(ax: Axes, points: Sequence[FrontierPoint], centres: np.ndarray) -> list[Box]:
    """The error bars of the points as thin rectangles in pixels (3 pixels wide)."""
    bars = []
    for point, (x, y) in zip(points, centres, strict=True):
        if math.isnan(point.regret_interval[0]):
            continue
        (x_low, y_low), (x_high, y_high) = ax.transData.transform(
            [(point.regret_interval[0], point.violation_interval[0]),
             (point.regret_interval[1], point.violation_interval[1])])
        bars += [(min(x_low, x_high), y - 1.5, max(x_low, x_high), y + 1.5),
                 (x - 1.5, min(y_low, y_high), x + 1.5, max(y_low, y_high))]
    return bars


def _obstacles(ax: Axes, renderer: RendererBase, dpi: float) -> list[Box]:
    """The drawn markers of the points (``point:`` lines, with their edge) and the notes, in pixels."""
    boxes = []
    for line in ax.lines:
        if str(line.get_gid() or "").startswith("point:"):
            box = line.get_window_extent(renderer)  # the marker's size, without its edge
            edge = line.get_markeredgewidth() * dpi / 72.0
            boxes.append(_grow((box.x0, box.y0, box.x1, box.y1), edge))
    for text in ax.texts:
        if text.get_gid() == "note":
            patch = text.get_bbox_patch()
            box = patch.get_window_extent(renderer) if patch is not None else text.get_window_extent(renderer)
            boxes.append((box.x0, box.y0, box.x1, box.y1))
    return boxes


@dataclass
class Placement:
    """Where the labels go: their texts, offsets from their points (pixels) and the total overlap left."""

    texts: list[str]
    offsets: list[tuple[float, float]]
    overlap: float
    numbered: bool

    @property
    def fits(self) -> bool:
        """Every label follows the layout rule (see the module docstring)."""
        return self.overlap <= _ROUNDING * max(len(self.texts), 1)


def place_labels(fig: matplotlib.figure.Figure, ax: Axes, points: Sequence[FrontierPoint], numbered: bool, laid_out: bool = False) -> Placement:
    """Place the numbers or the option texts of the points on the figure as laid out now.

    Call it once the legend and the figure's size are final: the placement is
    in pixels. The figure is laid out here unless ``laid_out`` says that
    nothing changed since its last layout.
    """
    if not laid_out:
        fig.draw_without_rendering()  # the data-to-pixel transform is final from here on
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    renderer = agg_renderer(fig)
    centres = ax.transData.transform([(p.regret, p.violation) for p in points])
    axes_box = ax.get_window_extent(renderer)
    bars = _bar_boxes(ax, points, centres)
    obstacles = _obstacles(ax, renderer, fig.dpi)
    if numbered:
        texts = [str(index + 1) for index in range(len(points))]
        sizes = [_text_size(ax, renderer, text, 7.5, "bold") for text in texts]
        offsets, overlap = _place(sizes, centres, axes_box, _ring, obstacles, bars)
    else:
        texts = [p.short or p.algorithm_label for p in points]
        sizes = [_text_size(ax, renderer, text, 7) for text in texts]
        offsets, overlap = _place(sizes, centres, axes_box, _beside, obstacles, bars)
    return Placement(texts, offsets, overlap, numbered)


def draw_labels(fig: matplotlib.figure.Figure, ax: Axes, points: Sequence[FrontierPoint],
                style: dict[str, tuple[str, str]], placement: Placement) -> None:
    """Draw the labels where :func:`place_labels` put them (gid ``label:<configuration>``; out of the layout)."""
    to_points = 72.0 / fig.dpi
    numbered = placement.numbered
    for point, text, (dx, dy) in zip(points, placement.texts, placement.offsets, strict=True):
        color = style[point.algorithm][0]
        far = math.hypot(dx, dy) > _RING[1]
        annotation = ax.annotate(text, (point.regret, point.violation), xytext=(dx * to_points, dy * to_points),
                                 textcoords="offset points", fontsize=7.5 if numbered else 7, ha="center",
                                 va="center", color=color, zorder=4, gid=f"label:{point.label}",
                                 fontweight="bold" if numbered else "normal",
                                 arrowprops=dict(arrowstyle="-", color=color, lw=0.6, shrinkA=1, shrinkB=4,
                                                 alpha=0.7) if far else None)
        annotation.set_in_layout(False)

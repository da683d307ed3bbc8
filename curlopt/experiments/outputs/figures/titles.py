"""Titles that fit: a figure's title wrapped to the figure's width, each panel's title to the panel's width.

matplotlib neither wraps a title nor shrinks it: a title wider than its figure
is cut at both ends of the PNG, and a panel's title wider than its panel runs
into its neighbour. :func:`fit_suptitle` and :func:`fit_axes_titles` measure
the rendered text (with the figure's renderer, in pixels) and break it into
lines that fit, first after a dash `` — `` (where the figures' titles change
subject), then between words. The figure must have its Agg canvas
(:func:`~curlopt.experiments.outputs.figures.style.load_matplotlib`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["fit_suptitle", "fit_axes_titles", "wrap_to_width", "TITLE_MARGIN", "SURE_FIT"]

#: pixels kept free between a title and the edge of its figure, on each side
TITLE_MARGIN = 8.0
#: a panel's title narrower than this share of the panel's width before the layout fits after it too (the
#: layout moves the panels' edges by their tick labels and axis labels, a few percent of a panel)
SURE_FIT = 0.75
_DASH = " — "


def _greedy(units: list[str], joiner: str, fits: Callable[[str], bool]) -> list[str]:
    """Join consecutive ``units`` into the fewest lines that fit (a unit that cannot fit alone is its own line)."""
    lines: list[str] = []
    for unit in units:
        if lines and fits(lines[-1] + joiner + unit):
            lines[-1] += joiner + unit
        else:
            lines.append(unit)
    return lines


def _wrap_line(line: str, fits: Callable[[str], bool]) -> list[str]:
    """One line of a title as lines that fit: whole pieces between dashes where possible, else word by word."""
    if fits(line):
        return [line]
    parts = line.split(_DASH)
    pieces = [part + _DASH.rstrip() for part in parts[:-1]] + [parts[-1]]
    lines: list[str] = []
    for piece in _greedy(pieces, " ", fits):
        lines += [piece] if fits(piece) else _greedy(piece.split(" "), " ", fits)
    return lines


def wrap_to_width(text: Any, renderer: Any, width: float) -> str:
    """Re-break the string of a :class:`matplotlib.text.Text` so no line is wider than ``width`` pixels.

    Returns the new string (also set on ``text``). Existing line breaks are
    kept; a single word wider than ``width`` stays whole.
    """
    original = text.get_text()

    def fits(candidate: str) -> bool:
        text.set_text(candidate)
        return text.get_window_extent(renderer).width <= width

    wrapped = "\n".join(piece for line in original.split("\n") for piece in _wrap_line(line, fits))
    text.set_text(wrapped)
    return wrapped


def fit_suptitle(fig: Any, title: str, fontsize: float) -> Any:
    """Set the figure's title, broken into lines no wider than the figure (less :data:`TITLE_MARGIN`)."""
    text = fig.suptitle(title, fontsize=fontsize)
    wrap_to_width(text, fig.canvas.get_renderer(), fig.bbox.width - 2 * TITLE_MARGIN)
    return text


def fit_axes_titles(fig: Any) -> None:
    """Break every panel's title into lines no wider than its panel, once the layout has placed the panels.

    The panels' widths do not depend on their titles' heights, so one layout
    pass settles them; the next draw makes room for the added lines. The pass
    (the slow part) is skipped when every title is shorter than
    :data:`SURE_FIT` of its panel's width before the layout.
    """
    renderer = fig.canvas.get_renderer()
    titled = [ax for ax in fig.axes if ax.title.get_text()]
    if all(ax.title.get_window_extent(renderer).width <= SURE_FIT * ax.get_position().width * fig.bbox.width
           for ax in titled):
        return
    fig.draw_without_rendering()
    for ax in titled:
        wrap_to_width(ax.title, renderer, max(ax.get_window_extent(renderer).width, 1.0))

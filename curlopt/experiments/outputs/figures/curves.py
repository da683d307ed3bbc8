"""The curve figures of one setting: objective, regret, constraints (or costs) and the overview of them all.

:func:`curve_figure` lays out the panels of :mod:`.panel`: one panel per
quantity when the setting's configurations share one panel of curves;
otherwise rows of quantities and columns of panels of configurations (small
multiples), every row with one axis scale and one y range, one legend under
each column. The overview of a single panel of configurations puts its
quantities in two columns, an odd last one spanning both (no empty panel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ....errors import CurloptError
from .panel import Metric, draw_panel, figure_legend, limits, metrics, panel_legend, prepare, side_metrics, union
from .style import load_matplotlib
from .titles import fit_axes_titles, fit_suptitle
from .view import SettingView, setting_view

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import numpy as np
    from matplotlib.typing import HashableList

    from ..runs import ConfigurationRuns

__all__ = ["curve_figure"]


def _caption(view: SettingView) -> str:
    seeds = view.seeds_text
    if all(c.seeds == 1 for c in view.curves):
        return f"{view.head} — one seed: lines are the run (no band)"
    return f"{view.head} — lines: mean over {seeds}; bands: mean ± one sample standard deviation"


def _grid_figure(Figure: type[matplotlib.figure.Figure], rows: int, cols: int, width_per_col: float,
                 height_per_row: float) -> tuple[matplotlib.figure.Figure, np.ndarray]:
    fig = Figure(figsize=(max(7.5, width_per_col * cols), height_per_row * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _row_scales(view: SettingView, quantities: Sequence[Metric]) -> list[tuple[bool, tuple[float, float] | None]]:
    """``(log axis?, y range)`` of every row: one for all the panels of the row."""
    shared = []
    for metric in quantities:
        prepared = [prepare(curves, metric) for _, curves in view.panels]
        shared.append((any(p[0] for p in prepared), union([p[2] for p in prepared])))
    return shared


def _panel_grid(axes: np.ndarray, view: SettingView, quantities: Sequence[Metric]) -> None:
    """Rows = quantities, columns = panels of configurations; one legend under each column."""
    single = len(view.panels) == 1
    shared = _row_scales(view, quantities)
    for col, (title, curves) in enumerate(view.panels):
        use_short = len({c.algorithm for c in curves}) == 1 and not single and all(c.short for c in curves)
        for row, metric in enumerate(quantities):
            ax = axes[row][col]
            log, ylim = shared[row]
            if log and metric.log:  # the row's range came from every panel; recompute it on the log scale
                ylim = union([limits(prepare(cs, metric)[1], True, ()) for _, cs in view.panels])
            draw_panel(ax, curves, metric, use_short=use_short, legend=False, ylim=ylim, log=log)
            if title:
                ax.set_title(f"{title}\n{metric.title}", fontsize=9)
            if col > 0:
                ax.set_ylabel("")
                ax.tick_params(labelleft=True)
        panel_legend(axes[-1][col], [axes[r][col] for r in range(len(quantities))], below=True)


def _single_column(fig: matplotlib.figure.Figure, axes: np.ndarray, view: SettingView, quantities: Sequence[Metric]) -> None:
    curves = view.panels[0][1]
    for row, metric in enumerate(quantities):
        draw_panel(axes[row][0], curves, metric, legend=False)
    figure_legend(fig, [axes[r][0] for r in range(len(quantities))])


def _overview_single(Figure: type[matplotlib.figure.Figure], view: SettingView,
                     quantities: Sequence[Metric]) -> matplotlib.figure.Figure:
    """All quantities of one panel of configurations: two columns, an odd last panel spanning both (no empty panel)."""
    n = len(quantities)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    layout: list[HashableList[str]] = []
    for r in range(rows):
        row: HashableList[str] = [quantities[min(r * cols + k, n - 1)].key for k in range(cols)]
        if r * cols + cols > n:  # odd count: the last quantity spans the row
            row = [quantities[n - 1].key] * cols
        layout.append(row)
    fig = Figure(figsize=(12, 3.9 * rows + 1.4), layout="constrained")
    mosaic = fig.subplot_mosaic(layout)
    curves = view.panels[0][1]
    axes = []
    for metric in quantities:
        ax = mosaic[metric.key]
        draw_panel(ax, curves, metric, legend=False)
        axes.append(ax)
    figure_legend(fig, axes)
    return fig


def _quantities(view: SettingView, kind: str) -> list[Metric] | None:
    """The quantities of a figure ``kind`` (None for constraints/costs when the setting has neither)."""
    every = metrics(view)
    if kind in ("objective", "regret"):
        return [m for m in every if m.key == kind]
    if kind in ("constraints", "costs"):
        return side_metrics(view) or None
    if kind == "overview":
        return every
    raise CurloptError(f"unknown curve figure {kind!r}: objective, regret, constraints, costs or overview.")


def curve_figure(view_or_groups: SettingView | Sequence[ConfigurationRuns],
                 kind: str) -> matplotlib.figure.Figure | None:
    """A curve figure of one setting without saving it.

    ``kind`` is ``objective``, ``regret``, ``constraints`` (or ``costs``) or
    ``overview``. Returns a :class:`matplotlib.figure.Figure` (None for
    ``constraints``/``costs`` when there is nothing to draw).
    """
    Figure, Canvas = load_matplotlib()
    view = view_or_groups if isinstance(view_or_groups, SettingView) else setting_view(view_or_groups)
    quantities = _quantities(view, kind)
    if quantities is None:
        return None
    cols = len(view.panels)
    if kind == "overview" and cols == 1:
        fig = _overview_single(Figure, view, quantities)
    else:
        fig, axes = _grid_figure(Figure, len(quantities), cols, 5.6 if cols > 1 else 7.5,
                                 4.2 if cols > 1 or len(quantities) > 1 else 4.8)
        if cols == 1:
            _single_column(fig, axes, view, quantities)
        else:
            _panel_grid(axes, view, quantities)
    Canvas(fig)
    fit_suptitle(fig, _caption(view), 10)
    fit_axes_titles(fig)
    return fig

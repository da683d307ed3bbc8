"""The epochs of one setting: the solver's time per epoch, and where each epoch's policy came from.

Left, one panel per panel of configurations: the solve time of every epoch of
every seed against the epoch's start t_e (log-log) as faint dots, the median
per time bin as a line, epochs whose solver status was not ``optimal`` as
black crosses; the panels share one time scale. Right: the share of epochs by
policy source (:data:`SOURCES`), one stacked bar per configuration (shares
per run, averaged over seeds), with the mean number of epochs per run beside
it as a whole number (``1,370``, not ``1.37e+03``). Every title is wrapped to
fit its panel and the figure (:mod:`.titles`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ....agents.base import PlanSource
from ..summary import mean_std
from .dots import Points, scatter_dots
from .style import count_text, dedupe_legend, load_matplotlib, note, outside_legend, plain_log_labels, plural, shorten
from .titles import fit_axes_titles, fit_suptitle
from .view import Curves, SettingView, setting_view

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    from matplotlib.axes import Axes

    from ..runs import ConfigurationRuns

__all__ = ["epochs_figure", "source_shares", "SOURCES"]

#: where an epoch's policy came from, in the order of the stacked bars (others follow alphabetically)
SOURCES = tuple(source.value for source in PlanSource)
_SOURCE_TEXT = {"tight": "tight program", "fallback": "fallback (tight program infeasible)",
                "least-violation": "least-violation policy (safe program infeasible)",
                "kept-previous": "solver failed: previous policy kept", "uniform-initial": "solver failed: uniform policy",
                "update-rule": "update rule (no program)"}
_SOURCE_COLOURS = {"tight": "#4c9a2a", "fallback": "#f0a030", "least-violation": "#c9b037", "kept-previous": "#d62728", "uniform-initial": "#9467bd",
                   "update-rule": "#5b8db8"}


def _source_order(groups: Sequence[ConfigurationRuns]) -> list[str]:
    seen = {source for g in groups for source in g.aggregated().sources}
    return [s for s in SOURCES if s in seen] + sorted(seen - set(SOURCES))


def source_shares(group: ConfigurationRuns, sources: Sequence[str]) -> np.ndarray:
    """Share of each source among a run's epochs, averaged over the seeds (runs without epochs left out)."""
    return group.aggregated().source_shares(sources)


# -- solve time per epoch --------------------------------------------------------------------------------------------
def _epoch_times(group: ConfigurationRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start (at least 1), solve time and whether the solver status was other than optimal, of every epoch of
    every seed."""
    runs = group.aggregated()
    odd = np.array([status not in ("", "optimal") for status in runs.statuses], dtype=bool)
    return (np.maximum(runs.epoch_start, 1).astype(float), runs.epoch_solve_time,
            odd[runs.epoch_status] if odd.size else np.zeros(runs.epoch_status.shape, dtype=bool))


def _dot_points(group: ConfigurationRuns, positive: np.ndarray) -> Points:
    """The dots of the epochs with a solve: ``(start, solve time)``, made from the aggregate's arrays when drawn."""
    runs = group.aggregated()
    keep: slice | np.ndarray = slice(None) if positive.all() else positive

    def points() -> tuple[np.ndarray, np.ndarray]:
        # the values of _epoch_times, selected: the start at least 1, as floats
        return np.maximum(runs.epoch_start[keep], 1).astype(float), runs.epoch_solve_time[keep]

    return points


def _binned_median(group: ConfigurationRuns, starts: np.ndarray, times: np.ndarray,
                   positive: np.ndarray) -> tuple[list[float], list[float]]:
    """The median solve time in 24 log-spaced bins of the epoch start (bins without epochs left out)."""
    t_end = float(np.max(group.aggregated().last_times))
    edges = np.geomspace(1.0, max(t_end, 2.0) * 1.0001, 25)
    centre, median = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = positive & (starts >= lo) & (starts < hi)
        if np.any(inside):
            centre.append(math.sqrt(lo * hi))
            median.append(float(np.median(times[inside])))
    return centre, median


def _draw_times(ax: Axes, c: Curves, group: ConfigurationRuns, label: str) -> tuple[int, int]:
    """One configuration's dots, median line and crosses; ``(epochs without a solve, epochs not optimal)``."""
    starts, times, not_optimal = _epoch_times(group)
    positive = times > 0
    unsolved = int(np.sum(~positive))
    if not np.any(positive):
        return unsolved, 0
    scatter_dots(ax, _dot_points(group, positive), s=4, color=c.color, alpha=0.18, lw=0, zorder=2)
    centre, median = _binned_median(group, starts, times, positive)
    ax.plot(centre, median, color=c.color, ls=c.linestyle or "-", marker=c.marker, ms=4, lw=1.4,
            mfc="white" if c.infeasible else c.color, label=label, zorder=3)
    flagged = positive & not_optimal
    if np.any(flagged):
        ax.scatter(starts[flagged], times[flagged], marker="x", s=18, color="black", lw=0.9, zorder=4,
                   label="solver status not optimal")
    return unsolved, int(np.sum(flagged))


def _time_panel(ax: Axes, title: str, curves: Sequence[Curves], groups: Sequence[ConfigurationRuns], rows: int) -> None:
    """The solve times of one panel of configurations, with its axes, notes and legend."""
    unsolved = bad = 0
    use_short = len({x.algorithm for x in curves}) == 1 and rows > 1 and all(x.short for x in curves)
    for c in curves:
        missing, flagged = _draw_times(ax, c, groups[c.position], c.short if use_short else c.label)
        unsolved += missing
        bad += flagged
    ax.set_xscale("log")
    if any(np.asarray(line.get_xydata()).size for line in ax.get_lines()) or ax.collections:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    ax.set_xlabel("epoch start t_e (steps)")
    ax.set_ylabel("solve time per epoch (s)")
    ax.set_title((f"{title}: " if title else "") + "solve time per epoch (dots: every epoch of every seed;"
                 " line: median per time bin)", fontsize=8.5)
    ax.grid(True, which="major", alpha=0.25)
    notes = []
    if unsolved:
        notes.append(f"{plural(unsolved, 'epoch')} without a solve (time 0) not shown")
    if bad:
        notes.append(f"{plural(bad, 'epoch')} with a solver status other than optimal (crosses)")
    note(ax, notes)
    handles, labels = dedupe_legend(ax)
    if handles:
        outside_legend(ax, handles, labels)


def _share_time_scale(time_axes: Sequence[Axes]) -> None:
    """One time scale for every log panel, so the configurations compare across panels."""
    limits = [ax.get_ylim() for ax in time_axes if ax.get_yscale() == "log"]
    if len(limits) > 1:
        for ax in time_axes:
            if ax.get_yscale() == "log":
                ax.set_ylim(min(lim[0] for lim in limits), max(lim[1] for lim in limits))


# -- policy sources --------------------------------------------------------------------------------------------------
def _source_bars(fig: matplotlib.figure.Figure, bars: Axes, view: SettingView) -> None:
    """One stacked bar of policy sources per configuration, the epochs per run beside it, the legend under all."""
    groups = view.groups
    sources = _source_order(groups)
    ordered = [c for _, cs in view.panels for c in cs]
    y = np.arange(len(ordered))[::-1]
    left = np.zeros(len(ordered))
    shares = np.array([source_shares(groups[c.position], sources) for c in ordered]).reshape(len(ordered), len(sources))
    for k, source in enumerate(sources):
        bars.barh(y, shares[:, k], left=left, color=_SOURCE_COLOURS.get(source, "0.6"), edgecolor="white", lw=0.5,
                  label=_SOURCE_TEXT.get(source, source), height=0.7)
        left += shares[:, k]
    for position, c in zip(y, ordered, strict=True):
        # the summary table's own mean (epochs_mean) and rounding: the figure and the table say the same number
        epochs = mean_std(groups[c.position].aggregated().epochs)[0]
        bars.text(1.01, position, count_text(epochs), va="center", ha="left", fontsize=7,
                  gid="epochs-per-run")
    bars.text(1.01, len(ordered) - 0.35, "epochs\nper run", va="bottom", ha="left", fontsize=7)
    bars.set_yticks(y, [shorten(c.label, 48) for c in ordered], fontsize=7)
    bars.set_xlim(0, 1)
    bars.set_ylim(-0.6, len(ordered) - 0.4)
    bars.set_xlabel("share of epochs (per run, mean over seeds)")
    bars.set_title("where each epoch's policy came from", fontsize=9)
    handles, labels = bars.get_legend_handles_labels()
    fig.legend(handles, [f"policy source: {label}" if i == 0 else label for i, label in enumerate(labels)],
               loc="outside lower right", ncols=min(len(labels), 3), fontsize=7.5, frameon=False)


def epochs_figure(view_or_groups: SettingView | Sequence[ConfigurationRuns]) -> matplotlib.figure.Figure | None:
    """Solve time per epoch and the epochs' sources of one setting (None without epoch records), not saved."""
    Figure, Canvas = load_matplotlib()
    view = view_or_groups if isinstance(view_or_groups, SettingView) else setting_view(view_or_groups)
    if not any(g.aggregated().epoch_start.size for g in view.groups):
        return None
    rows = len(view.panels)
    fig = Figure(figsize=(14, max(5.2, 3.6 * rows + 1.2)), layout="constrained")
    grid = fig.add_gridspec(rows, 2, width_ratios=(1.25, 1.0))
    time_axes = []
    for row, (title, curves) in enumerate(view.panels):
        ax = fig.add_subplot(grid[row, 0])
        time_axes.append(ax)
        _time_panel(ax, title, curves, view.groups, rows)
    _share_time_scale(time_axes)
    _source_bars(fig, fig.add_subplot(grid[:, 1]), view)
    Canvas(fig)
    fit_suptitle(fig, f"{view.head} — solver time and policy source per epoch ({view.seeds_text})", 10)
    fit_axes_titles(fig)
    return fig

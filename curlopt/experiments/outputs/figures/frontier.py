"""The regret–violation frontier of one setting: one point per configuration at (mean R(T), mean C(T)).

Bars span the 95% bootstrap interval of each mean (the intervals of
``summary.csv``: the same function, the same seed). With two or three seeds
that interval is nothing but the range of the seeds (see
:data:`SEED_RANGE_MAX`): those bars are dotted and the legend calls them the
range of the seeds, not a bootstrap interval. Colour and marker tell the
algorithm; a filled marker means C(T) = 0 on every seed, a hollow one C(T) > 0
on at least one. R is on a log axis when every mean and interval end is
positive, C on a linear axis that shows 0. When no configuration violates on
any seed, the C axis has nothing to show: the figure is lower, the points sit
on the middle line C = 0 with room above and below for their labels, and a
note says so. The figure grows when its legend needs the height. The points
are labelled by :mod:`.labels`; the title is wrapped to the figure's width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ....errors import CurloptError
from ..summary import BOOTSTRAP_RESAMPLES
from .labels import draw_labels, place_labels
from .style import MARKERS, PALETTE, agg_renderer, clean, load_matplotlib, note, plain_log_labels, seed_text
from .titles import fit_suptitle
from .view import algorithm_label, short_label

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend

    from ..runs import ConfigurationRuns

__all__ = ["FrontierPoint", "frontier_points", "frontier_figure", "SEED_RANGE_MAX", "interval_kind"]

#: With at most this many seeds the 95% percentile-bootstrap interval of the mean is the range of the seeds: a
#: resample of n seeds repeats the smallest one n times with probability n^-n (1/4 for two seeds, 1/27 for three),
#: more than the 2.5% a 95% interval leaves out at each end, so the interval runs from the smallest seed to the
#: largest and says nothing about confidence.
SEED_RANGE_MAX = 3
#: figure heights (inches): the frontier, and the frontier whose points all have C(T) = 0
_HEIGHT, _FLAT_HEIGHT = 6.6, 3.9
_MARKER_SIZE, _MARKER_EDGE = 7.0, 1.4
_RANGE_BARS = (0, (1, 1.5))  # dotted: the range of two or three seeds


def interval_kind(seeds: int) -> str:
    """What an interval over ``seeds`` seeds is: ``bootstrap``, ``range`` (see :data:`SEED_RANGE_MAX`) or ``""``."""
    if seeds < 2:
        return ""
    return "range" if seeds <= SEED_RANGE_MAX else "bootstrap"


@dataclass
class FrontierPoint:
    """One configuration on the frontier: means over seeds and 95% bootstrap intervals (NaN with one seed)."""

    label: str
    short: str
    algorithm: str
    algorithm_label: str
    regret: float
    regret_interval: tuple[float, float]
    violation: float
    violation_interval: tuple[float, float]
    all_zero: bool
    seeds: int
    steps: int

    @property
    def bars(self) -> str:
        """What its bars are: ``bootstrap``, ``range`` (two or three seeds) or ``""`` (one seed: no bars)."""
        return interval_kind(self.seeds)


def frontier_points(groups: Sequence[ConfigurationRuns]) -> list[FrontierPoint]:
    """The frontier's points, with the statistics of the summary table (same functions, same intervals)."""
    points = []
    for group in groups:
        if group is None or not group.traces:
            continue
        runs = group.aggregated()
        regrets, violations = runs.regret, runs.violation  # each run's last checkpoint, as the summary's
        points.append(FrontierPoint(
            group.label, short_label(group), group.algorithm, algorithm_label(group),
            float(np.mean(regrets)), runs.interval("regret"), float(np.mean(violations)),
            runs.interval("violation"), bool(np.all(violations <= 0.0)), len(regrets),
            int(runs.last_times[0])))
    return points


def _draw_points(ax: Axes, points: Sequence[FrontierPoint], style: dict[str, tuple[str, str]]) -> None:
    """Every point with its bars (none with one seed); gids ``point:``, ``xbar:``, ``ybar:`` and the label."""
    for point in points:
        color, marker = style[point.algorithm]
        xerr = yerr = None
        if not math.isnan(point.regret_interval[0]):
            # Clamped at 0: for seeds that all end at v the interval is [v, v], but their mean can differ from v
            # in the last digit (np.mean([0.1] * 3) = 0.10000000000000002), and matplotlib refuses negative bars.
            xerr = [[max(0.0, point.regret - point.regret_interval[0])], [max(0.0, point.regret_interval[1] - point.regret)]]
            yerr = [[max(0.0, point.violation - point.violation_interval[0])],
                    [max(0.0, point.violation_interval[1] - point.violation)]]
        container = ax.errorbar([point.regret], [point.violation], xerr=xerr, yerr=yerr, fmt=marker,
                                ms=_MARKER_SIZE, color=color, mec=color, mfc=color if point.all_zero else "white",
                                mew=_MARKER_EDGE, ecolor=color, elinewidth=0.9, capsize=2.5, alpha=0.95, zorder=3)
        container.lines[0].set_gid(f"point:{point.label}")
        # both bars or none (one seed): shorter than "xy" when there are none
        for axis, bars in zip("xy", container.lines[2], strict=False):
            bars.set_gid(f"{axis}bar:{point.label}")
            if point.bars == "range":
                bars.set_linestyle(_RANGE_BARS)


def _violation_top(points: Sequence[FrontierPoint]) -> float:
    """The largest C(T) mean or interval end (0 when no configuration violates on any seed)."""
    return max([p.violation_interval[1] if not math.isnan(p.violation_interval[1]) else p.violation
                for p in points] + [0.0])


def _axes(ax: Axes, points: Sequence[FrontierPoint], groups: Sequence[ConfigurationRuns]) -> None:
    """The line C = 0, the axis scales and labels, a y range that shows 0, and a note when no C(T) is > 0."""
    ax.axhline(0.0, color="0.35", lw=0.8, ls="-", zorder=1)
    lows = [p.regret_interval[0] for p in points if not math.isnan(p.regret_interval[0])]
    log_x = all(p.regret > 0 for p in points) and all(v > 0 for v in lows)
    if log_x:
        ax.set_xscale("log")
        plain_log_labels(ax.xaxis)
    ax.set_xlabel(f"regret R(T) = f(λ*) − f(λ^(T))  ({'log axis' if log_x else 'linear axis'})")
    top = _violation_top(points)
    if top > 0:
        ax.set_ylabel("constraint violation C(T) = max_m (g_m(ζ^(T)))_+  (linear axis)")
        ax.set_ylim(-0.06 * top, top * 1.1)
    else:  # nothing to show on the C axis: the points on its middle line, room for their labels above and below
        constrained = any(g.aggregated().constraint_columns[0] for g in groups)
        ax.set_ylim(-1.0, 1.0)
        ax.set_yticks([0.0], ["0"])
        ax.set_ylabel("constraint violation C(T)")
        note(ax, ["C(T) = 0 on every seed of every configuration" if constrained
                  else "the setting has no constraints: C(T) = 0"])
    ax.grid(True, which="major", alpha=0.25)


def _key(points: Sequence[FrontierPoint], style: dict[str, tuple[str, str]]) -> list[Any]:
    """Legend entries: one per algorithm, the meaning of filled and hollow markers, and of the bars."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour, marker=marker, ls="none", ms=7,
                      label=next(p.algorithm_label for p in points if p.algorithm == key))
               for key, (colour, marker) in style.items()]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", ms=7, label="filled: C(T) = 0 on every seed"),
        Line2D([], [], color="0.3", marker="o", mfc="white", ls="none", ms=7, label="hollow: C(T) > 0 on some seed"),
    ]
    kinds = {p.bars for p in points}
    if "bootstrap" in kinds:
        handles.append(Line2D([], [], color="0.3", marker="|", ls="-", lw=1.0, ms=8,
                              label=f"bars: 95% bootstrap interval\nof the mean ({BOOTSTRAP_RESAMPLES:,} resamples)"))
    if "range" in kinds:
        handles.append(Line2D([], [], color="0.3", marker="|", ls=_RANGE_BARS, lw=1.0, ms=8,
                              label=f"dotted bars: range of the seeds (lowest\nto highest); with {SEED_RANGE_MAX} seeds"
                                    " or fewer,\nnot a bootstrap interval"))
    return handles


def _numbers(points: Sequence[FrontierPoint], style: dict[str, tuple[str, str]]) -> list[Any]:
    """Legend entries ``<number>: <configuration>``, used when the points are labelled with numbers."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=style[p.algorithm][0], marker=style[p.algorithm][1], ls="none", ms=6,
                   mfc=style[p.algorithm][0] if p.all_zero else "white", label=f"{index + 1}: {p.label}")
            for index, p in enumerate(points)]


def _title(points: Sequence[FrontierPoint], setting: Any) -> str:
    name = getattr(setting, "name", str(setting))
    label = clean(getattr(setting, "label", "") or "")
    steps = sorted({p.steps for p in points})
    steps_text = f"T = {steps[0]:,}" if len(steps) == 1 else f"T = {steps[0]:,}–{steps[-1]:,}"
    return (f"{name}{(': ' + label) if label else ''} — regret and constraint violation after {steps_text} steps"
            f"\neach point: one configuration, mean over {seed_text([p.seeds for p in points])}")


def _fit_height(fig: matplotlib.figure.Figure, ax: Axes, legend: Legend) -> bool:
    """Make the figure taller when the legend (hung from the top of the axes) is taller than the axes.

    Returns whether the layout it made is still current (False when the figure grew).
    """
    fig.draw_without_rendering()
    renderer = agg_renderer(fig)
    missing = legend.get_window_extent(renderer).height - ax.get_window_extent(renderer).height
    if missing > 0:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + missing / fig.dpi + 0.2)
    return missing <= 0


def frontier_figure(groups: Sequence[ConfigurationRuns]) -> matplotlib.figure.Figure:
    """The regret–violation frontier of one setting (see the module docstring), not saved.

    Points are labelled with their varied options next to them when the labels
    fit without overlapping; otherwise with numbers, explained in the legend.
    """
    Figure, Canvas = load_matplotlib()
    groups = [g for g in groups if g is not None and g.traces]
    if not groups:
        raise CurloptError("no finished runs to plot.")
    points = frontier_points(groups)
    algorithms = list(dict.fromkeys(p.algorithm for p in points))
    style = {key: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, key in enumerate(algorithms)}
    fig = Figure(figsize=(12.5, _HEIGHT if _violation_top(points) > 0 else _FLAT_HEIGHT), layout="constrained")
    Canvas(fig)
    ax = fig.add_subplot()
    _draw_points(ax, points, style)
    _axes(ax, points, groups)
    handles = _key(points, style)
    fit_suptitle(fig, _title(points, groups[0].setting), 10)
    # the legend and the figure's size are final before the labels are placed (in pixels)
    legend = ax.legend(handles=handles, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
    placement = place_labels(fig, ax, points, numbered=False, laid_out=_fit_height(fig, ax, legend))
    if not placement.fits:  # numbers, which the legend explains: it is wider and taller
        legend.remove()
        legend = ax.legend(handles=handles + _numbers(points, style), fontsize=7.5, loc="upper left",
                           bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
        placement = place_labels(fig, ax, points, numbered=True, laid_out=_fit_height(fig, ax, legend))
    draw_labels(fig, ax, points, style, placement)
    return fig

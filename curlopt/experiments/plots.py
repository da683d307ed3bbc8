"""Figures of a study: the regret–violation frontier, running averages against time, and the epochs' solves.

:func:`plot_study` writes, for every setting (model) of a study, under the
directory it is given:

``<setting>-frontier.png``
    The headline picture: one point per configuration at (mean R(T), mean C(T))
    over its seeds, with bars spanning the 95% bootstrap interval of each mean
    (the interval of ``summary.csv``). Colour and marker tell the algorithm
    (legend); each point is labelled with its varied options next to it when
    the labels fit without overlapping, otherwise with a number that the legend
    explains (clusters of near-equal configurations are common). A filled marker
    means C(T) = 0 on every seed, a hollow one C(T) > 0 on at least one. R is on
    a log axis when every mean and interval end is positive (the axis label
    says which), C on a linear axis that shows 0.
``<setting>-objective.png``
    The running average objective f(λ^(t)) against t (log axis), with the
    optimum f(λ*) as a dashed black line.
``<setting>-regret.png``
    The regret R(t) = f(λ*) − f(λ^(t)) on log-log axes, with grey dotted
    reference lines c/√t for c = 10^k (k integer: fixed lines of slope −1/2 that
    do not depend on the data; read the slope of a curve against them).
``<setting>-constraints.png``
    One row of panels per constraint g_m(ζ^(t)), with the line g = 0 (solid
    black; the constraint holds below it). A setting without constraints gets
    ``<setting>-costs.png`` with the average costs ζ_i(t) instead.
``<setting>-overview.png``
    All of the above curve panels in one figure (no empty panels).
``<setting>-epochs.png``
    Left: the solver's time per epoch against the epoch's start t_e (log-log),
    every epoch of every seed as a faint dot and the median per time bin as a
    line; epochs whose solver status was not ``optimal`` are marked with black
    crosses. Right: the share of epochs by where the policy came from (tight
    program, fallback, kept previous, uniform initial, update rule), one
    stacked bar per configuration (shares per run, averaged over seeds).

Curves: every line is the mean over seeds; the band around it is exactly the
mean ± one sample standard deviation (ddof = 1) over seeds, point by point (no
band with one seed). The checkpoint times are the same for every seed of a
configuration; a checkpoint where some seed's value is not finite is left out.

What the curve panels do not hide:

* configurations are told apart by colour, line style and markers (markers of
  different configurations sit at interleaved times, so coinciding curves stay
  visible); curves that coincide (largest difference below
  :data:`COINCIDE_TOLERANCE` of the axis range) are named in a note in the
  panel, and so are curves that stay within :data:`NEAR_TOLERANCE` of the axis
  range from :func:`settle_time` on (nearly identical at the figure's resolution);
* a configuration with mean C(T) > 0 has hollow markers and its C(T) in its
  legend entry;
* the y range is set by the curves after the first :func:`settle_time` steps
  (the first running averages swing widely); when a mean or band leaves the
  range, a note says so; on a log axis, where a band's lower edge is ≤ 0 the
  band is drawn to the bottom of the axis and a note says so; points where the
  mean regret is ≤ 0 cannot be drawn on the log axis, and a note says so.

Many configurations: with at most :data:`SINGLE_PANEL_MAX` configurations a
setting's curves share one panel per quantity. With more, they are split into
small multiples: one column of panels per algorithm, an algorithm with more
than :data:`MAX_LINES` configurations split into columns of at most that many
(small consecutive groups of different algorithms share a column). The
panels of a row share their y range and axis scale. The frontier and the
epochs' bars always show every configuration.

:func:`plot_experiment` and :func:`plot_setting` (the older entry points of the
reproduction sweep) draw the same curve figures (objective, regret,
constraints or costs, overview) from ``(task, trace)`` pairs or :class:`Curves`.

matplotlib is imported only when a figure is drawn, and only through
:class:`matplotlib.figure.Figure` with the Agg canvas: no pyplot, no change of
the process-wide backend (``pip install 'curlopt[plot]'``). Every PNG is
written atomically (temporary file, then rename). The builders
(:func:`frontier_figure`, :func:`curve_figure`, :func:`epochs_figure`,
:func:`setting_figures`) return the :class:`~matplotlib.figure.Figure` without
saving it.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import CurloptError

if TYPE_CHECKING:  # pragma: no cover
    from .configurations import ConfigurationRuns
    from .sweep import Experiment, Task
    from .trace import Trace

__all__ = ["Curves", "curves_from_traces", "plot_setting", "plot_experiment", "plot_study", "setting_figures",
           "setting_view", "SettingView", "frontier_figure", "frontier_points", "FrontierPoint", "curve_figure",
           "epochs_figure", "source_shares", "short_label", "settle_time", "COINCIDE_TOLERANCE", "NEAR_TOLERANCE",
           "MAX_LINES", "SINGLE_PANEL_MAX", "SOURCES"]

DPI = 150
SIZE = (7.5, 4.8)
#: a setting with at most this many configurations draws its curves in one panel per quantity
SINGLE_PANEL_MAX = 8
#: otherwise, at most this many curves per panel (small multiples)
MAX_LINES = 6
#: curves closer than this fraction of the axis range everywhere are reported as identical
COINCIDE_TOLERANCE = 1e-9
#: curves closer than this fraction once settled (t ≥ settle_time) are reported as nearly identical
NEAR_TOLERANCE = 0.01
#: where an epoch's policy came from, in the order of the stacked bars (others follow alphabetically)
SOURCES = ("tight", "fallback", "kept-previous", "uniform-initial", "update-rule")
_SOURCE_TEXT = {"tight": "tight program", "fallback": "fallback (tight program infeasible)",
                "kept-previous": "solver failed: previous policy kept", "uniform-initial": "solver failed: uniform policy",
                "update-rule": "update rule (no program)"}
_SOURCE_COLOURS = {"tight": "#4c9a2a", "fallback": "#f0a030", "kept-previous": "#d62728", "uniform-initial": "#9467bd",
                   "update-rule": "#5b8db8"}
# tab10 without its grey (grey and black are kept for reference lines)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
LINESTYLES: tuple[Any, ...] = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (2, 2)), (0, (8, 2, 1, 2, 1, 2)),
                               (0, (3, 1, 3, 4)), (0, (10, 3)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
_MARKS_PER_CURVE = 8
_OPTIMUM_STYLE = dict(color="black", ls=(0, (6, 3)), lw=1.3)
_ZERO_STYLE = dict(color="black", ls="-", lw=1.0)
_SLOPE_STYLE = dict(color="0.45", ls=":", lw=1.0)
_NOTE_STYLE = dict(fontsize=6.5, color="0.15", va="bottom", ha="left",
                   bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="0.7", alpha=0.85, lw=0.5))


# -- data ------------------------------------------------------------------------------------------------------------
@dataclass
class Curves:
    """One configuration on one setting: checkpoint columns stacked over seeds (seed × time [× m]).

    ``color``, ``linestyle`` and ``marker`` are its style in every curve figure
    (assigned per panel when left None); ``short`` is its legend text in a
    panel of one algorithm (the varied options); ``final_violation`` is C(T)
    of every seed.
    """

    label: str
    color: Any
    t: np.ndarray
    objective: np.ndarray
    regret: np.ndarray
    constraints: np.ndarray
    costs: np.ndarray
    optimum: float | None
    linestyle: Any = None
    marker: str | None = None
    short: str = ""
    algorithm: str = ""
    algorithm_label: str = ""
    final_violation: np.ndarray = field(default_factory=lambda: np.zeros(0))
    position: int = -1  #: index of its configuration in the setting's list

    @property
    def seeds(self) -> int:
        return self.objective.shape[0]

    @property
    def violation_mean(self) -> float:
        values = np.asarray(self.final_violation, dtype=float)
        return float(np.mean(values)) if values.size else 0.0

    @property
    def infeasible(self) -> bool:
        """Mean C(T) > 0 over the seeds."""
        return self.violation_mean > 0.0


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CurloptError("figures need matplotlib: pip install 'curlopt[plot]'.") from None
    return Figure, FigureCanvasAgg


def curves_from_traces(label: str, color: Any, traces: Sequence["Trace"]) -> Curves:
    """Stack the traces of one configuration (same checkpoint times, as in a study)."""
    if not traces:
        raise CurloptError(f"no traces to plot for {label}.")
    t = np.asarray(traces[0].checkpoints["t"])
    for trace in traces[1:]:
        if not np.array_equal(trace.checkpoints["t"], t):
            raise CurloptError(f"the traces of {label} have different checkpoint times (different T); plot them apart.")
    stack = lambda key: np.stack([np.asarray(tr.checkpoints[key], dtype=float) for tr in traces])  # noqa: E731
    optimum = traces[0].optimum.get("objective") if traces[0].optimum else None
    violation = stack("violation")
    constraints = stack("constraints")
    if constraints.ndim == 2:  # no constraints: (seeds, time) -> (seeds, time, 0)
        constraints = constraints.reshape(constraints.shape[0], len(t), -1)
    costs = stack("costs")
    if costs.ndim == 2:
        costs = costs.reshape(costs.shape[0], len(t), -1)
    return Curves(label, color, t, stack("objective"), stack("regret"), constraints, costs,
                  None if optimum is None else float(optimum), final_violation=violation[:, -1])


def _option_text(name: str, value: Any) -> str:
    try:
        from .planning import option_label

        return option_label(name, value)
    except Exception:  # planning is optional here: a plain name=value will do
        return f"{name}={value}"


def short_label(group: "ConfigurationRuns") -> str:
    """The varied options of a configuration, e.g. ``radius=experiment, K_ε=3`` (empty without a grid)."""
    return ", ".join(_option_text(name, value) for name, value in group.varied.items())


def algorithm_label(group: "ConfigurationRuns") -> str:
    """The configuration's label without its varied options (``UC-CURL``)."""
    short = short_label(group)
    if short and group.label.endswith(f" ({short})"):
        return group.label[: -len(short) - 3]
    return group.label if not short else group.algorithm


def _clean(text: str) -> str:
    from .summary import clean_label

    return clean_label(text)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _seed_text(counts: Sequence[int]) -> str:
    distinct = sorted(set(counts))
    if not distinct:
        return "no seeds"
    if len(distinct) == 1:
        return f"{distinct[0]} seed" + ("" if distinct[0] == 1 else "s")
    return f"{distinct[0]}–{distinct[-1]} seeds"


@dataclass
class SettingView:
    """What the figures of one setting draw: its name, texts and one :class:`Curves` per configuration."""

    name: str
    label: str
    curves: list[Curves]
    constraint_names: list[str] = field(default_factory=list)
    cost_names: list[str] = field(default_factory=list)
    groups: list[Any] = field(default_factory=list)
    panels: list[tuple[str, list[Curves]]] = field(default_factory=list)

    @property
    def n_constraints(self) -> int:
        return int(self.curves[0].constraints.shape[2]) if self.curves else 0

    @property
    def head(self) -> str:
        return f"{self.name}{(': ' + self.label) if self.label else ''}"

    @property
    def seeds_text(self) -> str:
        return _seed_text([c.seeds for c in self.curves])


def _names(setting: Any) -> tuple[list[str], list[str]]:
    try:
        names = [_clean(str(name)) for name in setting.constraint_names()]
    except Exception:  # names are decoration only
        names = []
    try:
        cost_names = [_clean(str(name)) for name in getattr(setting, "cost_names", ()) or ()]
    except Exception:  # pragma: no cover
        cost_names = []
    return names, cost_names


def _panels(curves: list[Curves]) -> list[tuple[str, list[Curves]]]:
    """Split configurations into panels of curves (see the module docstring) and give each its style."""
    if len(curves) <= SINGLE_PANEL_MAX:
        chunks = [curves]
    else:
        by_algorithm: dict[str, list[Curves]] = {}
        for c in curves:
            by_algorithm.setdefault(c.algorithm or c.label, []).append(c)
        pieces: list[list[Curves]] = []
        for members in by_algorithm.values():
            parts = math.ceil(len(members) / MAX_LINES)
            size = math.ceil(len(members) / parts)
            pieces += [members[i: i + size] for i in range(0, len(members), size)]
        chunks = []
        for piece in pieces:  # small consecutive pieces share a panel
            if chunks and len(chunks[-1]) + len(piece) <= MAX_LINES and len(piece) < MAX_LINES \
                    and len(chunks[-1]) < MAX_LINES:
                chunks[-1] = chunks[-1] + piece
            else:
                chunks.append(list(piece))
    panels = []
    for chunk in chunks:
        styled = [replace(c, color=c.color if c.color is not None else PALETTE[i % len(PALETTE)],
                          linestyle=LINESTYLES[i % len(LINESTYLES)], marker=MARKERS[i % len(MARKERS)])
                  for i, c in enumerate(chunk)]
        algorithms = list(dict.fromkeys(c.algorithm_label or c.label for c in styled))
        title = ""
        if len(chunks) > 1:
            title = algorithms[0] if len(algorithms) == 1 else ", ".join(algorithms)
            same = [k for k, other in enumerate(chunks) if {c.algorithm for c in other} == {c.algorithm for c in chunk}]
            if len(algorithms) == 1 and len(same) > 1:
                title += f" ({same.index(chunks.index(chunk)) + 1} of {len(same)})"
        panels.append((title, styled))
    return panels


def setting_view(groups: Sequence["ConfigurationRuns"]) -> SettingView:
    """The curves of one setting's configurations (in the given order), styled and split into panels."""
    groups = [g for g in groups if g is not None and g.traces]
    if not groups:
        raise CurloptError("no finished runs to plot.")
    names = {getattr(g.setting, "name", str(g.setting)) for g in groups}
    if len(names) > 1:
        raise CurloptError(f"one setting per figure, got {sorted(names)}.")
    curves = []
    for position, group in enumerate(groups):
        c = curves_from_traces(group.label, None, group.traces)
        c.position = position
        c.short = short_label(group)
        c.algorithm = group.algorithm
        c.algorithm_label = algorithm_label(group)
        curves.append(c)
    setting = groups[0].setting
    constraint_names, cost_names = _names(setting)
    view = SettingView(getattr(setting, "name", str(setting)), _clean(getattr(setting, "label", "") or ""), curves,
                       constraint_names, cost_names, list(groups))
    _style_view(view)
    return view


def _style_view(view: SettingView) -> None:
    view.panels = _panels(view.curves)
    styled = {id(original): c for original, c in zip(view.curves, [c for _, cs in view.panels for c in cs])}
    view.curves = [styled[id(c)] for c in view.curves]


# -- statistics of curves --------------------------------------------------------------------------------------------
def _mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Point-wise mean and sample std over seeds (axis 0); NaN where a seed is not finite; std None for one seed."""
    finite = np.all(np.isfinite(values), axis=0)
    safe = np.where(finite, values, 0.0)
    mean = np.where(finite, safe.mean(axis=0), np.nan)
    if values.shape[0] < 2:
        return mean, None
    return mean, np.where(finite, safe.std(axis=0, ddof=1), np.nan)


def settle_time(t: np.ndarray) -> float:
    """Times from this on set the y range (the first few running averages swing widely)."""
    return float(min(100.0, t[-1] / 10.0))



def _marker_positions(t: np.ndarray, index: int, count: int) -> list[int]:
    """Checkpoint indices of a curve's markers: log-spaced, shifted by the curve's index so markers interleave."""
    t = np.asarray(t, dtype=float)
    if t.size < 2 or t[0] <= 0:
        return list(range(0, t.size, max(1, t.size // _MARKS_PER_CURVE)))
    low, high = math.log(t[0]), math.log(t[-1])
    step = (high - low) / _MARKS_PER_CURVE
    targets = [math.exp(low + (k + (index + 0.5) / max(count, 1)) * step) for k in range(_MARKS_PER_CURVE)]
    positions = sorted({int(np.argmin(np.abs(t - target))) for target in targets})
    return positions


@dataclass
class _Drawn:
    curve: Curves
    t: np.ndarray
    mean: np.ndarray
    std: np.ndarray | None
    shown: np.ndarray  # the mean as drawn (NaN where a log axis cannot show it)


@dataclass
class _Metric:
    key: str
    values: Callable[[Curves], np.ndarray]
    ylabel: str
    title: str
    log: bool = False
    reference: str = ""  # "optimum", "zero", "slope"


def _metrics(view: SettingView) -> list[_Metric]:
    metrics = [
        _Metric("objective", lambda c: c.objective, "f(λ^(t))", "running average objective f(λ^(t))",
                reference="optimum"),
        _Metric("regret", lambda c: c.regret, "R(t) = f(λ*) − f(λ^(t))", "regret R(t), log-log", log=True,
                reference="slope"),
    ]
    metrics += _side_metrics(view)
    return metrics


def _side_metrics(view: SettingView) -> list[_Metric]:
    metrics = []
    if view.n_constraints:
        for m in range(view.n_constraints):
            name = view.constraint_names[m] if m < len(view.constraint_names) else ""
            title = f"constraint g_{m + 1}" + (f": {name}" if name else "")
            metrics.append(_Metric(f"g{m + 1}", lambda c, m=m: c.constraints[:, :, m], f"g_{m + 1}(ζ^(t))",
                                   _shorten(title), reference="zero"))
    elif view.curves:
        for i in range(view.curves[0].costs.shape[2]):
            name = view.cost_names[i] if i < len(view.cost_names) else ""
            title = f"average cost ζ_{i + 1}" + (f": {name}" if name else "") + " (no constraint)"
            metrics.append(_Metric(f"cost{i + 1}", lambda c, i=i: c.costs[:, :, i], f"ζ_{i + 1}(t)", _shorten(title)))
    return metrics


def _shorten(text: str, limit: int = 64) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- drawing one panel -----------------------------------------------------------------------------------------------
def _legend_text(c: Curves, use_short: bool) -> str:
    text = (c.short or c.label) if use_short else c.label
    if c.infeasible:
        from .summary import significant

        text += f"  [C(T) = {significant(c.violation_mean, 3)}]"
    return text


def _note(ax, lines: list[str], width: int = 80) -> None:
    """A small boxed note in the lower left corner of a panel (wrapped; not part of the layout)."""
    if lines:
        import textwrap

        text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in lines)
        note = ax.text(0.015, 0.02, text, transform=ax.transAxes, gid="note", zorder=10, **_NOTE_STYLE)
        note.set_in_layout(False)


def _coinciding(drawn: list[_Drawn], low: float, high: float, log: bool, fraction: float = COINCIDE_TOLERANCE,
                after: float | None = None) -> list[list[int]]:
    """Classes (of size ≥ 2) of curves whose drawn means differ by at most ``fraction`` of the axis range.

    Only checkpoints at t ≥ ``after`` are compared when it is given; the curves
    must be drawn (finite) at the same checkpoints.
    """
    if len(drawn) < 2:
        return []
    transform = (lambda v: np.log10(np.where(v > 0, v, np.nan))) if log else (lambda v: v)
    span = (math.log10(high) - math.log10(low)) if log else (high - low)
    tolerance = fraction * abs(span) if span else fraction
    parent = list(range(len(drawn)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    values = [transform(d.shown) for d in drawn]
    for i in range(len(drawn)):
        for j in range(i + 1, len(drawn)):
            a, b = values[i], values[j]
            if a.shape != b.shape or not np.array_equal(drawn[i].t, drawn[j].t):
                continue
            window = np.ones(a.shape, dtype=bool) if after is None else drawn[i].t >= after
            finite_a, finite_b = np.isfinite(a) & window, np.isfinite(b) & window
            if not np.array_equal(finite_a, finite_b) or not finite_a.any():
                continue
            if float(np.max(np.abs(a[finite_a] - b[finite_b]))) <= tolerance:
                parent[find(j)] = find(i)
    classes: dict[int, list[int]] = {}
    for i in range(len(drawn)):
        classes.setdefault(find(i), []).append(i)
    return [members for members in classes.values() if len(members) > 1]


def _coincidence_notes(drawn: list[_Drawn], low: float, high: float, log: bool, use_short: bool) -> list[str]:
    """Notes naming identical curves, and curves that differ by less than 1% of the axis range once settled."""
    def name(i: int) -> str:
        curve = drawn[i].curve
        return (curve.short or curve.label) if use_short else curve.label

    def names(members: list[int], joint: str) -> str:
        if len(members) == len(drawn) > 2:
            return f"all {len(drawn)} curves of the panel"
        return joint.join(name(i) for i in members)

    notes = []
    identical = _coinciding(drawn, low, high, log)
    for members in identical:
        notes.append("identical curves: " + names(members, " = "))
    if drawn:
        after = settle_time(drawn[0].t)
        same = {frozenset(members) for members in identical}
        for members in _coinciding(drawn, low, high, log, NEAR_TOLERANCE, after):
            if frozenset(members) in same:
                continue
            notes.append(f"within {NEAR_TOLERANCE:.0%} of the axis range for t ≥ {_t_text(after)}: "
                         + names(members, " ≈ "))
    return notes


def _limits(drawn: list[_Drawn], log: bool, extra: Sequence[float] = ()) -> tuple[float, float] | None:
    lows, highs = [], []
    for d in drawn:
        keep = (d.t >= settle_time(d.t)) & np.isfinite(d.shown)
        if not np.any(keep):
            continue
        mean = d.shown[keep]
        lower = mean if d.std is None else mean - d.std[keep]
        upper = mean if d.std is None else mean + d.std[keep]
        if log:
            lower = lower[lower > 0]
            upper = upper[upper > 0]
        if lower.size:
            lows.append(float(np.min(lower)))
        if upper.size:
            highs.append(float(np.max(upper)))
    lows += [v for v in extra if not log or v > 0]
    highs += [v for v in extra if not log or v > 0]
    if not lows or not highs:
        return None
    low, high = min(lows), max(highs)
    if log:
        return low / 1.6, high * 1.6
    pad = 0.06 * (high - low) if high > low else max(abs(high), 1.0) * 0.05
    return low - pad, high + pad


def _slope_lines(ax, t_low: float, t_high: float, y_low: float, y_high: float) -> None:
    """Reference lines c/√t, c = 10^k, that cross the shown range (fixed: they do not depend on the data)."""
    # c/√t is in [y_low, y_high] for some t in [t_low, t_high] iff c in [y_low·√t_low, y_high·√t_high]
    k_low = math.floor(math.log10(y_low * math.sqrt(t_low)))
    k_high = math.ceil(math.log10(y_high * math.sqrt(t_high)))
    ref_t = np.geomspace(t_low, t_high, 60)
    first = True
    for k in range(k_low, k_high + 1):
        c = 10.0 ** k
        ax.plot(ref_t, c / np.sqrt(ref_t), gid=f"slope:{k}", zorder=1,
                label="c/√t, c = 10^k (slope −1/2)" if first else "_nolegend_", **_SLOPE_STYLE)
        first = False


def _prepare(curves: Sequence[Curves], metric: _Metric) -> tuple[bool, list[_Drawn], tuple[float, float] | None]:
    """``(log axis?, the curves' means and stds, y limits)`` of one quantity for some configurations (no drawing)."""
    means = [_mean_std(metric.values(c)) for c in curves]
    log = metric.log and any(np.any(mean[np.isfinite(mean)] > 0) for mean, _ in means)
    drawn = [_Drawn(c, np.asarray(c.t), mean, std, np.where(mean > 0, mean, np.nan) if log else mean)
             for c, (mean, std) in zip(curves, means)]
    extra: list[float] = []
    optimum = next((c.optimum for c in curves if c.optimum is not None), None)
    if metric.reference == "optimum" and optimum is not None:
        extra.append(optimum)
    if metric.reference == "zero":
        extra.append(0.0)
    return log, drawn, _limits(drawn, log, extra)


def _plain_log_labels(axis) -> None:
    """Tick labels of a log axis as plain numbers (``0.3``, ``2``), where matplotlib would write ``3×10^-1``."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Plain(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1.2, 0.5)))


def _union(limits: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    known = [lim for lim in limits if lim is not None]
    if not known:
        return None
    return min(lim[0] for lim in known), max(lim[1] for lim in known)


def draw_panel(ax, curves: Sequence[Curves], metric: _Metric, use_short: bool = False, legend: bool = True,
               ylim: tuple[float, float] | None = None, log: bool | None = None) -> list[str]:
    """Draw one quantity for some configurations; return the notes written in the panel.

    ``ylim`` and ``log`` override the panel's own choice (panels of one row share them).
    """
    own_log, drawn, limits = _prepare(curves, metric)
    if log is not None and log != own_log:
        own_log = log
        drawn = [replace(d, shown=np.where(d.mean > 0, d.mean, np.nan) if log else d.mean) for d in drawn]
    log = own_log
    notes: list[str] = []
    if metric.log and not log:
        notes.append("no positive mean: linear axis")
    count = len(drawn)
    for index, d in enumerate(drawn):
        c = d.curve
        ax.plot(c.t, d.shown, color=c.color, ls=c.linestyle or "-", lw=1.5, marker=c.marker, ms=4.5,
                markevery=_marker_positions(c.t, index, count), mec=c.color, mfc="white" if c.infeasible else c.color,
                mew=1.1, label=_legend_text(c, use_short), gid=f"curve:{c.label}", zorder=3)
        if d.std is not None:
            ax.fill_between(c.t, d.mean - d.std, d.mean + d.std, color=c.color, alpha=0.09, lw=0,
                            gid=f"band:{c.label}", zorder=2)
    optimum = next((c.optimum for c in curves if c.optimum is not None), None)
    if metric.reference == "optimum" and optimum is not None:
        ax.axhline(optimum, label="optimum f(λ*)", gid="optimum", zorder=2.5, **_OPTIMUM_STYLE)
    if metric.reference == "zero":
        ax.axhline(0.0, label="g = 0 (satisfied below)", gid="zero", zorder=2.5, **_ZERO_STYLE)
    ax.set_xscale("log")
    if log:
        ax.set_yscale("log", nonpositive="clip")
        _plain_log_labels(ax.yaxis)
    limits = ylim if ylim is not None else limits
    if limits is not None:
        ax.set_ylim(*limits)
    low, high = ax.get_ylim()
    if metric.reference == "slope" and log and drawn:
        t_all = np.concatenate([d.t for d in drawn]).astype(float)
        t_all = t_all[t_all > 0]
        if t_all.size:
            _slope_lines(ax, float(t_all.min()), float(t_all.max()), low, high)
            ax.set_ylim(low, high)
    notes += _range_notes(drawn, low, high, log, metric)
    notes += _coincidence_notes(drawn, low, high, log, use_short)
    ax.set_xlabel("t (steps)")
    ax.set_ylabel(metric.ylabel)
    ax.set_title(metric.title, fontsize=9.5)
    ax.grid(True, which="major", alpha=0.25)
    _note(ax, notes)
    if legend:
        _panel_legend(ax, [ax])
    return notes


def _range_notes(drawn: list[_Drawn], low: float, high: float, log: bool, metric: _Metric) -> list[str]:
    notes = []
    outside_t = []
    band_below = False
    nonpositive = False
    for d in drawn:
        finite = np.isfinite(d.shown)
        out = finite & ((d.shown < low) | (d.shown > high))
        if d.std is not None:
            edges_low = d.mean - d.std
            edges_high = d.mean + d.std
            ok = np.isfinite(edges_low)
            if log:
                band_below |= bool(np.any(ok & (edges_low <= 0)))
                out |= ok & (((edges_low < low) & (edges_low > 0)) | (edges_high > high))
            else:
                out |= ok & ((edges_low < low) | (edges_high > high))
        if log:
            nonpositive |= bool(np.any(np.isfinite(d.mean) & (d.mean <= 0)))
        if np.any(out):
            outside_t.append(float(np.max(d.t[out])))
    if outside_t:
        notes.append(f"y axis clipped: values at t ≤ {_t_text(max(outside_t))} leave the shown range")
    if band_below:
        notes.append("band's lower edge ≤ 0 at some t: drawn to the bottom of the log axis")
    if nonpositive:
        symbol = metric.ylabel.split("(")[0]
        notes.append(f"mean {symbol} ≤ 0 at some t: not drawn on the log axis")
    return notes


def _t_text(t: float) -> str:
    return f"{t:,.0f}" if t < 1e6 else f"{t:.3g}"


def _panel_legend(ax, axes: Sequence[Any], below: bool = False, infeasible_note: bool = True) -> None:
    handles, labels = _collect_handles(axes)
    if infeasible_note and any(_is_infeasible_handle(h) for h in handles):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.3", marker="o", mfc="white", mec="0.3", ls="none"))
        labels.append("hollow markers: mean C(T) > 0")
    if below:
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=1,
                  frameon=False)
    else:
        ax.legend(handles, labels, fontsize=7, loc="best", framealpha=0.85)


def _is_infeasible_handle(handle) -> bool:
    try:
        return handle.get_marker() not in (None, "None", "") and handle.get_markerfacecolor() in ("white", "w") \
            and str(handle.get_gid() or "").startswith("curve:")
    except AttributeError:
        return False


def _collect_handles(axes: Sequence[Any]) -> tuple[list, list[str]]:
    seen: dict[str, Any] = {}
    order: list[str] = []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in seen:
                seen[label] = handle
                order.append(label)
    # curves first, then reference lines
    curves = [label for label in order if str(seen[label].get_gid() or "").startswith("curve:")]
    others = [label for label in order if label not in curves]
    labels = curves + others
    return [seen[label] for label in labels], labels


# -- curve figures ---------------------------------------------------------------------------------------------------
def _caption(view: SettingView) -> str:
    seeds = view.seeds_text
    if all(c.seeds == 1 for c in view.curves):
        return f"{view.head} — one seed: lines are the run (no band)"
    return f"{view.head} — lines: mean over {seeds}; bands: mean ± one sample standard deviation"


def _grid_figure(Figure, rows: int, cols: int, width_per_col: float, height_per_row: float):
    fig = Figure(figsize=(max(7.5, width_per_col * cols), height_per_row * rows + 1.0), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _panel_grid(fig_axes, view: SettingView, metrics: Sequence[_Metric]) -> None:
    """Rows = quantities, columns = panels of configurations; one legend under each column."""
    axes = fig_axes
    single = len(view.panels) == 1
    shared = []
    for metric in metrics:  # every row: one axis scale and one y range for all its panels
        prepared = [_prepare(curves, metric) for _, curves in view.panels]
        shared.append((any(p[0] for p in prepared), _union([p[2] for p in prepared])))
    for col, (title, curves) in enumerate(view.panels):
        use_short = len({c.algorithm for c in curves}) == 1 and not single and all(c.short for c in curves)
        for row, metric in enumerate(metrics):
            ax = axes[row][col]
            log, ylim = shared[row]
            if log and metric.log:  # the row's range came from every panel; recompute it on the log scale
                ylim = _union([_limits(_prepare(cs, metric)[1], True, ()) for _, cs in view.panels])
            draw_panel(ax, curves, metric, use_short=use_short, legend=False, ylim=ylim, log=log)
            if title:
                ax.set_title(f"{title}\n{metric.title}", fontsize=9)
            if col > 0:
                ax.set_ylabel("")
                ax.tick_params(labelleft=True)
        _panel_legend(axes[-1][col], [axes[r][col] for r in range(len(metrics))], below=True)


def curve_figure(view_or_groups: SettingView | Sequence["ConfigurationRuns"], kind: str):
    """A curve figure of one setting without saving it.

    ``kind`` is ``objective``, ``regret``, ``constraints`` (or ``costs``) or
    ``overview``. Returns a :class:`matplotlib.figure.Figure` (None for
    ``constraints``/``costs`` when there is nothing to draw).
    """
    Figure, Canvas = _matplotlib()
    view = view_or_groups if isinstance(view_or_groups, SettingView) else setting_view(view_or_groups)
    all_metrics = _metrics(view)
    if kind in ("objective", "regret"):
        metrics = [m for m in all_metrics if m.key == kind]
    elif kind in ("constraints", "costs"):
        metrics = _side_metrics(view)
        if not metrics:
            return None
    elif kind == "overview":
        metrics = all_metrics
    else:
        raise CurloptError(f"unknown curve figure {kind!r}: objective, regret, constraints, costs or overview.")
    cols = len(view.panels)
    if kind == "overview" and cols == 1:
        fig = _overview_single(Figure, view, metrics)
    else:
        fig, axes = _grid_figure(Figure, len(metrics), cols, 5.6 if cols > 1 else 7.5,
                                 4.2 if cols > 1 or len(metrics) > 1 else 4.8)
        if cols == 1:
            _single_column(fig, axes, view, metrics)
        else:
            _panel_grid(axes, view, metrics)
    fig.suptitle(_caption(view), fontsize=10)
    Canvas(fig)
    return fig


def _single_column(fig, axes, view: SettingView, metrics: Sequence[_Metric]) -> None:
    curves = view.panels[0][1]
    for row, metric in enumerate(metrics):
        draw_panel(axes[row][0], curves, metric, legend=False)
    _figure_legend(fig, [axes[r][0] for r in range(len(metrics))])


def _figure_legend(fig, axes: Sequence[Any]) -> None:
    handles, labels = _collect_handles(axes)
    if any(_is_infeasible_handle(h) for h in handles):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.3", marker="o", mfc="white", mec="0.3", ls="none"))
        labels.append("hollow markers: mean C(T) > 0")
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize=8, frameon=False)


def _overview_single(Figure, view: SettingView, metrics: Sequence[_Metric]):
    """All quantities of one panel of configurations: two columns, an odd last panel spanning both (no empty panel)."""
    n = len(metrics)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    layout = []
    for r in range(rows):
        row = [metrics[min(r * cols + k, n - 1)].key for k in range(cols)]
        if r * cols + cols > n:  # odd count: the last quantity spans the row
            row = [metrics[n - 1].key] * cols
        layout.append(row)
    fig = Figure(figsize=(12, 3.9 * rows + 1.4), layout="constrained")
    mosaic = fig.subplot_mosaic(layout)
    curves = view.panels[0][1]
    axes = []
    for metric in metrics:
        ax = mosaic[metric.key]
        draw_panel(ax, curves, metric, legend=False)
        axes.append(ax)
    _figure_legend(fig, axes)
    return fig


# -- the frontier ----------------------------------------------------------------------------------------------------
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


def frontier_points(groups: Sequence["ConfigurationRuns"]) -> list[FrontierPoint]:
    """The frontier's points, with the statistics of the summary table (same functions, same intervals)."""
    from .summary import bootstrap_interval

    points = []
    for group in groups:
        if group is None or not group.traces:
            continue
        regrets = [float(trace.checkpoints["regret"][-1]) for trace in group.traces]
        violations = [float(trace.checkpoints["violation"][-1]) for trace in group.traces]
        points.append(FrontierPoint(
            group.label, short_label(group), group.algorithm, algorithm_label(group),
            float(np.mean(regrets)), bootstrap_interval(regrets), float(np.mean(violations)),
            bootstrap_interval(violations), all(v <= 0.0 for v in violations), len(regrets),
            int(group.traces[0].checkpoints["t"][-1])))
    return points


def frontier_figure(groups: Sequence["ConfigurationRuns"]):
    """The regret–violation frontier of one setting (see the module docstring), not saved.

    Points are labelled with their varied options next to them when the labels
    fit without overlapping; otherwise with numbers, explained in the legend.
    """
    Figure, Canvas = _matplotlib()
    from matplotlib.lines import Line2D

    from .summary import BOOTSTRAP_RESAMPLES

    groups = [g for g in groups if g is not None and g.traces]
    if not groups:
        raise CurloptError("no finished runs to plot.")
    points = frontier_points(groups)
    setting = groups[0].setting
    name = getattr(setting, "name", str(setting))
    label = _clean(getattr(setting, "label", "") or "")
    algorithms = list(dict.fromkeys(p.algorithm for p in points))
    style = {key: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, key in enumerate(algorithms)}
    fig = Figure(figsize=(12.5, 6.6), layout="constrained")
    Canvas(fig)
    ax = fig.add_subplot()
    lows = [p.regret_interval[0] for p in points if not math.isnan(p.regret_interval[0])]
    log_x = all(p.regret > 0 for p in points) and all(v > 0 for v in lows)
    for point in points:
        color, marker = style[point.algorithm]
        xerr = yerr = None
        if not math.isnan(point.regret_interval[0]):
            xerr = [[point.regret - point.regret_interval[0]], [point.regret_interval[1] - point.regret]]
            yerr = [[point.violation - point.violation_interval[0]], [point.violation_interval[1] - point.violation]]
        container = ax.errorbar([point.regret], [point.violation], xerr=xerr, yerr=yerr, fmt=marker, ms=7,
                                color=color, mec=color, mfc=color if point.all_zero else "white", mew=1.4,
                                ecolor=color, elinewidth=0.9, capsize=2.5, alpha=0.95, zorder=3)
        container.lines[0].set_gid(f"point:{point.label}")
        for axis, bars in zip("xy", container.lines[2]):
            bars.set_gid(f"{axis}bar:{point.label}")
    ax.axhline(0.0, color="0.35", lw=0.8, ls="-", zorder=1)
    if log_x:
        ax.set_xscale("log")
        _plain_log_labels(ax.xaxis)
    ax.set_xlabel(f"regret R(T) = f(λ*) − f(λ^(T))  ({'log axis' if log_x else 'linear axis'})")
    ax.set_ylabel("constraint violation C(T) = max_m (g_m(ζ^(T)))_+  (linear axis)")
    top = max([p.violation_interval[1] if not math.isnan(p.violation_interval[1]) else p.violation
               for p in points] + [0.0])
    if top <= 0:
        top = 1.0
        constrained = any(np.asarray(g.traces[0].checkpoints["constraints"]).reshape(
            len(g.traces[0].checkpoints["t"]), -1).shape[1] for g in groups)
        _note(ax, ["C(T) = 0 on every seed of every configuration" if constrained
                   else "the setting has no constraints: C(T) = 0"])
    ax.set_ylim(-0.06 * top, top * 1.1)
    ax.grid(True, which="major", alpha=0.25)
    handles = [Line2D([], [], color=style[key][0], marker=style[key][1], ls="none", ms=7,
                      label=next(p.algorithm_label for p in points if p.algorithm == key)) for key in algorithms]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", ms=7, label="filled: C(T) = 0 on every seed"),
        Line2D([], [], color="0.3", marker="o", mfc="white", ls="none", ms=7, label="hollow: C(T) > 0 on some seed"),
    ]
    if any(p.seeds > 1 for p in points):
        handles.append(Line2D([], [], color="0.3", marker="|", ls="-", lw=1.0, ms=8,
                              label=f"bars: 95% bootstrap interval\nof the mean ({BOOTSTRAP_RESAMPLES:,} resamples)"))
    steps = sorted({p.steps for p in points})
    steps_text = f"T = {steps[0]:,}" if len(steps) == 1 else f"T = {steps[0]:,}–{steps[-1]:,}"
    fig.suptitle(f"{name}{(': ' + label) if label else ''} — regret and constraint violation after {steps_text} steps"
                 f"\neach point: one configuration, mean over {_seed_text([p.seeds for p in points])}",
                 fontsize=10)
    # a provisional legend of the final size fixes the layout before the labels are placed
    key = [Line2D([], [], color=style[p.algorithm][0], marker=style[p.algorithm][1], ls="none", ms=6,
                  mfc=style[p.algorithm][0] if p.all_zero else "white", label=f"{index + 1}: {p.label}")
           for index, p in enumerate(points)]
    legend = ax.legend(handles=handles + key, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                       framealpha=0.9)
    numbered = _label_points(fig, ax, points, style)
    if not numbered:
        legend.remove()
        ax.legend(handles=handles, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
    return fig


def _text_size(ax, renderer, text: str, fontsize: float) -> tuple[float, float]:
    probe = ax.text(0, 0, text, fontsize=fontsize)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def _place(sizes: Sequence[tuple[float, float]], centres: np.ndarray, axes_box, candidates,
           bars: Sequence[tuple[float, float, float, float]] = ()) -> tuple[list, float]:
    """Greedy placement: for each label the candidate centre (offset in pixels) with the least overlap.

    Overlaps with other labels, with points and with the outside of the axes
    count fully; overlaps with error bars (``bars``, rectangles in pixels) a
    fifth. Returns the offsets and the total of the full overlaps.
    """
    placed: list[tuple[float, float, float, float]] = []
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


def _area(a, b) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0.0) * max(height, 0.0)


def _label_points(fig, ax, points: Sequence[FrontierPoint], style: dict) -> bool:
    """Label the points with their varied options if the labels fit apart, else with numbers; True for numbers."""
    fig.draw_without_rendering()  # lay the figure out: the data-to-pixel transform is final from here on
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    renderer = fig.canvas.get_renderer()
    centres = ax.transData.transform([(p.regret, p.violation) for p in points])
    axes_box = ax.get_window_extent(renderer)
    to_points = 72.0 / fig.dpi

    def beside(width: float, height: float):
        for gap in (7.0, 13.0):
            yield from ((width / 2 + gap, 0.0), (-width / 2 - gap, 0.0), (0.0, height / 2 + gap),
                        (0.0, -height / 2 - gap), (width / 2 + gap, height / 2 + gap),
                        (-width / 2 - gap, height / 2 + gap), (width / 2 + gap, -height / 2 - gap),
                        (-width / 2 - gap, -height / 2 - gap))

    def ring(width: float, height: float):
        for distance in (11.0, 19.0, 28.0, 40.0, 54.0, 70.0, 90.0):
            for angle in range(90, 450, 30):
                yield distance * math.cos(math.radians(angle)), distance * math.sin(math.radians(angle))

    bars = []
    for point, (x, y) in zip(points, centres):
        if math.isnan(point.regret_interval[0]):
            continue
        (x_low, y_low), (x_high, y_high) = ax.transData.transform(
            [(point.regret_interval[0], point.violation_interval[0]),
             (point.regret_interval[1], point.violation_interval[1])])
        bars += [(min(x_low, x_high), y - 1.5, max(x_low, x_high), y + 1.5),
                 (x - 1.5, min(y_low, y_high), x + 1.5, max(y_low, y_high))]
    texts = [p.short or p.algorithm_label for p in points]
    sizes = [_text_size(ax, renderer, text, 7) for text in texts]
    offsets, cost = _place(sizes, centres, axes_box, beside, bars)
    numbered = cost > 0
    if numbered:
        texts = [str(index + 1) for index in range(len(points))]
        sizes = [_text_size(ax, renderer, text, 7.5) for text in texts]
        offsets, _ = _place(sizes, centres, axes_box, ring, bars)
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


# -- epochs ----------------------------------------------------------------------------------------------------------
def _source_order(groups: Sequence["ConfigurationRuns"]) -> list[str]:
    seen = {e.source for g in groups for trace in g.traces for e in trace.epochs}
    return [s for s in SOURCES if s in seen] + sorted(seen - set(SOURCES))


def source_shares(group: "ConfigurationRuns", sources: Sequence[str]) -> np.ndarray:
    """Share of each source among a run's epochs, averaged over the seeds (runs without epochs left out)."""
    shares = []
    for trace in group.traces:
        if not trace.epochs:
            continue
        counts = np.array([sum(1 for e in trace.epochs if e.source == s) for s in sources], dtype=float)
        shares.append(counts / len(trace.epochs))
    return np.mean(shares, axis=0) if shares else np.zeros(len(sources))


def epochs_figure(view_or_groups: SettingView | Sequence["ConfigurationRuns"]):
    """Solve time per epoch and the epochs' sources of one setting (None without epoch records), not saved."""
    Figure, Canvas = _matplotlib()
    view = view_or_groups if isinstance(view_or_groups, SettingView) else setting_view(view_or_groups)
    groups = view.groups
    if not any(trace.epochs for g in groups for trace in g.traces):
        return None
    rows = len(view.panels)
    fig = Figure(figsize=(14, max(5.2, 3.6 * rows + 1.2)), layout="constrained")
    grid = fig.add_gridspec(rows, 2, width_ratios=(1.25, 1.0))
    time_axes = []
    for row, (title, curves) in enumerate(view.panels):
        ax = fig.add_subplot(grid[row, 0])
        time_axes.append(ax)
        unsolved = bad = 0
        for c in curves:
            group = groups[c.position]
            starts, times, statuses = [], [], []
            for trace in group.traces:
                for e in trace.epochs:
                    starts.append(max(int(e.start), 1))
                    times.append(float(e.solve_time))
                    statuses.append(e.status or "")
            starts_a, times_a = np.asarray(starts, dtype=float), np.asarray(times, dtype=float)
            positive = times_a > 0
            unsolved += int(np.sum(~positive))
            if not np.any(positive):
                continue
            ax.scatter(starts_a[positive], times_a[positive], s=4, color=c.color, alpha=0.18, lw=0, zorder=2)
            t_end = max(float(trace.checkpoints["t"][-1]) for trace in group.traces)
            edges = np.geomspace(1.0, max(t_end, 2.0) * 1.0001, 25)
            centre, median = [], []
            for lo, hi in zip(edges[:-1], edges[1:]):
                inside = positive & (starts_a >= lo) & (starts_a < hi)
                if np.any(inside):
                    centre.append(math.sqrt(lo * hi))
                    median.append(float(np.median(times_a[inside])))
            use_short = len({x.algorithm for x in curves}) == 1 and rows > 1 and all(x.short for x in curves)
            ax.plot(centre, median, color=c.color, ls=c.linestyle or "-", marker=c.marker, ms=4, lw=1.4,
                    mfc="white" if c.infeasible else c.color, label=(c.short if use_short else c.label), zorder=3)
            flagged = positive & np.array([s not in ("", "optimal") for s in statuses], dtype=bool)
            bad += int(np.sum(flagged))
            if np.any(flagged):
                ax.scatter(starts_a[flagged], times_a[flagged], marker="x", s=18, color="black", lw=0.9, zorder=4,
                           label="solver status not optimal")
        ax.set_xscale("log")
        if any(line.get_xydata().size for line in ax.get_lines()) or ax.collections:
            ax.set_yscale("log")
            _plain_log_labels(ax.yaxis)
        ax.set_xlabel("epoch start t_e (steps)")
        ax.set_ylabel("solve time per epoch (s)")
        ax.set_title((f"{title}: " if title else "") + "solve time per epoch (dots: every epoch of every seed;"
                     " line: median per time bin)", fontsize=8.5)
        ax.grid(True, which="major", alpha=0.25)
        notes = []
        if unsolved:
            notes.append(f"{_plural(unsolved, 'epoch')} without a solve (time 0) not shown")
        if bad:
            notes.append(f"{_plural(bad, 'epoch')} with a solver status other than optimal (crosses)")
        _note(ax, notes)
        handles, labels = _dedupe(ax)
        if handles:
            ax.legend(handles, labels, fontsize=7, loc="best", framealpha=0.85)
    limits = [ax.get_ylim() for ax in time_axes if ax.get_yscale() == "log"]
    if len(limits) > 1:  # one time scale for every panel, so the configurations compare across panels
        for ax in time_axes:
            if ax.get_yscale() == "log":
                ax.set_ylim(min(lim[0] for lim in limits), max(lim[1] for lim in limits))
    # sources: one stacked bar per configuration
    bars = fig.add_subplot(grid[:, 1])
    sources = _source_order(groups)
    ordered = [c for _, cs in view.panels for c in cs]
    y = np.arange(len(ordered))[::-1]
    left = np.zeros(len(ordered))
    shares = np.array([source_shares(groups[c.position], sources) for c in ordered]).reshape(len(ordered), len(sources))
    for k, source in enumerate(sources):
        bars.barh(y, shares[:, k], left=left, color=_SOURCE_COLOURS.get(source, "0.6"), edgecolor="white", lw=0.5,
                  label=_SOURCE_TEXT.get(source, source), height=0.7)
        left += shares[:, k]
    for position, c in zip(y, ordered):
        epochs = [len(trace.epochs) for trace in groups[c.position].traces]
        bars.text(1.01, position, f"{np.mean(epochs):.3g}", va="center", ha="left", fontsize=7)
    bars.text(1.01, len(ordered) - 0.35, "epochs\nper run", va="bottom", ha="left", fontsize=7)
    bars.set_yticks(y, [_shorten(c.label, 48) for c in ordered], fontsize=7)
    bars.set_xlim(0, 1)
    bars.set_ylim(-0.6, len(ordered) - 0.4)
    bars.set_xlabel("share of epochs (per run, mean over seeds)")
    bars.set_title("where each epoch's policy came from", fontsize=9)
    handles, labels = bars.get_legend_handles_labels()
    fig.legend(handles, [f"policy source: {label}" if i == 0 else label for i, label in enumerate(labels)],
               loc="outside lower right", ncols=min(len(labels), 3), fontsize=7.5, frameon=False)
    fig.suptitle(f"{view.head} — solver time and policy source per epoch ({view.seeds_text})", fontsize=10)
    Canvas(fig)
    return fig


def _dedupe(ax) -> tuple[list, list[str]]:
    seen: dict[str, Any] = {}
    for handle, label in zip(*ax.get_legend_handles_labels()):
        seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


# -- files -----------------------------------------------------------------------------------------------------------
def _save(figure, path: Path) -> Path:
    """Render ``figure`` to PNG and write it atomically."""
    from .summary import write_atomic

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return write_atomic(path, buffer.getvalue())


def setting_figures(groups: Sequence["ConfigurationRuns"], frontier: bool = True,
                    epochs: bool = True) -> Iterator[tuple[str, Any]]:
    """``(file name, Figure)`` for every figure of one setting, built one at a time (see the module docstring)."""
    view = setting_view(groups)
    if frontier:
        yield f"{view.name}-frontier.png", frontier_figure(view.groups)
    for kind in ("objective", "regret"):
        yield f"{view.name}-{kind}.png", curve_figure(view, kind)
    side = curve_figure(view, "constraints")
    if side is not None:
        yield f"{view.name}-{'constraints' if view.n_constraints else 'costs'}.png", side
    yield f"{view.name}-overview.png", curve_figure(view, "overview")
    if epochs:
        figure = epochs_figure(view)
        if figure is not None:
            yield f"{view.name}-epochs.png", figure


def _by_setting(groups: Sequence["ConfigurationRuns"]) -> list[list["ConfigurationRuns"]]:
    ordered: dict[str, list] = {}
    for group in groups:
        if group is None or not group.traces:
            continue
        ordered.setdefault(getattr(group.setting, "name", str(group.setting)), []).append(group)
    return list(ordered.values())


def plot_study(groups: Sequence["ConfigurationRuns"], out_dir: str | Path) -> list[Path]:
    """Write every figure of a study under ``out_dir``; return the paths (see the module docstring).

    Configurations of different settings never share a figure. Configurations
    without finished runs are left out.

    Raises
    ------
    CurloptError
        If matplotlib is not installed.
    """
    _matplotlib()
    out_dir = Path(out_dir)
    paths: list[Path] = []
    for members in _by_setting(groups):
        for name, figure in setting_figures(members):
            paths.append(_save(figure, out_dir / name))
    return paths


# -- the reproduction sweep (until ``reproduce`` runs as a study) ----------------------------------------------------
def _view_from_curves(name: str, curves: Sequence[Curves], constraint_names: Sequence[str] = (), subtitle: str = "",
                      cost_names: Sequence[str] = ()) -> SettingView:
    view = SettingView(name, _clean(subtitle), list(curves), list(constraint_names), list(cost_names))
    _style_view(view)
    return view


def _write_curve_figures(view: SettingView, out_dir: Path) -> list[Path]:
    paths = []
    for kind in ("objective", "regret"):
        paths.append(_save(curve_figure(view, kind), out_dir / f"{view.name}-{kind}.png"))
    side = curve_figure(view, "constraints")
    if side is not None:
        paths.append(_save(side, out_dir / f"{view.name}-{'constraints' if view.n_constraints else 'costs'}.png"))
    paths.append(_save(curve_figure(view, "overview"), out_dir / f"{view.name}-overview.png"))
    return paths


def plot_setting(name: str, curves: Sequence[Curves], out_dir: str | Path, constraint_names: Sequence[str] = (),
                 subtitle: str = "", cost_names: Sequence[str] = ()) -> list[Path]:
    """Write the objective, regret, constraint (or cost) and overview figures of one setting's curves."""
    _matplotlib()
    return _write_curve_figures(_view_from_curves(name, curves, constraint_names, subtitle, cost_names), Path(out_dir))


def plot_experiment(experiment: "Experiment", traces: Sequence[tuple["Task", "Trace"]], out_dir: str | Path) -> list[Path]:
    """The curve figures of a reproduction sweep (objective, regret, constraints or costs, overview per setting)."""
    from .summary import group_traces

    _matplotlib()
    by_setting: dict[str, list[Curves]] = {}
    settings = {}
    for setting, algorithm, members in group_traces(experiment, traces):
        settings[setting.name] = setting
        c = curves_from_traces(algorithm.label, None, [trace for _, trace in members])
        c.algorithm = algorithm.key
        c.algorithm_label = algorithm.label
        by_setting.setdefault(setting.name, []).append(c)
    paths: list[Path] = []
    for name, curves in by_setting.items():
        setting = settings[name]
        names, cost_names = _names(setting)
        paths += _write_curve_figures(_view_from_curves(name, curves, names, setting.label, cost_names), Path(out_dir))
    return paths

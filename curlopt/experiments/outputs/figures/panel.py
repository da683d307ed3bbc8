"""One curve panel: a quantity (objective, regret, a constraint, a cost) of some configurations against t.

:func:`draw_panel` draws the mean over seeds of every configuration as a line
and mean ± one sample standard deviation as a band, adds the reference line
of the quantity (the optimum, g = 0, or the fixed c/√t lines of slope −1/2),
chooses the y range from the curves after :func:`settle_time`, and writes in
the panel a note for what the picture would otherwise hide: clipped values,
bands or means a log axis cannot show, curves that coincide
(:data:`COINCIDE_TOLERANCE`) or nearly coincide once settled
(:data:`NEAR_TOLERANCE`). The legend helpers here are shared by the curve
figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..summary import significant
from .style import OPTIMUM_STYLE, SLOPE_STYLE, ZERO_STYLE, note, plain_log_labels, shorten, t_text
from .view import Curves, SettingView

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    from matplotlib.axes import Axes

__all__ = ["draw_panel", "Metric", "metrics", "side_metrics", "prepare", "limits", "union", "settle_time",
           "panel_legend", "figure_legend", "COINCIDE_TOLERANCE", "NEAR_TOLERANCE"]

#: curves closer than this fraction of the axis range everywhere are reported as identical
COINCIDE_TOLERANCE = 1e-9
#: curves closer than this fraction once settled (t ≥ settle_time) are reported as nearly identical
NEAR_TOLERANCE = 0.01
_MARKS_PER_CURVE = 8


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
class Metric:
    """A quantity drawn against t: its values per configuration, texts, axis scale and reference line."""

    key: str
    values: Callable[[Curves], np.ndarray]
    ylabel: str
    title: str
    log: bool = False
    reference: str = ""  # "optimum", "zero", "slope"


def metrics(view: SettingView) -> list[Metric]:
    """Every quantity of a setting: objective, regret, then its constraints (or its costs)."""
    result = [
        Metric("objective", lambda c: c.objective, "f(λ^(t))", "running average objective f(λ^(t))",
               reference="optimum"),
        Metric("regret", lambda c: c.regret, "R(t) = f(λ*) − f(λ^(t))", "regret R(t), log-log", log=True,
               reference="slope"),
    ]
    result += side_metrics(view)
    return result


def side_metrics(view: SettingView) -> list[Metric]:
    """One quantity per constraint g_m; for a setting without constraints, one per average cost ζ_i."""
    result = []
    if view.n_constraints:
        for m in range(view.n_constraints):
            name = view.constraint_names[m] if m < len(view.constraint_names) else ""
            title = f"constraint g_{m + 1}" + (f": {name}" if name else "")
            result.append(Metric(f"g{m + 1}", _constraint_values(m), f"g_{m + 1}(ζ^(t))",
                                 shorten(title), reference="zero"))
    elif view.curves:
        for i in range(view.curves[0].costs.shape[2]):
            name = view.cost_names[i] if i < len(view.cost_names) else ""
            title = f"average cost ζ_{i + 1}" + (f": {name}" if name else "") + " (no constraint)"
            result.append(Metric(f"cost{i + 1}", _cost_values(i), f"ζ_{i + 1}(t)", shorten(title)))
    return result


# -- notes -----------------------------------------------------------------------------------------------------------
def _constraint_values(m: int) -> Callable[[Curves], np.ndarray]:
    """The values of constraint ``m`` of some curves, per seed and time."""
    return lambda c: c.constraints[:, :, m]


def _cost_values(i: int) -> Callable[[Curves], np.ndarray]:
    """The values of average cost ``i`` of some curves, per seed and time."""
    return lambda c: c.costs[:, :, i]


def _legend_text(c: Curves, use_short: bool) -> str:
    text = (c.short or c.label) if use_short else c.label
    if c.infeasible:
        text += f"  [C(T) = {significant(c.violation_mean, 3)}]"
    return text


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
            notes.append(f"within {NEAR_TOLERANCE:.0%} of the axis range for t ≥ {t_text(after)}: "
                         + names(members, " ≈ "))
    return notes


def _range_notes(drawn: list[_Drawn], low: float, high: float, log: bool, metric: Metric) -> list[str]:
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
        notes.append(f"y axis clipped: values at t ≤ {t_text(max(outside_t))} leave the shown range")
    if band_below:
        notes.append("band's lower edge ≤ 0 at some t: drawn to the bottom of the log axis")
    if nonpositive:
        symbol = metric.ylabel.split("(")[0]
        notes.append(f"mean {symbol} ≤ 0 at some t: not drawn on the log axis")
    return notes


# -- y range ---------------------------------------------------------------------------------------------------------
def limits(drawn: list[_Drawn], log: bool, extra: Sequence[float] = ()) -> tuple[float, float] | None:
    """The y range of some drawn curves (means ± std from :func:`settle_time` on, and the ``extra`` values)."""
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


def prepare(curves: Sequence[Curves], metric: Metric) -> tuple[bool, list[_Drawn], tuple[float, float] | None]:
    """``(log axis?, the curves' means and stds, y limits)`` of one quantity for some configurations (no drawing)."""
    means = [_mean_std(metric.values(c)) for c in curves]
    log = metric.log and any(np.any(mean[np.isfinite(mean)] > 0) for mean, _ in means)
    drawn = [_Drawn(c, np.asarray(c.t), mean, std, np.where(mean > 0, mean, np.nan) if log else mean)
             for c, (mean, std) in zip(curves, means, strict=True)]
    extra: list[float] = []
    optimum = next((c.optimum for c in curves if c.optimum is not None), None)
    if metric.reference == "optimum" and optimum is not None:
        extra.append(optimum)
    if metric.reference == "zero":
        extra.append(0.0)
    return log, drawn, limits(drawn, log, extra)


def union(ranges: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    """The smallest range holding every known one (None when none is known)."""
    known = [lim for lim in ranges if lim is not None]
    if not known:
        return None
    return min(lim[0] for lim in known), max(lim[1] for lim in known)


# -- drawing ---------------------------------------------------------------------------------------------------------
def _slope_lines(ax: Axes, t_low: float, t_high: float, y_low: float, y_high: float) -> None:
    """Reference lines c/√t, c = 10^k, that cross the shown range (fixed: they do not depend on the data)."""
    # c/√t is in [y_low, y_high] for some t in [t_low, t_high] iff c in [y_low·√t_low, y_high·√t_high]
    k_low = math.floor(math.log10(y_low * math.sqrt(t_low)))
    k_high = math.ceil(math.log10(y_high * math.sqrt(t_high)))
    ref_t = np.geomspace(t_low, t_high, 60)
    first = True
    for k in range(k_low, k_high + 1):
        c = 10.0 ** k
        ax.plot(ref_t, c / np.sqrt(ref_t), gid=f"slope:{k}", zorder=1,
                label="c/√t, c = 10^k (slope −1/2)" if first else "_nolegend_", **SLOPE_STYLE)
        first = False


def _draw_curves(ax: Axes, drawn: list[_Drawn], use_short: bool) -> None:
    """The mean of every configuration as a line with markers, mean ± std as a band."""
    count = len(drawn)
    for index, d in enumerate(drawn):
        c = d.curve
        ax.plot(c.t, d.shown, color=c.color, ls=c.linestyle or "-", lw=1.5, marker=c.marker, ms=4.5,
                markevery=_marker_positions(c.t, index, count), mec=c.color, mfc="white" if c.infeasible else c.color,
                mew=1.1, label=_legend_text(c, use_short), gid=f"curve:{c.label}", zorder=3)
        if d.std is not None:
            ax.fill_between(c.t, d.mean - d.std, d.mean + d.std, color=c.color, alpha=0.09, lw=0,
                            gid=f"band:{c.label}", zorder=2)


def _reference_line(ax: Axes, curves: Sequence[Curves], metric: Metric) -> None:
    optimum = next((c.optimum for c in curves if c.optimum is not None), None)
    if metric.reference == "optimum" and optimum is not None:
        ax.axhline(optimum, label="optimum f(λ*)", gid="optimum", zorder=2.5, **OPTIMUM_STYLE)
    if metric.reference == "zero":
        ax.axhline(0.0, label="g = 0 (satisfied below)", gid="zero", zorder=2.5, **ZERO_STYLE)


def _set_range(ax: Axes, drawn: list[_Drawn], metric: Metric, log: bool, y_range: tuple[float, float] | None) -> None:
    """Axis scales and y range; on the regret's log axis, the slope lines across the shown range."""
    ax.set_xscale("log")
    if log:
        ax.set_yscale("log", nonpositive="clip")
        plain_log_labels(ax.yaxis)
    if y_range is not None:
        ax.set_ylim(*y_range)
    low, high = ax.get_ylim()
    if metric.reference == "slope" and log and drawn:
        t_all = np.concatenate([d.t for d in drawn]).astype(float)
        t_all = t_all[t_all > 0]
        if t_all.size:
            _slope_lines(ax, float(t_all.min()), float(t_all.max()), low, high)
            ax.set_ylim(low, high)


def draw_panel(ax: Axes, curves: Sequence[Curves], metric: Metric, use_short: bool = False, legend: bool = True,
               ylim: tuple[float, float] | None = None, log: bool | None = None) -> list[str]:
    """Draw one quantity for some configurations; return the notes written in the panel.

    ``ylim`` and ``log`` override the panel's own choice (panels of one row share them).
    """
    own_log, drawn, own_limits = prepare(curves, metric)
    if log is not None and log != own_log:
        own_log = log
        drawn = [replace(d, shown=np.where(d.mean > 0, d.mean, np.nan) if log else d.mean) for d in drawn]
    log = own_log
    notes: list[str] = []
    if metric.log and not log:
        notes.append("no positive mean: linear axis")
    _draw_curves(ax, drawn, use_short)
    _reference_line(ax, curves, metric)
    _set_range(ax, drawn, metric, log, ylim if ylim is not None else own_limits)
    low, high = ax.get_ylim()
    notes += _range_notes(drawn, low, high, log, metric)
    notes += _coincidence_notes(drawn, low, high, log, use_short)
    ax.set_xlabel("t (steps)")
    ax.set_ylabel(metric.ylabel)
    ax.set_title(metric.title, fontsize=9.5)
    ax.grid(True, which="major", alpha=0.25)
    note(ax, notes)
    if legend:
        panel_legend(ax, [ax])
    return notes


# -- legends ---------------------------------------------------------------------------------------------------------
def _is_infeasible_handle(handle: Any) -> bool:  # any legend handle: a line or a collection
    try:
        return handle.get_marker() not in (None, "None", "") and handle.get_markerfacecolor() in ("white", "w") \
            and str(handle.get_gid() or "").startswith("curve:")
    except AttributeError:
        return False


def _collect_handles(axes: Sequence[Axes]) -> tuple[list[Any], list[str]]:
    seen: dict[str, Any] = {}
    order: list[str] = []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in seen:
                seen[label] = handle
                order.append(label)
    # curves first, then reference lines
    curves = [label for label in order if str(seen[label].get_gid() or "").startswith("curve:")]
    others = [label for label in order if label not in curves]
    labels = curves + others
    return [seen[label] for label in labels], labels


def _legend_entries(axes: Sequence[Axes]) -> tuple[list[Any], list[str]]:
    """The entries of some panels, curves first, with a key to hollow markers when one is hollow."""
    handles, labels = _collect_handles(axes)
    if any(_is_infeasible_handle(h) for h in handles):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.3", marker="o", mfc="white", mec="0.3", ls="none"))
        labels.append("hollow markers: mean C(T) > 0")
    return handles, labels


def panel_legend(ax: Axes, axes: Sequence[Axes], below: bool = False) -> None:
    """The legend of some panels in ``ax`` (in the panel, or under it with ``below``)."""
    handles, labels = _legend_entries(axes)
    if below:
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=1,
                  frameon=False)
    else:
        ax.legend(handles, labels, fontsize=7, loc="best", framealpha=0.85)


def figure_legend(fig: matplotlib.figure.Figure, axes: Sequence[Axes]) -> None:
    """The legend of some panels under the whole figure."""
    handles, labels = _legend_entries(axes)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize=8, frameon=False)

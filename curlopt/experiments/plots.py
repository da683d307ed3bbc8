"""Figures of a sweep, in the style of the paper: running averages against time, one colour per algorithm.

For every setting (model configuration) of an experiment, under ``figures/``:

``<setting>-objective.png``
    the running average objective f(λ^(t)) against t (log axis), with the
    optimum f(λ*) as a dashed black line;
``<setting>-regret.png``
    the regret R(t) = f(λ*) − f(λ^(t)) against t on log-log axes, with a dotted
    grey 1/√t reference slope (points where the mean regret is ≤ 0 are not drawn
    on the log axis);
``<setting>-constraints.png``
    one panel per constraint g_m(ζ^(t)) against t with the zero line (below it
    the constraint holds); for a setting without constraints,
    ``<setting>-costs.png`` shows the average costs ζ_i(t) instead;
``<setting>-overview.png``
    all of the above panels in one figure.

Every curve is the mean over seeds with a ± one standard deviation band. The
checkpoint times are the same for every seed of a setting (same T), so the
average is taken point by point; a checkpoint where some seed's value is not
finite (e.g. ln 0 before a client was first served) is left out.

matplotlib is imported only when a figure is drawn, and only through
:class:`matplotlib.figure.Figure` with the Agg canvas: no pyplot, no change of
the process-wide backend (``pip install 'curlopt[plot]'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import CurloptError

if TYPE_CHECKING:  # pragma: no cover
    from .sweep import Experiment, Task
    from .trace import Trace

__all__ = ["Curves", "curves_from_traces", "plot_setting", "plot_experiment"]

DPI = 150
SIZE = (7.5, 4.8)


@dataclass
class Curves:
    """One algorithm on one setting: checkpoint columns stacked over seeds (seed × time [× m])."""

    label: str
    color: Any
    t: np.ndarray
    objective: np.ndarray
    regret: np.ndarray
    constraints: np.ndarray
    costs: np.ndarray
    optimum: float | None

    @property
    def seeds(self) -> int:
        return self.objective.shape[0]


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CurloptError("figures need matplotlib: pip install 'curlopt[plot]'.") from None
    return Figure, FigureCanvasAgg


def curves_from_traces(label: str, color: Any, traces: Sequence["Trace"]) -> Curves:
    """Stack the traces of one algorithm (same checkpoint times, as in a sweep)."""
    if not traces:
        raise CurloptError(f"no traces to plot for {label}.")
    t = np.asarray(traces[0].checkpoints["t"])
    for trace in traces[1:]:
        if not np.array_equal(trace.checkpoints["t"], t):
            raise CurloptError(f"the traces of {label} have different checkpoint times (different T); plot them apart.")
    stack = lambda key: np.stack([np.asarray(tr.checkpoints[key], dtype=float) for tr in traces])  # noqa: E731
    optimum = traces[0].optimum.get("objective") if traces[0].optimum else None
    return Curves(label, color, t, stack("objective"), stack("regret"), stack("constraints"), stack("costs"),
                  None if optimum is None else float(optimum))


def _mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Point-wise mean and sample std over seeds (axis 0); NaN where a seed is not finite."""
    finite = np.all(np.isfinite(values), axis=0)
    safe = np.where(finite, values, 0.0)
    mean = safe.mean(axis=0)
    std = safe.std(axis=0, ddof=1) if values.shape[0] > 1 else np.zeros_like(mean)
    return np.where(finite, mean, np.nan), np.where(finite, std, np.nan)


def _settle_time(t: np.ndarray) -> float:
    """Times after this set the y range (the first few running averages swing widely)."""
    return float(min(100.0, t[-1] / 10.0))


def _limits(ax, curves_values: list[tuple[np.ndarray, np.ndarray, np.ndarray]], extra: Sequence[float] = ()) -> None:
    lows, highs = list(extra), list(extra)
    for t, mean, std in curves_values:
        keep = (t >= _settle_time(t)) & np.isfinite(mean)
        if np.any(keep):
            lows.append(float(np.min(mean[keep] - std[keep])))
            highs.append(float(np.max(mean[keep] + std[keep])))
    if lows and highs:
        low, high = min(lows), max(highs)
        pad = 0.06 * (high - low) if high > low else max(abs(high), 1.0) * 0.05
        ax.set_ylim(low - pad, high + pad)


def _band(ax, t, mean, std, color, label) -> None:
    ax.plot(t, mean, color=color, label=label, lw=1.6)
    ax.fill_between(t, mean - std, mean + std, color=color, alpha=0.18, lw=0)


def _style(ax, ylabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel("t (steps)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)


def draw_objective(ax, curves: Sequence[Curves], legend: bool = True) -> None:
    """Running average objective with the optimum line."""
    values = []
    for c in curves:
        mean, std = _mean_std(c.objective)
        _band(ax, c.t, mean, std, c.color, c.label)
        values.append((c.t, mean, std))
    optimum = next((c.optimum for c in curves if c.optimum is not None), None)
    if optimum is not None:
        ax.axhline(optimum, color="black", ls="--", lw=1.2, label="optimum f(λ*)")
    _limits(ax, values, [] if optimum is None else [optimum])
    _style(ax, "f(λ^(t))", "running average objective")
    if legend:
        ax.legend(fontsize=8, loc="best")


def draw_regret(ax, curves: Sequence[Curves], legend: bool = True) -> None:
    """Regret on log-log axes (non-positive means are not drawn) with a 1/√t reference slope."""
    finals, positives = [], []
    for c in curves:
        mean, std = _mean_std(c.regret)
        shown = np.where(mean > 0, mean, np.nan)
        low = np.where(mean > 0, np.maximum(mean - std, mean * 0.05), np.nan)
        ax.plot(c.t, shown, color=c.color, label=c.label, lw=1.6)
        ax.fill_between(c.t, low, shown + np.nan_to_num(std), color=c.color, alpha=0.18, lw=0)
        keep = (c.t >= _settle_time(c.t)) & np.isfinite(shown)
        positives.extend(shown[keep].tolist())
        if np.isfinite(shown[-1]):
            finals.append((float(c.t[-1]), float(shown[-1])))
    ax.set_yscale("log")
    if finals:
        t_end = finals[0][0]
        anchor = math.exp(np.mean([math.log(v) for _, v in finals]))
        ref_t = np.geomspace(max(1.0, _settle_time(curves[0].t), t_end / 1000.0), t_end, 50)
        ax.plot(ref_t, anchor * np.sqrt(t_end / ref_t), color="grey", ls=":", lw=1.4, label="∝ 1/√t")
    if positives:
        ax.set_ylim(min(positives) / 3.0, max(positives) * 3.0)
    _style(ax, "R(t) = f(λ*) − f(λ^(t))", "regret (log-log; where the mean is ≤ 0 it is not drawn)")
    if legend:
        ax.legend(fontsize=8, loc="best")


def draw_constraint(ax, curves: Sequence[Curves], m: int, name: str = "", legend: bool = True) -> None:
    """g_m(ζ^(t)) with the zero line (the constraint holds below it)."""
    values = []
    for c in curves:
        mean, std = _mean_std(c.constraints[:, :, m])
        _band(ax, c.t, mean, std, c.color, c.label)
        values.append((c.t, mean, std))
    ax.axhline(0.0, color="black", ls="--", lw=1.2, label="g = 0 (feasible below)")
    _limits(ax, values, [0.0])
    title = f"constraint g_{m + 1}" + (f": {name}" if name else "")
    if len(title) > 60:
        title = title[:59] + "…"
    _style(ax, f"g_{m + 1}(ζ^(t))", title)
    if legend:
        ax.legend(fontsize=8, loc="best")


def draw_cost(ax, curves: Sequence[Curves], i: int, name: str = "", legend: bool = True) -> None:
    """Average cost ζ_i(t) (for settings without constraints)."""
    values = []
    for c in curves:
        mean, std = _mean_std(c.costs[:, :, i])
        _band(ax, c.t, mean, std, c.color, c.label)
        values.append((c.t, mean, std))
    _limits(ax, values)
    _style(ax, f"ζ_{i + 1}(t)", f"average cost ζ_{i + 1}" + (f": {name}" if name else "") + " (no constraint)")
    if legend:
        ax.legend(fontsize=8, loc="best")


def _save(figure, canvas_class, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas_class(figure)
    figure.savefig(path, dpi=DPI)
    return path


def _panels(curves: Sequence[Curves], names: Sequence[str], cost_names: Sequence[str] = ()) -> list:
    n_constraints = curves[0].constraints.shape[2]
    panels: list = []
    if n_constraints:
        panels += [lambda ax, legend, m=m: draw_constraint(ax, curves, m, names[m] if m < len(names) else "", legend)
                   for m in range(n_constraints)]
    else:
        panels += [lambda ax, legend, i=i: draw_cost(ax, curves, i, cost_names[i] if i < len(cost_names) else "", legend)
                   for i in range(curves[0].costs.shape[2])]
    return panels


def plot_setting(name: str, curves: Sequence[Curves], out_dir: str | Path, constraint_names: Sequence[str] = (),
                 subtitle: str = "", cost_names: Sequence[str] = ()) -> list[Path]:
    """Write the objective, regret, constraint (or cost) and overview figures of one setting."""
    Figure, Canvas = _matplotlib()
    out_dir = Path(out_dir)
    seeds = sorted({c.seeds for c in curves})
    seed_text = f"{seeds[0]} seeds" if len(seeds) == 1 else f"{min(seeds)}–{max(seeds)} seeds"
    head = f"{name}{(': ' + subtitle) if subtitle else ''} — mean ± std over {seed_text}"
    paths = []

    fig = Figure(figsize=SIZE, layout="constrained")
    draw_objective(fig.add_subplot(), curves)
    fig.suptitle(head, fontsize=10)
    paths.append(_save(fig, Canvas, out_dir / f"{name}-objective.png"))

    fig = Figure(figsize=SIZE, layout="constrained")
    draw_regret(fig.add_subplot(), curves)
    fig.suptitle(head, fontsize=10)
    paths.append(_save(fig, Canvas, out_dir / f"{name}-regret.png"))

    panels = _panels(curves, constraint_names, cost_names)
    if panels:
        kind = "constraints" if curves[0].constraints.shape[2] else "costs"
        fig = Figure(figsize=(SIZE[0] * min(len(panels), 2) * 0.75 + 1.5, SIZE[1]), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for index, (ax, draw) in enumerate(zip(axes, panels)):
            draw(ax, index == 0)
        fig.suptitle(head, fontsize=10)
        paths.append(_save(fig, Canvas, out_dir / f"{name}-{kind}.png"))

    every = [lambda ax, legend: draw_objective(ax, curves, legend), lambda ax, legend: draw_regret(ax, curves, legend)]
    every += panels
    cols = 2
    rows = math.ceil(len(every) / cols)
    fig = Figure(figsize=(11, 3.7 * rows + 0.8), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).reshape(-1)
    for index, ax in enumerate(axes):
        if index < len(every):
            every[index](ax, False)
        else:
            ax.set_visible(False)
    handles, labels = {}, []
    for ax in axes[: len(every)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    fig.legend([handles[label] for label in labels], labels, loc="outside lower center", ncols=min(len(labels), 4),
               fontsize=9, frameon=False)
    fig.suptitle(head, fontsize=11)
    paths.append(_save(fig, Canvas, out_dir / f"{name}-overview.png"))
    return paths


def plot_experiment(experiment: "Experiment", traces: Sequence[tuple["Task", "Trace"]], out_dir: str | Path) -> list[Path]:
    """All figures of a sweep (see the module docstring); one colour per algorithm, the same in every figure."""
    from .summary import group_traces

    _matplotlib()
    from matplotlib import colormaps

    palette = colormaps["tab10"].colors
    colours = {spec.key: palette[i % len(palette)] for i, spec in enumerate(experiment.algorithms)}
    by_setting: dict[str, list[Curves]] = {}
    settings = {}
    for setting, algorithm, members in group_traces(experiment, traces):
        settings[setting.name] = setting
        by_setting.setdefault(setting.name, []).append(
            curves_from_traces(algorithm.label, colours[algorithm.key], [trace for _, trace in members]))
    paths: list[Path] = []
    for name, curves in by_setting.items():
        setting = settings[name]
        try:
            names = setting.constraint_names()
            cost_names = list(setting.cost_names)
        except Exception:  # pragma: no cover - names are decoration only
            names, cost_names = [], []
        paths += plot_setting(name, curves, out_dir, names, setting.label, cost_names)
    return paths

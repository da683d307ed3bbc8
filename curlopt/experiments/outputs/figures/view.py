"""What the figures of one setting draw: the configurations' curves stacked over seeds, styled and split into panels.

:func:`setting_view` turns the configurations of one setting into a
:class:`SettingView`: one :class:`Curves` per configuration (checkpoint
columns stacked over seeds), each with its colour, line style and marker, and
the panels that share them. With at most :data:`SINGLE_PANEL_MAX`
configurations every curve shares one panel per quantity; with more, one
column of panels per algorithm, an algorithm with more than :data:`MAX_LINES`
configurations split into columns of at most that many (small consecutive
groups of different algorithms share a column).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ....errors import CurloptError
from .style import LINESTYLES, MARKERS, PALETTE, clean, seed_text

if TYPE_CHECKING:  # pragma: no cover
    from ...simulation.trace import Trace
    from ..aggregate import RunsAggregate
    from ..runs import ConfigurationRuns

__all__ = ["Curves", "curves_from_traces", "curves_from_aggregate", "SettingView", "setting_view", "short_label", "algorithm_label",
           "SINGLE_PANEL_MAX", "MAX_LINES"]

#: a setting with at most this many configurations draws its curves in one panel per quantity
SINGLE_PANEL_MAX = 8
#: otherwise, at most this many curves per panel (small multiples)
MAX_LINES = 6


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


def curves_from_traces(label: str, color: Any, traces: Sequence[Trace]) -> Curves:
    """Stack the traces of one configuration (same checkpoint times, as in a study)."""
    from ..aggregate import aggregate_runs

    if not traces:
        raise CurloptError(f"no traces to plot for {label}.")
    return curves_from_aggregate(label, color, aggregate_runs(traces))


def curves_from_aggregate(label: str, color: Any, runs: RunsAggregate) -> Curves:
    """The curves of one configuration from its :class:`~curlopt.experiments.outputs.aggregate.RunsAggregate`."""
    if not runs.runs:
        raise CurloptError(f"no traces to plot for {label}.")
    if not runs.same_times:
        raise CurloptError(f"the traces of {label} have different checkpoint times (different T); plot them apart.")
    t = np.asarray(runs.times)
    optimum = runs.optimum.get("objective") if runs.optimum else None
    violation = runs.column("violation")
    constraints = runs.column("constraints")
    if constraints.ndim == 2:  # no constraints: (seeds, time) -> (seeds, time, 0)
        constraints = constraints.reshape(constraints.shape[0], len(t), -1)
    costs = runs.column("costs")
    if costs.ndim == 2:
        costs = costs.reshape(costs.shape[0], len(t), -1)
    return Curves(label, color, t, runs.column("objective"), runs.column("regret"), constraints, costs,
                  None if optimum is None else float(optimum), final_violation=violation[:, -1])


def _option_text(name: str, value: Any) -> str:
    try:
        from ...study.planning import option_label

        return option_label(name, value)
    except Exception:  # planning is optional here: a plain name=value will do
        return f"{name}={value}"


def short_label(group: ConfigurationRuns) -> str:
    """The varied options of a configuration, e.g. ``radius=experiment, K_ε=3`` (empty without a grid)."""
    return ", ".join(_option_text(name, value) for name, value in group.varied.items())


def algorithm_label(group: ConfigurationRuns) -> str:
    """The configuration's label without its varied options (``UC-CURL``)."""
    short = short_label(group)
    if short and group.label.endswith(f" ({short})"):
        return group.label[: -len(short) - 3]
    return group.label if not short else group.algorithm


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
        return seed_text([c.seeds for c in self.curves])


def _names(setting: Any) -> tuple[list[str], list[str]]:
    try:
        names = [clean(str(name)) for name in setting.constraint_names()]
    except Exception:  # names are decoration only
        names = []
    try:
        cost_names = [clean(str(name)) for name in getattr(setting, "cost_names", ()) or ()]
    except Exception:  # pragma: no cover
        cost_names = []
    return names, cost_names


def _chunks(curves: list[Curves]) -> list[list[Curves]]:
    """The configurations of each panel (see the module docstring)."""
    if len(curves) <= SINGLE_PANEL_MAX:
        return [curves]
    by_algorithm: dict[str, list[Curves]] = {}
    for c in curves:
        by_algorithm.setdefault(c.algorithm or c.label, []).append(c)
    pieces: list[list[Curves]] = []
    for members in by_algorithm.values():
        parts = math.ceil(len(members) / MAX_LINES)
        size = math.ceil(len(members) / parts)
        pieces += [members[i: i + size] for i in range(0, len(members), size)]
    chunks: list[list[Curves]] = []
    for piece in pieces:  # small consecutive pieces share a panel
        if chunks and len(chunks[-1]) + len(piece) <= MAX_LINES and len(piece) < MAX_LINES \
                and len(chunks[-1]) < MAX_LINES:
            chunks[-1] = chunks[-1] + piece
        else:
            chunks.append(list(piece))
    return chunks


def _panels(curves: list[Curves]) -> list[tuple[str, list[Curves]]]:
    """Split configurations into panels of curves (see the module docstring) and give each its style."""
    chunks = _chunks(curves)
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


def setting_view(groups: Sequence[ConfigurationRuns]) -> SettingView:
    """The curves of one setting's configurations (in the given order), styled and split into panels."""
    groups = [g for g in groups if g is not None and g.traces]
    if not groups:
        raise CurloptError("no finished runs to plot.")
    names = {getattr(g.setting, "name", str(g.setting)) for g in groups}
    if len(names) > 1:
        raise CurloptError(f"one setting per figure, got {sorted(names)}.")
    curves = []
    for position, group in enumerate(groups):
        c = curves_from_aggregate(group.label, None, group.aggregated())
        c.position = position
        c.short = short_label(group)
        c.algorithm = group.algorithm
        c.algorithm_label = algorithm_label(group)
        curves.append(c)
    setting = groups[0].setting
    constraint_names, cost_names = _names(setting)
    view = SettingView(getattr(setting, "name", str(setting)), clean(getattr(setting, "label", "") or ""), curves,
                       constraint_names, cost_names, list(groups))
    _style_view(view)
    return view


def _style_view(view: SettingView) -> None:
    view.panels = _panels(view.curves)
    in_panels = [c for _, cs in view.panels for c in cs]  # every curve once, each styled
    styled = {id(original): c for original, c in zip(view.curves, in_panels, strict=True)}
    view.curves = [styled[id(c)] for c in view.curves]

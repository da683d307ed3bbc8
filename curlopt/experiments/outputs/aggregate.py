"""One configuration's finished runs, reduced in one pass to what its outputs need: :class:`RunsAggregate`.

The summary tables, the checkpoint table, the figures and the HTML report of a study read a configuration's runs
through its aggregate only (:meth:`~curlopt.experiments.outputs.runs.ConfigurationRuns.aggregated`). The aggregate
is built by :func:`aggregate_runs` in one pass over the runs: each trace is read (from its file, in a study), its
numbers taken, and let go before the next is read. What is kept is numbers, in arrays:

* per seed: the final values of the summary (f(λ^(T)), R(T), each g_m, C(T), counts of epochs, wall time), the
  shares of violating epochs and steps, the anytime view, the mean unreached count and the epochs per policy
  source;
* per seed and checkpoint time: the curves (objective, regret, violation, constraints, costs, and the share of
  violating steps up to each time) when every seed has the same checkpoint times, as a study's runs do;
* per epoch of every seed: its start, solve time, policy source, solver status and largest exact g_m (the dots of
  the epoch figures), and the first :data:`MAX_FAILURE_ROWS` epochs whose policy did not come from an optimal
  solve (the report's list).

So no trace, and no Python object per run or per epoch, outlives the pass, and the outputs read every run file once
whatever their number. Every statistic is computed afterwards by the same functions, on the same values in the
same order, as when the traces were held: the outputs are the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...agents.base import PlanSource
from ...errors import CurloptError

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace

__all__ = ["RunsAggregate", "AggregateBuilder", "aggregate_runs", "MAX_FAILURE_ROWS", "FAILED_SOURCES", "CURVE_COLUMNS"]

#: epochs whose policy did not come from the ε-tight program as planned (listed in the report)
FAILED_SOURCES = tuple(source.value for source in (PlanSource.FALLBACK, PlanSource.LEAST_VIOLATION, PlanSource.KEPT,
                                                   PlanSource.UNIFORM))
#: failed or not-optimal epochs kept per configuration for the report's list (it shows at most 50, then a count)
MAX_FAILURE_ROWS = 50
#: the checkpoint columns stacked over seeds for the curves and the checkpoint table
CURVE_COLUMNS = ("objective", "regret", "violation", "constraints", "costs")


@dataclass
class RunsAggregate:
    """One configuration's runs as the outputs read them (see the module docstring).

    Per-seed arrays are in the order of the runs (sorted by seed in a study). ``curves`` holds one array per
    column of :data:`CURVE_COLUMNS` (seed × time [× m]) and ``violating_steps`` the share of violating steps up to
    each time (seed × time), or is empty when the seeds' checkpoint times differ (``same_times`` False). The epoch
    arrays run over every epoch of every seed, run after run; ``sources`` and ``statuses`` name the codes of
    ``epoch_source`` and ``epoch_status``.
    """

    seeds: np.ndarray
    steps: np.ndarray
    objective: np.ndarray
    regret: np.ndarray
    violation: np.ndarray
    constraints: np.ndarray  #: seed × M, g_m(ζ^(T))
    epochs: np.ndarray
    fallback_epochs: np.ndarray
    failed_epochs: np.ndarray
    wall_time: np.ndarray
    optimum_value: float | None  #: f(λ*) of the first run (its summary's ``optimum``)
    optimum_infeasible: bool  #: any run's optimum is the one without constraints
    optimum: dict[str, Any] | None  #: the first run's optimum record
    first_meta: dict[str, Any]  #: the first run's ``trigger`` and ``backend`` (when it records them)
    epoch_share: np.ndarray
    step_share: np.ndarray
    anytime_share: np.ndarray
    anytime_never: np.ndarray
    unreached: np.ndarray
    times: np.ndarray  #: the first run's checkpoint times
    same_times: bool
    last_times: np.ndarray  #: each run's last checkpoint time
    constraint_columns: np.ndarray  #: each run's number of constraint columns
    curves: dict[str, np.ndarray]
    violating_steps: np.ndarray
    sources: list[str]
    statuses: list[str]
    source_counts: np.ndarray  #: seed × source, epochs per policy source
    epoch_start: np.ndarray
    epoch_solve_time: np.ndarray
    epoch_source: np.ndarray
    epoch_status: np.ndarray
    epoch_exact_max: np.ndarray  #: max_m of the epoch's exact g_m; NaN without an exact evaluation
    failure_rows: list[list[Any]]  #: (seed, epoch, start, source, status, message) of the first failed epochs
    failure_count: int
    curlopt_versions: set[str]
    backends: set[str]
    backend_versions: set[str]

    @property
    def runs(self) -> int:
        return int(self.seeds.size)

    def column(self, name: str) -> np.ndarray:
        """A curve column stacked over seeds (seed × time [× m]); only when the seeds share their checkpoint times."""
        if not self.same_times or name not in self.curves:
            raise CurloptError("the runs have different checkpoint times (different T); plot them apart.")
        return self.curves[name]

    def violating_shares(self) -> tuple[float, float]:
        """``violating_epoch_share`` and ``violating_step_share``: each run's share, averaged over the seeds (runs
        without an exact evaluation left out), as :func:`~curlopt.experiments.outputs.summary.violating_shares`."""
        from .summary import nan_mean

        return nan_mean(self.epoch_share), nan_mean(self.step_share)

    def source_shares(self, sources: Iterable[str]) -> np.ndarray:
        """Share of each source among a run's epochs, averaged over the seeds (runs without epochs left out)."""
        sources = list(sources)
        shares = []
        for row, total in zip(self.source_counts, self.epochs, strict=True):
            if not total:
                continue
            counts = np.array([row[self.sources.index(s)] if s in self.sources else 0 for s in sources], dtype=float)
            shares.append(counts / int(total))
        return np.mean(shares, axis=0) if shares else np.zeros(len(sources))


class AggregateBuilder:
    """Builds a :class:`RunsAggregate` from runs given one at a time (:meth:`add`), then :meth:`finish`."""

    def __init__(self) -> None:
        self._scalars: dict[str, list[Any]] = {name: [] for name in _SCALARS}
        self._constraints: list[list[float]] = []
        self._first: Trace | None = None
        self._first_meta: dict[str, Any] = {}
        self._infeasible = False
        self._times = np.zeros(0)
        self._same_times = True
        self._columns: dict[str, list[np.ndarray]] = {name: [] for name in CURVE_COLUMNS}
        self._violating: list[np.ndarray] = []
        self._sources: list[str] = []
        self._statuses: list[str] = []
        self._counts: list[dict[int, int]] = []
        self._epoch_parts: dict[str, list[np.ndarray]] = {name: [] for name in _EPOCH_ARRAYS}
        self._failures: list[list[Any]] = []
        self._failure_count = 0
        self._versions: set[str] = set()
        self._backends: set[str] = set()
        self._backend_versions: set[str] = set()
        self._optimum: tuple[float | None, dict[str, Any] | None] | None = None

    def add(self, trace: Trace) -> None:
        """Take what the outputs need from one run (the trace can be let go afterwards)."""
        from .summary import anytime_violation, epoch_violation_shares, mean_unreached

        meta = trace.meta if isinstance(trace.meta, dict) else {}
        summary = trace.summary()
        first = self._optimum is None
        if first:
            self._first_meta = {key: meta[key] for key in ("trigger", "backend") if key in meta}
            self._optimum = (summary["optimum"], trace.optimum)
        self._infeasible |= bool(summary["optimum_infeasible"])
        scalars = self._scalars
        scalars["seeds"].append(int(meta.get("seed", -1)))
        for name in ("steps", "objective", "regret", "violation", "epochs", "fallback_epochs", "failed_epochs",
                     "wall_time"):
            scalars[name].append(summary[name])
        self._constraints.append(summary["constraints"])
        epoch_share, step_share = epoch_violation_shares(trace)
        scalars["epoch_share"].append(epoch_share)
        scalars["step_share"].append(step_share)
        anytime_share, never = anytime_violation(trace)
        scalars["anytime_share"].append(anytime_share)
        scalars["anytime_never"].append(never)
        scalars["unreached"].append(mean_unreached(trace))
        self._versions.add(str(meta.get("curlopt_version", "?")))
        self._backends.add(str(meta.get("backend")))
        if meta.get("backend_version"):
            self._backend_versions.add(f"{meta['backend']} ({meta['backend_version']})")
        self._checkpoints(trace, first)
        self._epochs(trace)

    def _checkpoints(self, trace: Trace, first: bool) -> None:
        from .checkpoints import violating_step_shares

        times = np.asarray(trace.checkpoints["t"])
        self._scalars["last_times"].append(float(times[-1]))
        self._scalars["constraint_columns"].append(int(trace.checkpoints["constraints"].shape[1]))
        if first:
            self._times = times
        elif self._same_times and not np.array_equal(times, self._times):
            self._same_times = False  # no curves: the figures and the checkpoint table refuse or skip them
            self._columns = {name: [] for name in CURVE_COLUMNS}
            self._violating = []
        if not self._same_times:
            return
        for name in CURVE_COLUMNS:
            self._columns[name].append(np.asarray(trace.checkpoints[name], dtype=float))
        self._violating.append(violating_step_shares(trace, self._times))

    def _epochs(self, trace: Trace) -> None:
        epochs = trace.epochs
        counts: dict[int, int] = {}
        sources, statuses, exact = [], [], []
        for epoch in epochs:
            source = _code(self._sources, epoch.source)
            counts[source] = counts.get(source, 0) + 1
            sources.append(source)
            statuses.append(_code(self._statuses, epoch.status or ""))
            values = epoch.exact_constraints
            array = np.asarray(values if values is not None else [], dtype=float)
            known = values is not None and array.size > 0 and not np.any(np.isnan(array))
            exact.append(float(np.max(array)) if known else np.nan)
            if epoch.source in FAILED_SOURCES or epoch.status not in ("", "optimal"):
                self._failure_count += 1
                if len(self._failures) < MAX_FAILURE_ROWS:
                    self._failures.append([trace.meta.get("seed"), epoch.index, int(epoch.start), epoch.source,
                                           epoch.status or "", " ".join((epoch.message or "").split())])
        self._counts.append(counts)
        parts = self._epoch_parts
        parts["start"].append(np.array([int(epoch.start) for epoch in epochs], dtype=np.int64))
        parts["solve_time"].append(np.array([float(epoch.solve_time) for epoch in epochs], dtype=float))
        parts["source"].append(np.array(sources, dtype=np.int16))
        parts["status"].append(np.array(statuses, dtype=np.int16))
        parts["exact_max"].append(np.array(exact, dtype=float))

    def finish(self) -> RunsAggregate:
        """The aggregate of the runs added."""
        scalars = {name: np.asarray(values, dtype=_SCALARS[name]) for name, values in self._scalars.items()}
        runs = scalars["seeds"].size
        curves: dict[str, np.ndarray] = {}
        violating = np.zeros((0, 0))
        if runs and self._same_times:
            curves = {name: np.stack(columns) for name, columns in self._columns.items()}
            violating = np.stack(self._violating)
        counts = np.zeros((len(self._counts), len(self._sources)), dtype=np.int64)
        for row, mine in enumerate(self._counts):
            for code, count in mine.items():
                counts[row, code] = count
        epoch = {name: np.concatenate(parts) if parts else np.zeros(0, dtype=_EPOCH_ARRAYS[name])
                 for name, parts in self._epoch_parts.items()}
        optimum_value, optimum = self._optimum if self._optimum is not None else (None, None)
        return RunsAggregate(
            seeds=scalars["seeds"], steps=scalars["steps"], objective=scalars["objective"], regret=scalars["regret"],
            violation=scalars["violation"],
            constraints=np.asarray(self._constraints, dtype=float).reshape(runs, -1) if runs else np.zeros((0, 0)),
            epochs=scalars["epochs"], fallback_epochs=scalars["fallback_epochs"],
            failed_epochs=scalars["failed_epochs"], wall_time=scalars["wall_time"],
            optimum_value=None if optimum_value is None else float(optimum_value),
            optimum_infeasible=self._infeasible, optimum=optimum, first_meta=self._first_meta,
            epoch_share=scalars["epoch_share"], step_share=scalars["step_share"],
            anytime_share=scalars["anytime_share"], anytime_never=scalars["anytime_never"],
            unreached=scalars["unreached"], times=self._times, same_times=self._same_times,
            last_times=scalars["last_times"], constraint_columns=scalars["constraint_columns"], curves=curves,
            violating_steps=violating, sources=self._sources, statuses=self._statuses, source_counts=counts,
            epoch_start=epoch["start"], epoch_solve_time=epoch["solve_time"], epoch_source=epoch["source"],
            epoch_status=epoch["status"], epoch_exact_max=epoch["exact_max"], failure_rows=self._failures,
            failure_count=self._failure_count, curlopt_versions=self._versions, backends=self._backends,
            backend_versions=self._backend_versions)


#: the per-seed numbers and their types
_SCALARS: dict[str, Any] = {
    "seeds": np.int64, "steps": np.int64, "objective": float, "regret": float, "violation": float,
    "epochs": np.int64, "fallback_epochs": np.int64, "failed_epochs": np.int64, "wall_time": float,
    "epoch_share": float, "step_share": float, "anytime_share": float, "anytime_never": bool, "unreached": float,
    "last_times": float, "constraint_columns": np.int64,
}
#: the per-epoch arrays and their types
_EPOCH_ARRAYS: dict[str, Any] = {"start": np.int64, "solve_time": float, "source": np.int16, "status": np.int16,
                                 "exact_max": float}


def _code(names: list[str], name: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        names.append(name)
        return len(names) - 1


def aggregate_runs(traces: Iterable[Trace]) -> RunsAggregate:
    """The :class:`RunsAggregate` of some runs, in one pass (each trace is let go once its numbers are taken)."""
    builder = AggregateBuilder()
    for trace in traces:
        builder.add(trace)
    return builder.finish()

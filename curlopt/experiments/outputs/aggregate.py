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

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...agents.base import PlanSource
from ...errors import CurloptError

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace

__all__ = ["RunsAggregate", "RunNumbers", "run_numbers", "AggregateBuilder", "aggregate_runs", "MAX_FAILURE_ROWS", "FAILED_SOURCES", "CURVE_COLUMNS", "step_shares"]

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
    _intervals: dict[str, tuple[float, float]] = field(default_factory=dict, init=False, repr=False)

    def interval(self, name: str) -> tuple[float, float]:
        """The 95% bootstrap interval of the mean of a final value over the seeds: ``objective``, ``regret``,
        ``violation`` or ``g<m>`` (:func:`~curlopt.experiments.outputs.summary.bootstrap_interval`), computed once
        for the summary and the frontier."""
        from .summary import bootstrap_interval

        if name not in self._intervals:
            values = self.constraints[:, int(name[1:]) - 1] if name.startswith("g") else getattr(self, name)
            self._intervals[name] = bootstrap_interval(values)
        return self._intervals[name]

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


@dataclass
class RunNumbers:
    """One run's part of a :class:`RunsAggregate`: what the outputs need of its trace, in a few arrays.

    :func:`run_numbers` takes them from a trace (in the worker process that ran it, in a study: they travel back
    with the run's record, and the process that runs the study never reads the run's file); an
    :class:`AggregateBuilder` gathers them.
    """

    seed: int
    scalars: dict[str, Any]  #: the per-seed numbers of :data:`_SCALARS` but the seed
    constraints: list[float]
    first_meta: dict[str, Any]
    optimum_value: float | None
    optimum: dict[str, Any] | None
    infeasible: bool
    versions: tuple[str, str, str | None]  #: curlopt version, backend, "backend (its version)" or None
    times: np.ndarray
    columns: dict[str, np.ndarray]
    violating_steps: np.ndarray
    sources: list[str]  #: the run's own names of the codes in ``epochs["source"]``
    statuses: list[str]
    epochs: dict[str, np.ndarray]
    failures: list[list[Any]]
    failure_count: int


def run_numbers(trace: Trace) -> RunNumbers:
    """What the outputs need of one run (see :class:`RunNumbers`).

    One pass over the epochs in plain Python (an epoch's exact values are a handful of floats, for which a
    numpy call costs more than the work), with the definitions of
    :func:`~curlopt.experiments.outputs.summary.epoch_violation_shares` and
    :func:`~curlopt.experiments.outputs.checkpoints.violating_step_shares`: an epoch with exact values and no
    NaN among them is evaluated, and violates when there is one and the largest is > 0.
    """
    from .summary import anytime_violation, mean_unreached

    meta = trace.meta if isinstance(trace.meta, dict) else {}
    summary = trace.summary()
    scalars: dict[str, Any] = {name: summary[name] for name in ("steps", "objective", "regret", "violation",
                                                                "epochs", "fallback_epochs", "failed_epochs",
                                                                "wall_time")}
    times = np.asarray(trace.checkpoints["t"])
    sources: list[str] = []
    statuses: list[str] = []
    source_codes: list[int] = []
    status_codes: list[int] = []
    exact: list[float] = []
    failures: list[list[Any]] = []
    failure_count = 0
    starts, lengths, flags, evaluated = [], [], [], []  # every epoch's, as violating_step_shares takes them
    share_flags, share_lengths = [], []  # the evaluated epochs', as epoch_violation_shares takes them
    for epoch in trace.epochs:
        source_codes.append(_code(sources, epoch.source))
        status_codes.append(_code(statuses, epoch.status or ""))
        values = None if epoch.exact_constraints is None else [float(v) for v in epoch.exact_constraints]
        known = values is not None and not any(math.isnan(v) for v in values)
        violates = bool(known and values and max(values) > 0.0)
        exact.append(max(values) if known and values else math.nan)
        length = max(int(epoch.length), 0)
        starts.append(float(epoch.start))
        lengths.append(float(length))
        flags.append(violates)
        evaluated.append(known)
        if known:
            share_flags.append(violates)
            share_lengths.append(length)
        if epoch.source in FAILED_SOURCES or epoch.status not in ("", "optimal"):
            failure_count += 1
            if len(failures) < MAX_FAILURE_ROWS:
                failures.append([meta.get("seed"), epoch.index, int(epoch.start), epoch.source, epoch.status or "",
                                 " ".join((epoch.message or "").split())])
    scalars["epoch_share"], scalars["step_share"] = _shares(share_flags, share_lengths)
    scalars["anytime_share"], scalars["anytime_never"] = anytime_violation(trace)
    scalars["unreached"] = mean_unreached(trace)
    scalars["last_times"] = float(times[-1])
    scalars["constraint_columns"] = int(trace.checkpoints["constraints"].shape[1])
    epochs = {"start": np.array([int(epoch.start) for epoch in trace.epochs], dtype=np.int64),
              "solve_time": np.array([float(epoch.solve_time) for epoch in trace.epochs], dtype=float),
              "source": np.array(source_codes, dtype=np.int16), "status": np.array(status_codes, dtype=np.int16),
              "exact_max": np.array(exact, dtype=float)}
    backend_version = f"{meta['backend']} ({meta['backend_version']})" if meta.get("backend_version") else None
    return RunNumbers(
        seed=int(meta.get("seed", -1)), scalars=scalars, constraints=list(summary["constraints"]),
        first_meta={key: meta[key] for key in ("trigger", "backend") if key in meta},
        optimum_value=summary["optimum"], optimum=trace.optimum, infeasible=bool(summary["optimum_infeasible"]),
        versions=(str(meta.get("curlopt_version", "?")), str(meta.get("backend")), backend_version), times=times,
        columns={name: np.asarray(trace.checkpoints[name], dtype=float) for name in CURVE_COLUMNS},
        violating_steps=step_shares(times, starts, lengths, flags, evaluated), sources=sources, statuses=statuses,
        epochs=epochs, failures=failures, failure_count=failure_count)


def step_shares(times: np.ndarray, starts: Sequence[float], lengths: Sequence[float], flags: Sequence[bool],
                evaluated: Sequence[bool]) -> np.ndarray:
    """:func:`~curlopt.experiments.outputs.checkpoints.violating_step_shares` from the epochs' starts, lengths (as floats, negative ones as 0), whether
    each violates and whether each has an exact evaluation."""
    times = np.asarray(times, dtype=float)
    if not len(starts):
        return np.full(times.shape, np.nan)
    start, length = np.asarray(starts), np.asarray(lengths)
    # steps of each epoch within 1..t: from its start to the earlier of t and its last step
    played = np.clip(np.minimum(times[:, None], start + length - 1.0) - start + 1.0, 0.0, length)
    total = played @ np.asarray(evaluated, dtype=float)
    bad = played @ np.asarray(flags, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, bad / np.where(total > 0, total, 1.0), np.nan)


def _shares(flags: list[bool], lengths: list[int]) -> tuple[float, float]:
    """:func:`~curlopt.experiments.outputs.summary.epoch_violation_shares` of the evaluated epochs' flags and
    lengths (the same expressions)."""
    if not flags:
        return math.nan, math.nan
    share_epochs = float(np.mean(flags))
    total = sum(lengths)
    share_steps = float(sum(n for n, bad in zip(lengths, flags, strict=True) if bad) / total) if total > 0 else math.nan
    return share_epochs, share_steps


class AggregateBuilder:
    """Builds a :class:`RunsAggregate` from runs given one at a time, in any order (:meth:`add` a trace, or
    :meth:`add_numbers` its :class:`RunNumbers`), then :meth:`finish`: the runs in the order of their seeds.

    A run's numbers are folded in as they arrive, so no run's arrays or dicts are kept: its per-epoch values are
    appended to the configuration's growing columns (:class:`_Column`), its checkpoint curves to one row of a
    growing table, its per-seed values to one row of numbers; what stays per run is a small tuple (seed, where its
    epochs are, its codes). :meth:`finish` puts them in the order of the seeds, a column at a time, freeing each
    column as it goes: one configuration's arrays are copied once, never the study's.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """Empty: nothing gathered."""
        self._rows: list[_RunRow] = []
        self._scalars = _Column(np.float64, (len(_SCALARS) - 1,))  # every per-seed number but the seed, as floats
        self._constraints: list[tuple[float, ...]] = []
        self._epochs = {name: _Column(kind) for name, kind in _EPOCH_STORE.items()}
        self._curves: _Column | None = None  # each run's curves and shares of violating steps, one row per run
        self._curve_shapes: tuple[tuple[int, ...], ...] | None = None
        self._times: np.ndarray | None = None  # the first run's checkpoint times: the others are compared with them
        self._same_times = True
        self._sources: list[str] = []  # names of the codes in the order the runs came (put in seed order at the end)
        self._statuses: list[str] = []
        self._lowest: _Lowest | None = None  # what the aggregate takes from the run of the lowest seed
        self._infeasible = False
        self._versions: tuple[set[str], set[str], set[str]] = (set(), set(), set())
        self._failure_count = 0

    def add(self, trace: Trace) -> None:
        """Take what the outputs need from one run (the trace can be let go afterwards)."""
        self.add_numbers(run_numbers(trace))

    def add_numbers(self, numbers: RunNumbers) -> None:
        """Fold one run's numbers into the configuration's columns (the numbers can be let go afterwards)."""
        count = int(numbers.epochs["start"].size)
        source_codes = tuple(_code(self._sources, name) for name in numbers.sources)
        status_codes = tuple(_code(self._statuses, name) for name in numbers.statuses)
        source = np.asarray(source_codes, dtype=np.int16)[numbers.epochs["source"]] if source_codes \
            else numbers.epochs["source"]
        status = np.asarray(status_codes, dtype=np.int16)[numbers.epochs["status"]] if status_codes \
            else numbers.epochs["status"]
        offset = self._epochs["start"].size
        for name, values in (("start", numbers.epochs["start"]), ("solve_time", numbers.epochs["solve_time"]),
                             ("source", source), ("status", status), ("exact_max", numbers.epochs["exact_max"])):
            self._epochs[name].extend(values)
        self._scalars.extend(np.asarray([[numbers.scalars[name] for name in _SCALARS if name != "seeds"]],
                                        dtype=np.float64))
        self._constraints.append(tuple(numbers.constraints))
        self._add_curves(numbers)
        if self._lowest is None or numbers.seed < self._lowest.seed:
            self._lowest = _Lowest(numbers.seed, numbers.times, numbers.optimum_value, numbers.optimum,
                                   numbers.first_meta)
        self._infeasible = self._infeasible or numbers.infeasible
        self._versions[0].add(numbers.versions[0])
        self._versions[1].add(numbers.versions[1])
        if numbers.versions[2] is not None:
            self._versions[2].add(numbers.versions[2])
        self._failure_count += numbers.failure_count
        counts = tuple(np.bincount(source, minlength=0).tolist())  # epochs per source, in the arrival codes
        self._rows.append(_RunRow(numbers.seed, offset, count, source_codes, status_codes, counts,
                                  numbers.failures or None))

    def _add_curves(self, numbers: RunNumbers) -> None:
        """One row of the curves table, while every run has the first run's checkpoint times (else none)."""
        if self._times is None:
            self._times = numbers.times
        elif self._same_times and not np.array_equal(numbers.times, self._times):
            self._same_times, self._curves = False, None  # no curves then: the figures and table skip them
        if not self._same_times:
            return
        parts = [np.asarray(numbers.columns[name], dtype=float) for name in CURVE_COLUMNS]
        parts.append(np.asarray(numbers.violating_steps, dtype=float))
        shapes = tuple(part.shape for part in parts)
        if self._curves is None:
            self._curve_shapes = shapes
            self._curves = _Column(np.float64, (sum(part.size for part in parts),))
        elif shapes != self._curve_shapes:
            raise CurloptError("runs of one configuration have checkpoint curves of different shapes"
                               f" ({self._curve_shapes} and {shapes}); they cannot be stacked.")
        self._curves.extend(np.concatenate([part.ravel() for part in parts])[None, :])

    @property
    def seeds(self) -> list[int]:
        """The seeds of the runs added, in order."""
        return sorted(row.seed for row in self._rows)

    def finish(self) -> RunsAggregate:
        """The aggregate of the runs added, in the order of their seeds (the builder is emptied)."""
        rows = sorted(self._rows, key=lambda row: row.seed)  # a stable sort, as the runs' order was before
        order = np.asarray(sorted(range(len(self._rows)), key=lambda i: self._rows[i].seed), dtype=np.int64)
        count = len(rows)
        table = self._scalars.take(order)
        self._scalars = _Column(np.float64, (len(_SCALARS) - 1,))
        scalars = {name: np.asarray(table[:, i], dtype=kind)
                   for i, (name, kind) in enumerate((n, k) for n, k in _SCALARS.items() if n != "seeds")}
        del table
        scalars["seeds"] = np.asarray([row.seed for row in rows], dtype=_SCALARS["seeds"])
        constraints = np.asarray([self._constraints[i] for i in order], dtype=float).reshape(count, -1) if rows \
            else np.zeros((0, 0))
        lowest = self._lowest
        times = lowest.times if lowest is not None else np.zeros(0)
        curves: dict[str, np.ndarray] = {}
        violating: np.ndarray = np.zeros((0, 0))
        if rows and self._same_times and self._curves is not None and self._curve_shapes is not None:
            packed = self._curves.take(order)
            self._curves = None
            split = np.cumsum([int(np.prod(shape)) for shape in self._curve_shapes])[:-1]
            pieces = [np.ascontiguousarray(piece).reshape((count, *shape))
                      for piece, shape in zip(np.split(packed, split, axis=1), self._curve_shapes, strict=True)]
            del packed
            curves = dict(zip(CURVE_COLUMNS, pieces[:-1], strict=True))
            violating = pieces[-1]
        # the codes in the order the runs' seeds give them (as when the runs were put together in that order)
        sources: list[str] = []
        statuses: list[str] = []
        source_map = np.zeros(len(self._sources), dtype=np.int16)
        status_map = np.zeros(len(self._statuses), dtype=np.int16)
        for row in rows:
            for code in row.source_codes:
                source_map[code] = _code(sources, self._sources[code])
            for code in row.status_codes:
                status_map[code] = _code(statuses, self._statuses[code])
        source_counts = np.zeros((count, len(sources)), dtype=np.int64)
        for index, row in enumerate(rows):
            for code, epochs in enumerate(row.source_counts):
                source_counts[index, source_map[code]] = epochs
        # every epoch of every run, run after run in the order of the seeds
        where = np.concatenate([np.arange(row.offset, row.offset + row.count) for row in rows]) if rows \
            else np.zeros(0, dtype=np.int64)
        epoch: dict[str, np.ndarray] = {}
        for name in _EPOCH_ARRAYS:
            values = self._epochs[name].take(where)
            self._epochs[name] = _Column(_EPOCH_STORE[name])
            if name == "source" and source_map.size:
                values = source_map[values]
            elif name == "status" and status_map.size:
                values = status_map[values]
            epoch[name] = values
        failures = [failure for row in rows if row.failures for failure in row.failures][:MAX_FAILURE_ROWS]
        aggregate = RunsAggregate(
            seeds=scalars["seeds"], steps=scalars["steps"], objective=scalars["objective"], regret=scalars["regret"],
            violation=scalars["violation"], constraints=constraints,
            epochs=scalars["epochs"], fallback_epochs=scalars["fallback_epochs"],
            failed_epochs=scalars["failed_epochs"], wall_time=scalars["wall_time"],
            optimum_value=None if lowest is None or lowest.optimum_value is None else float(lowest.optimum_value),
            optimum_infeasible=self._infeasible,
            optimum=None if lowest is None else lowest.optimum, first_meta={} if lowest is None else lowest.meta,
            epoch_share=scalars["epoch_share"], step_share=scalars["step_share"],
            anytime_share=scalars["anytime_share"], anytime_never=scalars["anytime_never"],
            unreached=scalars["unreached"], times=times, same_times=self._same_times,
            last_times=scalars["last_times"], constraint_columns=scalars["constraint_columns"], curves=curves,
            violating_steps=violating, sources=sources, statuses=statuses, source_counts=source_counts,
            epoch_start=epoch["start"], epoch_solve_time=epoch["solve_time"], epoch_source=epoch["source"],
            epoch_status=epoch["status"], epoch_exact_max=epoch["exact_max"], failure_rows=failures,
            failure_count=self._failure_count, curlopt_versions=self._versions[0], backends=self._versions[1],
            backend_versions=self._versions[2])
        self._reset()  # the aggregate owns what was gathered
        return aggregate


@dataclass
class _RunRow:
    """What stays of one run in an :class:`AggregateBuilder`: its seed, where its epochs are in the columns, the
    codes it used (in the order of its own names) and its epochs per source code."""

    seed: int
    offset: int
    count: int
    source_codes: tuple[int, ...]
    status_codes: tuple[int, ...]
    source_counts: tuple[int, ...]
    failures: list[list[Any]] | None


@dataclass
class _Lowest:
    """What the aggregate takes from the run of the lowest seed."""

    seed: int
    times: np.ndarray
    optimum_value: float | None
    optimum: dict[str, Any] | None
    meta: dict[str, Any]


class _Column:
    """A growing array of rows of one dtype and shape, kept in chunks: no per-run objects, and little slack (the
    chunks double from :data:`FIRST_BYTES` up to :data:`CHUNK_BYTES`, so a small configuration takes little and a
    large one's chunks are large enough to go back to the system when freed)."""

    FIRST_BYTES = 1 << 13
    CHUNK_BYTES = 1 << 19

    def __init__(self, dtype: Any, shape: tuple[int, ...] = ()) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.chunks: list[np.ndarray] = []
        self.size = 0
        self._free = 0  # rows left in the last chunk

    def _row_bytes(self) -> int:
        return max(1, self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64)))

    def extend(self, values: np.ndarray) -> None:
        values = np.asarray(values)
        if self.dtype.kind == "i" and values.size and values.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            if int(values.min()) < info.min or int(values.max()) > info.max:  # widen: never a value cut
                self.dtype = np.dtype(np.int64)
                self.chunks = [chunk.astype(np.int64) for chunk in self.chunks]
        done = 0
        while done < len(values):
            if self._free == 0:
                last = len(self.chunks[-1]) * self._row_bytes() if self.chunks else self.FIRST_BYTES // 2
                rows = max(1, min(2 * last, self.CHUNK_BYTES) // self._row_bytes())
                self.chunks.append(np.empty((rows, *self.shape), dtype=self.dtype))
                self._free = rows
            chunk = self.chunks[-1]
            used = len(chunk) - self._free
            n = min(self._free, len(values) - done)
            chunk[used:used + n] = values[done:done + n]
            done += n
            self.size += n
            self._free -= n

    def take(self, index: np.ndarray) -> np.ndarray:
        """The rows at ``index`` (a new array); the chunks are freed."""
        chunks, self.chunks, self._free = self.chunks, [], 0
        if not chunks:
            return np.zeros((0, *self.shape), dtype=self.dtype)
        whole = np.concatenate(chunks)[: self.size] if len(chunks) > 1 else chunks[0][: self.size]
        del chunks
        return whole[index]


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
#: how a builder keeps them: epoch starts as int32 while they fit (widened to int64 otherwise)
_EPOCH_STORE: dict[str, Any] = {**_EPOCH_ARRAYS, "start": np.int32}


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

"""What a study's outputs are computed from: one configuration's finished runs.

A *configuration* is one algorithm (a registered agent) with one complete set of
agent options on one setting (model). A study runs every configuration of its
grid over the same seeds; the summary tables and figures
(:mod:`curlopt.experiments.outputs.summary`, :mod:`curlopt.experiments.outputs.figures.plots`) take a
list of :class:`ConfigurationRuns`, in the study's order, and never look at
files or at how the runs were executed.

The outputs read a configuration's runs through its aggregate (:meth:`ConfigurationRuns.aggregated`,
:mod:`.aggregate`): arrays of the numbers they need, built in one pass over the runs, or handed over by the
study runner from the numbers each run sent back. The runs themselves are read from their files when they are
used (:class:`TraceFiles`), through one :class:`TraceCache` of bounded size (none at all in a study): a study
of any number of runs never holds every trace at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace
    from ..study.spec import SettingSpec
    from .aggregate import RunsAggregate

__all__ = ["ConfigurationRuns", "TraceCache", "TraceFiles", "DEFAULT_CACHE_BYTES"]

#: what a :class:`TraceCache` holds at most by default (its estimate of the traces' memory)
DEFAULT_CACHE_BYTES = 64 * 2 ** 20
#: bytes an epoch record takes in memory, about (a dataclass with its lists of floats; measured with tracemalloc on
#: PS-CURL traces of the queue: 850 bytes an epoch, rounded up)
_EPOCH_BYTES = 900


def trace_bytes(trace: Trace) -> int:
    """An estimate of the memory a loaded trace takes: its checkpoint columns and epoch records."""
    columns = sum(int(getattr(column, "nbytes", 0)) for column in trace.checkpoints.values())
    return columns + _EPOCH_BYTES * len(trace.epochs) + 4096


class TraceCache:
    """Traces read from their files, held up to ``limit`` bytes (estimated), and the runs of the configuration in use.

    The outputs of a study read each configuration's runs several times (the tables, each figure, the report).
    Two things save reading them again: the runs of the configuration used last are kept whole (one
    configuration's runs at a time), and the traces read first are kept until the limit, after which further
    traces are read when used and not kept. Keeping the first ones rather than the last (no eviction) matters:
    the outputs go over the configurations in the same order again and again, and a cache that dropped its
    oldest traces would drop each one just before it is needed again. The memory is bounded whatever the number
    of runs; a study whose traces fit in the limit reads each run file once.
    """

    def __init__(self, limit: int | None = None):
        self.limit = int(DEFAULT_CACHE_BYTES if limit is None else limit)
        self.loads = 0
        self._held: dict[str, Trace] = {}
        self._bytes = 0
        self._current: tuple[int, list[Trace]] | None = None  # (id of a TraceFiles, its traces)

    def get(self, path: str | os.PathLike) -> Trace:
        """The trace of ``path``, from the cache or read (and then kept while there is room)."""
        from ..simulation.trace import load_trace

        key = str(path)
        held = self._held.get(key)
        if held is not None:
            return held
        trace = load_trace(key)
        self.loads += 1
        self.put(key, trace)
        return trace

    def put(self, path: str | os.PathLike, trace: Trace) -> None:
        """Keep ``trace`` as the content of ``path`` if there is room for it."""
        key = str(path)
        size = trace_bytes(trace)
        if key not in self._held and self._bytes + size <= self.limit:
            self._held[key] = trace
            self._bytes += size

    def large(self, files: TraceFiles) -> bool:
        """Whether a configuration's run files are too many to be held whole (estimated from its first trace)."""
        if not files.paths:
            return False
        return trace_bytes(self.get(files.paths[0])) * len(files.paths) > self.limit

    def group(self, files: TraceFiles) -> list[Trace]:
        """Every trace of ``files``, kept as the configuration in use (the one before it is let go) when its traces
        fit in the limit."""
        current = self._current
        if current is not None and current[0] == id(files):
            return current[1]
        self._current = None  # let the previous configuration's traces go before reading this one's
        traces = [self.get(path) for path in files.paths]
        if sum(trace_bytes(trace) for trace in traces) <= self.limit:
            self._current = (id(files), traces)
        return traces


class TraceFiles(Sequence["Trace"]):
    """A configuration's run files, read (through a :class:`TraceCache`) when a trace is used."""

    def __init__(self, paths: Sequence[str | os.PathLike], cache: TraceCache | None = None):
        self.paths = [Path(path) for path in paths]
        self.cache = cache if cache is not None else TraceCache()

    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, index: int) -> Trace: ...

    @overload
    def __getitem__(self, index: slice) -> list[Trace]: ...

    def __getitem__(self, index: int | slice) -> Trace | list[Trace]:
        if isinstance(index, slice):
            return [self.cache.get(path) for path in self.paths[index]]
        return self.cache.get(self.paths[index]) if self.cache.large(self) else self.cache.group(self)[index]

    def __iter__(self) -> Iterator[Trace]:
        if self.cache.limit <= 0 or self.cache.large(self):  # more than the cache holds: one trace at a time
            return (self.cache.get(path) for path in self.paths)
        return iter(self.cache.group(self))


@dataclass
class ConfigurationRuns:
    """One configuration of a study and its finished runs.

    Attributes
    ----------
    setting : SettingSpec
        The model it ran on (``name``, ``label``, ``cost_names``, ``build()``).
    algorithm : str
        The algorithm's key in the study (e.g. ``uc-curl``).
    agent : str
        The registered agent name (``curlopt.agents.AGENTS``).
    label : str
        Display name for tables and legends, including the varied options,
        e.g. ``UC-CURL (radius=experiment, K_ε=3)``.
    key : str
        File-name-safe identifier of the configuration (its run directory).
    options : dict
        Every agent option of the configuration (``make_agent`` keywords).
    varied : dict
        The options set by the study's grid axes (a subset of ``options``), in
        axis order; empty when the study has no grid.
    traces : sequence of Trace
        The finished runs, sorted by seed (a :class:`TraceFiles` in a study: read when used).
    aggregate : RunsAggregate or None
        What the outputs read of the runs (:meth:`aggregated` builds it, in one pass over ``traces``, when None).
    """

    setting: SettingSpec
    algorithm: str
    agent: str
    label: str
    key: str
    options: dict[str, Any]
    varied: dict[str, Any] = field(default_factory=dict)
    traces: Sequence[Trace] = field(default_factory=list)
    aggregate: RunsAggregate | None = field(default=None, repr=False, compare=False)

    def aggregated(self) -> RunsAggregate:
        """The runs reduced to what the outputs read (:mod:`.aggregate`), built on first use in one pass over
        ``traces`` and kept: the summary, the figures and the report read every run file once between them."""
        if self.aggregate is None:
            from .aggregate import aggregate_runs

            self.aggregate = aggregate_runs(self.traces)
        return self.aggregate

    @property
    def seeds(self) -> list[int]:
        return [int(seed) for seed in self.aggregated().seeds]

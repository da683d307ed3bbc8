"""What a study's outputs are computed from: one configuration's finished runs.

A *configuration* is one algorithm (a registered agent) with one complete set of
agent options on one setting (model). A study runs every configuration of its
grid over the same seeds; the summary tables and figures
(:mod:`curlopt.experiments.outputs.summary`, :mod:`curlopt.experiments.outputs.figures.plots`) take a
list of :class:`ConfigurationRuns`, in the study's order, and never look at
files or at how the runs were executed.

A study's runs are read from their files when they are used (:class:`TraceFiles`), through one
:class:`TraceCache` of bounded size: the summary and figures of a study of any number of runs take
the memory of the cache, not of every trace at once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace
    from ..study.spec import SettingSpec

__all__ = ["ConfigurationRuns", "TraceCache", "TraceFiles", "DEFAULT_CACHE_BYTES"]

#: what a :class:`TraceCache` holds at most by default (its estimate of the traces' memory)
DEFAULT_CACHE_BYTES = 48 * 2 ** 20
#: bytes an epoch record takes in memory, about (a dataclass with its lists of floats; measured, rounded up)
_EPOCH_BYTES = 1600


def trace_bytes(trace: Trace) -> int:
    """An estimate of the memory a loaded trace takes: its checkpoint columns and epoch records."""
    columns = sum(int(getattr(column, "nbytes", 0)) for column in trace.checkpoints.values())
    return columns + _EPOCH_BYTES * len(trace.epochs) + 4096


class TraceCache:
    """The traces read last, up to ``limit`` bytes (estimated): the least recently used is dropped first.

    The outputs of a study read each configuration's runs several times (the tables, each figure, the
    report); the cache saves reading them again while a configuration is in use, and bounds the memory
    whatever the number of runs.
    """

    def __init__(self, limit: int = DEFAULT_CACHE_BYTES):
        self.limit = int(limit)
        self.loads = 0
        self._held: OrderedDict[str, tuple[Trace, int]] = OrderedDict()
        self._bytes = 0

    def get(self, path: str | os.PathLike) -> Trace:
        """The trace of ``path``, from the cache or read (and then cached)."""
        from ..simulation.trace import load_trace

        key = str(path)
        held = self._held.get(key)
        if held is not None:
            self._held.move_to_end(key)
            return held[0]
        trace = load_trace(key)
        self.loads += 1
        self.put(key, trace)
        return trace

    def put(self, path: str | os.PathLike, trace: Trace) -> None:
        """Hold ``trace`` as the content of ``path`` (dropping the least recently used beyond the limit)."""
        key = str(path)
        if key in self._held:
            self._bytes -= self._held.pop(key)[1]
        size = trace_bytes(trace)
        self._held[key] = (trace, size)
        self._bytes += size
        while self._bytes > self.limit and len(self._held) > 1:
            _, (_, dropped) = self._held.popitem(last=False)
            self._bytes -= dropped


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
        return self.cache.get(self.paths[index])

    def __iter__(self) -> Iterator[Trace]:
        for path in self.paths:
            yield self.cache.get(path)


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
    """

    setting: SettingSpec
    algorithm: str
    agent: str
    label: str
    key: str
    options: dict[str, Any]
    varied: dict[str, Any] = field(default_factory=dict)
    traces: Sequence[Trace] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return [int(trace.meta.get("seed", -1)) for trace in self.traces]

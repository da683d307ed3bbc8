"""One row of a comparison: how one backend and solver did over all instances, and its progress line."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...backends.results import Status

__all__ = ["SolverRow"]


@dataclass
class SolverRow:
    """The outcome of one backend and solver over all instances.

    Attributes
    ----------
    backend, solver : str
    statuses, objectives, residuals, times, iterations : list
        One entry per instance solved so far (solve times in seconds).
    error : str
        Why the row did not run every instance; its first words say how it ended: ``refused: ...`` (the backend
        cannot express a utility), ``program refused: ...`` (the program's size check refused it, before
        building it), ``option refused: ...`` (the backend does not take an option with this solver, e.g. the
        time limit), ``not installed: ...``, ``stopped: ...`` (out of memory, or, in a child process, a crash, a
        kill); anything else is an error.
    failure : str
        The first message of a non-optimal solve, if any.
    compile_time : float or None
        Seconds to build the program and compile it.
    wall_time : float or None
        Seconds the whole row took, seen from the caller (a child process's start included).
    peak_memory : int or None
        Peak resident set of the row's child process, bytes (None in this process); see ``peak_exact``.
    peak_exact : bool
        False when the child was lost before its last report (a crash): ``peak_memory`` is then a lower bound.
    isolated : bool
        The row ran in a child process.
    solved_by : str
        The solver the backend named in its first result (e.g. a program a backend hands to another one).
    """

    backend: str
    solver: str
    statuses: list[str] = field(default_factory=list)
    objectives: list[float] = field(default_factory=list)
    residuals: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    error: str = ""
    #: the first message of a non-optimal solve, if any
    failure: str = ""
    compile_time: float | None = None
    wall_time: float | None = None
    peak_memory: int | None = None
    peak_exact: bool = True
    isolated: bool = False
    solved_by: str = ""

    @property
    def refused(self) -> bool:
        """The backend does not take the program with this solver (it said so when compiling)."""
        return self.error.startswith("refused")

    @property
    def ran(self) -> bool:
        """The row ran every instance (it was neither refused nor stopped by an error)."""
        return not self.error

    @property
    def compared(self) -> bool:
        """The row ran every instance and solved at least one: its objectives enter the comparison."""
        return self.ran and any(self.solved(i) for i in range(len(self.statuses)))

    def solved(self, instance: int) -> bool:
        """Whether this solver solved ``instance`` (a status with a solution and a finite objective)."""
        return (instance < len(self.statuses) and Status(self.statuses[instance]).has_solution
                and math.isfinite(self.objectives[instance]))

    def status_summary(self) -> str:
        if self.error:
            for kind in ("refused", "program refused", "option refused", "not installed", "stopped"):
                if self.error.startswith(kind):
                    return kind
            return "error"
        counts: dict[str, int] = {}
        for status in self.statuses:
            counts[status] = counts.get(status, 0) + 1
        return ", ".join(f"{k} {v}/{len(self.statuses)}" for k, v in counts.items())

    def max_residual(self) -> float | None:
        finite = [r for r in self.residuals if math.isfinite(r)]
        return max(finite) if finite else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend, "solver": self.solver, "status": self.status_summary(),
            "statuses": self.statuses, "objectives": [None if not math.isfinite(o) else o for o in self.objectives],
            "max_residual": self.max_residual(),
            "mean_time": float(np.mean(self.times)) if self.times else None,
            "max_time": float(np.max(self.times)) if self.times else None,
            "mean_iterations": float(np.mean(self.iterations)) if self.iterations else None,
            "compile_time": self.compile_time, "wall_time": self.wall_time, "isolated": self.isolated,
            "peak_memory_bytes": self.peak_memory, "peak_memory_lower_bound": not self.peak_exact,
            "solved_by": self.solved_by, "error": self.error, "failure": self.failure,
        }


def _memory(row: SolverRow) -> str:
    if row.peak_memory is None:
        return "-"
    return ("" if row.peak_exact else ">=") + f"{row.peak_memory / 2 ** 20:,.0f} MiB"


def _ended(row: SolverRow) -> str:
    """The progress line of a finished row: how it ended, its time and (isolated) its peak memory."""
    text = row.status_summary()
    if row.wall_time is not None:
        text += f" in {row.wall_time:.1f} s"
    extras = []
    if row.compile_time is not None:
        extras.append(f"compile {row.compile_time:.2f} s")
    if row.peak_memory is not None:
        extras.append(f"peak {_memory(row)}")
    if extras:
        text += f" ({', '.join(extras)})"
    if row.error and not row.error.startswith(("refused", "program refused")):
        kind = row.status_summary()
        why = row.error[len(kind) + 2:] if row.error.startswith(f"{kind}: ") else row.error
        text += f": {why[:200]}"
    return text

"""One row of a comparison: how one backend and solver did over all instances, and its progress line."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...backends.results import ProgramVariant, Status

__all__ = ["SolverRow"]


@dataclass
class SolverRow:
    """The outcome of one backend and solver over all instances.

    Attributes
    ----------
    backend, solver : str
    statuses, programs, objectives, residuals, times, iterations : list
        One entry per instance solved so far (solve times in seconds). ``programs`` says which program the
        solver answered (``tight``, or ``fallback``: the ε-tight program was infeasible and the program without
        the constraint rows was solved instead); ``residuals`` are those of the program asked, the constraint
        rows ``g_m(ζ) + ε`` included; ``violations`` the largest ``g_m(ζ)`` at each point, so a fallback's says
        how far its point violates the constraints.
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
    programs: list[str] = field(default_factory=list)
    objectives: list[float] = field(default_factory=list)
    residuals: list[float] = field(default_factory=list)
    #: the largest constraint value ``max_m g_m(ζ)`` at each instance's point (NaN without one): above 0 it violates
    violations: list[float] = field(default_factory=list)
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
        """Whether this solver solved ``instance``: the program asked, with its constraints (not the fallback),
        a status with a solution and a finite objective."""
        return (self._has_point(instance) and not self.fell_back(instance)
                and math.isfinite(self.objectives[instance]))

    def fell_back(self, instance: int) -> bool:
        """Whether the solver answered ``instance`` with the fallback program: its ε-tight program was infeasible,
        and the point it returned ignores the constraints (never an answer to the program asked)."""
        return (self._has_point(instance) and instance < len(self.programs)
                and self.programs[instance] == ProgramVariant.FALLBACK.value)

    def answered(self, instance: int) -> bool:
        """Whether the solver answered ``instance``: a point (of the program or its fallback), or a certificate that
        the program is infeasible or unbounded."""
        return self._has_point(instance) or (instance < len(self.statuses) and self.statuses[instance] in (
            Status.INFEASIBLE.value, Status.UNBOUNDED.value))

    def fallbacks(self) -> list[int]:
        """The instances the solver answered with the fallback program."""
        return [i for i in range(len(self.statuses)) if self.fell_back(i)]

    def outcome(self, instance: int) -> str:
        """How ``instance`` ended, in one word: its status, or ``fallback`` for a fallback's point."""
        if instance >= len(self.statuses):
            return "not run"
        return ProgramVariant.FALLBACK.value if self.fell_back(instance) else self.statuses[instance]

    def _has_point(self, instance: int) -> bool:
        return instance < len(self.statuses) and Status(self.statuses[instance]).has_solution

    def status_summary(self) -> str:
        if self.error:
            for kind in ("refused", "program refused", "option refused", "not installed", "stopped"):
                if self.error.startswith(kind):
                    return kind
            return "error"
        counts: dict[str, int] = {}
        for i in range(len(self.statuses)):
            outcome = self.outcome(i)
            counts[outcome] = counts.get(outcome, 0) + 1
        # a fallback is never mistaken for a status: said last
        counts = dict(sorted(counts.items(), key=lambda item: item[0] == ProgramVariant.FALLBACK.value))
        return ", ".join(f"{k} {v}/{len(self.statuses)}" for k, v in counts.items())

    def max_residual(self) -> float | None:
        """The largest residual over the instances the row solved (a fallback's is in :meth:`max_violation`)."""
        finite = [self.residuals[i] for i in range(len(self.residuals)) if self.solved(i)
                  and math.isfinite(self.residuals[i])]
        return max(finite) if finite else None

    def max_violation(self) -> float | None:
        """The largest constraint value ``max_m g_m(ζ)`` over the instances answered by the fallback program: how
        far its points violate the constraints (None without a fallback)."""
        finite = [self.violations[i] for i in self.fallbacks() if i < len(self.violations)
                  and math.isfinite(self.violations[i])]
        return max(finite) if finite else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend, "solver": self.solver, "status": self.status_summary(),
            "statuses": self.statuses, "programs": self.programs, "fallbacks": self.fallbacks(),
            "max_fallback_violation": self.max_violation(), "objectives": [None if not math.isfinite(o) else o for o in self.objectives],
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

"""What every backend is: a declaration of what it accepts, a compile step, and a shared solve.

A backend is declared the way CVXPY declares a solver interface: a name, the
Python packages it needs (and the extra that installs them), and a test of what
utilities it can express. ``compile(program)`` builds the solver's model once;
the returned :class:`CompiledProgram` re-reads the program's changed data before
each ``solve()``. The ε-tight / fallback logic (SPEC §4) lives here, once, so no
backend can get it wrong.
"""

from __future__ import annotations

import importlib.util
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import BackendNotInstalledError, UnsupportedUtilityError
from ..program import Program
from ..results import ProgramVariant, SolveResult, Status, policy_from_occupancy
from ..utilities import Utility

__all__ = ["Backend", "CompiledProgram", "RawSolution"]


@dataclass
class RawSolution:
    """What a backend's single solve attempt produced."""

    status: Status
    x: np.ndarray | None = None
    iterations: int | None = None
    solver: str = ""
    message: str = ""
    solver_time: float | None = None  # the solver's own reported run time, when it gives one


class Backend(ABC):
    """Base class of the backends.

    Subclasses set ``name``, ``requires`` (import names) and ``extra`` (the
    ``pip install curlopt[extra]`` that provides them), and implement
    :meth:`accepts` and :meth:`_compile`.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""
    #: what the backend takes, in words, for error messages
    takes: ClassVar[str] = ""

    @classmethod
    def is_installed(cls) -> bool:
        """True when every required package can be imported (checked without importing it)."""
        return all(importlib.util.find_spec(module) is not None for module in cls.requires)

    @classmethod
    @abstractmethod
    def accepts(cls, utility: Utility) -> bool:
        """True when the backend can express ``utility``."""

    @classmethod
    def solver_variants(cls) -> list[tuple[str, dict]]:
        """The solver configurations this backend can run here: ``(label, constructor options)`` pairs.

        ``curlopt compare-solvers`` runs each of them on the same program instances.
        """
        return [(cls.name, {})]

    def check(self, program: Program) -> None:
        """Raise if the backend is missing or cannot express one of the program's utilities."""
        if not self.is_installed():
            command = f"pip install 'curlopt[{self.extra}]'" if self.extra else f"pip install {' '.join(self.requires)}"
            raise BackendNotInstalledError(f"the {self.name} backend needs {', '.join(self.requires)}: {command}.")
        roles = [("objective", program.objective)] + [
            (f"constraint {m}", g) for m, g in enumerate(program.constraints)
        ]
        for role, utility in roles:
            if not self.accepts(utility):
                from .registry import backends_accepting

                others = [n for n in backends_accepting(utility) if n != self.name]
                hint = f"use the {' or '.join(others)} backend" if others else "no installed backend can take it"
                raise UnsupportedUtilityError(
                    f"the {self.name} backend cannot express the {role} {utility!r}"
                    f" ({self.name} takes {self.takes}); {hint}."
                )

    def compile(self, program: Program) -> "CompiledProgram":
        """Build the solver model for ``program`` once; re-solve it with :meth:`CompiledProgram.solve`."""
        self.check(program)
        return self._compile(program)

    @abstractmethod
    def _compile(self, program: Program) -> "CompiledProgram":
        """Backend-specific compilation."""

    def solve(self, program: Program) -> SolveResult:
        """Compile and solve once (convenience for one-off programs)."""
        return self.compile(program).solve()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CompiledProgram(ABC):
    """A program compiled for one backend; ``solve()`` reads the program's current data."""

    def __init__(self, backend: Backend, program: Program):
        self.backend = backend
        self.program = program

    @abstractmethod
    def _solve(self, with_constraints: bool) -> RawSolution:
        """One attempt: the ε-tight program (``with_constraints``) or the one without g rows."""

    def solve(self) -> SolveResult:
        """Solve the ε-tight program; if it is infeasible, solve the fallback and label it.

        Returns
        -------
        SolveResult
            Never raises for solver trouble: failures come back as a status.
        """
        program = self.program
        started = time.perf_counter()
        tight = self._guarded_solve(True)
        raw, variant, message = tight, ProgramVariant.TIGHT, tight.message
        iterations = tight.iterations
        if tight.status is Status.INFEASIBLE and program.constraints:
            fallback = self._guarded_solve(False)
            raw, variant = fallback, ProgramVariant.FALLBACK
            message = (
                f"the ε-tight program (ε={program.epsilon:.6g}) is infeasible"
                + (f" ({tight.message})" if tight.message else "")
                + f"; solved the program without constraint rows instead (status {fallback.status.value})"
                + (f": {fallback.message}" if fallback.message else "")
            )
            if tight.iterations is not None or fallback.iterations is not None:
                iterations = (tight.iterations or 0) + (fallback.iterations or 0)
        elapsed = time.perf_counter() - started
        result = SolveResult(
            status=raw.status,
            program=variant,
            tight_status=tight.status,
            epsilon=program.epsilon,
            solve_time=elapsed,
            iterations=iterations,
            backend=self.backend.name,
            solver=raw.solver,
            message=message,
        )
        if raw.status is Status.OPTIMAL and raw.x is not None:
            self._fill(result, raw.x)
        return result

    def _guarded_solve(self, with_constraints: bool) -> RawSolution:
        """``_solve``, with any solver exception turned into a SOLVER_ERROR status."""
        try:
            return self._solve(with_constraints)
        except Exception as exc:  # a solver fault must never crash an agent's run
            return RawSolution(Status.SOLVER_ERROR, message=f"{type(exc).__name__}: {exc}")

    def _fill(self, result: SolveResult, x: np.ndarray) -> None:
        program, model = self.program, self.program.model
        x = np.asarray(x, dtype=float)
        rho = np.clip(program.occupancy(x), 0.0, None)
        result.x = x
        result.occupancy = rho
        joint = program.joint(x)
        result.joint = None if joint is None else np.clip(joint, 0.0, None)
        result.policy = policy_from_occupancy(rho)
        result.rewards = model.average_rewards(rho)
        result.costs = model.average_costs(rho)
        result.constraint_values = model.constraint_values(result.costs)
        result.objective = float(model.objective.value(result.rewards))

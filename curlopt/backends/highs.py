"""The ``highs`` backend: HiGHS through highspy, for linear and LP-representable utilities.

The LP is passed to HiGHS once, from numpy/scipy arrays. Before each re-solve only
what changed is pushed: the parameter coefficients that differ from the last
solve (``changeCoeff``) and the g rows' upper bounds (ε, or +inf for the
fallback). HiGHS keeps its basis across these changes, so a re-solve is a hot
start of the dual simplex.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..lp import LPForm
from ..program import Program
from ..results import Status
from ..utilities import Utility
from .base import Backend, CompiledProgram, RawSolution

__all__ = ["HighsBackend"]


#: quiet, and feasibility tolerances tight enough that every row holds to ~1e-9
DEFAULT_OPTIONS: dict[str, Any] = {
    "output_flag": False,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
}


class HighsBackend(Backend):
    """HiGHS (highspy) for linear and LP-representable objectives and constraints.

    Parameters
    ----------
    options : dict, optional
        HiGHS options set on the solver (e.g. ``{"time_limit": 10.0}``);
        merged over :data:`DEFAULT_OPTIONS` (quiet, feasibility tolerance 1e-9).
    """

    name: ClassVar[str] = "highs"
    requires: ClassVar[tuple[str, ...]] = ("highspy",)
    extra: ClassVar[str] = ""  # highspy is a core dependency
    takes: ClassVar[str] = "linear and LP-representable utilities (max-min, max of linear, 1- and inf-norms)"

    def __init__(self, options: dict[str, Any] | None = None):
        self.options = {**DEFAULT_OPTIONS, **(options or {})}

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return utility.is_lp_representable

    def _compile(self, program: Program) -> "CompiledHighs":
        return CompiledHighs(self, program)


_STATUS = {
    "kOptimal": Status.OPTIMAL,
    "kInfeasible": Status.INFEASIBLE,
    "kUnbounded": Status.UNBOUNDED,
    "kTimeLimit": Status.TIME_LIMIT,
    "kIterationLimit": Status.ITERATION_LIMIT,
    "kSolveError": Status.NUMERICAL_ERROR,
    "kPostsolveError": Status.NUMERICAL_ERROR,
    "kPresolveError": Status.NUMERICAL_ERROR,
    "kModelError": Status.SOLVER_ERROR,
    "kLoadError": Status.SOLVER_ERROR,
    "kMemoryLimit": Status.SOLVER_ERROR,
}


class CompiledHighs(CompiledProgram):
    """A HiGHS model of one program, updated in place between solves."""

    def __init__(self, backend: HighsBackend, program: Program):
        super().__init__(backend, program)
        import highspy

        self._highspy = highspy
        self.form = LPForm(program)
        self.highs = highspy.Highs()
        for key, value in backend.options.items():
            self.highs.setOptionValue(key, value)
        inf = highspy.kHighsInf
        form = self.form
        self._pushed_params = program.linear.param_values.copy()
        self._pushed_g_upper = form.constraint_upper(program.epsilon)
        row_upper = form.row_upper.copy()
        row_upper[form.constraint_rows] = self._pushed_g_upper
        matrix = form.matrix(self._pushed_params).tocsc()
        matrix.sort_indices()
        lp = highspy.HighsLp()
        lp.num_col_ = form.n_cols
        lp.num_row_ = form.n_rows
        lp.col_cost_ = form.cost
        lp.offset_ = form.offset
        lp.col_lower_ = np.where(np.isfinite(form.col_lower), form.col_lower, -inf)
        lp.col_upper_ = np.where(np.isfinite(form.col_upper), form.col_upper, inf)
        lp.row_lower_ = np.where(np.isfinite(form.row_lower), form.row_lower, -inf)
        lp.row_upper_ = np.where(np.isfinite(row_upper), row_upper, inf)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_ = form.n_cols
        lp.a_matrix_.num_row_ = form.n_rows
        lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
        lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
        lp.a_matrix_.value_ = matrix.data
        self.highs.passModel(lp)
        self._g_index = np.arange(form.constraint_rows.start, form.constraint_rows.stop, dtype=np.int32)
        self._version = program.version
        #: HiGHS's own run time of the last attempt (for overhead benchmarks)
        self.last_solver_time = 0.0

    def _sync(self, with_constraints: bool) -> None:
        """Push the parameter coefficients and g bounds that changed since the last solve."""
        program, highs = self.program, self.highs
        values = program.linear.param_values
        if program.version != self._version:
            changed = np.flatnonzero(values != self._pushed_params)
            rows, cols = self.form.param_rows, self.form.param_cols
            for j in changed:
                highs.changeCoeff(int(rows[j]), int(cols[j]), float(values[j]))
            self._pushed_params[changed] = values[changed]
            self._version = program.version
        upper = self.form.constraint_upper(program.epsilon, with_constraints)
        if upper.size and not np.array_equal(upper, self._pushed_g_upper):
            inf = self._highspy.kHighsInf
            highs.changeRowsBounds(
                upper.size, self._g_index, np.full(upper.size, -inf), np.where(np.isfinite(upper), upper, inf)
            )
            self._pushed_g_upper = upper

    def _run(self) -> tuple[str, int, float]:
        highs = self.highs
        before = highs.getRunTime()
        highs.run()
        status = highs.getModelStatus()
        info = highs.getInfo()
        iterations = int(info.simplex_iteration_count) + max(0, int(info.ipm_iteration_count))
        return status.name, iterations, highs.getRunTime() - before

    def _solve(self, with_constraints: bool) -> RawSolution:
        self._sync(with_constraints)
        name, iterations, solver_time = self._run()
        message = ""
        if name == "kUnboundedOrInfeasible":
            # Presolve could not tell which; our programs are bounded, but ask the simplex to be sure.
            self.highs.setOptionValue("presolve", "off")
            try:
                name, more, extra_time = self._run()
            finally:
                self.highs.setOptionValue("presolve", self.backend.options.get("presolve", "choose"))
            iterations += more
            solver_time += extra_time
            message = "presolve reported 'unbounded or infeasible'; re-run without presolve"
        self.last_solver_time = solver_time
        status = _STATUS.get(name, Status.UNKNOWN)
        if name not in _STATUS:
            message = f"HiGHS model status {name}" + (f"; {message}" if message else "")
        x = None
        if status is Status.OPTIMAL:
            x = np.asarray(self.highs.getSolution().col_value, dtype=float)[: self.program.n_vars]
        return RawSolution(status, x, iterations, "HiGHS", message, solver_time)

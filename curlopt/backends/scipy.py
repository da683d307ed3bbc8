"""The ``scipy`` backend: ``scipy.optimize.linprog`` (HiGHS inside SciPy) for LP-representable programs.

This backend is the worked example of docs/extending.md: a whole backend in one
module, built on :class:`~curlopt.programs.lp.LPForm` (which turns a program with
LP-representable utilities into one LP) and on the shared ε-tight / fallback
logic of :class:`~curlopt.backends.base.CompiledProgram`. It is deliberately
simple: ``linprog`` has no model object to keep, so every solve rebuilds the
matrix from the program's current parameter values (no hot start). The
``highs`` backend, which keeps HiGHS's basis across re-solves, stays the
preferred one for linear programs; ``auto`` never picks this backend.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..errors import BackendOptionError
from ..programs.blocks import Program
from ..programs.lp import LPForm
from ..utilities.library import Utility
from .base import Backend, CompiledForm, CompiledProgram, Exactly, RawSolution
from .form_table import affine_pieces_table
from .options import NONE, Option, refuse_both, string_keys
from .results import Status

__all__ = ["ScipyBackend", "CompiledScipy", "STATUS_MAP"]

#: ``linprog``'s integer status -> ours. 1 means "iteration or time limit"; :func:`_status` tells them apart.
STATUS_MAP: dict[int, Status] = {
    0: Status.OPTIMAL,
    1: Status.ITERATION_LIMIT,
    2: Status.INFEASIBLE,
    3: Status.UNBOUNDED,
    4: Status.NUMERICAL_ERROR,
}

#: tight enough that every row holds to ~1e-9, as the highs backend asks of HiGHS
DEFAULT_OPTIONS: dict[str, Any] = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}

#: HiGHS options ``linprog`` does not document but hands to its HiGHS as they are (after a warning, silenced here):
#: keep matrix entries down to 1e-12, as the highs backend does (:data:`~curlopt.backends.highs.backend.SMALL_MATRIX_VALUE`;
#: at HiGHS's default 1e-9 a kernel entry of 5e-10 is dropped and can move the optimum far more than the tolerances)
HIGHS_PASSED_OPTIONS: dict[str, Any] = {"small_matrix_value": 1e-12}


class ScipyBackend(Backend):
    """``scipy.optimize.linprog(method="highs")`` for linear and LP-representable utilities.

    Parameters
    ----------
    options : dict, optional
        Options passed to ``linprog`` (e.g. ``{"maxiter": 1000}``), merged over :data:`DEFAULT_OPTIONS`.
        Unknown names and values ``linprog`` refuses are refused when the backend is built.
    time_limit, verbose
        As for every backend (:class:`~curlopt.backends.base.Backend`): ``linprog``'s ``time_limit`` (what is
        left of the limit at each call) and ``disp``.
    """

    name: ClassVar[str] = "scipy"
    requires: ClassVar[tuple[str, ...]] = ("scipy",)
    extra: ClassVar[str] = ""  # scipy is a core dependency
    takes: ClassVar[str] = "linear and LP-representable utilities (max-min, max of linear, 1- and inf-norms)"
    #: ``auto`` never chooses this backend (highs does the same job, hot-started)
    auto_choice: ClassVar[bool] = False
    #: every status ``linprog`` returns, mapped (see :data:`STATUS_MAP`)
    STATUS_MAP: ClassVar[dict[int, Status]] = STATUS_MAP
    #: forms become affine pieces (LPForm's rows); smooth nonlinear forms are refused
    FORMS = affine_pieces_table("scipy")
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("options", (dict,) + NONE, None,
               "linprog(method='highs') options, merged over DEFAULT_OPTIONS; tried on a one-variable LP when the"
               " backend is built.",
               "a dict of linprog(method='highs') options (name: value), or None", string_keys),
    )
    #: every program, through its LP form (:class:`~curlopt.programs.lp.LPForm`; the class is defined below)
    COMPILES: ClassVar[Mapping[type[Program], CompiledForm | Exactly]] = {
        Program: lambda backend, program: CompiledScipy(backend, program)}

    options: dict[str, Any]

    def _configure(self) -> None:
        given = dict(self.options or {})
        for neutral, key, on in (("time_limit", "time_limit", self.time_limit is not None),
                                 ("verbose", "disp", self.verbose)):
            if on and key in given:
                refuse_both(self.name, neutral, "options", key)
        if self.verbose:
            given["disp"] = True
        self.options = {**DEFAULT_OPTIONS, **given}
        _check_options(self.options)

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return utility.is_lp_representable


def _linprog_options() -> list[str]:
    """The option names ``linprog(method="highs")`` documents (its "Options" section)."""
    import re

    from scipy.optimize import show_options

    text = show_options("linprog", "highs", disp=False)
    section = text.split("Options\n-------\n", 1)[-1].split("\nReturns\n", 1)[0]
    return [name for name in re.findall(r"^(\w+) :", section, flags=re.MULTILINE) if name != "unknown_options"]


def _check_options(options: dict[str, Any]) -> None:
    """Refuse what ``linprog`` would not use: an unknown name (it only warns, then ignores it) or a value it
    rejects (tried once on a one-variable LP, so the mistake shows when the backend is built, not mid-run)."""
    from scipy.optimize import linprog

    known = _linprog_options()
    unknown = [key for key in options if key not in known]
    if unknown:
        raise BackendOptionError(
            f"the scipy backend was given linprog option(s) {', '.join(map(repr, unknown))} that"
            f" linprog(method='highs') does not take; it takes {', '.join(map(repr, known))}.",
            [str(key) for key in unknown],
        )
    try:  # quietly: the trial is not a solve the user asked to watch
        linprog([1.0], bounds=[(0.0, 1.0)], method="highs", options={**options, "disp": False})
    except (TypeError, ValueError) as exc:
        reason = " ".join(str(exc).split())  # SciPy's message spans lines; keep the error to one
        raise BackendOptionError(f"the scipy backend's linprog options {options!r} are refused: {reason[:300]}") from exc


def _status(code: int, message: str) -> Status:
    """Our status for ``linprog``'s ``code``; code 1 covers both limits, and only the message says which."""
    if code == 1 and "time limit" in message.lower():
        return Status.TIME_LIMIT
    return STATUS_MAP.get(code, Status.UNKNOWN)


class CompiledScipy(CompiledProgram):
    """An LP form of one program; each solve reads the current parameters and ε and calls ``linprog``."""

    backend: ScipyBackend

    def __init__(self, backend: ScipyBackend, program: Program) -> None:
        super().__init__(backend, program)
        self.form = form = LPForm(program)
        # linprog minimises ``c·x`` over ``A_ub x <= b_ub``, ``A_eq x = b_eq``: split our two-sided rows once.
        self._equal = np.flatnonzero(form.row_lower == form.row_upper)
        self._upper = np.flatnonzero((form.row_lower != form.row_upper) & np.isfinite(form.row_upper))
        self._lower = np.flatnonzero((form.row_lower != form.row_upper) & np.isfinite(form.row_lower))
        # linprog reads None as "no bound"
        self._bounds = [(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
                        for lo, hi in zip(form.col_lower.tolist(), form.col_upper.tolist(), strict=True)]

    def parameter_values(self) -> np.ndarray:
        """The program's current parameter entries (the kernel, ``P^``, the radius), read at every solve."""
        return self.program.linear.param_values

    def _solve(self, with_constraints: bool) -> RawSolution:
        import scipy.sparse as sp
        from scipy.optimize import OptimizeWarning, linprog

        form, program = self.form, self.program
        matrix = form.matrix(self.parameter_values())
        row_upper = form.row_upper.copy()
        row_upper[form.constraint_rows] = form.constraint_upper(program.epsilon, with_constraints)
        # the fallback's g rows have an infinite upper bound: leave them out
        upper = self._upper[np.isfinite(row_upper[self._upper])]
        a_ub = sp.vstack([matrix[upper], -matrix[self._lower]]).tocsr()
        b_ub = np.concatenate([row_upper[upper], -form.row_lower[self._lower]])
        options = self.backend.options
        left = self.time_left()
        if left is not None:
            if left <= 0:
                return self.time_limit_reached("before linprog started", "scipy linprog (HiGHS)")
            options = {**options, "time_limit": left}
        started = time.perf_counter()
        with warnings.catch_warnings():  # linprog warns that it passes HIGHS_PASSED_OPTIONS on verbatim, as meant
            warnings.filterwarnings("ignore", message="Unrecognized options detected", category=OptimizeWarning)
            res = linprog(-form.cost, A_ub=a_ub if a_ub.shape[0] else None, b_ub=b_ub if b_ub.size else None,
                          A_eq=matrix[self._equal] if self._equal.size else None,
                          b_eq=form.row_upper[self._equal] if self._equal.size else None,
                          bounds=self._bounds, method="highs", options={**HIGHS_PASSED_OPTIONS, **options})
        solver_time = time.perf_counter() - started  # linprog reports no run time of its own
        status = _status(int(res.status), str(res.message))
        x = np.asarray(res.x, dtype=float)[: program.n_vars] if status is Status.OPTIMAL else None
        iterations = getattr(res, "nit", None)
        message = "" if status is Status.OPTIMAL else f"linprog status {res.status}: {res.message}"
        return RawSolution(status, x, None if iterations is None else int(iterations), "scipy linprog (HiGHS)",
                           message, solver_time)

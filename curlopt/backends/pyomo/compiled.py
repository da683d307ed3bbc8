"""The compiled pyomo program: the shared re-solve logic and phase 1, then the cyipopt bridge and the named-solver paths."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import BackendError, UnsupportedUtilityError, UtilityCodeError
from ...programs.blocks import Program
from ...utilities.library import Utility
from ..base import CompiledProgram, RawSolution, call_utility
from ..results import Status
from .expressions import build_pyomo_model, row_role, starting_point, utility_evaluator
from .solvers import (
    BRIDGE,
    DOMAIN_ERRORS,
    IPOPT_STATUS,
    NAMED_DEFAULT_OPTIONS,
    NAMED_TIME_LIMITS,
    RETRY_COLD,
    TERMINATION_STATUS,
    ipopt_version,
    pyomo_messages,
    solver_factory,
)

if TYPE_CHECKING:
    from .backend import PyomoBackend
    from .ipopt_bridge import IpoptBridge

__all__ = ['CompiledPyomo', 'CompiledPyomoBridge', 'CompiledPyomoSolver']


class CompiledPyomo(CompiledProgram):
    """A program's Pyomo model, solved by a subclass: :class:`CompiledPyomoBridge` (Ipopt through cyipopt,
    the default) or :class:`CompiledPyomoSolver` (a named Pyomo solver).

    This class holds what both share: the model and its data, the switch between the ε-tight program,
    its fallback and the phase-1 problem, and the phase-1 decision on infeasibility.

    Attributes
    ----------
    model : pyomo ConcreteModel
        The model (its Params hold the data of the last solve).
    bridge : IpoptBridge or None
        The cyipopt bridge of the program (default solver); ``phase1_bridge``
        that of the phase-1 problem, built when first needed. None for a named solver.
    derivative_sources : dict of str to str
        ``"numpy"`` or ``"pyomo"`` for the objective and each smooth g row (bridge only).
    last_solve : list of BridgeResult
        The Ipopt runs of the last attempt (phase 1, a retried warm start, ...; bridge only).
    last_violation : float or None
        The phase-1 optimum ``s*`` (smallest achievable ``max_m g_m(ζ) + ε``) of
        the last ε-tight attempt that ran a phase 1.
    """

    backend: PyomoBackend

    def __init__(self, backend: PyomoBackend, program: Program) -> None:
        super().__init__(backend, program)
        self.built = build_pyomo_model(program)
        self.model = self.built.model
        self._version = program.version
        self._pushed = program.linear.param_values.copy()
        self._pushed_eps = float(program.epsilon)
        self.bridge: IpoptBridge | None = None
        self.phase1_bridge: IpoptBridge | None = None
        self.derivative_sources: dict[str, str] = {}
        self.last_solve: list[Any] = []
        self.last_violation: float | None = None
        #: how many warm starts failed and were retried from a cold start (bridge only)
        self.cold_retries = 0

    def _run_program(self) -> RawSolution:
        """Solve the model as activated (tight or fallback), over the program's variables (and ``t``)."""
        raise NotImplementedError

    def _run_phase1(self) -> RawSolution:
        """Solve the phase-1 problem (activated); the last entry of ``x`` is ``s``."""
        raise NotImplementedError

    def _solver_name(self) -> str:
        raise NotImplementedError

    # -- data -----------------------------------------------------------------
    def _start(self) -> np.ndarray:
        """Cold-start point over the bridge's variables (x, then t for an epigraph objective)."""
        program = self.program
        x = starting_point(program)
        if self.built.objective_rows is None:  # no epigraph variable t
            return x
        rows, c = self.built.objective_rows
        t = float(np.min(rows @ x + c)) - 1.0
        return np.append(x, t)

    def _phase1_start(self) -> np.ndarray:
        """Cold start of the phase-1 problem: the program's point and an s that meets every g row with room."""
        program = self.program
        x = starting_point(program)
        costs = program.cost_map @ x
        values = []
        for m, g in enumerate(program.constraints):
            try:
                values.append(call_utility(g, f"constraint {m}", "value", g.value, costs, allowed=DOMAIN_ERRORS))
            except UtilityCodeError:
                raise
            except DOMAIN_ERRORS:  # outside its domain at the start: the phase 1 finds a point
                values.append(math.nan)
        finite = [v for v in values if math.isfinite(v)]
        s = (max(finite) if finite else 0.0) + program.epsilon + 1.0
        return np.append(x, s)

    def _sync(self) -> None:
        """Write the program data that changed into the Params."""
        program, m = self.program, self.model
        if program.version != self._version:
            values = program.linear.param_values
            for j in np.flatnonzero(values != self._pushed):
                self.built.theta[j].set_value(float(values[j]))
            self._pushed = values.copy()
            if program.epsilon != self._pushed_eps:
                m.eps.set_value(float(program.epsilon))
                self._pushed_eps = float(program.epsilon)
            self._version = program.version

    def _activate(self, mode: str) -> None:
        """Switch the model between ``"tight"``, ``"fallback"`` and ``"phase1"`` (objective and rows)."""
        m = self.model
        for name, on in (("objective", mode != "phase1"), ("objective_pieces", mode != "phase1"),
                         ("g", mode == "tight"), ("g_pieces", mode == "tight"),
                         ("phase1_objective", mode == "phase1"), ("phase1_g", mode == "phase1"),
                         ("phase1_pieces", mode == "phase1")):
            component = m.component(name)
            if component is not None:
                component.activate() if on else component.deactivate()

    # -- solving ----------------------------------------------------------------
    def _solve(self, with_constraints: bool) -> RawSolution:
        """One attempt; for the ε-tight program a phase 1 decides infeasibility (see :class:`PyomoBackend`).

        Pyomo's log messages during the attempt go to the logging module, one line each (never stdout).
        """
        with pyomo_messages():
            return self._solve_once(with_constraints)

    def _solve_once(self, with_constraints: bool) -> RawSolution:
        self._sync()
        self.last_solve = []
        if not (with_constraints and self.program.constraints):
            self._activate("fallback")
            return self._attempt()
        self.last_violation = None
        runs: list[RawSolution] = []
        threshold = self.backend.infeasibility_threshold
        if self.backend.feasibility_check:
            phase1, violation = self._phase1()
            runs.append(phase1)
            if phase1.status is Status.TIME_LIMIT:  # no time left for the program itself
                return self._time_is_up(runs)
            if violation is not None and violation > threshold:
                return self._infeasible(runs, violation, "")
        self._activate("tight")
        raw = self._attempt()
        runs.append(raw)
        if not raw.status.has_solution and raw.status is not Status.TIME_LIMIT and not self.backend.feasibility_check:
            phase1, violation = self._phase1()
            runs.append(phase1)
            if violation is not None and violation > threshold:
                return self._infeasible(runs, violation, f"{self._solver_name()} ended with {raw.status.value}; ")
        else:
            violation = self.last_violation
        message = raw.message
        if raw.status is Status.INFEASIBLE and violation is not None:
            raw.status = Status.NUMERICAL_ERROR
            message = (f"{self._solver_name()} reported the ε-tight program infeasible, but the phase-1 problem"
                       f" meets every g row (smallest max_m g_m(ζ)+ε = {violation:.3g}); " + message)
        notes = [r.message for r in runs if r is not raw and r.message and not r.status.has_solution]
        return RawSolution(
            raw.status, raw.x, self._total_iterations(runs), raw.solver,
            "; ".join(notes + ([message] if message else [])),
            sum(r.solver_time or 0.0 for r in runs), raw.statistics,
        )

    def _infeasible(self, runs: list[RawSolution], violation: float, prefix: str) -> RawSolution:
        message = (f"{prefix}phase 1: the ε-tight rows cannot all hold — the smallest achievable max_m g_m(ζ) + ε is"
                   f" {violation:.6g} > {self.backend.infeasibility_threshold:g}")
        return RawSolution(Status.INFEASIBLE, None, self._total_iterations(runs), runs[-1].solver, message,
                           sum(r.solver_time or 0.0 for r in runs))

    def _time_is_up(self, runs: list[RawSolution]) -> RawSolution:
        """The attempt, ended by the time limit in its last run (the phase 1)."""
        return RawSolution(Status.TIME_LIMIT, None, self._total_iterations(runs), runs[-1].solver,
                           runs[-1].message, sum(r.solver_time or 0.0 for r in runs))

    @staticmethod
    def _total_iterations(runs: list[RawSolution]) -> int | None:
        counts = [r.iterations for r in runs if r.iterations is not None]
        return sum(counts) if counts else None

    def _phase1(self) -> tuple[RawSolution, float | None]:
        """Solve the phase-1 problem; return its outcome and ``s*`` (None when it did not solve)."""
        self._activate("phase1")
        try:
            raw = self._run_phase1()
        finally:
            self._activate("tight")
        violation = None
        if raw.status.has_solution and raw.x is not None:
            violation = float(raw.x[-1])
            self.last_violation = violation
        elif raw.message:
            raw.message = f"phase 1 did not solve ({raw.status.value}: {raw.message})"
        else:
            raw.message = f"phase 1 did not solve ({raw.status.value})"
        return raw, violation

    def _attempt(self) -> RawSolution:
        """Solve the model as activated (tight or fallback)."""
        raw = self._run_program()
        if raw.x is not None:
            raw.x = raw.x[: self.program.n_vars]
        return raw


class CompiledPyomoBridge(CompiledPyomo):
    """The Pyomo model solved by Ipopt through cyipopt (:mod:`curlopt.backends.pyomo.ipopt_bridge`), the default."""

    # made by the constructor (a program the bridge cannot take raises there)
    bridge: IpoptBridge

    def __init__(self, backend: PyomoBackend, program: Program) -> None:
        super().__init__(backend, program)
        self._start_note = ""
        self._evaluators: dict[int, Any] = {}
        self._build_bridge()

    def utility_evaluator(self, utility: Utility, role: str) -> Any:
        """One evaluator per utility object (shared by the program and its phase 1)."""
        if id(utility) not in self._evaluators:
            self._evaluators[id(utility)] = utility_evaluator(utility, self.backend.derivatives, row_role(role))
        evaluator, source = self._evaluators[id(utility)]
        self.derivative_sources[role] = source
        return evaluator

    def _build_bridge(self) -> None:
        from .ipopt_bridge import AffineEvaluator, BridgeError, IpoptBridge, SmoothTerm

        built, program, m = self.built, self.program, self.model
        if built.objective_term is not None:
            f, rewards, expr = built.objective_term
            objective = SmoothTerm(self.utility_evaluator(f, "objective"), rewards, expression=expr,
                                   label=f"objective {f!r}")
        else:
            objective = SmoothTerm(AffineEvaluator([1.0]), [m.t], expression=m.t, label="objective epigraph t")
        costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
        terms = [SmoothTerm(self.utility_evaluator(g, f"g{i}"), costs, constraint=con, label=f"constraint {i} {g!r}")
                 for i, g, con in built.g_terms]
        try:
            self.bridge = IpoptBridge(built.variables, built.linear_constraints, objective, terms, maximize=True)
            start = self._start()
            self.bridge.check_terms(start)
        except BridgeError as exc:
            raise BackendError(f"the pyomo backend cannot bridge this program to cyipopt: {exc}") from None
        outside = [term.label for term in [objective] + terms if not term.evaluator.in_domain(term.aggregate(start))]
        if outside:  # said with any failure: Ipopt cannot start there
            self._start_note = (self._unreached_note(start, objective) or
                                f"the starting point's aggregate is outside the domain of {', '.join(outside)}"
                                " (e.g. a reward signal that is zero for every state and action)")

    def _unreached_note(self, start: np.ndarray, objective: Any) -> str:
        """Why an episodic program's objective cannot start inside its domain, or ``""``.

        An episodic program starts from the uniform policy's occupancy, which reaches every (step, state, action)
        any policy reaches; a total it leaves exactly on the bound of a closed domain (an entropy's 0: a pair no
        policy reaches within the horizon) is there at every feasible point, where the gradient is infinite, so no
        start point inside the domain exists."""
        term = self.built.objective_term
        if term is None or getattr(self.program, "starting_point", None) is None:
            return ""
        lower = np.asarray(term[0].domain_lower(), dtype=float)
        totals = np.asarray(objective.aggregate(start), dtype=float)
        if lower.shape != totals.shape:
            return ""
        on_bound = np.isfinite(lower) & (totals == lower)
        if not on_bound.any():
            return ""
        return (f"{int(on_bound.sum())} of the {totals.size} totals of objective {term[0]!r} are on the bound of its"
                " domain at the uniform policy's occupancy, and so at every feasible point (pairs no policy reaches"
                " within the horizon), where its gradient is infinite: Ipopt cannot start inside the domain; the"
                " cvxpy backend's conic form takes such a program")

    def _build_phase1_bridge(self) -> IpoptBridge:
        from .ipopt_bridge import AffineEvaluator, IpoptBridge, ShiftedEvaluator, SmoothTerm

        built, program, m = self.built, self.program, self.model
        costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
        terms = [SmoothTerm(ShiftedEvaluator(self.utility_evaluator(g, f"g{i}")), costs + [m.phase1_s],
                            constraint=m.phase1_g[i], label=f"phase-1 constraint {i} {g!r}")
                 for i, g, _ in built.g_terms]
        pieces = m.component("phase1_pieces")
        linear = [m.rows[r] for r in range(program.linear.n_rows)] + (list(pieces.values()) if pieces else [])
        objective = SmoothTerm(AffineEvaluator([1.0]), [m.phase1_s], expression=m.phase1_s, label="phase-1 s")
        return IpoptBridge(list(m.x.values()) + [m.phase1_s], linear, objective, terms, maximize=False)

    def _solver_name(self) -> str:
        return "Ipopt"

    def _run_program(self) -> RawSolution:
        return self._run_bridge(self.bridge, self._start)

    def _run_phase1(self) -> RawSolution:
        bridge = self.phase1_bridge
        if bridge is None:
            bridge = self.phase1_bridge = self._build_phase1_bridge()
        return self._run_bridge(bridge, self._phase1_start)

    def _ipopt_options(self) -> dict[str, Any] | None:
        """The Ipopt options of the next run: the backend's, and what is left of its time limit (None: nothing is)."""
        left = self.time_left()
        if left is None:
            return self.backend.options
        return None if left <= 0 else {**self.backend.options, "max_cpu_time": left, "max_wall_time": left}

    def _run_bridge(self, bridge: IpoptBridge, start: Callable[[], np.ndarray]) -> RawSolution:
        backend = self.backend
        options = self._ipopt_options()
        if options is None:
            return self.time_limit_reached("before Ipopt started", f"ipopt {ipopt_version()} (cyipopt)")
        runs = [bridge.solve(start(), options, backend.warm_start, backend.warm_start_options)]
        status = IPOPT_STATUS.get(runs[0].status, Status.SOLVER_ERROR)
        options = self._ipopt_options() if runs[0].warm and status in RETRY_COLD else None
        if options is not None:
            self.cold_retries += 1
            runs.append(bridge.solve(start(), options, warm_start=False))
            status = IPOPT_STATUS.get(runs[-1].status, Status.SOLVER_ERROR)
        for run in runs:
            run.role = "phase1" if bridge is self.phase1_bridge else "program"
        self.last_solve.extend(runs)
        last = runs[-1]
        notes = []
        if len(runs) > 1:
            notes.append(f"the warm start ended with {runs[0].status_name}; re-solved from a cold start")
        if last.status == 1:
            notes.append("Ipopt stopped at its acceptable level (Solved_To_Acceptable_Level), not the full tolerance")
        elif not status.has_solution:
            notes.append(f"Ipopt: {last.status_name} ({last.message})")
            if self._start_note and not last.warm:
                notes.append(self._start_note)
        x = last.x
        if status.has_solution and x is None:
            status = Status.NUMERICAL_ERROR
            notes.append("Ipopt reported success without a finite solution")
        statistics = ({"duality_gap": last.duality_gap, "objective_value": last.objective}
                      if status.has_solution and x is not None else {})
        keep = status.has_solution or status in (Status.ITERATION_LIMIT, Status.TIME_LIMIT)  # see STOPPED
        return RawSolution(status, x if keep else None, sum(r.iterations for r in runs),
                           f"ipopt {ipopt_version()} (cyipopt)", "; ".join(notes), sum(r.solve_time for r in runs),
                           statistics)


class CompiledPyomoSolver(CompiledPyomo):
    """The Pyomo model solved by a named Pyomo solver (``SolverFactory``), re-solved from its last solution."""

    def __init__(self, backend: PyomoBackend, program: Program) -> None:
        super().__init__(backend, program)
        if self.built.external:
            raise UnsupportedUtilityError(
                f"the Pyomo solver {backend.solver!r} needs Pyomo expressions, but {', '.join(self.built.external)}"
                f" has no pyomo_expr; give it one, or use the default solver {BRIDGE!r}."
            )
        self._loaded = False
        self._phase1_loaded = False
        self._solver = solver_factory(backend.solver)
        for key, value in {**NAMED_DEFAULT_OPTIONS.get(backend.solver, {}), **backend.options}.items():
            self._solver.options[key] = value

    def _solver_name(self) -> str:
        return self.backend.solver

    def _run_program(self) -> RawSolution:
        return self._run_pyomo(self.built.variables, self._start)

    def _run_phase1(self) -> RawSolution:
        return self._run_pyomo(self.built.variables[: self.program.n_vars] + [self.model.phase1_s],
                               self._phase1_start, phase1=True)

    def _run_pyomo(self, variables: list, start: Callable[[], np.ndarray], phase1: bool = False) -> RawSolution:
        import time

        loaded = self._phase1_loaded if phase1 else self._loaded
        if not loaded:  # first solve of this problem: the cold-start point; later the last solution
            for var, value in zip(variables, start(), strict=True):
                var.set_value(float(value), skip_validation=True)
        left = self.time_left()
        if left is not None:
            if left <= 0:
                return self.time_limit_reached(f"before {self.backend.solver} started", self.backend.solver)
            self._solver.options[NAMED_TIME_LIMITS[self.backend.solver]] = left
        started = time.perf_counter()
        results = self._solver.solve(self.model, load_solutions=False, tee=self.backend.verbose)
        elapsed = time.perf_counter() - started
        condition = results.solver.termination_condition
        status = TERMINATION_STATUS.get(str(condition), Status.UNKNOWN)
        message = f"{self.backend.solver}: termination condition {condition}"
        x = None
        if status.has_solution:
            try:
                self.model.solutions.load_from(results)
                x = np.array([np.nan if v.value is None else v.value for v in variables], dtype=float)
            except Exception as exc:
                message += f"; could not load the solution ({exc})"
            if x is None or not np.all(np.isfinite(x)):
                status, x = Status.NUMERICAL_ERROR, None
                message += "; no finite solution"
            elif phase1:
                self._phase1_loaded = True
            else:
                self._loaded = True
        return RawSolution(status, x, None, self.backend.solver, "" if status is Status.OPTIMAL else message, elapsed)

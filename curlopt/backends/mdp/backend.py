"""The ``mdp-columns`` backend: occupancy programs by column generation with an MDP solver inside.

A generic LP or conic solver pays for the kernel's ``S²·A`` coefficients in every factorisation of the occupancy
program. This backend never factorises that matrix: it mixes occupancies of deterministic policies (the vertices of
the occupancy polytope) in a small master problem, and finds each new vertex by relative value iteration, which
only multiplies the kernel by vectors (:mod:`.search` states the method and its certificate). What it returns:

* **accuracy**: the objective is certified within ``tolerance · max(1, |f|)`` of the program's optimum (the gap of
  the master's Lagrangian bound, see :mod:`.masters`); the occupancy is an exact mixture of stationary
  occupancies (mass and flow rows to rounding, ~1e-12); the constraint rows hold to the master solver's
  feasibility tolerance (1e-9), relaxed by at most ``feasibility_tolerance`` when phase 1 ends within it;
* **programs**: the occupancy program (the optimum, PS-CURL's epochs), safe mode's program and its least-violation
  program; and the episodic occupancy program (the episodic optimum), whose columns are deterministic Markov
  policies priced by backward induction over its per-step kernels (:mod:`.episodic`: exact pricing, so every
  round's certificate is exact). Every other program (UC-CURL's optimistic program, UCRL-CMDP's box program, subclasses) is handed to
  the ``highs`` backend (LP-representable utilities) or the ``cvxpy`` backend (others), built with this
  backend's options (``DELEGATES``); results name this backend, and their ``solver`` says who solved them;
* **utilities**: LP-representable ones (the master is an LP on HiGHS, whose duals price the next column), and,
  when CVXPY is installed, DCP ones (the master is a small conic program; the bound uses their gradients);
* **warm starts**: the pool's policies and the value iteration's values are kept between solves; after
  ``program.update(kernel=...)`` the kept policies are re-evaluated on the new kernel and start the new search;
* **where it stops**: slowly mixing chains (a queue with a long buffer) need many value-iteration sweeps per
  column; the search then ends at ``max_rounds`` or ``time_limit`` with status ``iteration_limit`` or
  ``time_limit`` and the gap it had reached — a sparse LP (``highs``) is the better tool there. Multichain models
  are solved exactly (one column per recurrent class of a policy) and the result's message says the model is
  multichain.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar, cast

import numpy as np

from ...programs.blocks import Program
from ...programs.episodic import EpisodicOccupancyProgram
from ...utilities.library import CustomUtility, Utility
from ..base import Backend, CompiledForm, CompiledProgram, Exactly, RawSolution, exactly
from ..cvxpy import CVXPY_FORMS, CvxpyBackend, settings_by_solver, solver_names
from ..highs.backend import HIGHS_OPTIONS, HighsBackend
from ..options import INTEGER, NONE, NUMBER, Option, positive_integer, small_tolerance
from ..results import Status
from .chains import KernelMatrix, policy_classes
from .episodic import EpisodicColumnSearch, EpisodicPool, EpisodicProblem, StepKernels
from .masters import LinearMaster
from .pool import ColumnPool
from .problem import TAKEN_PROGRAMS, OccupancyProblem, program_kernel
from .search import ENDINGS, UNUSED_WEIGHT, ColumnSearch, Outcome, SearchSettings

__all__ = ["MdpColumnsBackend", "CompiledMdpColumns", "STATUS_MAP"]

#: the search's own endings -> statuses (a failed master reports its solver's status)
STATUS_MAP: dict[str, Status] = dict(ENDINGS)

#: columns kept between solves besides the solution's own (the newest first)
KEEP_RECENT = 16

MULTICHAIN_NOTE = ("the model is multichain: the policy extracted from this occupancy has {count} recurrent classes,"
                   " so it reaches this occupancy only from some start states (the program's optimum itself is exact:"
                   " each recurrent class of a policy is its own column)")




class MdpColumnsBackend(Backend):
    """Column generation over deterministic policies with a relative-value-iteration oracle (module doc).

    Parameters
    ----------
    tolerance : float, default 1e-8
        Stop when the certified optimality gap is at most ``tolerance · max(1, |objective|)``.
    feasibility_tolerance : float, default 1e-9
        Phase 1 accepts a mixture whose largest ``g_m + ε`` is at most this, and proves infeasibility when its bound
        on the smallest violation exceeds it.
    max_rounds : int, default 1000
        The most pricing rounds (master solves) per solve attempt; reaching it gives ``iteration_limit``.
    max_sweeps : int, default 20000
        The most value-iteration sweeps per pricing round.
    max_columns : int, default 200
        The pool's size above which unused columns are dropped during a search.
    options : dict, optional
        HiGHS options of the master LP (and of the ``highs`` backend the other programs go to).
    solvers, solver_options : optional
        CVXPY solvers and settings of the conic master (and of the ``cvxpy`` backend), as the cvxpy backend takes
        them.
    time_limit, verbose
        As for every backend (:class:`~curlopt.backends.base.Backend`): the rounds stop once the limit is used up
        (status ``time_limit``, with the gap reached); ``verbose`` lets the master's solver print.
    """

    name: ClassVar[str] = "mdp-columns"
    requires: ClassVar[tuple[str, ...]] = ("highspy",)
    extra: ClassVar[str] = ""  # highspy is a core dependency; cvxpy (extra "cvxpy") adds the DCP utilities
    takes: ClassVar[str] = ("LP-representable utilities, and DCP utilities with a gradient when cvxpy is installed"
                            " (pip install 'curlopt[cvxpy]')")
    #: not among ``auto``'s general candidates (the module doc says where it pays and where it stops): the registry's
    #: rule names it for the occupancy programs of large shallow chains (:func:`~curlopt.backends.registry.choose_backend`)
    auto_choice: ClassVar[bool] = False
    STATUS_MAP: ClassVar[dict[str, Status]] = STATUS_MAP
    #: the accuracy the backend declares, as :class:`curlopt.testing.Tolerances` fields: the objective is certified
    #: to ``tolerance`` (1e-8, relative) and the rows hold to the master's 1e-9 (tests/test_mdp_columns.py runs the
    #: conformance suite with these)
    ACCURACY: ClassVar[dict[str, float]] = {"objective_rel": 1e-7, "objective_abs": 1e-8, "feasibility": 1e-8}
    #: LP-representable forms go to the LP master as affine pieces, and every form goes to the conic master as the
    #: cvxpy backend compiles it (:func:`~curlopt.backends.cvxpy.cvxpy_expression`): its table says what that takes
    FORMS = CVXPY_FORMS
    OPTIONS = (
        Option("tolerance", NUMBER, 1e-8,
               "Stop when the certified optimality gap is at most tolerance · max(1, |objective|).",
               "a number in (0, 1e-3]", small_tolerance, float),
        Option("feasibility_tolerance", NUMBER, 1e-9,
               "Phase 1 accepts a mixture whose rows hold to this, and proves infeasibility beyond it.",
               "a number in (0, 1e-3]", small_tolerance, float),
        Option("max_rounds", INTEGER, 1000,
               "The most pricing rounds (master solves) per solve attempt; reaching it gives status iteration_limit.",
               "an integer >= 1", positive_integer, int),
        Option("max_sweeps", INTEGER, 20000, "The most value-iteration sweeps per pricing round.",
               "an integer >= 1", positive_integer, int),
        Option("max_columns", INTEGER, 200, "The pool's size above which unused columns are dropped during a search.",
               "an integer >= 1", positive_integer, int),
        HIGHS_OPTIONS,
        Option("solvers", (str, list, tuple) + NONE, None,
               "CVXPY solvers of the conic master, tried in order (default: the cvxpy backend's).",
               "a CVXPY solver name or a list of them, or None", solver_names),
        Option("solver_options", (dict,) + NONE, None,
               "Per-solver CVXPY settings of the conic master, merged over the cvxpy backend's defaults.",
               "a dict from CVXPY solver name to a dict of its settings, or None", settings_by_solver),
    )

    #: the occupancy program, safe mode's program, its least-violation program and the episodic occupancy program, each
    #: exactly (a subclass may add rows the search would not know of; the classes are defined below); every other
    #: program (the episodic extended program among them) goes to the highs
    #: backend (LP-representable utilities) or the cvxpy backend (the others), built with this backend's settings
    COMPILES: ClassVar[Mapping[type[Program], CompiledForm | Exactly]] = {
        **{taken: exactly(lambda backend, program: CompiledMdpColumns(backend, program)) for taken in TAKEN_PROGRAMS},
        EpisodicOccupancyProgram: exactly(lambda backend, program: CompiledEpisodicColumns(backend, program))}
    DELEGATES: ClassVar[tuple[type[Backend], ...]] = (HighsBackend, CvxpyBackend)

    tolerance: float
    feasibility_tolerance: float
    max_rounds: int
    max_sweeps: int
    max_columns: int
    options: dict[str, Any]
    solvers: Any
    solver_options: Any

    def _configure(self) -> None:
        from ..highs.backend import highs_options

        self.given_highs_options = dict(self.options or {})  # as given: the delegated highs backend checks them again
        self.options = highs_options(self, "the mdp-columns backend")
        self._conic = None
        if self.solvers is not None or self.solver_options is not None:
            self._conic = self._conic_backend()  # checks them now, not at the first solve
        self.settings = SearchSettings(self.tolerance, self.feasibility_tolerance, self.max_rounds, self.max_sweeps,
                                       self.max_columns)

    @classmethod
    def version(cls) -> str:
        """HiGHS's version, and CVXPY's (the conic master's) when it is installed."""
        from ..base import package_version

        conic = importlib.util.find_spec("cvxpy") is not None
        return package_version("highspy") + (f", {package_version('cvxpy')}" if conic else "")

    def _conic_backend(self) -> CvxpyBackend:
        from ..cvxpy import CvxpyBackend

        return CvxpyBackend(solvers=self.solvers, solver_options=self.solver_options)

    @property
    def conic(self) -> CvxpyBackend:
        """The cvxpy backend whose solvers and settings the conic master uses (built on first use)."""
        if self._conic is None:
            self._conic = self._conic_backend()
        return self._conic

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        if utility.is_lp_representable:
            return True
        if importlib.util.find_spec("cvxpy") is None:
            return False
        from ..cvxpy import can_express

        # the conic master's bound needs a gradient: a custom utility without one cannot give it
        no_gradient = isinstance(utility, CustomUtility) and getattr(utility, "_gradient", None) is None
        return can_express(utility) and not no_gradient

    def delegate_options(self, delegate: type[Backend]) -> dict[str, Any]:
        """HiGHS's options as given to this backend (for ``highs``), or its CVXPY solvers and settings (for
        ``cvxpy``)."""
        if delegate is CvxpyBackend:
            return {"solvers": self.solvers, "solver_options": self.solver_options}
        return {"options": self.given_highs_options}


def master_for(backend: MdpColumnsBackend, problem: Any) -> Any:
    """The master of ``problem``: an LP on HiGHS for LP-representable utilities, else the conic master on CVXPY."""
    if all(u.is_lp_representable for _, u in problem.utilities()):
        return LinearMaster(problem, backend.options)
    from .conic import ConicMaster

    conic = backend.conic
    return ConicMaster(problem, conic.solver_order, conic.solver_options)


class CompiledMdpColumns(CompiledProgram):
    """One program solved by column generation; the pool of policies and the value-iteration warm starts persist.

    Attributes (diagnostics of the last solve attempt)
    ---------------------------------------------------
    last_rounds, last_sweeps, last_columns : int
        Pricing rounds, value-iteration sweeps, and columns in the pool at the end.
    last_gap : float
        The certified optimality gap (NaN when the search ended without one).
    last_master_time, last_oracle_time, last_evaluation_time : float
        Seconds in the master, in value iteration, and re-evaluating kept policies on a new kernel.
    """

    #: how the columns are priced, for the result's ``solver``
    PRICING = "relative value iteration"

    def __init__(self, backend: MdpColumnsBackend, program: Program):
        super().__init__(backend, program)
        problem = self._read_problem(program)
        self.n_states, self.n_actions = program.model.n_states, program.model.n_actions
        self.master: Any = master_for(backend, problem)
        self.pool: Any = self._new_pool(program)
        self.kernel: Any = None
        self.problem: Any = problem
        self._kernel_source: Any = None
        self._version: int | None = None
        self._values: dict[str, np.ndarray] = {}
        self.last_rounds = self.last_sweeps = self.last_columns = 0
        self.last_gap = math.nan
        self.last_master_time = self.last_oracle_time = self.last_evaluation_time = 0.0

    # -- what a criterion changes (the long-run program's here; CompiledEpisodicColumns gives the episodic ones) --

    def _read_problem(self, program: Program) -> Any:
        return OccupancyProblem.read(program)

    def _new_pool(self, program: Program) -> Any:
        return ColumnPool(program.model.n_states, program.model.n_actions)

    def _kernel_of(self, program: Program) -> Any:
        """The program's kernel data, the same object until an update replaces it."""
        return program_kernel(program)

    def _read_kernel(self, source: Any) -> Any:
        return KernelMatrix(source, self.n_states, self.n_actions)

    def _new_search(self, settings: Any) -> ColumnSearch:
        return ColumnSearch(self.kernel, self.problem, self.pool, self.master, settings, float(self.program.epsilon),
                            self.time_left, self._values)

    def _solution_notes(self, occupancy: np.ndarray) -> list[str]:
        """Notes on a solution's occupancy: a policy with several recurrent classes is said."""
        count = policy_classes(self.kernel, occupancy)
        return [MULTICHAIN_NOTE.format(count=count)] if count > 1 else []

    # -- the shared steps --

    def _refresh(self) -> None:
        """Read the program's data when it changed: a new kernel re-evaluates the kept policies on it."""
        program = self.program
        if program.version == self._version:
            return
        started = time.perf_counter()
        source = self._kernel_of(program)
        if source is not self._kernel_source:
            self.kernel = self._read_kernel(source)
            self._kernel_source = source
            if len(self.pool):
                self.pool.reevaluate(self.kernel)
        self.problem = self._read_problem(program)
        self.master.problem = self.problem
        self.pool.set_signals(self.problem.reward_signals, self.problem.cost_signals)
        self._version = program.version
        self.last_evaluation_time = time.perf_counter() - started

    def _solve(self, with_constraints: bool) -> RawSolution:
        self._refresh()
        backend: MdpColumnsBackend = self.backend  # type: ignore[assignment]
        search = self._new_search(backend.settings)
        if not len(self.pool):
            search.seed()
        outcome, notes = self._search(search, with_constraints)
        x = None
        if outcome.status.has_solution and outcome.weights is not None:
            rho = self.pool.occupancy(outcome.weights)
            x = self.problem.solution_vector(self.program, rho)
            notes.extend(self._solution_notes(rho))
        self._remember(search, outcome)
        message = "; ".join(filter(None, [outcome.message, *notes]))
        solver = f"column generation ({self.master.solver} master, {self.PRICING})"
        return RawSolution(outcome.status, x, search.rounds, solver, message, search.master_time + search.oracle_time)

    def _search(self, search: ColumnSearch, with_constraints: bool) -> tuple[Outcome, list[str]]:
        """Phase 1 when the pool cannot satisfy the rows, then the objective's search."""
        problem = self.problem
        if problem.least_violation:
            return search.run("violation"), []
        if not (with_constraints and problem.constraints):
            return search.run("unconstrained"), []
        outcome = search.run("objective")
        if outcome.status is not Status.INFEASIBLE:
            return outcome, []
        phase1 = search.run("violation", feasibility=True)
        if not phase1.status.has_solution:
            return phase1, []
        notes = []
        violation = -search.value(phase1.weights, "violation")  # type: ignore[arg-type]
        if violation > 0:  # within the feasibility tolerance: the rows are relaxed by that much
            search.epsilon -= violation
            notes.append(f"the constraint rows hold to {violation:.2g} (feasibility tolerance"
                         f" {search.settings.feasibility_tolerance:g})")
        outcome = search.run("objective")
        if outcome.status is Status.INFEASIBLE:
            outcome = Outcome(Status.NUMERICAL_ERROR, gap=outcome.gap, message="the master found no feasible"
                              f" mixture although phase 1 did ({outcome.message})")
        return outcome, notes

    def _remember(self, search: ColumnSearch, outcome: Outcome) -> None:
        """Keep the solution's columns and the :data:`KEEP_RECENT` newest others for the next solve (all of them
        when the search ended without a solution): after a new kernel, a pool of the last search's columns gives
        the master the shape of the new problem near its optimum, and saves rounds (measured: 12 rounds to 5 at
        (1000, 5) with a binding constraint, after a posterior draw from 2,000 visits per pair)."""
        if outcome.weights is not None and np.any(outcome.weights > UNUSED_WEIGHT):
            recent = np.arange(outcome.weights.size) >= outcome.weights.size - KEEP_RECENT
            self.pool.keep((outcome.weights > UNUSED_WEIGHT) | recent)
        self.last_rounds, self.last_sweeps, self.last_columns = search.rounds, search.sweeps, len(self.pool)
        self.last_gap = outcome.gap
        self.last_master_time, self.last_oracle_time = search.master_time, search.oracle_time


class CompiledEpisodicColumns(CompiledMdpColumns):
    """The episodic occupancy program by column generation over deterministic Markov policies, priced by backward
    induction (:mod:`.episodic`); phase 1, the fallback, the limits and the kept columns as for the long-run program.
    The attributes are those of :class:`CompiledMdpColumns` (``last_sweeps`` stays 0: pricing has no sweeps)."""

    PRICING = "backward induction"

    def __init__(self, backend: MdpColumnsBackend, program: Program):
        self.horizon = int(program.horizon)  # type: ignore[attr-defined]
        super().__init__(backend, program)

    @property
    def kernels(self) -> StepKernels | None:
        """The per-step kernels the kept policies are evaluated on (the base class's ``kernel``)."""
        return cast("StepKernels | None", self.kernel)

    def _read_problem(self, program: Program) -> Any:
        return EpisodicProblem.read(program)

    def _new_pool(self, program: Program) -> Any:
        return EpisodicPool(np.asarray(program.model.initial, dtype=float), self.horizon, program.model.n_actions)

    def _kernel_of(self, program: Program) -> Any:
        return program.kernels  # type: ignore[attr-defined]  # a new list after every update(kernels=...)

    def _read_kernel(self, source: Any) -> Any:
        return StepKernels(source, self.n_states, self.n_actions)

    def _new_search(self, settings: Any) -> ColumnSearch:
        return EpisodicColumnSearch(self.kernel, self.problem, self.pool, self.master, settings,
                                    float(self.program.epsilon), self.time_left, self._values)

    def _solution_notes(self, occupancy: np.ndarray) -> list[str]:
        return []  # a Markov policy over H steps has no recurrent classes to report

"""One status convention: every backend maps every status its solver can return, and one rule for
"solved to reduced accuracy" (``Status.ALMOST_OPTIMAL``) holds for every backend.

The native statuses are read from the solvers' own declarations (highspy's enum, ``cvxpy.settings``,
the documentation of ``scipy.optimize.linprog``, Ipopt's return codes as cyipopt declares them, Pyomo's
``TerminationCondition``), never from curlopt's maps, so a status a solver adds shows up here.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import installed_backend_names

from curlopt import Linear, LinearBound
from curlopt.backends.base import CompiledProgram, RawSolution
from curlopt.backends.registry import backend_class, get_backend
from curlopt.backends.results import ALMOST_OPTIMAL_TOLERANCE, ProgramVariant, Status
from curlopt.models.cmdp import CMDP
from curlopt.programs.occupancy import OccupancyProgram


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# ----------------------------------------------------------------------------
# every native status mapped
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", installed_backend_names())
def test_every_solver_of_every_backend_reports_optimal_and_infeasible(name):
    """What every epoch meets, read through each backend's map from its solver's own answer: a program with
    an optimum (the two-state model below, optimum 3/4) is ``optimal``, and one whose constraint no occupancy
    meets (a cost of at least 0 bounded by -0.1) is ``infeasible`` (not an error, which would skip the fallback)."""
    for label, options in backend_class(name).solver_variants():
        backend = get_backend(name, **options)
        solved = backend.compile(OccupancyProgram(_queue_like())).solve(fallback=False)
        assert solved.status is Status.OPTIMAL, (label, solved.message)
        assert solved.objective == pytest.approx(0.75, abs=1e-6), label
        impossible = backend.compile(OccupancyProgram(_queue_like(bound=-0.1))).solve(fallback=False)
        assert impossible.status is Status.INFEASIBLE, (label, impossible.message)


@pytest.mark.skipif(not _installed("highspy"), reason="highspy not installed")
@pytest.mark.parametrize("name", ["highs", "highs-columns"])
def test_highs_maps_every_model_status(name):
    import highspy

    native = set(highspy.HighsModelStatus.__members__)
    mapping = backend_class(name).STATUS_MAP
    assert native - set(mapping) == set()
    assert mapping["kOptimal"] is Status.OPTIMAL and mapping["kInfeasible"] is Status.INFEASIBLE


@pytest.mark.skipif(not _installed("cvxpy"), reason="cvxpy not installed")
def test_cvxpy_maps_every_status_and_reduced_accuracy_is_almost_optimal():
    import cvxpy.settings as s

    native = set(s.SOLUTION_PRESENT) | set(s.INF_OR_UNB) | set(s.ERROR) | set(s.INACCURATE)
    mapping = backend_class("cvxpy").STATUS_MAP
    assert native - set(mapping) == set()
    assert mapping[s.OPTIMAL_INACCURATE] is Status.ALMOST_OPTIMAL
    # an inaccurate certificate of infeasibility must not send a program to its fallback
    assert mapping[s.INFEASIBLE_INACCURATE] is not Status.INFEASIBLE


def test_scipy_maps_every_documented_linprog_status():
    import scipy.optimize

    doc = scipy.optimize.linprog.__doc__
    section = doc[doc.index("status : int"): doc.index("nit : int")]
    native = {int(code) for code in re.findall(r"``(\d+)`` :", section)}
    assert native, "linprog's documentation no longer lists its status codes"
    assert native - set(backend_class("scipy").STATUS_MAP) == set()


def _ipopt_return_codes() -> dict[str, int]:
    """Ipopt's ApplicationReturnStatus as declared in cyipopt's Cython header."""
    import cyipopt

    header = Path(cyipopt.__file__).parent / "cython" / "ipopt.pxd"
    if not header.exists():
        pytest.skip("cyipopt ships no ipopt.pxd here")
    text = header.read_text()
    block = text[text.index("enum ApplicationReturnStatus"):]
    block = block[: block.index("cdef enum", 10)]
    return {name: int(code) for name, code in re.findall(r"(\w+)=(-?\d+)", block)}


@pytest.mark.skipif(not (_installed("pyomo") and _installed("cyipopt")), reason="pyomo/cyipopt not installed")
def test_pyomo_maps_every_ipopt_return_code_and_termination_condition():
    from pyomo.opt import TerminationCondition

    from curlopt.backends.pyomo import solvers as pyomo_backend

    codes = _ipopt_return_codes()
    assert codes["Solved_To_Acceptable_Level"] == 1
    ipopt_map = pyomo_backend.IPOPT_STATUS
    assert set(codes.values()) - set(ipopt_map) == set()
    assert ipopt_map[codes["Solved_To_Acceptable_Level"]] is Status.ALMOST_OPTIMAL
    assert ipopt_map[codes["Solve_Succeeded"]] is Status.OPTIMAL
    assert set(TerminationCondition.__members__) - set(pyomo_backend.TERMINATION_STATUS) == set()


# ----------------------------------------------------------------------------
# the reduced-accuracy rule, the same for every backend (it lives in CompiledProgram.solve)
# ----------------------------------------------------------------------------


def _queue_like(bound: float = 0.75):
    """Two states, two actions; the reward 1 only in state 1, a cost bound that keeps some mass in state 0."""
    kernel = np.zeros((2, 2, 2))
    kernel[:, 0, 0] = 1.0  # action 0 goes to state 0
    kernel[:, 1, 1] = 1.0  # action 1 goes to state 1
    rewards = np.zeros((1, 2, 2))
    rewards[0, 1, :] = 1.0
    costs = np.zeros((1, 2, 2))
    costs[0, 1, :] = 1.0
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], bound)], kernel=kernel, name="two-states")


class _Replay(CompiledProgram):
    """A 'solver' that returns a given status and point: the rule under test sees only what a backend returns."""

    def __init__(self, backend, program, status, x):
        super().__init__(backend, program)
        self.status, self.x = status, x

    def _solve(self, with_constraints):
        return RawSolution(self.status, None if self.x is None else self.x.copy(), 7, "replay", "", 0.001)


@pytest.fixture
def program():
    return OccupancyProgram(_queue_like())


def _x_of(program, occupancy):
    x = np.zeros(program.n_vars)
    x[program.blocks["occupancy"].slice] = np.asarray(occupancy, dtype=float).ravel()
    return x


def test_a_reduced_accuracy_point_that_holds_is_kept_and_used(program):
    occupancy = np.array([[0.25, 0.0], [0.0, 0.75]])  # the optimum: 3/4 of the time in state 1, the bound's limit
    replay = _Replay(backend_class("highs")(), program, Status.ALMOST_OPTIMAL, _x_of(program, occupancy))
    result = replay.solve()
    assert result.status is Status.ALMOST_OPTIMAL and result.ok
    assert result.program is ProgramVariant.TIGHT
    np.testing.assert_allclose(result.occupancy, occupancy)
    assert result.objective == pytest.approx(0.75)
    np.testing.assert_allclose(result.policy, [[1.0, 0.0], [0.0, 1.0]])
    assert "reduced accuracy" in result.message and "kept" in result.message


@pytest.mark.parametrize("push, group", [(1e-4, "mass"), (0.1, "constraints")])
def test_a_reduced_accuracy_point_that_breaks_a_row_is_discarded(program, push, group):
    # Moving mass from state 0 to state 1 breaks the cost bound (0.75 + push > 0.75) ...
    occupancy = np.array([[0.25 - push, 0.0], [0.0, 0.75 + push]])
    if group == "mass":  # ... adding mass breaks the normalisation by exactly `push`
        occupancy = np.array([[0.25, 0.0], [0.0, 0.75 + push]])
    replay = _Replay(backend_class("highs")(), program, Status.ALMOST_OPTIMAL, _x_of(program, occupancy))
    result = replay.solve()
    assert result.status is Status.NUMERICAL_ERROR and not result.ok
    assert result.x is None and result.policy is None
    assert "discarded" in result.message and f"{group} residual is {push:.2g}" in result.message
    assert push > ALMOST_OPTIMAL_TOLERANCE


def test_the_fallback_program_is_judged_without_the_constraint_rows():
    model = _queue_like()
    program = OccupancyProgram(model)
    occupancy = np.array([[0.0, 0.0], [0.0, 1.0]])  # breaks the cost bound, holds every other row

    class InfeasibleThenAlmost(_Replay):
        def _solve(self, with_constraints):
            if with_constraints:
                return RawSolution(Status.INFEASIBLE, None, 1, "replay")
            return super()._solve(with_constraints)

    result = InfeasibleThenAlmost(backend_class("highs")(), program, Status.ALMOST_OPTIMAL,
                                  _x_of(program, occupancy)).solve()
    assert result.program is ProgramVariant.FALLBACK
    assert result.status is Status.ALMOST_OPTIMAL and result.objective == pytest.approx(1.0)


def test_a_reduced_accuracy_status_without_a_point_is_a_numerical_error(program):
    result = _Replay(backend_class("highs")(), program, Status.ALMOST_OPTIMAL, None).solve()
    assert result.status is Status.NUMERICAL_ERROR and result.x is None


@pytest.mark.skipif(not _installed("cvxpy"), reason="cvxpy not installed")
def test_cvxpy_prefers_a_later_accurate_solver_and_else_returns_the_reduced_accuracy_point(program, monkeypatch):
    from curlopt.backends.cvxpy import CompiledCvxpy

    compiled = backend_class("cvxpy")(solvers=["CLARABEL", "SCS"]).compile(program)
    exact = _x_of(program, [[0.25, 0.0], [0.0, 0.75]])
    rough = _x_of(program, [[0.25 + 1e-8, 0.0], [0.0, 0.75 - 1e-8]])
    answers = {"CLARABEL": ("optimal_inaccurate", rough), "SCS": ("optimal", exact)}
    monkeypatch.setattr(CompiledCvxpy, "_attempt",
                        lambda self, problem, solver: (answers[solver][0], answers[solver][1], 3, 0.0))
    result = compiled.solve()
    assert result.status is Status.OPTIMAL and result.solver == "SCS"
    np.testing.assert_array_equal(result.x, exact)

    answers["SCS"] = ("solver_error", None)
    result = compiled.solve()
    assert result.status is Status.ALMOST_OPTIMAL and result.solver == "CLARABEL"
    np.testing.assert_array_equal(result.x, rough)
    assert "SCS: solver_error" in result.message and "kept" in result.message


@pytest.mark.skipif(not (_installed("pyomo") and _installed("cyipopt")), reason="pyomo/cyipopt not installed")
def test_ipopt_stopped_at_its_acceptable_level_gives_a_kept_almost_optimal_point():
    from curlopt import get_backend
    from curlopt.models import queue_model
    from curlopt.testing.reference import model_optimum

    model = queue_model()
    program = OccupancyProgram(model)
    # A full tolerance no solver reaches and a loose acceptable one: Ipopt stops at Solved_To_Acceptable_Level.
    backend = get_backend("pyomo", warm_start=False, options={
        "tol": 1e-30, "acceptable_tol": 1e-4, "acceptable_iter": 1, "acceptable_constr_viol_tol": 1e-8,
        "acceptable_dual_inf_tol": 1e10, "acceptable_compl_inf_tol": 1e-4})
    result = backend.solve(program)
    assert result.status is Status.ALMOST_OPTIMAL and result.ok
    assert "Solved_To_Acceptable_Level" in result.message and "kept" in result.message
    assert max(program.residuals(result.x).values()) <= ALMOST_OPTIMAL_TOLERANCE
    optimum = model_optimum(model).value  # the occupancy LP solved by scipy, written out anew
    assert result.objective <= optimum + 1e-6  # a feasible point cannot beat the optimum ...
    assert result.objective >= optimum - 1e-2  # ... and a point at a 1e-4 tolerance is close to it

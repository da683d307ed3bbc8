"""The check every backend shares before a result says ``optimal``, and what a result keeps of the solver's answer.

A solver's "optimal" is a claim; :meth:`CompiledProgram.solve` checks it against the program's own rows, the
objective around the point, and the duality gap a backend reports. The 'solver' here is a replay that returns a
given status and point, so each rule is seen alone; the last tests run the real solvers on the models where
their claims were wrong.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from curlopt import CMDP, Linear, LinearBound, SumOfLogs, build_model, get_backend
from curlopt.backends.base import CompiledProgram, RawSolution
from curlopt.backends.registry import backend_class
from curlopt.backends.results import (
    ALMOST_OPTIMAL_TOLERANCE,
    OBJECTIVE_TOLERANCE,
    OPTIMAL_TOLERANCE,
    SolutionStatus,
    Status,
    Termination,
)
from curlopt.optimum import solve_optimum
from curlopt.programs.occupancy import OccupancyProgram


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _two_states(objective=None, rewards=None) -> CMDP:
    """Action a leads to state a; rewards 1 in state 1 (optimum 3/4 under the cost bound 3/4)."""
    kernel = np.zeros((2, 2, 2))
    kernel[:, 0, 0] = 1.0
    kernel[:, 1, 1] = 1.0
    if rewards is None:
        rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    costs = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    return CMDP(rewards, costs, objective or Linear([1.0]), [LinearBound([1.0], 0.75)], kernel=kernel,
                name="two-states")


class _Replay(CompiledProgram):
    """A 'solver' that returns a given status, point and statistics."""

    def __init__(self, program, status, x, statistics=None):
        super().__init__(backend_class("highs")(), program)
        self.status, self.x, self.statistics = status, x, statistics or {}

    def _solve(self, with_constraints):
        return RawSolution(self.status, None if self.x is None else self.x.copy(), 7, "replay", "", 0.001,
                           dict(self.statistics))


def _x_of(program, occupancy):
    x = np.zeros(program.n_vars)
    x[program.blocks["occupancy"].slice] = np.asarray(occupancy, dtype=float).ravel()
    return x


OPTIMUM = [[0.25, 0.0], [0.0, 0.75]]


def test_a_point_that_holds_is_optimal_with_its_termination_solution_status_and_statistics():
    program = OccupancyProgram(_two_states())
    result = _Replay(program, Status.OPTIMAL, _x_of(program, OPTIMUM)).solve()
    assert result.status is Status.OPTIMAL and result.ok and result.message == ""
    assert result.termination is Termination.CONVERGED and result.solution_status is SolutionStatus.OPTIMAL
    assert result.statistics["iterations"] == 7 and result.statistics["residual"] == 0.0
    data = result.to_dict(arrays=False)
    assert data["status"] == "optimal" and data["termination"] == "convergence_criteria_satisfied"
    assert data["solution_status"] == "optimal" and data["statistics"]["iterations"] == 7


@pytest.mark.parametrize("push", [2e-7, 1e-6 / 2])
def test_an_optimal_claim_whose_rows_are_off_beyond_the_tolerance_is_optimal_inaccurate(push):
    """Mass added to state 1 breaks the normalisation by ``push``: still played, but labelled, with the residual."""
    program = OccupancyProgram(_two_states())
    occupancy = [[0.25, 0.0], [0.0, 0.75 + push]]
    result = _Replay(program, Status.OPTIMAL, _x_of(program, occupancy)).solve()
    assert OPTIMAL_TOLERANCE < push <= ALMOST_OPTIMAL_TOLERANCE
    assert result.status is Status.OPTIMAL_INACCURATE and result.ok and result.status.has_solution
    assert result.solution_status is SolutionStatus.FEASIBLE
    assert f"residual is {push:.2g}" in result.message and "kept" in result.message
    assert result.objective == pytest.approx(0.75 + push)


def test_an_optimal_claim_whose_rows_are_far_off_is_discarded():
    program = OccupancyProgram(_two_states())
    result = _Replay(program, Status.OPTIMAL, _x_of(program, [[0.25, 0.0], [0.0, 0.76]])).solve()
    assert result.status is Status.NUMERICAL_ERROR and not result.ok and result.x is None
    assert "discarded" in result.message and "residual is 0.01" in result.message


def test_a_duality_gap_above_the_tolerance_makes_an_optimal_claim_inaccurate():
    program = OccupancyProgram(_two_states())
    x = _x_of(program, OPTIMUM)
    held = _Replay(program, Status.OPTIMAL, x, {"duality_gap": OBJECTIVE_TOLERANCE}).solve()
    assert held.status is Status.OPTIMAL and held.statistics["duality_gap"] == OBJECTIVE_TOLERANCE
    loose = _Replay(program, Status.OPTIMAL, x, {"duality_gap": 1e-5}).solve()
    assert loose.status is Status.OPTIMAL_INACCURATE and loose.ok
    assert "duality gap is 1e-05" in loose.message


def test_an_optimum_at_the_edge_of_a_log_is_not_optimal():
    """Σ log λ_k where the point's second average reward is zero: f is -inf there, the optimum is not finite."""
    rewards = np.array([[[1.0, 1.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, 1.0]]])  # λ_2 = mass in state 1
    program = OccupancyProgram(_two_states(SumOfLogs(weights=[1.0, 1.0]), rewards))
    at_edge = _Replay(program, Status.OPTIMAL, _x_of(program, [[1.0, 0.0], [0.0, 4e-16]])).solve()
    assert at_edge.status is Status.NUMERICAL_ERROR and not at_edge.ok and at_edge.x is None
    assert "log of a zero average reward" in at_edge.message and "not finite" in at_edge.message
    inside = _Replay(program, Status.OPTIMAL, _x_of(program, OPTIMUM)).solve()
    assert inside.status is Status.OPTIMAL and inside.objective == pytest.approx(math.log(0.75))


@pytest.mark.parametrize("status", [Status.TIME_LIMIT, Status.ITERATION_LIMIT])
def test_a_solve_stopped_at_a_limit_keeps_a_feasible_point_without_calling_it_a_solution(status):
    program = OccupancyProgram(_two_states())
    point = [[0.5, 0.0], [0.0, 0.5]]  # feasible, not optimal
    result = _Replay(program, status, _x_of(program, point)).solve()
    assert result.status is status and not result.ok
    assert result.solution_status is SolutionStatus.FEASIBLE and result.termination.value == status.value
    np.testing.assert_allclose(result.occupancy, point)
    assert result.objective == pytest.approx(0.5) and "not proven optimal" in result.message
    broken = _Replay(program, status, _x_of(program, [[0.5, 0.0], [0.0, 0.6]])).solve()
    assert broken.solution_status is SolutionStatus.NO_SOLUTION and broken.occupancy is None


def test_a_backends_own_counts_are_on_the_result():
    result = solve_optimum(build_model("queue"), "mdp-columns")
    assert result.status is Status.OPTIMAL
    assert result.statistics["rounds"] >= 1 and result.statistics["columns"] >= 1
    assert 0.0 <= result.statistics["gap"] < 1e-6  # the certified gap of its last round
    highs = solve_optimum(build_model("queue"), "highs")
    assert highs.statistics["model_status"] == "kOptimal"
    assert highs.statistics["objective_value"] == pytest.approx(highs.objective, abs=1e-9)


@pytest.mark.skipif(not (_installed("pyomo") and _installed("cyipopt")), reason="pyomo and cyipopt not installed")
def test_an_unbounded_objective_is_not_reported_optimal_by_ipopt():
    """The scheduler with an SLA of 0: its second average reward must be 0, so Σ log λ_k is -inf everywhere on
    the feasible set. Ipopt used to stop at λ_2 ~ 1e-16 and call f = -36 optimal; the result must not, and must
    say why."""
    result = solve_optimum(build_model("scheduler", sla=0), get_backend("pyomo", options={"max_iter": 300}))
    assert not result.ok and result.status in (Status.NUMERICAL_ERROR, Status.ITERATION_LIMIT)
    assert "log of a zero average reward" in result.message


@pytest.mark.skipif(not (_installed("pyomo") and _installed("cyipopt")), reason="pyomo and cyipopt not installed")
def test_ipopt_reaches_the_queue_optimum_and_reports_its_gap():
    """Ipopt used to stop 1.5e-7 below the optimum here (its complementarity tolerance, 1e-4 by default)."""
    from curlopt.testing.reference import model_optimum

    model = build_model("queue", buffer=300)
    exact = model_optimum(model).value
    result = solve_optimum(model, "pyomo")
    assert result.status is Status.OPTIMAL, result.message
    assert abs(result.objective - exact) < 5e-8, (result.objective, exact)
    assert 0.0 <= result.statistics["duality_gap"] <= OBJECTIVE_TOLERANCE * (1 + abs(result.objective))


def test_highs_stopped_at_an_iteration_limit_keeps_the_feasible_point_it_reached():
    """HiGHS's primal simplex is feasible from the end of its phase 1: stopped after 20 iterations on the queue it
    has a point that holds every row, which the result keeps (not as a solution)."""
    program = OccupancyProgram(build_model("queue"))
    optimum = get_backend("highs").solve(program)
    stopped = get_backend("highs", options={"simplex_strategy": 4, "simplex_iteration_limit": 20,
                                            "presolve": "off"}).solve(program)
    assert stopped.status is Status.ITERATION_LIMIT and not stopped.ok
    assert stopped.solution_status is SolutionStatus.FEASIBLE and "not proven optimal" in stopped.message
    assert max(program.residuals(stopped.x).values()) <= OPTIMAL_TOLERANCE
    assert stopped.objective <= optimum.objective + 1e-9 and stopped.occupancy.sum() == pytest.approx(1.0)

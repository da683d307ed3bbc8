"""Errors in utilities: an exception in a user's own code names the utility and stops the run (it is not a
solver fault); a valid utility a backend cannot build is a BackendError naming both; solver faults stay
statuses."""

from __future__ import annotations

import pytest

from curlopt import CMDP, build_model
from curlopt.agents import PsCurl
from curlopt.backends import installed_backends
from curlopt.backends.results import Status
from curlopt.errors import BackendError, UtilityCodeError
from curlopt.optimum import solve_optimum
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.utilities.library import AlphaFairness, CustomUtility, SumOfLogs

HAS = set(installed_backends())
needs_cvxpy = pytest.mark.skipif("cvxpy" not in HAS, reason="cvxpy backend not installed")
needs_pyomo = pytest.mark.skipif("pyomo" not in HAS, reason="pyomo backend not installed")


def scheduler_with(objective) -> CMDP:
    base = build_model("scheduler")
    return CMDP(base.rewards, base.costs, objective, base.constraints, base.kernel, name="scheduler")


def broken_gradient(y):
    return undefined_name * y  # noqa: F821 — the user's bug


@needs_pyomo
def test_an_exception_in_a_users_gradient_names_the_utility_and_stops_the_run():
    logs = SumOfLogs(dim=2)
    objective = CustomUtility(2, "concave", value=logs.value, gradient=broken_gradient, hessian=logs.hessian,
                              name="MyUtility")
    model = scheduler_with(objective)
    with pytest.raises(UtilityCodeError, match=r"the objective MyUtility\(dim=2, concave\) raised NameError in its"
                                               r" gradient: name 'undefined_name' is not defined") as info:
        solve_optimum(model, "pyomo")
    assert isinstance(info.value.__cause__, NameError)
    # before: every epoch was solver_error and the run "succeeded"
    from curlopt.envs import make
    from curlopt.experiments import run

    with pytest.raises(UtilityCodeError, match="MyUtility"):
        run(PsCurl(model, backend="pyomo"), make(model), 20, seed=0, progress=False)


@needs_cvxpy
def test_an_exception_in_a_users_expression_names_the_utility():
    objective = CustomUtility(2, "concave", value=SumOfLogs(dim=2).value,
                              cvxpy=lambda y: broken_gradient(y), name="MyUtility")
    with pytest.raises(UtilityCodeError, match=r"the objective MyUtility.*NameError in its cvxpy_expr"):
        solve_optimum(scheduler_with(objective), "cvxpy")


def test_the_solver_guard_still_turns_solver_faults_into_statuses():
    from conftest import FailingHighs

    result = FailingHighs({1}).compile(OccupancyProgram(build_model("queue"))).solve()
    assert result.status is Status.NUMERICAL_ERROR  # a solver outcome stays a status


@needs_cvxpy
def test_a_utility_cvxpy_cannot_represent_is_a_backend_error_naming_both():
    model = scheduler_with(AlphaFairness(1e6, 2))  # valid; cp.power's rational approximation divides by zero
    with pytest.raises(BackendError, match=r"the cvxpy backend cannot build the objective AlphaFairness\(alpha=1000000"):
        solve_optimum(model, "cvxpy")

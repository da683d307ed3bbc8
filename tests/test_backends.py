"""Registry, refusals with helpful messages, status reporting, and program validation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import registered_backends

from curlopt import (
    CMDP,
    BackendError,
    Linear,
    LinearBound,
    OccupancyProgram,
    OptimisticProgram,
    ProgramError,
    Status,
    SumOfLogs,
    UnsupportedUtilityError,
    build_model,
    get_backend,
    installed_backends,
)
from curlopt.backends import Backend, backend_names
from curlopt.backends.base import CompiledProgram
from curlopt.backends.registry import backend_class
from curlopt.errors import BackendNotInstalledError
from curlopt.programs.optimistic import l1_radius
from curlopt.programs.tightness import tightness


def small_model(objective=None, constraints=()):
    rng = np.random.default_rng(0)
    kernel = rng.dirichlet(np.ones(3), size=(3, 2))
    return CMDP(rng.uniform(0.1, 1, (2, 3, 2)), rng.uniform(0, 1, (1, 3, 2)),
                objective or SumOfLogs(dim=2), constraints, kernel)


def test_unknown_backend_lists_known_ones():
    with pytest.raises(BackendError) as info:
        get_backend("gurobi")
    assert str(info.value) == f"unknown backend 'gurobi'; known backends: {', '.join(backend_names())}."
    assert {"highs", "scipy"} <= set(backend_names())  # the core ones, listed whatever is installed


# The backend contract at the registry, for every registered backend (installed or not); what it solves is checked
# by curlopt.testing.run_conformance on every installed one (tests/test_conformance.py).


@pytest.mark.parametrize("name", registered_backends())
def test_registered_backend_declares_itself(name):
    cls = backend_class(name)
    assert isinstance(cls, type) and issubclass(cls, Backend)
    assert cls.name == name  # results, traces and messages name the backend by this
    assert isinstance(cls.requires, tuple) and all(isinstance(m, str) and m for m in cls.requires)
    assert isinstance(cls.takes, str) and cls.takes  # quoted in every refusal
    assert isinstance(cls.extra, str)
    assert (name in installed_backends()) == cls.is_installed()
    if not cls.is_installed():
        pytest.skip(f"the {name} backend is not installed (test_missing_backend_says_how_to_install_it covers it)")
    program = OccupancyProgram(small_model(Linear([1.0, 0.0]), [LinearBound([1.0], 2.0)]))
    # linear utilities are the minimum every backend takes
    assert cls.accepts(program.objective) and all(cls.accepts(g) for g in program.constraints)
    result = get_backend(name).solve(program)
    assert result.ok and result.policy.shape == (3, 2) and np.all(result.policy >= 0)
    np.testing.assert_allclose(result.policy.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", registered_backends())
def test_missing_backend_says_how_to_install_it(name, monkeypatch):
    cls = backend_class(name)
    monkeypatch.setattr(cls, "is_installed", classmethod(lambda c: False))
    assert name not in installed_backends()
    program = OccupancyProgram(small_model(Linear([1.0, 0.0]), [LinearBound([1.0], 2.0)]))
    with pytest.raises(BackendNotInstalledError, match=f"the {name} backend needs .*pip install"):
        get_backend(name).compile(program)


def test_backend_instance_passes_through_and_rejects_options():
    backend = get_backend("highs")
    assert get_backend(backend) is backend
    with pytest.raises(BackendError, match="options can only be given with a backend name"):
        get_backend(backend, options={})


def test_highs_refuses_a_log_objective_and_names_a_backend_that_can():
    program = OccupancyProgram(small_model())
    with pytest.raises(UnsupportedUtilityError) as info:
        get_backend("highs").compile(program)
    message = str(info.value)
    assert "highs backend cannot express the objective SumOfLogs" in message
    assert "cvxpy" in message


def test_cvxpy_refuses_a_utility_without_expression():
    from curlopt import CustomUtility

    opaque = CustomUtility(2, "concave", value=lambda y: float(np.log(y).sum()))
    with pytest.raises(UnsupportedUtilityError, match="cvxpy backend cannot express the objective"):
        get_backend("cvxpy").compile(OccupancyProgram(small_model(opaque)))


def test_cvxpy_refuses_a_non_dcp_expression():
    from curlopt import CustomUtility

    # claims to be concave but its CVXPY expression is convex: CVXPY's DCP check catches it
    liar = CustomUtility(2, "concave", value=lambda y: float((y**2).sum()), cvxpy=lambda y: __import__("cvxpy").sum_squares(y))
    with pytest.raises(UnsupportedUtilityError, match="not DCP-concave"):
        get_backend("cvxpy").compile(OccupancyProgram(small_model(liar)))


def test_unknown_cvxpy_solver_is_an_error():
    with pytest.raises(BackendError, match="not installed"):
        get_backend("cvxpy", solvers=["NO_SUCH_SOLVER"]).compile(OccupancyProgram(build_model("queue")))


def test_cvxpy_problem_is_dpp():
    compiled = get_backend("cvxpy").compile(OptimisticProgram(build_model("queue")))
    assert compiled.is_dpp


def test_highs_iteration_limit_is_a_status_not_an_exception():
    compiled = get_backend("highs", options={"simplex_iteration_limit": 1, "presolve": "off"}).compile(
        OccupancyProgram(build_model("queue"))
    )
    result = compiled.solve()
    assert result.status is Status.ITERATION_LIMIT
    assert not result.ok and result.policy is None and np.isnan(result.objective)


def test_solver_exception_becomes_solver_error_status():
    class Exploding(CompiledProgram):
        def _solve(self, with_constraints):
            raise RuntimeError("boom")

    result = Exploding(get_backend("highs"), OccupancyProgram(build_model("queue"))).solve()
    assert result.status is Status.SOLVER_ERROR and "RuntimeError: boom" in result.message


def test_fallback_is_labelled_with_a_message():
    # Constraint ζ <= -1 with costs in [0, 1] can never hold: the ε-tight program is infeasible.
    model = small_model(Linear([1.0, 0.0]), [LinearBound([1.0], -1.0)])
    for name in installed_backends():
        try:
            result = get_backend(name).solve(OccupancyProgram(model))
        except UnsupportedUtilityError:
            continue
        assert result.tight_status is Status.INFEASIBLE
        assert result.status is Status.OPTIMAL and result.fell_back
        assert "is infeasible" in result.message
        assert "solved the program without constraint rows instead" in result.message


def test_cvxpy_says_why_the_fallback_is_infeasible():
    pytest.importorskip("cvxpy")
    # S = A = 1: the only policy has cost 1 (the constraint asks for at most 0.5) and earns reward 0, where log is
    # -inf: CVXPY keeps λ in the objective's domain, so the program without constraint rows is infeasible
    # although its rows hold
    model = CMDP(rewards=np.zeros((1, 1, 1)), costs=np.ones((1, 1, 1)), objective=SumOfLogs(1),
                 constraints=[LinearBound([1.0], 0.5)], kernel=np.ones((1, 1, 1)))
    result = get_backend("cvxpy", solvers=["SCS"]).compile(OptimisticProgram(model)).solve()
    assert result.fell_back and result.status is Status.INFEASIBLE
    assert "its rows hold (checked), but the objective SumOfLogs" in result.message
    assert "-inf at every point" in result.message
    # a fallback whose rows cannot hold (no confidence radius, nothing visited) is told apart
    result = get_backend("cvxpy", solvers=["SCS"]).compile(OptimisticProgram(model, radius_scale=0.0)).solve()
    assert result.status is Status.INFEASIBLE and "its linear rows themselves cannot hold" in result.message


def test_tightness_schedule_closed_form():
    assert tightness(1.0) == 0.0  # ln 1 = 0
    assert tightness(100.0, constant=2.0) == pytest.approx(2 * np.sqrt(np.log(100) / 100))
    # with a horizon lower bound, τ = max(t, T_l)
    assert tightness(10.0, horizon_lower_bound=1000.0) == pytest.approx(np.sqrt(np.log(1000) / 1000))
    assert tightness(5000.0, horizon_lower_bound=1000.0) == pytest.approx(np.sqrt(np.log(5000) / 5000))
    with pytest.raises(ProgramError, match="time must be a finite number >= 1"):
        tightness(0.5)
    with pytest.raises(ProgramError, match="tightness constant must be"):
        tightness(10.0, constant=-1.0)


def test_radius_closed_form():
    visits = np.array([[0.0, 4.0]])
    beta = l1_radius(visits, time=10.0, n_states=3, n_actions=2)
    np.testing.assert_allclose(beta, np.sqrt(14 * 3 * np.log(2 * 2 * 10) / np.array([[1.0, 4.0]])))


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda m: OccupancyProgram(m, kernel=np.ones((3, 2, 2))), r"kernel must have shape \(S, A, S\) = \(3, 2, 3\)"),
        (lambda m: OccupancyProgram(m, kernel=np.full((3, 2, 3), 0.5)), r"kernel does not sum to 1"),
        (lambda m: OccupancyProgram(m, kernel=np.full((3, 2, 3), np.nan)), r"kernel contains NaN"),
        (lambda m: OccupancyProgram(m, epsilon=-0.1), r"epsilon must be a finite number >= 0"),
        (lambda m: OccupancyProgram(m, epsilon="big"), r"epsilon must be a number >= 0"),
        (lambda m: OptimisticProgram(m, counts=-np.ones((3, 2, 3))), r"counts must be finite and non-negative"),
        (lambda m: OptimisticProgram(m, counts=np.ones((3, 3))), r"counts must have shape \(S, A, S\)"),
        (lambda m: OptimisticProgram(m, time=0), r"time must be a finite number >= 1"),
        (lambda m: OptimisticProgram(m, time=float("inf")), r"time must be a finite number >= 1"),
    ],
)
def test_program_data_is_validated(call, pattern):
    with pytest.raises(ProgramError, match=pattern):
        call(small_model())


def test_occupancy_program_needs_a_kernel():
    model = CMDP(np.ones((1, 2, 2)), objective=Linear([1.0]))
    with pytest.raises(ProgramError, match="needs a kernel"):
        OccupancyProgram(model)


def test_a_result_carries_the_solvers_own_time(backend_name):
    """Every built-in backend's result says how long the solver itself ran, never more than the whole call."""
    from curlopt import get_backend
    from curlopt.models import random_model

    model = random_model(3, 2, seed=1)
    result = get_backend(backend_name).solve(OccupancyProgram(model))
    assert result.ok and result.solver_time is not None
    assert 0.0 <= result.solver_time <= result.solve_time

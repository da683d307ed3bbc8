"""The ``mdp-columns`` backend: column generation over deterministic policies with value iteration inside.

Reference values come from computations written here: the occupancy LP built from scratch for
``scipy.optimize.linprog``, a sum-of-logs program written from scratch in CVXPY, the optimal gain as an LP,
closed-form stationary laws of small chains. The conformance suite runs with the accuracy the backend declares.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound, SumOfLogs
from curlopt.backends.mdp.backend import MdpColumnsBackend
from curlopt.backends.mdp.chains import KernelMatrix, closed_classes, stationary_distributions
from curlopt.backends.mdp.values import relative_value_iteration
from curlopt.backends.registry import auto_candidates, get_backend
from curlopt.backends.results import ProgramVariant, Status
from curlopt.models import random_model
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import OptimisticProgram
from curlopt.testing import Tolerances, run_conformance

# -- independent references --------------------------------------------------------------------------------------


def occupancy_rows(kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Σ ρ = 1`` and ``Σ_a ρ(s',a) = Σ_{s,a} P(s'|s,a) ρ(s,a)`` for every s', over ρ flattened (s, a)."""
    S, A, _ = kernel.shape
    flow = np.zeros((S, S * A))
    for s in range(S):
        for a in range(A):
            flow[s, s * A + a] += 1.0
            flow[:, s * A + a] -= kernel[s, a]
    return np.vstack([np.ones((1, S * A)), flow]), np.concatenate([[1.0], np.zeros(S)])


def linear_optimum(kernel: np.ndarray, reward: np.ndarray, cost: np.ndarray | None = None,
                   bound: float | None = None) -> float:
    """``max r·ρ`` over occupancies of ``kernel`` (with ``c·ρ <= bound`` when given), by linprog."""
    a_eq, b_eq = occupancy_rows(kernel)
    rows = None if cost is None else np.atleast_2d(cost.ravel())
    res = linprog(-reward.ravel(), A_ub=rows, b_ub=None if bound is None else [bound], A_eq=a_eq, b_eq=b_eq,
                  bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(-res.fun)


def binding_model(S: int, A: int, seed: int, share: float = 0.5, storage: str = "auto") -> CMDP:
    """A random model whose cost bound lies ``share`` of the way from the least average cost to the cost of the
    unconstrained optimum (both from linprog), so that the constraint binds."""
    base = random_model(S, A, seed=seed)
    kernel, reward, cost = base.kernel, base.rewards[0], base.costs[0]
    a_eq, b_eq = occupancy_rows(kernel)
    free = linprog(-reward.ravel(), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    cheapest = linear_optimum(kernel, -cost)
    bound = -cheapest + share * (float(cost.ravel() @ free.x) + cheapest)
    stored = sp.csr_array(kernel.reshape(S * A, S)) if storage == "sparse" else kernel
    return CMDP(base.rewards, base.costs, Linear([1.0]), [LinearBound([1.0], bound)], kernel=stored,
                name="binding", storage=storage)


def assert_occupancy(result, kernel: np.ndarray, tol: float = 1e-9) -> None:
    """The result's occupancy is a distribution satisfying every flow row of ``kernel``."""
    rho = result.occupancy
    assert rho.min() >= 0 and abs(rho.sum() - 1) <= tol
    np.testing.assert_allclose(rho.sum(axis=1), np.einsum("sa,sat->t", rho, kernel), rtol=0, atol=tol)


# -- the backend against the references ----------------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(S=st.integers(2, 9), A=st.integers(2, 4), seed=st.integers(0, 10_000), share=st.floats(0.1, 0.9))
def test_binding_linear_program_matches_linprog(S, A, seed, share):
    model = binding_model(S, A, seed, share)
    bound = -model.constraints[0].affine_pieces()[1][0]
    expected = linear_optimum(model.kernel, model.rewards[0], model.costs[0], bound)
    result = get_backend("mdp-columns").solve(OccupancyProgram(model))
    assert result.status is Status.OPTIMAL and result.program is ProgramVariant.TIGHT, result.message
    assert result.objective == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert_occupancy(result, model.kernel)
    assert float(result.costs[0]) <= bound + 1e-9


def test_sparse_kernel_gives_the_dense_answer():
    dense, sparse = binding_model(12, 3, seed=7), binding_model(12, 3, seed=7, storage="sparse")
    assert sparse.sparse
    bound = -dense.constraints[0].affine_pieces()[1][0]
    expected = linear_optimum(dense.kernel, dense.rewards[0], dense.costs[0], bound)
    for model in (dense, sparse):
        result = get_backend("mdp-columns").solve(OccupancyProgram(model))
        assert result.status is Status.OPTIMAL
        assert result.objective == pytest.approx(expected, rel=1e-7)


def test_log_objective_matches_a_conic_program_written_from_scratch():
    cp = pytest.importorskip("cvxpy")
    base = random_model(6, 3, n_rewards=2, seed=11)
    model = CMDP(base.rewards, base.costs, SumOfLogs(dim=2), base.constraints, kernel=base.kernel)
    S, A = model.n_states, model.n_actions
    rho = cp.Variable((S, A), nonneg=True)
    lam = [cp.sum(cp.multiply(model.rewards[k], rho)) for k in range(2)]
    inflow = [cp.sum(cp.multiply(model.kernel[:, :, t], rho)) for t in range(S)]
    rows = [cp.sum(rho) == 1, cp.sum(rho, axis=1) == cp.hstack(inflow),
            cp.sum(cp.multiply(model.costs[0], rho)) <= -model.constraints[0].affine_pieces()[1][0]]
    problem = cp.Problem(cp.Maximize(cp.log(lam[0]) + cp.log(lam[1])), rows)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    result = get_backend("mdp-columns").solve(OccupancyProgram(model))
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(problem.value, rel=1e-6)
    assert_occupancy(result, model.kernel)


def test_conformance_with_the_declared_accuracy():
    # the programs the backend solves itself (the others are the highs backend's, checked under its own name)
    report = run_conformance(MdpColumnsBackend(), checks=["closed-form", "optimum/occupancy", "fallback/occupancy",
                                                          "update/occupancy"],
                             tolerances=Tolerances(**MdpColumnsBackend.ACCURACY), raise_on_failure=False)
    assert report.ok, str(report)


# -- statuses: multichain models, limits, delegation ----------------------------------------------------------------


def two_class_model() -> CMDP:
    """Action 0 leads to state 0, action 1 to state 1, from anywhere: the policy "stay" has two recurrent classes."""
    kernel = np.zeros((2, 2, 2))
    kernel[:, 0, 0] = 1.0
    kernel[:, 1, 1] = 1.0
    rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    costs = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 0.75)], kernel=kernel, name="two-classes")


def test_a_multichain_model_is_solved_exactly_and_reported():
    model = two_class_model()
    expected = linear_optimum(model.kernel, model.rewards[0], model.costs[0], 0.75)
    compiled = get_backend("mdp-columns").compile(OccupancyProgram(model))
    result = compiled.solve()
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(expected, abs=1e-9)
    assert "multichain" in result.message
    assert_occupancy(result, model.kernel)


def test_closed_classes_and_their_stationary_laws():
    # states 0-1 swap (a periodic class), state 2 stays, state 3 goes to 0 or 2: two classes, one transient state
    chain = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0.5, 0, 0.5, 0]], dtype=float)
    assert [c.tolist() for c in closed_classes(chain)] == [[0, 1], [2]]
    kernel = KernelMatrix(chain[:, None, :], 4, 1)
    laws = stationary_distributions(kernel, np.zeros(4, dtype=np.int64))
    assert [(law.states.tolist(), law.distribution.tolist()) for law in laws] == [([0, 1], [0.5, 0.5]), ([2], [1.0])]


def test_a_round_limit_gives_iteration_limit_and_no_point():
    model = binding_model(8, 3, seed=3)
    result = get_backend("mdp-columns", max_rounds=1).solve(OccupancyProgram(model))
    assert result.status is Status.ITERATION_LIMIT and result.occupancy is None
    assert "max_rounds" in result.message and "gap" in result.message


def test_a_time_limit_gives_time_limit():
    model = binding_model(8, 3, seed=3)
    result = get_backend("mdp-columns", time_limit=1e-9).solve(OccupancyProgram(model))
    assert result.status is Status.TIME_LIMIT and result.occupancy is None


def test_the_optimistic_program_is_delegated_and_says_so():
    model = random_model(4, 2, seed=1)
    program = OptimisticProgram(model, counts=np.ones((4, 2, 4)), time=10)
    result = get_backend("mdp-columns").solve(program)
    reference = get_backend("highs").solve(program)
    assert result.backend == "mdp-columns" and "delegated to the highs backend" in result.solver
    assert result.objective == pytest.approx(reference.objective, abs=1e-9)


def test_never_the_auto_choice():
    assert "mdp-columns" not in auto_candidates()


# -- warm starts --------------------------------------------------------------------------------------------------


def test_warm_started_resolves_equal_cold_solves():
    """A PS-CURL-like sequence: new posterior-like kernels and tightnesses on one compiled program."""
    model = binding_model(10, 3, seed=5)
    bound = -model.constraints[0].affine_pieces()[1][0]
    program = OccupancyProgram(model)
    compiled = get_backend("mdp-columns").compile(program)
    compiled.solve()
    rng = np.random.default_rng(0)
    for epsilon in (0.0, 0.01, 0.02):
        kernel = np.array([rng.dirichlet(1.0 + 20 * row) for row in model.kernel.reshape(-1, 10)]).reshape(10, 3, 10)
        program.update(kernel=kernel, epsilon=epsilon)
        warm = compiled.solve()
        cold = get_backend("mdp-columns").solve(OccupancyProgram(model, kernel=kernel, epsilon=epsilon))
        expected = linear_optimum(kernel, model.rewards[0], model.costs[0], bound - epsilon)
        assert warm.status is Status.OPTIMAL and cold.status is Status.OPTIMAL
        assert warm.objective == pytest.approx(expected, rel=1e-7) and cold.objective == pytest.approx(expected, rel=1e-7)
        assert_occupancy(warm, kernel)


# -- the oracle's bounds ------------------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(S=st.integers(2, 8), A=st.integers(1, 4), seed=st.integers(0, 10_000), sweeps=st.integers(1, 4))
def test_value_iteration_bounds_bracket_the_optimal_gain(S, A, seed, sweeps):
    """``lower <= g* <= upper`` after any number of sweeps (g* from the gain LP), and they meet at convergence."""
    rng = np.random.default_rng(seed)
    kernel = rng.dirichlet(np.full(S, 0.3), size=(S, A)) + 1e-9  # every entry positive: one recurrent class
    kernel /= kernel.sum(axis=2, keepdims=True)
    reward = rng.normal(size=(S, A))
    gain = linear_optimum(kernel, reward)
    matrix = KernelMatrix(kernel, S, A)
    early = relative_value_iteration(matrix, reward, tolerance=0.0, max_sweeps=sweeps)
    assert early.lower - 1e-12 <= gain <= early.upper + 1e-12
    final = relative_value_iteration(matrix, reward, tolerance=1e-11, max_sweeps=100_000)
    assert final.converged and final.lower - 1e-10 <= gain <= final.upper + 1e-10

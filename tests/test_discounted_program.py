"""The discounted occupancy program on every installed backend.

References are written here: the LP over d(s,a) assembled with numpy and solved by ``scipy.optimize.linprog``, and
policy iteration (exact linear solves) for the unconstrained linear optimum ``(1 − γ) μ·V*``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import backend_or_skip
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import get_backend
from curlopt.backends.results import ProgramVariant, Status
from curlopt.errors import ProgramError
from curlopt.models.cmdp import CMDP
from curlopt.programs import DiscountedOccupancyProgram
from curlopt.utilities.library import Linear, LinearBound

PROFILE = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
REL, ABS = 1e-7, 1e-9
FEASIBILITY = 1e-7
MARGIN = 1e-6


def close(value, expected, rel=REL):
    return abs(value - expected) <= max(ABS, rel * abs(expected))


def random_model(seed, S, A, d, budget=(0.2, 0.8)):
    rng = np.random.default_rng(seed)
    kernel = rng.dirichlet(np.full(S, 0.7), size=(S, A))
    rewards = rng.uniform(-0.5, 1.0, size=(1, S, A))
    costs = rng.uniform(0.0, 1.0, size=(d, S, A))
    mu = rng.dirichlet(np.ones(S))
    bounds = [float(rng.uniform(*budget)) for _ in range(d)]
    model = CMDP(rewards, costs if d else None, Linear([1.0]), [LinearBound(np.eye(d)[i], bounds[i]) for i in range(d)],
                 kernel=kernel, initial=mu)
    return model, kernel, rewards[0], costs, mu, bounds


def discounted_lp(kernel, rewards, costs, mu, bounds, gamma, epsilon, with_constraints=True):
    """``(feasible, optimum, slack)`` of the LP over d written from the formulas (slack: the largest t with
    ``ζ_i + t <= bound_i − ε``, to skip razor-thin budgets)."""
    S, A = rewards.shape
    n = S * A
    A_eq = np.zeros((S, n))
    for t in range(S):
        for s in range(S):
            for a in range(A):
                A_eq[t, s * A + a] = (1.0 if s == t else 0.0) - gamma * kernel[s, a, t]
    b_eq = (1 - gamma) * mu
    d = len(bounds)
    C = costs.reshape(d, n)
    ub = C if with_constraints else np.zeros((0, n))
    b_ub = np.array(bounds) - epsilon if with_constraints else np.zeros(0)
    res = linprog(-rewards.ravel(), A_ub=ub if len(b_ub) else None, b_ub=b_ub if len(b_ub) else None, A_eq=A_eq,
                  b_eq=b_eq, bounds=[(0, None)] * n, method="highs")
    feasible = res.status != 2
    value = -res.fun if feasible else None
    slack = None
    if d:
        c = np.zeros(n + 1)
        c[-1] = -1.0
        res2 = linprog(c, A_ub=np.hstack([C, np.ones((d, 1))]), b_ub=np.array(bounds) - epsilon,
                       A_eq=np.hstack([A_eq, np.zeros((S, 1))]), b_eq=b_eq, bounds=[(0, None)] * n + [(None, 10.0)],
                       method="highs")
        slack = -res2.fun
    return feasible, value, slack


def policy_iteration(kernel, rewards, gamma):
    """``V*`` of max E Σ γ^t r by policy iteration with exact solves."""
    S, A = rewards.shape
    policy = np.zeros(S, dtype=int)
    while True:
        P = kernel[np.arange(S), policy]
        value = np.linalg.solve(np.eye(S) - gamma * P, rewards[np.arange(S), policy])
        q = rewards + gamma * kernel @ value
        better = q.max(axis=1) > q[np.arange(S), policy] + 1e-12
        if not better.any():
            return value
        policy = np.where(better, q.argmax(axis=1), policy)


@PROFILE
@given(seed=st.integers(0, 2**32 - 1), S=st.integers(1, 5), A=st.integers(1, 3), d=st.integers(0, 2),
       gamma=st.sampled_from([0.5, 0.9, 0.99]), epsilon=st.sampled_from([0.0, 0.02]))
def test_optimum_matches_linprog(backend_name, seed, S, A, d, gamma, epsilon):
    """Random constrained CMDPs: the optimum and the variant equal the LP written here; the rows hold; the
    occupancy sums to 1."""
    model, kernel, rewards, costs, mu, bounds = random_model(seed, S, A, d)
    program = DiscountedOccupancyProgram(model, discount=gamma, epsilon=epsilon)
    compiled = backend_or_skip(backend_name, program)
    feasible, value, slack = discounted_lp(kernel, rewards, costs, mu, bounds, gamma, epsilon)
    assume(slack is None or abs(slack) > MARGIN)
    result = compiled.solve()
    assert result.status.has_solution, result.message
    if feasible:
        assert result.program is ProgramVariant.TIGHT
    else:
        value = discounted_lp(kernel, rewards, costs, mu, bounds, gamma, epsilon, with_constraints=False)[1]
        assert result.program is ProgramVariant.FALLBACK and "infeasible" in result.message
    assert close(result.objective, value), (result.objective, value)
    rho = np.asarray(result.occupancy)
    flow = rho.sum(axis=1) - gamma * np.einsum("sat,sa->t", kernel, rho) - (1 - gamma) * mu
    assert np.abs(flow).max() <= FEASIBILITY
    assert abs(rho.sum() - 1.0) <= FEASIBILITY
    assert max(program.residuals(result.x, include_constraints=feasible).values()) <= FEASIBILITY


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma", [0.3, 0.95])
def test_unconstrained_optimum_is_the_discounted_value(backend_name, seed, gamma):
    """Unconstrained linear: the optimum is ``(1 − γ) μ·V*`` (policy iteration), after an update to a new kernel
    too (the kernel is a parameter)."""
    rng = np.random.default_rng(seed)
    S, A = 5, 3
    kernel = rng.dirichlet(np.ones(S), size=(S, A))
    rewards = rng.uniform(-1, 1, size=(1, S, A))
    mu = rng.dirichlet(np.ones(S))
    model = CMDP(rewards, None, Linear([1.0]), kernel=kernel, initial=mu)
    program = DiscountedOccupancyProgram(model, discount=gamma)
    compiled = backend_or_skip(backend_name, program)
    result = compiled.solve()
    assert result.status is Status.OPTIMAL
    assert close(result.objective, (1 - gamma) * mu @ policy_iteration(kernel, rewards[0], gamma))
    other = rng.dirichlet(np.ones(S), size=(S, A))
    program.update(kernel=other)
    result = compiled.solve()
    assert close(result.objective, (1 - gamma) * mu @ policy_iteration(other, rewards[0], gamma))


def test_sparse_kernel_stays_sparse():
    """A model storing its kernel sparse gives parameter entries only at its entries and the diagonal, and the
    optimum of the dense program."""
    rng = np.random.default_rng(3)
    S, A, k = 80, 3, 3
    cols = np.array([rng.choice(S, k, replace=False) for _ in range(S * A)])
    kernel = sp.csr_array((rng.dirichlet(np.ones(k), size=S * A).ravel(),
                           (np.repeat(np.arange(S * A), k), cols.ravel())), shape=(S * A, S))
    rewards = rng.uniform(size=(1, S, A))
    sparse_model = CMDP(rewards, None, Linear([1.0]), kernel=kernel)
    program = DiscountedOccupancyProgram(sparse_model, discount=0.9)
    assert program.linear.n_params <= kernel.nnz + S * A
    dense_model = CMDP(rewards, None, Linear([1.0]), kernel=kernel.toarray().reshape(S, A, S))
    a = get_backend("highs").solve(program)
    b = get_backend("highs").solve(DiscountedOccupancyProgram(dense_model, discount=0.9))
    assert close(a.objective, b.objective)
    assert close(a.objective, 0.1 * sparse_model.initial @ policy_iteration(kernel.toarray().reshape(S, A, S),
                                                                            rewards[0], 0.9))


@pytest.mark.parametrize("gamma", [0, 1, 1.5, -0.1, float("nan"), True, "0.9", None])
def test_discount_outside_the_open_interval_is_refused(gamma):
    model, *_ = random_model(0, 3, 2, 1)
    with pytest.raises(ProgramError, match="discount"):
        DiscountedOccupancyProgram(model, discount=gamma)


def test_discount_read_from_the_model():
    """A model with a ``discount`` attribute gives γ; an explicit γ that disagrees is refused."""
    model, kernel, rewards, *_ = random_model(1, 3, 2, 0)
    model.discount = 0.8
    program = DiscountedOccupancyProgram(model)
    assert program.discount == 0.8
    with pytest.raises(ProgramError, match="differs"):
        DiscountedOccupancyProgram(model, discount=0.7)


def test_bad_kernel_is_refused():
    model, *_ = random_model(0, 3, 2, 1)
    with pytest.raises(ProgramError, match="shape"):
        DiscountedOccupancyProgram(model, discount=0.9, kernel=np.full((3, 2, 4), 0.25))
    with pytest.raises(ProgramError, match="sum to 1"):
        DiscountedOccupancyProgram(model, discount=0.9, kernel=np.full((3, 2, 3), 0.5))


def test_infeasible_budget_falls_back_labelled(backend_name):
    """A budget below the least discounted cost: the status says infeasible, the fallback is labelled and solves
    the program without constraint rows (policy iteration)."""
    model, kernel, rewards, costs, mu, _ = random_model(4, 3, 2, 1)
    model = CMDP(rewards[None], costs, Linear([1.0]), [LinearBound([1.0], -0.5)], kernel=kernel, initial=mu)
    compiled = backend_or_skip(backend_name, DiscountedOccupancyProgram(model, discount=0.9))
    result = compiled.solve()
    assert result.tight_status is Status.INFEASIBLE and result.fell_back and "infeasible" in result.message
    assert close(result.objective, 0.1 * mu @ policy_iteration(kernel, rewards, 0.9))

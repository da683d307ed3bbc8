"""The long-run optimum from the initial law: multichain models and nearly decomposable chains.

References are independent: the multichain LP written here with scipy's linprog, and values worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound, Status
from curlopt.models.boxpushing import boxpushing_model
from curlopt.optimum import solve_optimum
from curlopt.programs.multichain import MultichainOccupancyProgram, multichain_policy

EXACT_BACKENDS = ("highs", "scipy")


def multichain_lp(kernel, reward, cost=None, bound=None, initial=None):
    """max Σ r x over x, y >= 0 with the Hordijk–Kallenberg rows, and Σ c x <= bound: written from scratch."""
    S, A, _ = kernel.shape
    n = S * A
    flat = kernel.reshape(n, S)
    visits = np.repeat(np.eye(S), A, axis=0)            # (n, S): pair (s, a) belongs to state s
    balance = (visits - flat).T                          # row j: Σ_a z(j,a) − Σ P(j|s,a) z(s,a)
    a_eq = np.block([[balance, np.zeros((S, n))], [visits.T, balance]])
    b_eq = np.concatenate([np.zeros(S), initial])
    a_ub = b_ub = None
    if cost is not None:
        a_ub = np.concatenate([cost.ravel(), np.zeros(n)])[None, :]
        b_ub = [bound]
    res = linprog(-np.concatenate([reward.ravel(), np.zeros(n)]), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                  bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def three_outcomes():
    """State 0 starts; action 0 reaches the absorbing states 1 (reward 1, cost 1) or 2 (reward 0.6) with chance 1/2
    each, action 1 reaches 2. State 3 (reward 2) is absorbing and never reached from 0."""
    S, A = 4, 2
    kernel = np.zeros((S, A, S))
    kernel[0, 0, 1] = kernel[0, 0, 2] = 0.5
    kernel[0, 1, 2] = 1.0
    for s in (1, 2, 3):
        kernel[s, :, s] = 1.0
    reward = np.zeros((S, A))
    reward[1], reward[2], reward[3] = 1.0, 0.6, 2.0
    cost = np.zeros((S, A))
    cost[1] = 1.0
    return kernel, reward, cost, np.array([1.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_multichain_optimum_is_the_value_from_the_initial_state(backend):
    kernel, reward, cost, initial = three_outcomes()
    model = CMDP(reward[None], cost[None], Linear([1.0]), (), kernel, initial=initial)
    result = solve_optimum(model, backend)
    # by hand: action 0 at state 0 gives 0.5·1 + 0.5·0.6 = 0.8 (state 3's reward 2 is out of reach)
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(0.8, abs=1e-9)
    assert result.objective == pytest.approx(multichain_lp(kernel, reward, initial=initial), abs=1e-9)
    assert "multichain" in result.message
    assert result.policy[0, 0] == pytest.approx(1.0)


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_constrained_multichain_optimum(backend):
    kernel, reward, cost, initial = three_outcomes()
    model = CMDP(reward[None], cost[None], Linear([1.0]), [LinearBound([1.0], 0.25)], kernel, initial=initial)
    result = solve_optimum(model, backend)
    # by hand: action 0 with chance p puts p/2 in state 1, so p = 1/2 and the value is 0.5·0.8 + 0.5·0.6 = 0.7,
    # attained by the stationary policy that plays action 0 with chance 1/2 at state 0
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(0.7, abs=1e-9)
    assert result.objective == pytest.approx(multichain_lp(kernel, reward, cost, 0.25, initial), abs=1e-9)
    assert result.policy[0, 0] == pytest.approx(0.5, abs=1e-7)


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_constrained_multichain_optimum_no_stationary_policy_attains_is_said(backend):
    """State 0: stay (reward 0, cost 0) or leave for the absorbing state 1 (reward 1, cost 1); average cost ≤ 1/2.
    Choosing once, at the start, gives 1/2; a stationary policy that ever leaves ends in state 1 (cost 1), so the
    best stationary value is 0. The optimum is 1/2, and the result says its policy falls short."""
    kernel = np.zeros((2, 2, 2))
    kernel[0, 0, 0] = kernel[0, 1, 1] = 1.0
    kernel[1, :, 1] = 1.0
    signal = np.zeros((1, 2, 2))
    signal[0, 1] = 1.0
    model = CMDP(signal, signal, Linear([1.0]), [LinearBound([1.0], 0.5)], kernel, initial=np.array([1.0, 0.0]))
    result = solve_optimum(model, backend)
    assert result.objective == pytest.approx(0.5, abs=1e-9)
    assert result.objective == pytest.approx(multichain_lp(kernel, signal[0], signal[0], 0.5, model.initial), abs=1e-9)
    assert result.status is Status.OPTIMAL_INACCURATE
    assert "not stationary" in result.message and "f = 0 " in result.message


@pytest.mark.parametrize("seed", range(6))
def test_multichain_program_matches_the_lp_written_here(seed):
    """Random models with two absorbing blocks reachable from a transient start block."""
    rng = np.random.default_rng(seed)
    S, A = 7, 3
    kernel = np.zeros((S, A, S))
    kernel[:3] = rng.dirichlet(np.ones(S), size=(3, A))         # transient states 0–2 reach everything
    kernel[3:5, :, 3:5] = rng.dirichlet(np.ones(2), size=(2, A))  # closed class {3, 4}
    kernel[5:, :, 5:] = rng.dirichlet(np.ones(2), size=(2, A))    # closed class {5, 6}
    reward = rng.uniform(-1, 1, (S, A))
    cost = rng.uniform(0, 1, (S, A))
    initial = np.zeros(S)
    initial[:3] = rng.dirichlet(np.ones(3))
    bound = float(np.median(cost))
    expected = multichain_lp(kernel, reward, cost, bound, initial)
    model = CMDP(reward[None], cost[None], Linear([1.0]), [LinearBound([1.0], bound)], kernel, initial=initial)
    for backend in EXACT_BACKENDS:
        from curlopt.backends.registry import resolve_backend

        program = MultichainOccupancyProgram(model)
        result = resolve_backend(backend, (model.objective, *model.constraints), model, type(program)).compile(
            program).solve()
        assert result.ok, result.message
        assert result.objective == pytest.approx(expected, abs=1e-8)


def test_multichain_policy_reads_y_where_x_is_zero():
    x = np.array([[0.0, 0.0], [0.3, 0.1]])
    y = np.array([[0.2, 0.6], [5.0, 0.0]])
    np.testing.assert_allclose(multichain_policy(x, y), [[0.25, 0.75], [0.75, 0.25]])


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_box_pushing_grid_long_run_optimum_from_its_start(backend):
    """danilprov/cmdp's 6×6 box model: two classes reachable by policy; from the start state the optimum is −0.845
    (their long-run value; the stationary law of the old evaluation said −0.924)."""
    model = boxpushing_model()
    result = solve_optimum(model, backend)
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(-0.845, abs=1e-9)
    from curlopt.models.cmdp import stationary_occupancy

    rho = stationary_occupancy(model.kernel, result.policy, model.initial)
    assert float(model.average_rewards(rho)[0]) == pytest.approx(-0.845, abs=1e-7)
    assert float(model.average_costs(rho)[0]) <= 0.6 + 1e-7


def two_blocks(delta: float, n: int = 3) -> CMDP:
    """Two blocks of n states, each mixing uniformly inside, joined both ways with probability δ; reward 1 in the
    first block, 0 in the second, action 1 a copy of action 0. By symmetry the only law puts 1/2 on each block, so
    the optimum is exactly 0.5 whatever δ > 0."""
    S = 2 * n
    kernel = np.zeros((S, 2, S))
    for block in (slice(0, n), slice(n, S)):
        kernel[block, :, block] = 1.0 / n
    for last, other in ((n - 1, n), (S - 1, 0)):
        kernel[last] *= 1.0 - delta
        kernel[last, :, other] += delta
    reward = np.zeros((1, S, 2))
    reward[0, :n] = 1.0
    return CMDP(reward, kernel=kernel, objective=Linear([1.0]))


@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_two_blocks_joined_by_a_moderate_probability_are_optimal(backend):
    result = solve_optimum(two_blocks(1e-3), backend)
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("delta", [1e-10, 1e-12])
@pytest.mark.parametrize("backend", EXACT_BACKENDS)
def test_nearly_decomposable_optimum_is_not_called_optimal(backend, delta):
    result = solve_optimum(two_blocks(delta), backend)
    if result.status is Status.OPTIMAL:  # only a solver that resolves the chain may say optimal
        assert result.objective == pytest.approx(0.5, abs=1e-7)
        return
    assert result.status is Status.OPTIMAL_INACCURATE, (result.status, result.objective)
    assert "nearly decomposable" in result.message
    assert f"{delta:.3g}" in result.message            # the tiny transition probability is named
    assert "the exact value is 0.5" in result.message

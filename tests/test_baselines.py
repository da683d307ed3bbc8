"""The baselines of docs/math.md §9: UCRL-CMDP's box program and agent, the primal-dual agent.

Reference values are computed here from the formulas of docs/math.md (numpy, a closed-form
2-state Poisson solve, ``scipy.optimize.linprog``), never by the code under test.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from conftest import FailingHighs, backend_or_skip
from hypothesis import given
from hypothesis import strategies as st
from reference import occupancy_polytope
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound, MaxOfLinear, Status, SumOfLogs, build_model, get_backend
from curlopt.agents import AGENTS, PlanSource, PrimalDual, UcrlCmdp, UnsupportedModelError, make_agent
from curlopt.agents.baselines import fixed_epoch_length
from curlopt.envs import make
from curlopt.errors import CurloptError
from curlopt.experiments import run
from curlopt.programs.optimistic import BoxOptimisticProgram

TOL = 1e-6


# -- references written from docs/math.md ----------------------------------------------


def spec_box_radius(counts, horizon):
    """docs/math.md §9: b(s,a) = min(1, sqrt(ln(2 S² A T²) / (2 max(1, N(s,a)))))."""
    S, A, _ = counts.shape
    visits = counts.sum(axis=2)
    return np.minimum(1.0, np.sqrt(np.log(2 * S * S * A * horizon**2) / (2 * np.maximum(1.0, visits))))


def spec_empirical_kernel(counts):
    """docs/math.md §3: P^ = n / max(1, N), zeros for an unvisited pair."""
    return counts / np.maximum(1.0, counts.sum(axis=2))[:, :, None]


def true_kernel_optimum(kernel, reward, costs, bounds):
    """docs/math.md §2 with ε = 0 by linprog: max Σ ρ r  s.t.  Σ ρ = 1, all S flow rows, Σ ρ c_m <= b_m."""
    poly = occupancy_polytope(kernel)  # the independent statement of docs/math.md §2 in tests/reference.py
    a_ub = np.array([c.ravel() for c in costs]) if len(costs) else None
    res = linprog(-reward.ravel(), A_ub=a_ub, b_ub=np.asarray(bounds) if len(costs) else None,
                  A_eq=poly.A_eq.toarray(), b_eq=poly.b_eq, bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def uniform_stationary_cost(kernel, cost):
    """Long-run average of ``cost`` (S, A) under the uniform policy on ``kernel`` (power iteration)."""
    S, A, _ = kernel.shape
    chain = kernel.mean(axis=1)
    mu = np.full(S, 1.0 / S)
    for _ in range(5000):
        mu = mu @ chain
    return float(mu @ cost.mean(axis=1))


def solve_box(model, counts, horizon, backend="highs"):
    program = BoxOptimisticProgram(model, horizon, counts=counts)
    result = get_backend(backend).compile(program).solve()
    return program, result


# -- UCRL-CMDP's program ------------------------------------------------------------


@st.composite
def box_cases(draw):
    S = draw(st.integers(2, 4))
    A = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # counts: a mix of unvisited pairs, few and many visits
    scale = rng.choice([0, 1, 5, 50, 500], size=(S, A, 1))
    counts = np.floor(rng.random((S, A, S)) * scale * rng.random((S, A, S)) * 2)
    horizon = draw(st.sampled_from([1, 10, 1000, 10**6]))
    reward = rng.random((S, A))
    cost = rng.random((S, A))
    bound = draw(st.sampled_from([None, 0.2, 0.5, 0.9]))
    return S, A, counts, horizon, reward, cost, bound, seed


def box_model(S, A, reward, cost, bound):
    constraints = [] if bound is None else [LinearBound([1.0], bound)]
    return CMDP(reward[None], cost[None], Linear([1.0]), constraints)


@given(box_cases())
def test_box_program_solution_lies_in_the_boxes(case):
    S, A, counts, horizon, reward, cost, bound, _ = case
    program, result = solve_box(box_model(S, A, reward, cost, bound), counts, horizon)
    assert result.status is Status.OPTIMAL  # the boxes always hold a distribution, so the fallback at least is feasible
    rho, p = result.occupancy, result.joint
    b = spec_box_radius(counts, horizon)[:, :, None]
    p_hat = spec_empirical_kernel(counts)
    # the rows themselves, in absolute terms: |p - P^ ρ| <= b ρ and Σ_{s'} p = ρ
    np.testing.assert_allclose(p.sum(axis=2), rho, atol=TOL)
    assert np.all(np.abs(p - p_hat * rho[:, :, None]) <= b * rho[:, :, None] + TOL)
    assert rho.sum() == pytest.approx(1.0, abs=TOL)
    # the implied kernel where the solution visits the pair
    visited = rho > 1e-6
    implied = p[visited] / rho[visited][:, None]
    np.testing.assert_allclose(implied.sum(axis=1), 1.0, atol=1e-4)
    assert np.all(implied >= -1e-4)
    assert np.all(np.abs(implied - p_hat[visited]) <= b[visited] + 1e-4)
    # flow balance of the implied chain: Σ_a ρ(s,a) = Σ_{s'',a} p(s'',a,s) for every s (the dropped row too)
    np.testing.assert_allclose(rho.sum(axis=1), p.sum(axis=(0, 1)), atol=TOL)
    if bound is not None and result.program.value == "tight":
        assert float((rho * cost).sum()) <= bound + TOL


@st.composite
def optimism_cases(draw):
    S = draw(st.integers(2, 4))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    exact = draw(st.booleans())
    scale = draw(st.sampled_from([1, 10, 100, 10_000]))
    if exact:
        # P := c / Σc with integer c and counts = scale·c: then P^ = P exactly
        base = rng.integers(1, 10, size=(S, A, S)).astype(float)
        kernel = base / base.sum(axis=2, keepdims=True)
        counts = base * scale
    else:
        kernel = rng.dirichlet(np.ones(S), size=(S, A))
        counts = np.round(kernel * 40 * scale)
    reward, cost = rng.random((S, A)), rng.random((S, A))
    # the uniform policy is feasible on the true kernel; the optimum usually binds the constraint
    bound = uniform_stationary_cost(kernel, cost)
    return kernel, counts, reward, cost, bound, draw(st.sampled_from([10, 10**5]))


@given(optimism_cases())
def test_box_program_is_optimistic_when_the_true_kernel_is_in_the_boxes(case):
    kernel, counts, reward, cost, bound, horizon = case
    S, A, _ = kernel.shape
    b = spec_box_radius(counts, horizon)[:, :, None]
    assert np.all(np.abs(kernel - spec_empirical_kernel(counts)) <= b)  # the premise, checked independently
    truth = true_kernel_optimum(kernel, reward, [cost], [bound])
    _, result = solve_box(box_model(S, A, reward, cost, bound), counts, horizon)
    assert result.ok and result.program.value == "tight"
    assert result.objective >= truth - 1e-7


def test_box_optimum_shrinks_to_the_true_optimum_as_counts_grow():
    rng = np.random.default_rng(4)
    S, A = 3, 2
    base = rng.integers(1, 10, size=(S, A, S)).astype(float)
    kernel = base / base.sum(axis=2, keepdims=True)
    reward, cost = rng.random((S, A)), rng.random((S, A))
    bound = uniform_stationary_cost(kernel, cost)
    truth = true_kernel_optimum(kernel, reward, [cost], [bound])
    model = box_model(S, A, reward, cost, bound)
    values = [solve_box(model, base * k, 100)[1].objective for k in (1, 10, 100, 10**4, 10**8)]
    # nested boxes (same P^, smaller b): the optimum never increases, and stays optimistic
    assert all(x >= y - 1e-9 for x, y in itertools.pairwise(values))
    assert values[0] > truth + 1e-3  # optimism is not vacuous on little data
    assert values[-1] == pytest.approx(truth, abs=1e-3)
    assert all(v >= truth - 1e-9 for v in values)


@pytest.mark.parametrize("visits, horizon", [(40, 10), (100, 1000), (10_000, 10**5), (10**6, 10**6)])
def test_box_optimum_has_the_closed_form_of_a_two_state_chain(visits, horizon):
    # One action; P^(·|s) = (1/2, 1/2) in both states; reward 1 in state 1. The most optimistic kernel moves
    # to state 1 with 1/2 + b from both states, whose stationary mass on state 1 is exactly 1/2 + b.
    counts = np.full((2, 1, 2), visits / 2)
    b = math.sqrt(math.log(2 * 2**2 * 1 * horizon**2) / (2 * visits))
    assert b < 0.5
    model = CMDP(np.array([[[0.0], [1.0]]]), objective=Linear([1.0]))
    program, result = solve_box(model, counts, horizon)
    assert result.objective == pytest.approx(0.5 + b, abs=1e-8)
    np.testing.assert_allclose(program.radius, b, rtol=1e-12)


def test_box_rows_are_the_spec_rows():
    rng = np.random.default_rng(3)
    S, A, T = 3, 2, 500
    counts = np.floor(rng.random((S, A, S)) * 8)
    counts[1, 0] = 0  # an unvisited pair
    model = box_model(S, A, rng.random((S, A)), rng.random((S, A)), None)
    program = BoxOptimisticProgram(model, T, counts=counts)
    matrix = program.linear.matrix().toarray()
    rho, p = program.blocks["occupancy"].indices(), program.blocks["joint"].indices()
    p_hat, b = spec_empirical_kernel(counts), spec_box_radius(counts, T)
    upper, lower = matrix[program.linear.groups["box_upper"]], matrix[program.linear.groups["box_lower"]]
    for i, (s, a, s2) in enumerate(np.ndindex(S, A, S)):
        expected = np.zeros(program.n_vars)
        expected[p[s, a, s2]] = 1.0
        expected[rho[s, a]] = -(p_hat[s, a, s2] + b[s, a])
        np.testing.assert_allclose(upper[i], expected, atol=1e-15)   # p - (P^ + b) ρ <= 0
        expected[p[s, a, s2]] = -1.0
        expected[rho[s, a]] = p_hat[s, a, s2] - b[s, a]
        np.testing.assert_allclose(lower[i], expected, atol=1e-15)   # -p + (P^ - b) ρ <= 0
    assert np.all(program.linear.upper[program.linear.groups["box_upper"]] == 0)
    assert np.all(np.isneginf(program.linear.lower[program.linear.groups["box_lower"]]))


def box_lp_reference(counts, horizon, reward, cost, bound):
    """docs/math.md §9 by linprog: max r·ρ over (ρ, p) with Σ ρ = 1, Σ_s' p(s,a,s') = ρ(s,a), the flow rows
    Σ_a ρ(s',a) = Σ_{s,a} p(s,a,s'), the boxes (P^ - b) ρ <= p <= (P^ + b) ρ and c·ρ <= bound (if any).
    Returns the optimum, or None when the rows cannot hold."""
    S, A, _ = counts.shape
    n, m = S * A, S * A * S
    p_hat, b = spec_empirical_kernel(counts).reshape(n, S), spec_box_radius(counts, horizon).reshape(n)
    link = np.hstack([-np.eye(n), np.kron(np.eye(n), np.ones((1, S)))])
    flow = np.hstack([np.kron(np.eye(S), np.ones((1, A))), -np.tile(np.eye(S), (1, n))])
    mass = np.append(np.ones(n), np.zeros(m))[None]
    upper = np.hstack([-np.diag((p_hat + b[:, None]).ravel()) @ np.kron(np.eye(n), np.ones((S, 1))), np.eye(m)])
    lower = np.hstack([np.diag((p_hat - b[:, None]).ravel()) @ np.kron(np.eye(n), np.ones((S, 1))), -np.eye(m)])
    a_ub, b_ub = np.vstack([upper, lower]), np.zeros(2 * m)
    if bound is not None:
        a_ub, b_ub = np.vstack([a_ub, np.append(cost.ravel(), np.zeros(m))]), np.append(b_ub, bound)
    result = linprog(-np.append(reward.ravel(), np.zeros(m)), A_ub=a_ub, b_ub=b_ub,
                     A_eq=np.vstack([mass, link, flow]), b_eq=np.concatenate([[1.0], np.zeros(n + S)]),
                     bounds=(0, None), method="highs")
    assert result.status in (0, 2), result.message
    return -result.fun if result.status == 0 else None


def test_box_program_matches_an_lp_written_out_by_hand(backend_name):
    rng = np.random.default_rng(7)
    S, A = 3, 2
    counts = np.floor(rng.random((S, A, S)) * 20)
    counts[2, 1] = 0  # an unvisited pair: P^ = 0, b = 1
    reward, cost = rng.random((S, A)), rng.random((S, A))
    for bound in (0.5, 0.05):  # the second cannot hold on any kernel in the boxes: the labelled fallback
        program = BoxOptimisticProgram(box_model(S, A, reward, cost, bound), 1000, counts=counts)
        result = backend_or_skip(backend_name, program).solve()
        assert result.ok, result.message
        tight = box_lp_reference(counts, 1000, reward, cost, bound)
        assert (result.program.value == "tight") == (tight is not None), (bound, result.message)
        expected = tight if tight is not None else box_lp_reference(counts, 1000, reward, cost, None)
        assert result.objective == pytest.approx(expected, abs=1e-5), (backend_name, bound)
        residuals = program.residuals(result.x, include_constraints=tight is not None)
        assert max(residuals.values()) <= 1e-5, residuals


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_program_updates_in_place_to_the_rows_of_a_fresh_program(seed):
    """An update rewrites only the boxes of the pairs whose counts changed; the values stay those of a program
    built afresh from the same counts (bit for bit: traces must not depend on the update history) and of the
    formulas of docs/math.md §9 (-(P^ + b) on the upper rows, P^ - b on the lower ones)."""
    model = build_model("queue")
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(seed)
    program = BoxOptimisticProgram(model, horizon=12345.0)
    counts = np.zeros((S, A, S))
    groups = program.linear.param_groups
    for epoch in range(40):
        # a few pairs visited per epoch, as in UCRL-CMDP's short epochs
        for pair in rng.choice(S * A, size=rng.integers(0, 8), replace=False):
            counts.reshape(S * A, S)[pair] += rng.integers(0, 30, size=S)
        version = program.version
        program.update(counts=counts, time=1 + 7 * epoch, epsilon=0.0)
        assert program.version == version + 1
        fresh = BoxOptimisticProgram(model, horizon=12345.0, counts=counts, time=1 + 7 * epoch)
        assert np.array_equal(program.linear.param_values, fresh.linear.param_values)
        p_hat, b = spec_empirical_kernel(counts), spec_box_radius(counts, 12345.0)[:, :, None]
        np.testing.assert_allclose(program.linear.param_values[groups["box_upper"]], -(p_hat + b).ravel(),
                                   rtol=0, atol=1e-14)
        np.testing.assert_allclose(program.linear.param_values[groups["box_lower"]], (p_hat - b).ravel(),
                                   rtol=0, atol=1e-14)
    before = program.linear.param_values.copy()
    program.update(time=10 ** 6)  # the radius uses T, not the time: nothing changes
    assert np.array_equal(program.linear.param_values, before)


def test_box_program_structure_and_validation():
    model = box_model(2, 2, np.ones((2, 2)), np.ones((2, 2)), None)
    program = BoxOptimisticProgram(model, 50)
    assert set(program.blocks) == {"occupancy", "joint"}  # no α
    assert program.n_vars == 2 * 2 + 2 * 2 * 2
    assert set(program.linear.groups) == {"mass", "link", "flow", "box_upper", "box_lower"}
    assert program.linear.groups["flow"].stop - program.linear.groups["flow"].start == 1  # S - 1 rows
    np.testing.assert_allclose(program.radius, spec_box_radius(np.zeros((2, 2, 2)), 50))
    version = program.version
    program.update(counts=np.ones((2, 2, 2)), time=5)
    assert program.version == version + 1 and program.time == 5.0
    for bad, pattern in [(dict(counts=np.ones((2, 2))), "shape"), (dict(counts=-np.ones((2, 2, 2))), "non-negative"),
                         (dict(time=0), "time"), (dict(epsilon=-1), "epsilon")]:
        with pytest.raises(CurloptError, match=pattern):
            program.update(**bad)
    for horizon in (0, math.inf, "10", True):
        with pytest.raises(CurloptError, match="horizon T must be a finite number >= 1"):
            BoxOptimisticProgram(model, horizon)


# -- UCRL-CMDP agent ----------------------------------------------------------------


@pytest.mark.parametrize("horizon, exponent, length", [(200, 1 / 3, 6), (1000, 1 / 3, 10), (400, 0.5, 20)])
def test_ucrl_epochs_start_at_multiples_of_the_epoch_length(horizon, exponent, length):
    assert length == math.ceil(round(horizon**exponent, 9))
    agent = UcrlCmdp(build_model("queue"), horizon, epoch_exponent=exponent)
    assert agent.epoch_length == length
    trace = run(agent, make("queue"), horizon, seed=1, progress=False)
    starts = [e.start for e in trace.epochs]
    assert starts == list(range(1, horizon + 1, length))  # steps count from 1
    assert all(e.epsilon == 0.0 for e in trace.epochs)
    assert {e.source for e in trace.epochs} == {PlanSource.TIGHT}
    assert trace.meta["epoch_length"] == length and trace.meta["trigger"] == "fixed"


@pytest.mark.parametrize("horizon, exponent, length", [(64, 1 / 3, 4), (125, 1 / 3, 5), (10**6, 1 / 3, 100),
                                                       (100_000, 1 / 3, 47), (10, 0.0, 1), (10, 1.0, 10)])
def test_fixed_epoch_length(horizon, exponent, length):
    assert fixed_epoch_length(horizon, exponent) == length


def test_ucrl_records_the_fallback_when_the_constraint_cannot_hold():
    # cost 1 everywhere and ζ <= 0.5: infeasible for every kernel
    model = CMDP(np.ones((1, 2, 2)), np.ones((1, 2, 2)), Linear([1.0]), [LinearBound([1.0], 0.5)],
                 kernel=np.full((2, 2, 2), 0.5))
    with pytest.warns(RuntimeWarning, match="constraints are infeasible"):  # the run says so once, up front
        trace = run(UcrlCmdp(model, 30), make(model), 30, seed=0, progress=False)
    assert trace.epochs and all(e.source == PlanSource.FALLBACK and "infeasible" in e.message for e in trace.epochs)
    assert trace.summary()["fallback_epochs"] == len(trace.epochs)


def test_ucrl_keeps_the_previous_policy_on_solver_failure():
    agent = UcrlCmdp(build_model("queue"), 125, backend=FailingHighs(fail_on={1, 3}))
    trace = run(agent, make("queue"), 125, seed=0, progress=False)
    sources = [e.source for e in trace.epochs[:3]]
    assert sources == [PlanSource.UNIFORM, PlanSource.TIGHT, PlanSource.KEPT]
    assert "injected fault" in trace.epochs[2].message
    assert trace.epochs[2].exact_objective == trace.epochs[1].exact_objective
    assert trace.summary()["failed_epochs"] == 2


# -- primal-dual: hand computation ---------------------------------------------------

# Two states, two actions. Rewards r and cost c below; constraint g(ζ) = 2ζ - 1 <= 0, i.e. ζ <= τ = 1/2.
R = np.array([[1.0, 0.0], [0.5, 0.2]])
C = np.array([[0.0, 1.5], [0.3, 0.8]])
# Transition counts n(s,a,s') of episode 1 (pair (1,1) unvisited) and of episode 2 (H = 10 each).
EPISODE_1 = np.array([[[2, 1], [0, 3]], [[3, 1], [0, 0]]], dtype=float)
EPISODE_2 = np.array([[[3, 0], [1, 1]], [[1, 0], [2, 2]]], dtype=float)
THETA, ETA, SLACK, CAP, BONUS, H = 0.5, 2.0, 0.1, 0.5, 1.0, 10


def hand_q(counts, policy, signal):
    """Q(s,a) = r(s,a) - g + P^(1|s,a) h(1) for the 2-state chain, h(0) = 0.

    With h(0) = 0 the Poisson equation reads 0 = r_π(0) - g + P_π(0,1) h(1) and
    h(1) = r_π(1) - g + P_π(1,1) h(1), so h(1) = (r_π(1) - r_π(0)) / (P_π(0,1) + P_π(1,0))
    and g = r_π(0) + P_π(0,1) h(1). An unvisited pair moves to each state with 1/2.
    """
    n = counts.sum(axis=2)
    to_1 = np.where(n > 0, counts[:, :, 1] / np.maximum(n, 1), 0.5)   # P^(1|s,a)
    p01 = policy[0] @ to_1[0]
    p10 = policy[1] @ (1 - to_1[1])
    r0, r1 = policy[0] @ signal[0], policy[1] @ signal[1]
    h1 = (r1 - r0) / (p01 + p10)
    g = r0 + p01 * h1
    return signal - g + to_1 * h1


def hand_update(counts, policy, dual):
    bonus = BONUS / np.sqrt(np.maximum(1.0, counts.sum(axis=2)))
    q_r = hand_q(counts, policy, R) + bonus
    q_c = hand_q(counts, policy, C) - bonus
    weights = policy * np.exp(THETA * (q_r - dual * q_c))
    return weights / weights.sum(axis=1, keepdims=True)


def test_primal_dual_matches_a_hand_computation_for_two_episodes():
    model = CMDP(R[None], C[None], Linear([1.0]), [LinearBound([2.0], 1.0)])
    # raw signals (scale=False); the scaled default is checked in test_agent_options.py
    agent = PrimalDual(model, horizon=100, theta=THETA, eta=ETA, slack=SLACK, dual_cap=CAP, bonus=BONUS,
                       episode_length=H, scale=False)
    np.testing.assert_allclose(agent.thresholds, [0.5])  # τ = b / w
    agent.reset()
    assert agent.limits(1)[1] == H

    plan = agent.begin_epoch(1)
    pi_1 = np.full((2, 2), 0.5)
    np.testing.assert_array_equal(plan.policy, pi_1)
    assert plan.source == PlanSource.RULE and plan.epsilon is None and "λ_1=[0]" in plan.message
    agent.end_epoch(EPISODE_1, np.array([(EPISODE_1.sum(2) * R).sum()]), np.array([(EPISODE_1.sum(2) * C).sum()]), H)

    # episode 1: ζ^_1 = (3·1.5 + 4·0.3) / 10 = 0.57, λ_1 = 0
    pi_2 = hand_update(EPISODE_1, pi_1, 0.0)
    lam_2 = min(CAP, max(0.0, 0.0 + ETA * (0.57 - 0.5 + SLACK)))      # 0.34
    plan = agent.begin_epoch(H + 1)
    np.testing.assert_allclose(plan.policy, pi_2, rtol=1e-12)
    np.testing.assert_allclose(agent.dual, [lam_2], rtol=1e-12)
    assert lam_2 == pytest.approx(0.34) and "λ_2=[0.34]" in plan.message
    assert not np.allclose(pi_2, pi_1)
    agent.end_epoch(EPISODE_2, np.array([(EPISODE_2.sum(2) * R).sum()]), np.array([(EPISODE_2.sum(2) * C).sum()]), H)

    # episode 2: ζ^_2 = (2·1.5 + 1·0.3 + 4·0.8) / 10 = 0.65; λ_3 = 0.34 + 2·0.25 = 0.84, clipped to Λ = 0.5
    both = EPISODE_1 + EPISODE_2
    pi_3 = hand_update(both, pi_2, lam_2)
    plan = agent.begin_epoch(2 * H + 1)
    np.testing.assert_allclose(plan.policy, pi_3, rtol=1e-10)
    np.testing.assert_allclose(agent.dual, [CAP])
    assert [d.tolist() for d in agent.duals] == [[0.0], [pytest.approx(lam_2)], [CAP]]
    # λ_2 > 0 changed the update: without it the policy would differ
    assert not np.allclose(hand_update(both, pi_2, 0.0), pi_3)


def test_primal_dual_first_episode_is_uniform_and_runs_through_the_loop():
    model = build_model("queue")
    agent = make_agent("primal-dual", model, horizon=3000, episode_length=500)
    trace = run(agent, make("queue"), 3000, seed=2, progress=False)
    assert [e.start for e in trace.epochs] == [1, 501, 1001, 1501, 2001, 2501]
    assert all(e.source == PlanSource.RULE and e.epsilon is None and "dual λ_" in e.message for e in trace.epochs)
    # the first episode plays the uniform policy: its exact long-run reward is the uniform chain's
    uniform_reward = uniform_stationary_cost(model.kernel, model.rewards[0])
    assert trace.epochs[0].exact_rewards[0] == pytest.approx(uniform_reward, abs=1e-9)
    assert trace.epochs[1].exact_rewards[0] != pytest.approx(trace.epochs[0].exact_rewards[0], abs=1e-6)
    assert trace.meta["agent"] == "primal-dual" and trace.meta["slack"] == pytest.approx(1 / math.sqrt(3000))


@st.composite
def dual_cases(draw):
    S = draw(st.integers(2, 4))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    episodes = [np.floor(rng.random((S, A, S)) * draw(st.sampled_from([0, 2, 30]))) for _ in range(4)]
    theta = draw(st.sampled_from([0.05, 5.0, 500.0]))
    eta = draw(st.sampled_from([0.05, 3.0]))
    cap = draw(st.sampled_from([0.5, 100.0]))
    return S, A, rng.random((S, A)), rng.random((S, A)) * 2, episodes, theta, eta, cap


@given(dual_cases())
def test_primal_dual_keeps_the_dual_in_its_box_and_the_policy_a_distribution(case):
    S, A, reward, cost, episodes, theta, eta, cap = case
    model = CMDP(reward[None], cost[None], Linear([1.0]), [LinearBound([1.0], 0.7)])
    agent = PrimalDual(model, horizon=1000, theta=theta, eta=eta, dual_cap=cap, episode_length=10)
    agent.reset()
    t = 1
    for counts in episodes:
        plan = agent.begin_epoch(t)
        assert np.all(plan.policy >= 0) and np.allclose(plan.policy.sum(axis=1), 1.0, atol=1e-12)
        assert np.all((agent.dual >= 0) & (agent.dual <= cap))
        steps = max(1, int(counts.sum()))
        agent.end_epoch(counts, np.array([(counts.sum(2) * reward).sum()]), np.array([(counts.sum(2) * cost).sum()]),
                        steps)
        t += steps
    agent.begin_epoch(t)
    duals = np.array(agent.duals)
    assert np.all((duals >= 0) & (duals <= cap))


def test_primal_dual_dual_hits_both_ends_of_its_box():
    # queue: the dual oscillates; with a large step it reaches 0 and Λ
    agent = PrimalDual(build_model("queue"), horizon=20_000, eta=5.0, dual_cap=2.0, episode_length=200)
    run(agent, make("queue"), 20_000, seed=0, progress=False)
    duals = np.array(agent.duals)
    assert duals.shape == (100, 2)
    assert np.all((duals >= 0) & (duals <= 2.0))
    assert np.any(duals == 0.0) and np.any(duals == 2.0)
    assert np.all(agent.policy >= 0) and np.allclose(agent.policy.sum(axis=1), 1.0)


def test_primal_dual_uses_the_constraint_as_cost_and_threshold():
    costs = np.stack([np.ones((2, 2)), np.arange(4.0).reshape(2, 2)])
    model = CMDP(np.ones((2, 2, 2)), costs, Linear([1.0, 2.0]), [LinearBound([3.0, -1.0], 2.0)])
    agent = PrimalDual(model, horizon=10, scale=False)  # raw signals: the scaled ones are in test_agent_options.py
    np.testing.assert_allclose(agent.reward, 3 * np.ones((2, 2)))           # w·r
    np.testing.assert_allclose(agent.costs[0], (3 * costs[0] - costs[1]) / 4)  # (w/|w|_1)·c
    np.testing.assert_allclose(agent.thresholds, [0.5])                       # b/|w|_1


# -- refusals and options --------------------------------------------------------------


def log_model():
    return CMDP(np.ones((2, 2, 2)), np.ones((1, 2, 2)), SumOfLogs(2), [LinearBound([1.0], 2.0)])


def max_constraint_model():
    return CMDP(np.ones((1, 2, 2)), np.ones((1, 2, 2)), Linear([1.0]),
                [MaxOfLinear(np.array([[1.0], [2.0]]), np.array([1.0, 1.5]))])


@pytest.mark.parametrize("name", ["ucrl-cmdp", "primal-dual"])
@pytest.mark.parametrize("model, pattern", [
    (log_model, r"only a linear objective .* SumOfLogs"),
    (max_constraint_model, r"only linear constraints .* constraint 0 .*MaxOfLinear"),
])
def test_baselines_refuse_non_linear_models(name, model, pattern):
    with pytest.raises(UnsupportedModelError, match=pattern) as info:
        make_agent(name, model(), horizon=100)
    assert "use uc-curl or ps-curl" in str(info.value)
    assert isinstance(info.value, CurloptError)


def test_primal_dual_refuses_a_constraint_without_costs():
    model = CMDP(np.ones((1, 2, 2)), np.ones((1, 2, 2)), Linear([1.0]), [LinearBound([0.0], 1.0)])
    with pytest.raises(UnsupportedModelError, match="does not depend on any cost"):
        PrimalDual(model, horizon=10)


@pytest.mark.parametrize("name, options, pattern", [
    ("ucrl-cmdp", dict(), "needs the horizon T up front"),
    ("ucrl-cmdp", dict(horizon=0), "horizon T must be a finite number >= 1"),
    ("ucrl-cmdp", dict(horizon=10, epoch_exponent=1.5), r"epoch_exponent must lie in \[0, 1\]"),
    ("ucrl-cmdp", dict(horizon=10, epoch_exponent="1/3"), "epoch_exponent must be a finite number"),
    ("ucrl-cmdp", dict(horizon=10, trigger="linear"), "does not take 'trigger'"),
    ("ucrl-cmdp", dict(horizon=10, tightness_constant=1.0), "does not take 'tightness_constant'"),
    ("ucrl-cmdp", dict(horizon=10, backend="nope"), "unknown backend 'nope'"),
    ("primal-dual", dict(), "needs the horizon T up front"),
    ("primal-dual", dict(horizon=float("nan")), "horizon T must be a finite number"),
    ("primal-dual", dict(horizon=10, theta=0), r"theta \(θ\) must be a finite number > 0"),
    ("primal-dual", dict(horizon=10, eta=-1), r"eta \(η\) must be a finite number > 0"),
    ("primal-dual", dict(horizon=10, slack=-0.1), r"slack \(ε_c\) must be a finite number >= 0"),
    ("primal-dual", dict(horizon=10, dual_cap=math.inf), r"dual_cap \(Λ\) must be a finite number > 0"),
    ("primal-dual", dict(horizon=10, bonus=True), r"bonus \(c_b\) must be a finite number >= 0"),
    ("primal-dual", dict(horizon=10, episode_length=2.5), r"episode_length \(H\) must be an integer >= 1"),
    ("primal-dual", dict(horizon=10, episode_length=0), r"episode_length \(H\) must be an integer >= 1"),
    ("primal-dual", dict(horizon=10, backend="highs"), "does not take 'backend'"),
    ("primal-dual", dict(horizon=10, prior=1.0), "does not take 'prior'"),
    ("primal-dual", dict(horizon=10, gamma=0.9), "does not take 'gamma'"),
])
def test_options_are_validated(name, options, pattern):
    with pytest.raises(CurloptError, match=pattern):
        make_agent(name, build_model("queue"), **options)


def test_agents_are_registered_and_need_the_horizon():
    assert AGENTS["ucrl-cmdp"] is UcrlCmdp and AGENTS["primal-dual"] is PrimalDual
    assert UcrlCmdp.needs_horizon and PrimalDual.needs_horizon


# -- the command line -----------------------------------------------------------------


@pytest.mark.parametrize("name, extra", [("ucrl-cmdp", []), ("primal-dual", ["-o", "episode_length=300"])])
def test_cli_runs_the_baselines(name, extra, tmp_path):
    from typer.testing import CliRunner

    from curlopt.cli import _register, app
    from curlopt.experiments import load_trace

    _register()
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(app, ["run", "queue", "--agent", name, "--steps", "1500", "--seed", "3", "--json",
                                      "--no-progress", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["meta"]["agent"] == name and data["meta"]["horizon"] == 1500
    summary = data["summary"]
    assert summary["steps"] == 1500 and math.isfinite(summary["regret"]) and summary["violation"] >= 0
    assert load_trace(out).summary()["epochs"] == summary["epochs"]


def test_cli_reports_a_refusal(capsys):
    from curlopt.cli import main

    with pytest.raises(SystemExit) as info:
        main(["run", "scheduler", "--agent", "primal-dual", "--steps", "100"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "only a linear objective" in err and "use uc-curl or ps-curl" in err

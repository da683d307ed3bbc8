"""The pieces of the comparison between safe mode and PS-CURL: the same model in other units or mixing slower,
the unit of a constraint, and the invariance of the agents that claim it.

References come from outside the code under test: optima from a small LP written here with
scipy.optimize.linprog, stationary distributions from numpy's linear algebra, constraint units by hand. The
invariance tests compare what an agent plays on a model and on the same model in other units, epoch by epoch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound
from curlopt.agents import PsCurl, SafeCurl
from curlopt.agents.safe_sizing import constraint_scales, lipschitz_bounds
from curlopt.envs import make
from curlopt.errors import AgentError, ModelError
from curlopt.experiments.simulation.loop import run
from curlopt.models import build_model, lazy_model, scaled_model
from curlopt.models.transforms import scale_constraint, scale_objective
from curlopt.utilities.library import ConvexQuadratic, CustomUtility, MaxOfLinear, MinOfLinear, Norm, SumOfLogs

FACTORS = st.floats(min_value=-2.0, max_value=2.0).map(lambda exponent: float(10.0 ** exponent))


def linear_optimum(model: CMDP) -> tuple[float, np.ndarray]:
    """max Σρ r subject to the occupancy rows and every linear bound, as an LP written from the model's arrays."""
    S, A = model.n_states, model.n_actions
    kernel = np.asarray(model.kernel)
    n = S * A
    flow = np.zeros((S, n))
    for s in range(S):
        for a in range(A):
            flow[s, s * A + a] += 1.0
            flow[:, s * A + a] -= kernel[s, a]
    equalities = np.vstack([flow, np.ones((1, n))])
    right = np.append(np.zeros(S), 1.0)
    costs = model.costs.reshape(model.n_costs, n)
    rows = [g.weights @ costs for g in model.constraints]
    bounds = [g.bound for g in model.constraints]
    weights = model.objective.weights @ model.rewards.reshape(model.n_rewards, n)
    result = linprog(-weights, A_ub=np.array(rows) if rows else None, b_ub=np.array(bounds) if rows else None,
                     A_eq=equalities, b_eq=right, bounds=(0, None), method="highs")
    assert result.status == 0, result.message
    return -result.fun + float(model.objective.offset[0]), result.x.reshape(S, A)


def stationary(kernel: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """The stationary distribution of the policy's chain: the left eigenvector of eigenvalue 1, normalised."""
    chain = np.einsum("sa,sat->st", policy, kernel)
    values, vectors = np.linalg.eig(chain.T)
    vector = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    return vector / vector.sum()


# -- the transforms -------------------------------------------------------------------------------------------------
@given(FACTORS, FACTORS, st.integers(0, 50))
def test_scaled_model_is_the_same_problem_in_other_units(cost_factor, reward_factor, seed):
    base = build_model("random", n_states=4, n_actions=3, n_costs=2, seed=seed, margin=0.05)
    model = scaled_model(base, costs=cost_factor, rewards=reward_factor)
    np.testing.assert_array_equal(model.kernel, base.kernel)
    np.testing.assert_allclose(model.costs, cost_factor * base.costs, rtol=1e-15)
    optimum, _ = linear_optimum(base)
    scaled_optimum, occupancy = linear_optimum(model)
    assert scaled_optimum == pytest.approx(reward_factor * optimum, rel=1e-7, abs=1e-9)
    # the scaled optimum's occupancy is feasible for the original problem, with the constraints k times smaller
    costs = np.einsum("ksa,sa->k", base.costs, occupancy)
    for g, g_scaled in zip(base.constraints, model.constraints, strict=True):
        assert g_scaled.value(cost_factor * costs) == pytest.approx(cost_factor * g.value(costs), rel=1e-9, abs=1e-12)
        assert g.value(costs) <= 1e-7


@given(FACTORS, st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=2))
def test_each_known_constraint_scales_as_k_g_of_y_over_k(factor, point):
    y = np.asarray(point)
    constraints = [LinearBound([1.0, -2.0], 0.3), MaxOfLinear([[1.0, 0.0], [0.5, 2.0]], [0.1, -0.4]),
                   Norm([0.2, -0.1], 0.5, ord=1), Norm([0.2, -0.1], 0.5), ConvexQuadratic([[2.0, 0.5], [0.5, 1.0]],
                                                                                        [0.3, -1.0], -0.7)]
    for g in constraints:
        assert scale_constraint(g, factor).value(factor * y) == pytest.approx(factor * g.value(y), rel=1e-9, abs=1e-9)
    for f in (Linear([2.0, -1.0], offset=0.4), MinOfLinear([[1.0, 0.0], [0.0, 1.0]], [0.2, -0.3])):
        assert scale_objective(f, factor).value(factor * y) == pytest.approx(factor * f.value(y), rel=1e-9, abs=1e-9)


def test_what_the_transforms_refuse():
    custom = CustomUtility(1, "convex", lambda y: float(y[0] ** 4))
    with pytest.raises(ModelError, match="cannot scale the costs of constraint"):
        scale_constraint(custom, 2.0)
    with pytest.raises(ModelError, match="only a linear or piecewise-linear f"):
        scaled_model("scheduler", rewards=2.0)
    for bad in (0.0, -1.0, math.inf, "2", True):
        with pytest.raises(ModelError, match="costs must be a finite number > 0"):
            scaled_model("queue", costs=bad)
    with pytest.raises(ModelError, match="stay must be a probability in \\[0, 1\\)"):
        lazy_model("queue", stay=1.0)
    with pytest.raises(ModelError, match="another model than 'lazy'"):
        lazy_model("lazy")
    with pytest.raises(ModelError, match="cannot apply"):
        scaled_model(build_model("queue"), costs=2.0, buffer=3)
    # the scheduler's log objective stays as it is when only the costs change units
    assert isinstance(scaled_model("scheduler", costs=10.0).objective, SumOfLogs)


@given(st.floats(0.0, 0.95), st.integers(0, 50))
def test_lazy_model_keeps_every_stationary_distribution(stay, seed):
    base = build_model("random", n_states=4, n_actions=3, seed=seed, margin=0.05)
    model = lazy_model(base, stay=stay)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        policy = rng.dirichlet(np.ones(3), size=4)
        np.testing.assert_allclose(stationary(model.kernel, policy), stationary(base.kernel, policy), atol=1e-9)
    assert linear_optimum(model)[0] == pytest.approx(linear_optimum(base)[0], rel=1e-7)
    # it stays put with probability at least `stay` in every state under every action
    assert np.all(np.einsum("sas->sa", model.kernel) >= stay - 1e-12)


def test_the_transforms_are_registered_for_study_files():
    model = build_model("scaled", base="random", costs=100.0, n_states=5, seed=3)
    assert model.constraints[0].bound == pytest.approx(100.0 * build_model("random", n_states=5, seed=3)
                                                       .constraints[0].bound)
    assert build_model("lazy", base="queue", stay=0.5).n_states == 6


# -- the unit of a constraint ---------------------------------------------------------------------------------------
def test_constraint_scales_by_hand():
    queue = build_model("queue")
    # c1 = 6 - 10a with a in 0.2..0.8: range 6; c2 = 2 - 8(1-b)^2 with b in 0.4..0.7: range 8 (0.36 - 0.09) = 2.16
    scales = constraint_scales(lipschitz_bounds(queue.constraints, queue.costs), queue.costs)
    np.testing.assert_allclose(scales, [6.0, 2.16], rtol=1e-12)
    costs = np.array([[[0.0, 1.0], [2.0, 0.5]], [[-1.0, 1.0], [0.0, 0.0]]])  # ranges 2 and 2
    model = CMDP(np.ones((2, 2)), costs, Linear([1.0]), [LinearBound([1.0, -3.0], 0.0), LinearBound([0.5, 0.0], 1.0)],
                 np.full((2, 2, 2), 0.5))
    np.testing.assert_allclose(constraint_scales(lipschitz_bounds(model.constraints, model.costs), model.costs),
                               [1.0 * 2 + 3.0 * 2, 0.5 * 2])


# -- what the agents play in other units ----------------------------------------------------------------------------
def played(agent, model: CMDP, steps: int = 3000, seed: int = 0) -> list[tuple[int, np.ndarray]]:
    """``(start, policy)`` of every epoch of a run of ``agent`` on ``model``."""
    plans: list[tuple[int, np.ndarray]] = []
    begin = agent.begin_epoch

    def record(time):
        plan = begin(time)
        plans.append((time, np.array(plan.policy, copy=True)))
        return plan

    agent.begin_epoch = record
    run(agent, make(model), steps, seed=seed, model=model, progress=False)
    return plans


def assert_same_play(first, second, atol: float = 1e-6) -> None:
    assert [start for start, _ in first] == [start for start, _ in second]
    for (start, a), (_, b) in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=f"epoch starting at step {start}")


#: two constraints that bind at the optimum (checked in the test), one linear objective
BINDING = dict(n_states=5, n_actions=3, n_costs=2, seed=15, margin=0.02, concentration=0.3)


def test_the_invariance_model_has_binding_constraints():
    model = build_model("random", **BINDING)
    free = CMDP(model.rewards, model.costs, model.objective, [], model.kernel)
    assert linear_optimum(model)[0] < linear_optimum(free)[0] - 1e-3


@given(FACTORS, FACTORS)
def test_safe_mode_plays_the_same_policies_in_any_units(cost_factor, reward_factor):
    base = build_model("random", **BINDING)
    model = scaled_model(base, costs=cost_factor, rewards=reward_factor)
    assert_same_play(played(SafeCurl(base, backend="highs"), base), played(SafeCurl(model, backend="highs"), model))


@given(FACTORS)
def test_ps_curl_with_the_range_margin_plays_the_same_policies_in_any_units(cost_factor):
    base = build_model("random", **BINDING)
    model = scaled_model(base, costs=cost_factor)
    assert_same_play(played(PsCurl(base, backend="highs", trigger="linear", margin="range"), base),
                     played(PsCurl(model, backend="highs", trigger="linear", margin="range"), model))


def test_ps_curl_with_the_absolute_margin_does_not():
    # the check above can fail: the paper's absolute margin is 100 times thinner in cents than in euros
    base = build_model("random", **BINDING)
    model = scaled_model(base, costs=100.0)
    first = played(PsCurl(base, backend="highs", trigger="linear"), base)
    second = played(PsCurl(model, backend="highs", trigger="linear"), model)
    with pytest.raises(AssertionError):
        assert_same_play(first, second)


def test_range_margin_is_the_absolute_one_for_a_constraint_of_unit_range():
    # one constraint with slope 1 on a cost whose range is exactly 1: ε s_1 = ε, so both margins are the same
    base = build_model("random", n_states=5, n_actions=3, seed=9, margin=0.02, concentration=0.3)  # binding
    spread = float(np.ptp(base.costs))
    model = scaled_model(base, costs=1.0 / spread)
    assert float(np.ptp(model.costs)) == pytest.approx(1.0)
    assert_same_play(played(PsCurl(model, backend="highs", trigger="linear"), model),
                     played(PsCurl(model, backend="highs", trigger="linear", margin="range"), model))


def test_margin_options_are_checked():
    model = build_model("random", n_states=3, n_actions=2, seed=1)
    for agent in (PsCurl, SafeCurl):
        with pytest.raises(AgentError, match="margin must be one of"):
            agent(model, backend="highs", margin="relative")
    custom = CMDP(model.rewards, model.costs, model.objective,
                  [CustomUtility(1, "convex", lambda y: float(y[0] ** 4))], model.kernel)
    with pytest.raises(AgentError, match="margin='absolute'"):
        PsCurl(custom, backend="pyomo", margin="range")
    assert PsCurl(model, backend="highs").describe()["margin"] == "absolute"
    assert SafeCurl(model, backend="highs").describe()["margin"] == "range"

"""The options of the agents: UC-CURL's confidence radius, the fill of unreached states,
primal-dual's scaling, and the paper's linear epoch trigger (with the trace format it needs).

Every reference value is computed here by hand or with numpy from the formulas, never
by the code under test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from curlopt import CMDP, ConvexQuadratic, Linear, LinearBound, build_model
from curlopt.agents import (
    TRIGGERS,
    GlobalLinearTrigger,
    LinearTrigger,
    PerPairLinearTrigger,
    PlanSource,
    PrimalDual,
    PsCurl,
    UcCurl,
    UcrlCmdp,
    make_agent,
)
from curlopt.envs import make
from curlopt.errors import AgentError, CurloptError, ProgramError
from curlopt.experiments import load_trace, run
from curlopt.experiments.simulation.trace import TRACE_VERSION
from curlopt.programs.optimistic import OptimisticProgram, l1_radius
from curlopt.programs.policy import extract_policy, policy_from_occupancy

# -- 1. the confidence radius of UC-CURL ----------------------------------------------------------------------------

# S = 3, A = 2, epoch start t = 50; visits N(s,a) below (0 counts as 1).
VISITS = np.array([[0.0, 3.0], [10.0, 100.0], [1.0, 7.0]])
ANALYSIS = np.array([[math.sqrt(14 * 3 * math.log(2 * 2 * 50) / n) for n in (1, 3)],
                     [math.sqrt(14 * 3 * math.log(2 * 2 * 50) / n) for n in (10, 100)],
                     [math.sqrt(14 * 3 * math.log(2 * 2 * 50) / n) for n in (1, 7)]])
EXPERIMENT = np.array([[math.sqrt(3 * math.log(2 * 50) / n) for n in (1, 3)],
                       [math.sqrt(3 * math.log(2 * 50) / n) for n in (10, 100)],
                       [math.sqrt(3 * math.log(2 * 50) / n) for n in (1, 7)]])


def counts_with(visits):
    """Transition counts n(s,a,s') whose row sums are ``visits`` (all moves to state 0)."""
    counts = np.zeros(visits.shape + (visits.shape[0],))
    counts[:, :, 0] = visits
    return counts


def three_state_model(**kwargs):
    kernel = np.full((3, 2, 3), 1 / 3)
    return CMDP(np.ones((1, 3, 2)), np.ones((1, 3, 2)), Linear([1.0]), [LinearBound([1.0], 2.0)], kernel, **kwargs)


def test_both_radii_match_the_formulas():
    np.testing.assert_allclose(l1_radius(VISITS, 50, 3, 2), ANALYSIS, rtol=1e-14)
    np.testing.assert_allclose(l1_radius(VISITS, 50, 3, 2, kind="analysis"), ANALYSIS, rtol=1e-14)
    np.testing.assert_allclose(l1_radius(VISITS, 50, 3, 2, kind="experiment"), EXPERIMENT, rtol=1e-14)
    # e.g. the pair with 100 visits: sqrt(3 ln 100 / 100) = 0.3717...
    assert l1_radius(VISITS, 50, 3, 2, kind="experiment")[1, 1] == pytest.approx(0.37169, abs=1e-5)


@pytest.mark.parametrize("radius, expected", [("analysis", ANALYSIS), ("experiment", EXPERIMENT)])
@pytest.mark.parametrize("scale", [1.0, 2.5, 0.0])
def test_the_program_holds_minus_beta_in_its_radius_rows(radius, expected, scale):
    program = OptimisticProgram(three_state_model(), counts=counts_with(VISITS), time=50, radius=radius,
                                radius_scale=scale)
    np.testing.assert_allclose(program.radius, scale * expected, rtol=1e-14)
    entries = program.linear.param_values[program.linear.param_groups["radius"]]
    # one entry per pair, in (s, a) order: the coefficient of ρ(s,a) in Σ_{s'} α(s,a,s') - β(s,a) ρ(s,a) <= 0
    np.testing.assert_allclose(entries, -scale * expected.ravel(), rtol=1e-14)
    program.update(counts=counts_with(VISITS + 1), time=80)
    later = np.sqrt((14 * 3 * math.log(2 * 2 * 80) if radius == "analysis" else 3 * math.log(2 * 80))
                    / np.maximum(1.0, VISITS + 1))
    np.testing.assert_allclose(program.linear.param_values[program.linear.param_groups["radius"]],
                               -scale * later.ravel(), rtol=1e-14)


def test_uc_curl_takes_the_radius_and_records_it():
    model = build_model("queue")
    default = make_agent("uc-curl", model)
    assert (default.radius, default.radius_scale) == ("analysis", 1.0)
    assert default.program.radius_kind == "analysis"
    agent = make_agent("uc-curl", model, radius="experiment", radius_scale=0.5)
    assert agent.program.radius_kind == "experiment" and agent.program.radius_scale == 0.5
    trace = run(agent, make("queue"), 200, seed=0, progress=False)
    assert trace.meta["radius"] == "experiment" and trace.meta["radius_scale"] == 0.5
    # the program's radius at the agent's data is the experiment radius, halved
    S, A = model.n_states, model.n_actions
    start = trace.epochs[-1].start
    agent.program.update(counts=agent.counts, time=start)
    expected = 0.5 * np.sqrt(S * math.log(A * start) / np.maximum(1.0, agent.visits))
    np.testing.assert_allclose(agent.program.radius, expected, rtol=1e-14)


def test_ps_curl_refuses_a_radius():
    for key, value in (("radius", "experiment"), ("radius_scale", 2.0)):
        with pytest.raises(AgentError, match=f"ps-curl does not take '{key}'.*samples a posterior.*no confidence radius"):
            make_agent("ps-curl", build_model("queue"), **{key: value})


# -- 2. unreached states ----------------------------------------------------------------------------------------------

def fill_model(constraints, costs):
    """3 states, 3 actions; uniform kernel (irrelevant to the fill)."""
    return CMDP(np.zeros((1, 3, 3)), np.asarray(costs, dtype=float), Linear([1.0]), constraints,
                np.full((3, 3, 3), 1 / 3))


# The plan reaches states 0 and 1 only; state 2 has no mass.
PLAN = np.array([[0.3, 0.2, 0.0], [0.0, 0.1, 0.4], [0.0, 0.0, 0.0]])


def test_uniform_fill_is_the_plain_extraction():
    costs = np.zeros((1, 3, 3))
    model = fill_model([LinearBound([1.0], 1.0)], costs)
    policy, mask = extract_policy(PLAN, model)
    np.testing.assert_array_equal(policy, policy_from_occupancy(PLAN))
    np.testing.assert_array_equal(mask, [False, False, True])
    np.testing.assert_allclose(policy, [[0.6, 0.4, 0.0], [0.0, 0.2, 0.8], [1 / 3, 1 / 3, 1 / 3]])


def test_safe_fill_picks_the_cheapest_action_for_one_linear_constraint():
    costs = np.zeros((1, 3, 3))
    costs[0, 2] = [0.9, 0.1, 0.5]          # in state 2, action 1 costs least
    costs[0, 0] = [5.0, 0.0, 0.0]          # reached states keep the plan whatever their costs
    model = fill_model([LinearBound([1.0], 1.0)], costs)
    policy, mask = extract_policy(PLAN, model, "safe")
    np.testing.assert_array_equal(policy[2], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(policy[:2], [[0.6, 0.4, 0.0], [0.0, 0.2, 0.8]])
    np.testing.assert_array_equal(mask, [False, False, True])


def test_safe_fill_follows_the_sign_of_the_constraint():
    # g(ζ) = -ζ <= 0 ("the average cost is at least 0", as on the queue): the largest cost is safest
    costs = np.zeros((1, 3, 3))
    costs[0, 2] = [0.9, 0.1, 0.5]
    policy, _ = extract_policy(PLAN, fill_model([LinearBound([-1.0], 0.0)], costs), "safe")
    np.testing.assert_array_equal(policy[2], [1.0, 0.0, 0.0])


def test_safe_fill_takes_the_worst_constraint_of_each_action():
    # g1 = ζ1 - 1, g2 = 2 ζ2 - 1. Action costs in state 2 and their scores max(w1·c, w2·c):
    #   a0 (3, 0)   -> max(3, 0) = 3
    #   a1 (1, 1)   -> max(1, 2) = 2
    #   a2 (1.5, .5)-> max(1.5, 1) = 1.5   <- the least increase of the worst constraint
    costs = np.zeros((2, 3, 3))
    costs[:, 2, 0], costs[:, 2, 1], costs[:, 2, 2] = (3, 0), (1, 1), (1.5, 0.5)
    model = fill_model([LinearBound([1.0, 0.0], 1.0), LinearBound([0.0, 2.0], 1.0)], costs)
    policy, _ = extract_policy(PLAN, model, "safe")
    np.testing.assert_array_equal(policy[2], [0.0, 0.0, 1.0])


def test_safe_fill_is_uniform_over_ties():
    costs = np.zeros((1, 3, 3))
    costs[0, 2] = [1.0, 0.25, 0.25]
    policy, _ = extract_policy(PLAN, fill_model([LinearBound([1.0], 1.0)], costs), "safe")
    np.testing.assert_array_equal(policy[2], [0.0, 0.5, 0.5])
    # equal up to round-off (0.1 + 0.2 vs 0.3) still ties
    costs[0, 2] = [0.1 + 0.2, 0.3, 2.0]
    policy, _ = extract_policy(PLAN, fill_model([LinearBound([1.0], 1.0)], costs), "safe")
    np.testing.assert_array_equal(policy[2], [0.5, 0.5, 0.0])
    # every action equally costly: uniform
    costs[0, 2] = [0.7, 0.7, 0.7]
    policy, _ = extract_policy(PLAN, fill_model([LinearBound([1.0], 1.0)], costs), "safe")
    np.testing.assert_array_equal(policy[2], [1 / 3, 1 / 3, 1 / 3])


def test_safe_fill_linearises_a_convex_constraint_at_the_plan():
    # g(ζ) = ζ1² + ζ2² - 1, ∇g(ζ) = 2ζ. State 2's actions cost a0 = (1, 0), a1 = (0, 1), a2 = (1, 1).
    #   at ζ_plan = (0.1, 0.6): ∇g = (0.2, 1.2), scores 0.2, 1.2, 1.4 -> a0
    #   at ζ_plan = (0.6, 0.1): ∇g = (1.2, 0.2), scores 1.2, 0.2, 1.4 -> a1
    costs = np.zeros((2, 3, 3))
    costs[:, 2, 0], costs[:, 2, 1], costs[:, 2, 2] = (1, 0), (0, 1), (1, 1)
    model = fill_model([ConvexQuadratic(np.eye(2), constant=-1.0)], costs)
    policy, _ = extract_policy(PLAN, model, "safe", costs=[0.1, 0.6])
    np.testing.assert_array_equal(policy[2], [1.0, 0.0, 0.0])
    policy, _ = extract_policy(PLAN, model, "safe", costs=[0.6, 0.1])
    np.testing.assert_array_equal(policy[2], [0.0, 1.0, 0.0])
    # without ``costs``, ζ_plan is the plan's own average cost: give state 0's actions costs so that
    # ζ_plan = Σ ρ c = 0.3·(0, 2) = (0, 0.6) -> ∇g = (0, 1.2): a0 scores 0 and wins
    costs[:, 0, 0] = (0.0, 2.0)
    model = fill_model([ConvexQuadratic(np.eye(2), constant=-1.0)], costs)
    policy, _ = extract_policy(PLAN, model, "safe")
    np.testing.assert_array_equal(policy[2], [1.0, 0.0, 0.0])


def test_safe_fill_without_constraints_is_uniform():
    costs = np.zeros((1, 3, 3))
    costs[0, 2] = [0.9, 0.1, 0.5]
    policy, mask = extract_policy(PLAN, fill_model([], costs), "safe")
    np.testing.assert_array_equal(policy[2], [1 / 3, 1 / 3, 1 / 3])
    assert mask.tolist() == [False, False, True]


def greedy_model():
    """3 states, 3 actions: action a moves to state a w.p. 0.8 (else 0.1 each). Reward 1 only at (0, 0).

    Cost 0.2, 0, 0.9 for actions 0, 1, 2 with ζ <= 5 (never binding, even tightened by ε). Early on
    the radius lets the optimistic kernel keep the chain in (0, 0) forever, so the plan is
    ρ(0, 0) = 1: states 1 and 2 unreached, and the cheapest action there is 1.
    """
    kernel = np.full((3, 3, 3), 0.1)
    for a in range(3):
        kernel[:, a, a] = 0.8
    rewards = np.zeros((1, 3, 3))
    rewards[0, 0, 0] = 1.0
    costs = np.tile([0.2, 0.0, 0.9], (1, 3, 1))
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 5.0)], kernel, initial=[1.0, 0.0, 0.0])


@pytest.mark.parametrize("fill, row", [("uniform", [1 / 3, 1 / 3, 1 / 3]), ("safe", [0.0, 1.0, 0.0])])
def test_the_unreached_count_lands_in_the_trace(fill, row, tmp_path):
    model = greedy_model()
    agent = UcCurl(model, trigger="doubling", unreached=fill)
    trace = run(agent, make(model), 30, seed=0, progress=False)
    assert all(e.source in (PlanSource.TIGHT, PlanSource.FALLBACK) for e in trace.epochs)
    assert [e.unreached for e in trace.epochs] == [2] * len(trace.epochs)
    np.testing.assert_allclose(agent.policy, [[1.0, 0.0, 0.0], row, row], atol=1e-9)
    assert trace.meta["unreached"] == fill
    loaded = load_trace(trace.save(tmp_path / "trace.json"))
    assert [e.unreached for e in loaded.epochs] == [2] * len(trace.epochs)
    # the backend's own policy stays the uniform-filled one: solved again on the last epoch's data, as it was planned
    np.testing.assert_allclose(agent.compiled.solve().policy[1:], 1 / 3)


def test_safe_fill_lowers_the_exact_cost_of_the_first_policy():
    model = greedy_model()
    exact = {}
    for fill in ("uniform", "safe"):
        trace = run(UcCurl(model, unreached=fill), make(model), 5, seed=0, progress=False)
        exact[fill] = trace.epochs[0].exact_costs[0]
    # the policy plays 0 in state 0; in states 1, 2 uniform (mean cost 1.1/3) or action 1 (cost 0)
    assert exact["safe"] < exact["uniform"]


def test_every_program_agent_takes_the_fill_and_primal_dual_has_none():
    model = greedy_model()
    for agent in (PsCurl(model, unreached="safe"), UcrlCmdp(model, horizon=50, unreached="safe")):
        assert agent.unreached == "safe" and agent.describe()["unreached"] == "safe"
        trace = run(agent, make(model), 50, seed=1, progress=False)
        assert all(isinstance(e.unreached, int) for e in trace.epochs if e.source in ("tight", "fallback"))
    assert make_agent("uc-curl", model).unreached == "uniform"
    trace = run(PrimalDual(model, horizon=20, episode_length=10), make(model), 20, seed=0, progress=False)
    assert [e.unreached for e in trace.epochs] == [None, None]
    with pytest.raises(AgentError, match="primal-dual does not take 'unreached'"):
        PrimalDual(model, horizon=20, unreached="safe")


# -- 3. primal-dual scaling -------------------------------------------------------------------------------------------

# Two states, two actions; rewards span [-1, 3] and the cost spans [0.5, 2]; constraint 2ζ - 2 <= 0 (ζ <= 1).
R_RAW = np.array([[3.0, -1.0], [1.0, 0.6]])
C_RAW = np.array([[0.5, 2.0], [0.8, 1.3]])
# Scaled by hand: r' = (r + 1)/4, c' = (c - 0.5)/1.5, and ζ <= 1 becomes ζ' <= (1 - 0.5)/1.5 = 1/3.
R_SCALED = np.array([[1.0, 0.0], [0.5, 0.4]])
C_SCALED = np.array([[0.0, 1.0], [0.2, 0.8 / 1.5]])
TAU_SCALED = 1 / 3
EPISODE_1 = np.array([[[2, 1], [0, 3]], [[3, 1], [0, 0]]], dtype=float)    # pair (1, 1) unvisited
EPISODE_2 = np.array([[[3, 0], [1, 1]], [[1, 0], [2, 2]]], dtype=float)
THETA, ETA, SLACK, CAP, BONUS, H = 0.5, 2.0, 0.1, 0.5, 1.0, 10


def hand_q(counts, policy, signal):
    """Q(s,a) = r(s,a) - g + P^(1|s,a) h(1) on the 2-state chain, h(0) = 0 (closed-form Poisson solve).

    0 = r_π(0) - g + P_π(0,1) h(1) and h(1) = r_π(1) - g + P_π(1,1) h(1) give
    h(1) = (r_π(1) - r_π(0)) / (P_π(0,1) + P_π(1,0)), g = r_π(0) + P_π(0,1) h(1);
    an unvisited pair moves to each state with probability 1/2.
    """
    n = counts.sum(axis=2)
    to_1 = np.where(n > 0, counts[:, :, 1] / np.maximum(n, 1), 0.5)
    p01, p10 = policy[0] @ to_1[0], policy[1] @ (1 - to_1[1])
    r0, r1 = policy[0] @ signal[0], policy[1] @ signal[1]
    h1 = (r1 - r0) / (p01 + p10)
    return signal - (r0 + p01 * h1) + to_1 * h1


def hand_update(counts, policy, dual, reward, cost):
    bonus = BONUS / np.sqrt(np.maximum(1.0, counts.sum(axis=2)))
    weights = policy * np.exp(THETA * ((hand_q(counts, policy, reward) + bonus)
                                       - dual * (hand_q(counts, policy, cost) - bonus)))
    return weights / weights.sum(axis=1, keepdims=True)


def play(agent, episode):
    visits = episode.sum(axis=2)
    agent.end_epoch(episode, np.array([(visits * R_RAW).sum()]), np.array([(visits * C_RAW).sum()]), H)


@pytest.mark.parametrize("scale", [True, False])
def test_primal_dual_matches_a_hand_computation_in_both_units(scale):
    model = CMDP(R_RAW[None], C_RAW[None], Linear([1.0]), [LinearBound([2.0], 2.0)])
    agent = PrimalDual(model, horizon=100, theta=THETA, eta=ETA, slack=SLACK, dual_cap=CAP, bonus=BONUS,
                       episode_length=H, scale=scale)
    reward, cost, tau = (R_SCALED, C_SCALED, TAU_SCALED) if scale else (R_RAW, C_RAW, 1.0)
    np.testing.assert_allclose(agent.reward, reward, rtol=1e-14)
    np.testing.assert_allclose(agent.costs[0], cost, rtol=1e-14)
    np.testing.assert_allclose(agent.thresholds, [tau], rtol=1e-14)
    agent.reset()
    pi_1 = np.full((2, 2), 0.5)
    np.testing.assert_array_equal(agent.begin_epoch(1).policy, pi_1)
    play(agent, EPISODE_1)

    # Episode 1 visits (0,0) 3, (0,1) 3, (1,0) 4 times: ζ^_1 = (3·0.5 + 3·2 + 4·0.8)/10 = 1.07 (original units).
    #   scaled: ζ'_1 = (1.07 - 0.5)/1.5 = 0.38, λ_2 = 2·(0.38 - 1/3 + 0.1) = 0.29333..., below Λ = 0.5
    #   raw:    λ_2 = 2·(1.07 - 1 + 0.1) = 0.34
    lam_2 = 2 * (0.38 - 1 / 3 + 0.1) if scale else 2 * (1.07 - 1 + 0.1)
    pi_2 = hand_update(EPISODE_1, pi_1, 0.0, reward, cost)
    plan = agent.begin_epoch(H + 1)
    np.testing.assert_allclose(plan.policy, pi_2, rtol=1e-12)
    np.testing.assert_allclose(agent.dual, [lam_2], rtol=1e-12)
    assert ("scaled to [0, 1]" in plan.message) == scale
    play(agent, EPISODE_2)

    # Episode 2 visits (0,0) 3, (0,1) 2, (1,0) 1, (1,1) 4 times: ζ^_2 = (1.5 + 4 + 0.8 + 5.2)/10 = 1.15.
    #   scaled: ζ'_2 = 0.65/1.5 = 0.4333..., λ_3 = λ_2 + 2·(0.4333 - 0.3333 + 0.1) = 0.6933 -> Λ = 0.5
    #   raw:    λ_3 = 0.34 + 2·(1.15 - 1 + 0.1) = 0.84 -> Λ = 0.5
    both = EPISODE_1 + EPISODE_2
    pi_3 = hand_update(both, pi_2, lam_2, reward, cost)
    agent.begin_epoch(2 * H + 1)
    np.testing.assert_allclose(agent.policy, pi_3, rtol=1e-10)
    np.testing.assert_allclose(agent.dual, [CAP])
    # the units matter: the other units' update gives another policy
    other = (R_RAW, C_RAW) if scale else (R_SCALED, C_SCALED)
    assert not np.allclose(hand_update(EPISODE_1, pi_1, 0.0, *other), pi_2)


def test_primal_dual_scaling_of_several_costs_and_a_constant_signal():
    # cost 0 is constant (left unscaled), cost 1 spans [0, 3]; g = 3ζ0 - ζ1 - 2 (as in test_baselines)
    costs = np.stack([np.ones((2, 2)), np.arange(4.0).reshape(2, 2)])
    model = CMDP(np.ones((2, 2, 2)), costs, Linear([1.0, 2.0]), [LinearBound([3.0, -1.0], 2.0)])
    agent = PrimalDual(model, horizon=10)
    np.testing.assert_array_equal(agent.cost_offset, [0.0, 0.0])
    np.testing.assert_array_equal(agent.cost_span, [1.0, 3.0])
    # in scaled units ζ1 = 3ζ1': g = 3ζ0 - 3ζ1' - 2, normalised by |(3, -3)|_1 = 6
    np.testing.assert_allclose(agent.costs[0], (3 * costs[0] - costs[1]) / 6, rtol=1e-14)
    np.testing.assert_allclose(agent.thresholds, [2 / 6], rtol=1e-14)
    np.testing.assert_array_equal(agent.reward, 3 * np.ones((2, 2)))  # constant reward: unscaled
    assert agent.describe()["scale"] is True


def test_primal_dual_on_the_queue_scales_to_the_unit_interval_and_records_original_units():
    model = build_model("queue")
    agent = make_agent("primal-dual", model, horizon=2000, episode_length=500)
    assert agent.scale is True
    assert agent.reward.min() == 0.0 and agent.reward.max() == 1.0
    # service cost 6 - 10a spans [-2, 4]: g_1 = -ζ_1 <= 0 becomes -ζ_1' <= -1/3 (ζ_1 = -2 + 6 ζ_1')
    np.testing.assert_allclose(agent.thresholds[0], -1 / 3, rtol=1e-14)
    np.testing.assert_allclose(agent.costs[0], -(model.costs[0] + 2) / 6, rtol=1e-14)
    trace = run(agent, make("queue"), 2000, seed=0, progress=False)
    # the trace's averages are the original signals over the visited pairs
    np.testing.assert_allclose(trace.checkpoints["costs"][-1], np.einsum("isa,sa->i", model.costs, agent.visits) / 2000)
    np.testing.assert_allclose(trace.checkpoints["rewards"][-1], (model.rewards[0] * agent.visits).sum() / 2000)
    assert trace.meta["scale"] is True


# -- 4. the paper's linear trigger ------------------------------------------------------------------------------------

def cycle_model():
    """Two states, one action, deterministic cycle 0 -> 1 -> 0 ..., starting in 0."""
    kernel = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])
    return CMDP(rewards=np.array([[[1.0], [0.0]]]), objective=Linear([1.0]), kernel=kernel, initial=[1.0, 0.0])


class RecordingLinear(LinearTrigger):
    """The linear trigger, recording (epoch start, thresholds of pairs (0,0) and (1,0)) at each call."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        thresholds, cap = super().limits(visits_before, previous_epoch_visits, epoch_start)
        self.calls.append((epoch_start, thresholds[:, 0].tolist()))
        return thresholds, cap


# Hand trace of the paper's rule on the cycle: step t visits X = (0,0) when t is odd, Y = (1,0) when even.
# ν̄ = (1, 1) at first; thresholds max(1, ν̄ + 1). "met" = the pair reached its threshold in the epoch.
#   e1 t=1  thr (2,2): 1 X, 2 Y, 3 X(2)                    -> ends at 3; ν=(2,1): X met -> ν̄=(2,1)
#   e2 t=4  thr (3,2): 4 Y, 5 X, 6 Y(2)                    -> ends at 6; ν=(1,2): Y met -> ν̄=(2,2)
#   e3 t=7  thr (3,3): 7 X, 8 Y, 9 X, 10 Y, 11 X(3)        -> ends at 11; ν=(3,2): X met -> ν̄=(3,2)
#   e4 t=12 thr (4,3): 12 Y, ..., 16 Y(3)                  -> ends at 16; ν=(2,3): Y met -> ν̄=(3,3)
#   e5 t=17 thr (4,4): 17 X, ..., 23 X(4)                  -> ends at 23; ν=(4,3): X met -> ν̄=(4,3)
#   e6 t=24 thr (5,4): 24 Y, ..., 30 Y(4)                  -> ends at 30; ν=(3,4): Y met -> ν̄=(4,4)
#   e7 t=31 thr (5,5): 31 X, ..., 39 X(5)                  -> ends at 39; ν=(5,4): X met -> ν̄=(5,4)
#   e8 t=40 thr (6,5): cut by the horizon T = 40 after one step
PAPER_LINEAR = [(1, [2, 2]), (4, [3, 2]), (7, [3, 3]), (12, [4, 3]), (17, [4, 4]), (24, [5, 4]), (31, [5, 5]),
                (40, [6, 5])]
# linear-global (epoch e ends at some pair's e-th visit within it), hand-traced in test_agents.py
GLOBAL_STARTS = [1, 2, 5, 10, 17, 26]


@pytest.mark.parametrize("agent_class", [UcCurl, PsCurl])
@pytest.mark.parametrize("path", ["fast", "generic"])
def test_the_linear_trigger_follows_the_hand_trace(agent_class, path):
    model = cycle_model()
    trigger = RecordingLinear()
    agent = agent_class(model, trigger=trigger)
    trace = run(agent, make(model), 40, seed=0, path=path, progress=False)
    assert trigger.calls == PAPER_LINEAR
    assert [e.start for e in trace.epochs] == [start for start, _ in PAPER_LINEAR]
    assert [e.length for e in trace.epochs] == [3, 3, 5, 5, 7, 7, 9, 1]
    np.testing.assert_array_equal(agent.visits[:, 0], [20, 20])
    assert trace.meta["trigger"] == "linear" and "ν̄" in trace.meta["trigger_rule"]
    # the same agent run again starts from fresh thresholds (Agent.reset resets the trigger)
    trigger.calls.clear()
    again = run(agent, make(model), 40, seed=0, path=path, progress=False)
    assert trigger.calls == PAPER_LINEAR and [e.start for e in again.epochs] == [s for s, _ in PAPER_LINEAR]


@pytest.mark.parametrize("path", ["fast", "generic"])
def test_linear_by_name_and_linear_global_keep_their_sequences(path):
    model = cycle_model()
    linear = run(PsCurl(model, trigger="linear"), make(model), 40, seed=0, path=path, progress=False)
    assert [e.start for e in linear.epochs] == [start for start, _ in PAPER_LINEAR]
    old = run(PsCurl(model, trigger="linear-global"), make(model), 30, seed=0, path=path, progress=False)
    assert [e.start for e in old.epochs] == GLOBAL_STARTS
    assert old.meta["trigger"] == "linear-global" and old.meta["trigger_rule"] == GlobalLinearTrigger.rule


def test_the_linear_trigger_keeps_the_threshold_of_a_pair_that_did_not_trigger():
    trigger = LinearTrigger()
    zeros = np.zeros((2, 2))
    first, cap = trigger.limits(zeros, zeros, 1)
    np.testing.assert_array_equal(first, np.full((2, 2), 2.0))
    assert cap == math.inf
    # epoch 1: pair (0,0) reached 2 (met), (1,1) reached 1 (not met)
    second, _ = trigger.limits(zeros, np.array([[2.0, 0.0], [0.0, 1.0]]), 5)
    np.testing.assert_array_equal(second, [[3.0, 2.0], [2.0, 2.0]])
    np.testing.assert_array_equal(trigger.limits(zeros, np.array([[2.0, 0.0], [0.0, 1.0]]), 5)[0], second)
    # epoch 2 is cut after (1,1) reached 2 and (0,0) 2 (< 3): only (1,1) met
    third, _ = trigger.limits(zeros, np.array([[2.0, 0.0], [0.0, 2.0]]), 9)
    np.testing.assert_array_equal(third, [[3.0, 2.0], [2.0, 3.0]])
    trigger.reset()
    np.testing.assert_array_equal(trigger.limits(zeros, zeros, 1)[0], np.full((2, 2), 2.0))


def test_the_trigger_registry_and_a_user_trigger_without_reset():
    assert TRIGGERS == {"doubling": TRIGGERS["doubling"], "linear": LinearTrigger,
                        "linear-global": GlobalLinearTrigger, "linear-per-pair": PerPairLinearTrigger}

    class Every3:  # a stateless user trigger: no reset, no rule
        name = "every-3"

        def limits(self, visits_before, previous_epoch_visits, epoch_start):
            return np.full(np.shape(visits_before), math.inf), 3.0

    model = cycle_model()
    trace = run(PsCurl(model, trigger=Every3()), make(model), 10, seed=0, progress=False)
    assert [e.start for e in trace.epochs] == [1, 4, 7, 10]
    assert trace.meta["trigger"] == "every-3" and "Every3" in trace.meta["trigger_rule"]


# Fast and generic paths with the linear trigger: tests/test_agents.py::test_fast_and_generic_paths_give_identical_traces.


# -- trace files ------------------------------------------------------------------------------------------------------

def version_1_file(tmp_path, trigger="linear"):
    """A trace file as version 1 wrote it: no trigger_rule, no unreached in epoch records."""
    model = cycle_model()
    data = run(PsCurl(model, trigger="linear-global"), make(model), 30, seed=0, progress=False).to_dict()
    data["version"] = 1
    data["meta"]["trigger"] = trigger
    del data["meta"]["trigger_rule"], data["meta"]["unreached"]
    for epoch in data["epochs"]:
        del epoch["unreached"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    return path, data


def test_a_version_1_trace_with_linear_loads_as_linear_global(tmp_path):
    assert TRACE_VERSION == 2
    path, data = version_1_file(tmp_path)
    trace = load_trace(path)
    assert trace.meta["trigger"] == "linear-global"
    assert trace.meta["trigger_renamed_from"] == "linear"
    assert trace.meta["trigger_rule"] == GlobalLinearTrigger.rule
    assert [e.unreached for e in trace.epochs] == [None] * len(data["epochs"])
    assert [e.start for e in trace.epochs] == GLOBAL_STARTS
    # saved again, it is a version-2 file that keeps the note
    again = load_trace(trace.save(tmp_path / "v2.json"))
    assert again.meta["trigger"] == "linear-global" and again.meta["trigger_renamed_from"] == "linear"
    assert json.loads((tmp_path / "v2.json").read_text())["version"] == 2


def test_a_version_1_trace_with_another_trigger_is_not_renamed(tmp_path):
    path, _ = version_1_file(tmp_path, trigger="doubling")
    trace = load_trace(path)
    assert trace.meta["trigger"] == "doubling" and "trigger_renamed_from" not in trace.meta


@pytest.mark.parametrize("damage, pattern", [
    (lambda d: d.update(version=3), "version 3 is not supported"),
    (lambda d: d.update(version=True), "version True is not supported"),
    (lambda d: d.update(meta=[1, 2]), "incomplete or malformed"),
    (lambda d: d["epochs"][0].update(surprise=1), "incomplete or malformed"),
])
def test_damaged_traces_still_raise(tmp_path, damage, pattern):
    path, data = version_1_file(tmp_path)
    damage(data)
    path.write_text(json.dumps(data))
    with pytest.raises(CurloptError, match=pattern):
        load_trace(path)


# -- bad values -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, options, pattern", [
    ("uc-curl", dict(radius="foo"), r"radius must be one of 'analysis', 'experiment', got 'foo'"),
    ("uc-curl", dict(radius_scale=-1), r"radius_scale must be a finite number >= 0, got -1"),
    ("uc-curl", dict(radius_scale=float("nan")), r"radius_scale must be a finite number >= 0, got nan"),
    ("uc-curl", dict(radius_scale="2"), r"radius_scale must be a finite number >= 0"),
    ("uc-curl", dict(unreached="x"), r"unreached must be one of 'uniform', 'safe', 'reach', 'reach-any', got 'x'"),
    ("ps-curl", dict(unreached="x"), r"unreached must be one of 'uniform', 'safe', 'reach', 'reach-any', got 'x'"),
    ("ucrl-cmdp", dict(horizon=10, unreached="x"), r"unreached must be one of 'uniform', 'safe', 'reach', 'reach-any', got 'x'"),
    ("ucrl-cmdp", dict(horizon=10, radius="experiment"), r"ucrl-cmdp does not take 'radius'"),
    ("primal-dual", dict(horizon=10, scale="yes"), r"scale must be True or False, got 'yes'"),
    ("primal-dual", dict(horizon=10, radius="analysis"), r"primal-dual does not take 'radius'"),
])
def test_bad_option_values_are_refused_by_name(name, options, pattern):
    with pytest.raises(AgentError, match=pattern):
        make_agent(name, build_model("queue"), **options)


def test_bad_values_reach_the_program_and_the_extraction_too():
    with pytest.raises(ProgramError, match="radius must be one of 'analysis', 'experiment'"):
        OptimisticProgram(three_state_model(), radius="paper")
    with pytest.raises(ProgramError, match="radius must be one of"):
        l1_radius(VISITS, 5, 3, 2, kind="paper")
    with pytest.raises(CurloptError, match="unreached must be one of 'uniform', 'safe'"):
        extract_policy(PLAN, fill_model([], np.zeros((1, 3, 3))), "cheap")

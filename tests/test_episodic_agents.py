"""The episodic agents (curlopt/agents/episodic): one episode of each traced by hand on a two-state model.

For each agent: three episodes are handed to it; its counts, P^, widths and bonuses are checked against the papers'
formulas evaluated here; the program it solves is written from scratch here with scipy.optimize.linprog (the
occupancy LP over q_h(s,a), or the extended LP over z_h(s,a,s') with per-entry or L1 sets); its policy must be that
LP's policy wherever the LP's occupancy has mass. Then the rules around the program (DOPE's warm-up, OptPess-LP's
safe-policy test, what is played when the program is infeasible) and the refusals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from curlopt.agents.episodic import EPISODIC_AGENTS, EpisodeSource, make_episodic_agent
from curlopt.agents.episodic.estimates import bernstein_width, empirical_kernel, hoeffding_width
from curlopt.errors import AgentError, CurloptError
from curlopt.models.episodic import EpisodicCMDP
from curlopt.utilities.library import Linear, LinearBound

S, A, H, K = 2, 2, 3, 50
KERNEL = np.array([[[0.9, 0.1], [0.2, 0.8]],
                   [[0.5, 0.5], [0.3, 0.7]]])
REWARDS = np.array([[0.1, 0.35], [0.9, 0.6]])
COSTS = np.array([[0.0, 0.45], [0.8, 0.15]])
INITIAL = np.array([0.6, 0.4])
SAFE = np.array([[1.0, 0.0], [0.0, 1.0]])       # costs 0 in state 0 and 0.15 in state 1: at most 0.45 per episode
EPISODES = [([0, 0, 1], [0, 1, 1]), ([1, 1, 0], [0, 1, 0]), ([0, 1, 1], [0, 0, 1])]
# their transitions (s, a) -> s': (0,0)->0, (0,1)->1, (1,0)->1, (1,1)->0, (0,0)->1, (1,0)->1
COUNTS = np.array([[[1, 1], [0, 1]], [[0, 2], [1, 0]]], dtype=float)


def model(budget: float = 1.0, safe: bool = True) -> EpisodicCMDP:
    return EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], budget)], kernel=KERNEL, initial=INITIAL,
                        horizon=H, safe_policy=SAFE if safe else None, name="two-state")


def fed(name: str, m: EpisodicCMDP | None = None, **options):
    agent = make_episodic_agent(name, model() if m is None else m, episodes=K, seed=0, **options)
    for states, actions in EPISODES:
        agent.end_episode(np.array(states), np.array(actions))
    return agent


# -- reference LPs written here ---------------------------------------------------------------------------------------
def occupancy_lp(kernel, rewards, costs, budget):
    """max Σ r_h q_h s.t. Σ_a q_1 = μ, Σ_a q_{h+1}(s') = Σ Q(s'|s,a) q_h(s,a), Σ c_h q_h <= budget; q (H, S, A)."""
    n = H * S * A
    index = np.arange(n).reshape(H, S, A)
    rows, rhs = [], []
    for s in range(S):
        row = np.zeros(n)
        row[index[0, s]] = 1
        rows.append(row)
        rhs.append(INITIAL[s])
    for h in range(H - 1):
        for t in range(S):
            row = np.zeros(n)
            row[index[h + 1, t]] = 1
            row[index[h].ravel()] -= kernel[:, :, t].ravel()
            rows.append(row)
            rhs.append(0.0)
    out = linprog(-rewards.ravel(), A_ub=costs.ravel()[None], b_ub=[budget], A_eq=np.array(rows), b_eq=rhs,
                  bounds=(0, None), method="highs")
    return out, (None if out.x is None else out.x.reshape(H, S, A))


def extended_lp(kernel, width, rewards, costs, budget, l1: bool):
    """The extended LP over z_h(s,a,s'), per-entry sets |z − P^ q| <= β q, or L1 sets with deviations d."""
    nz = H * S * A * S
    n = 2 * nz if l1 else nz
    zi = np.arange(nz).reshape(H, S, A, S)
    di = nz + zi
    eq, beq, ub, bub = [], [], [], []
    for s in range(S):
        row = np.zeros(n)
        row[zi[0, s].ravel()] = 1
        eq.append(row)
        beq.append(INITIAL[s])
    for h in range(H - 1):
        for t in range(S):
            row = np.zeros(n)
            row[zi[h + 1, t].ravel()] = 1
            row[zi[h, :, :, t].ravel()] -= 1
            eq.append(row)
            beq.append(0.0)
    for h in range(H):
        for s in range(S):
            for a in range(A):
                if l1:
                    total = np.zeros(n)
                    total[zi[h, s, a]] -= width[s, a]
                for t in range(S):
                    for sign in (1, -1):
                        row = np.zeros(n)
                        row[zi[h, s, a, t]] += sign
                        row[zi[h, s, a]] -= sign * kernel[s, a, t]
                        if l1:
                            row[di[h, s, a, t]] = -1
                        else:
                            row[zi[h, s, a]] -= width[s, a, t]
                        ub.append(row)
                        bub.append(0.0)
                    if l1:
                        total[di[h, s, a, t]] = 1
                if l1:
                    ub.append(total)
                    bub.append(0.0)
    c_row = np.zeros(n)
    objective = np.zeros(n)
    for h in range(H):
        for s in range(S):
            for a in range(A):
                c_row[zi[h, s, a]] = costs[h, s, a]
                objective[zi[h, s, a]] = -rewards[h, s, a]
    ub.append(c_row)
    bub.append(budget)
    out = linprog(objective, A_ub=np.array(ub), b_ub=bub, A_eq=np.array(eq), b_eq=beq, bounds=(0, None),
                  method="highs")
    return out, (None if out.x is None else out.x[:nz].reshape(H, S, A, S).sum(axis=3))


def assert_policy_of(q, policy):
    """``policy`` is q's policy wherever a step's state has mass under q."""
    for h in range(H):
        for s in range(S):
            mass = q[h, s].sum()
            if mass > 1e-6:
                np.testing.assert_allclose(policy[h, s], q[h, s] / mass, atol=1e-6, err_msg=f"step {h}, state {s}")


def per_step(signal, bonus=0.0):
    return np.broadcast_to(signal + bonus, (H, S, A)).copy()


# -- estimates ------------------------------------------------------------------------------------------------------
def test_counts_and_empirical_kernel_by_hand():
    agent = fed("opt-cmdp")
    np.testing.assert_array_equal(agent.counts.transitions[0], COUNTS)
    expected = np.array([[[0.5, 0.5], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    np.testing.assert_array_equal(agent.kernel_estimate(), expected)
    np.testing.assert_array_equal(empirical_kernel(np.zeros((1, 1, 3))), np.full((1, 1, 3), 1 / 3))


def test_bernstein_and_hoeffding_widths_by_hand():
    counts = np.array([[[300.0, 100.0], [0.0, 0.0]]])
    L = 10.0
    width = bernstein_width(counts, L)
    expected = 2 * math.sqrt(L * 0.75 * 0.25 / 400) + 14 * L / (3 * 400)
    np.testing.assert_allclose(width[0, 0], [expected, expected])
    np.testing.assert_array_equal(width[0, 1], [1.0, 1.0])          # a pair never tried
    np.testing.assert_allclose(hoeffding_width(np.array([0.0, 4.0]), 9.0), [3.0, 1.5])


# -- one episode of each agent ----------------------------------------------------------------------------------------
def test_opt_cmdp_episode_matches_the_extended_lp():
    agent = fed("opt-cmdp")
    L = math.log(2 * S * A * H * K / 0.01)
    assert agent.log_term() == pytest.approx(L)
    beta = np.minimum(1.0, 2 * np.sqrt(L * agent.kernel_estimate() * (1 - agent.kernel_estimate()) / np.maximum(
        COUNTS.sum(axis=2, keepdims=True), 1)) + 14 * L / (3 * np.maximum(COUNTS.sum(axis=2, keepdims=True), 1)))
    np.testing.assert_allclose(agent.widths(), beta)
    plan = agent.begin_episode(4)
    assert plan.source == EpisodeSource.PROGRAM, plan.message
    out, q = extended_lp(agent.kernel_estimate(), beta, per_step(REWARDS), per_step(COSTS), 1.0, l1=False)
    assert out.status == 0
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    # narrower sets (a tenth of the widths) leave one optimal policy: compare it
    narrow = fed("opt-cmdp", width_scale=0.1)
    plan = narrow.begin_episode(4)
    out, q = extended_lp(narrow.kernel_estimate(), 0.1 * beta, per_step(REWARDS), per_step(COSTS), 1.0, l1=False)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    assert_policy_of(q, plan.policy)


def test_dope_episode_bonuses_and_lp():
    agent = fed("dope", warmup_episodes=0)
    slack = 1.0 - agent.safe.costs[0]
    # the safe policy's cost by hand: state 0 costs 0 and stays in 0 w.p. 0.9; state 1 costs 0.15 and goes to 0 w.p. 0.3
    d, cost = INITIAL.copy(), 0.0
    for _ in range(H):
        cost += d[1] * 0.15
        d = np.array([d[0] * 0.9 + d[1] * 0.3, d[0] * 0.1 + d[1] * 0.7])
    assert agent.safe.slack == pytest.approx(1.0 - cost) and slack == pytest.approx(1.0 - cost)
    beta = agent.widths()
    reward_bonus, cost_penalty = agent.bonuses()
    np.testing.assert_allclose(reward_bonus, H ** 2 / slack * beta.sum(axis=2))
    np.testing.assert_allclose(cost_penalty, H * beta.sum(axis=2))
    plan = agent.begin_episode(4)
    out, q = extended_lp(agent.kernel_estimate(), beta, per_step(REWARDS, reward_bonus), per_step(COSTS, cost_penalty),
                         1.0, l1=False)
    # with three episodes of data the pessimistic costs exceed the budget everywhere: the LP written here is
    # infeasible, and DOPE plays its safe policy, labelled: decided by its bound (extended backward induction),
    # without solving its own LP
    assert out.status == 2
    assert plan.source == EpisodeSource.SAFE_BOUND and plan.status == "infeasible" and agent.last_result is None
    np.testing.assert_array_equal(plan.policy, np.broadcast_to(SAFE, (H, S, A)))


def test_dope_lp_with_a_small_bonus_matches():
    agent = fed("dope", warmup_episodes=0, bonus_scale=0.01, width_scale=0.05)
    beta = agent.widths()
    reward_bonus, cost_penalty = agent.bonuses()
    plan = agent.begin_episode(4)
    out, q = extended_lp(agent.kernel_estimate(), beta, per_step(REWARDS, reward_bonus), per_step(COSTS, cost_penalty),
                         1.0, l1=False)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    assert_policy_of(q, plan.policy)


def test_dope_warm_up_is_the_papers_k0():
    agent = fed("dope")
    slack = agent.safe.slack
    assert agent.warmup_episodes == math.ceil(S ** 2 * A * H ** 3 / slack ** 2)
    plan = agent.begin_episode(1)
    assert plan.source == EpisodeSource.WARM_UP
    np.testing.assert_array_equal(plan.policy, np.broadcast_to(SAFE, (H, S, A)))


def test_optpess_lp_safe_rule_then_the_lp():
    agent = fed("optpess-lp")
    L = math.log(32 * S ** 2 * H * K / 0.01)
    beta = np.sqrt(L / np.maximum(COUNTS.sum(axis=2), 1))
    np.testing.assert_allclose(agent.width(), beta)
    alpha_c = 1 + S * H
    alpha_r = 1 + S * H + 4 * H * (1 + S * H) / agent.safe.slack
    reward_bonus, cost_penalty = agent.bonuses()
    np.testing.assert_allclose(reward_bonus, alpha_r * beta)
    np.testing.assert_allclose(cost_penalty, alpha_c * beta)
    # with three episodes of data the pessimistic costs of π_0 are far above (τ + C_b)/2: π_0 is played unsolved
    plan = agent.begin_episode(4)
    assert plan.source == EpisodeSource.SAFE_RULE and agent.last_result is None

    small = fed("optpess-lp", bonus_scale=0.001)
    rb, cp = small.bonuses()
    plan = small.begin_episode(4)
    out, q = occupancy_lp(small.kernel_estimate(), per_step(REWARDS, rb), per_step(COSTS, cp), 1.0)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    assert_policy_of(q, plan.policy)


def test_uc_curl_episode_matches_the_l1_lp():
    agent = fed("uc-curl", tightness_constant=0.5)
    k = 4
    t = (k - 1) * H + 1
    beta = np.sqrt(14 * S * math.log(2 * A * t) / np.maximum(COUNTS.sum(axis=2), 1))
    np.testing.assert_allclose(agent.radius(k), beta)
    eps = 0.5 * H * math.sqrt(math.log(k) / k)
    assert agent.epsilon(k) == pytest.approx(eps)
    plan = agent.begin_episode(k)
    out, q = extended_lp(agent.kernel_estimate(), beta, per_step(REWARDS), per_step(COSTS), 1.0 - eps, l1=True)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.epsilon == pytest.approx(eps)
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    # a radius a tenth as wide leaves one optimal policy: compare it
    narrow = fed("uc-curl", tightness_constant=0.5, radius_scale=0.1)
    plan = narrow.begin_episode(k)
    out, q = extended_lp(narrow.kernel_estimate(), 0.1 * beta, per_step(REWARDS), per_step(COSTS), 1.0 - eps, l1=True)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    assert_policy_of(q, plan.policy)


def test_ps_curl_episode_matches_the_occupancy_lp_on_its_draw():
    agent = fed("ps-curl", tightness_constant=0.1)
    plan = agent.begin_episode(4)
    drawn = agent.planning_kernel()
    # the draw is a kernel whose rows are Dirichlet(1 + n) draws: positive, summing to 1
    assert np.all(drawn > 0) and np.allclose(drawn.sum(axis=2), 1.0)
    eps = 0.1 * H * math.sqrt(math.log(4) / 4)
    out, q = occupancy_lp(drawn, per_step(REWARDS), per_step(COSTS), 1.0 - eps)
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)
    assert_policy_of(q, plan.policy)


# -- infeasible budgets -------------------------------------------------------------------------------------------------
def test_infeasible_budget_opt_cmdp_plays_the_labelled_fallback():
    agent = fed("opt-cmdp", model(budget=-1.0, safe=False))
    plan = agent.begin_episode(4)
    assert plan.source == EpisodeSource.FALLBACK
    assert "infeasible" in plan.message
    out, q = extended_lp(agent.kernel_estimate(), agent.widths(), per_step(REWARDS), per_step(COSTS), 1e9, l1=False)
    assert_policy_of(q, plan.policy)     # the program without its constraint row


def test_infeasible_budget_uc_curl_plays_the_labelled_fallback():
    agent = fed("uc-curl", model(budget=-1.0, safe=False))
    assert agent.begin_episode(4).source == EpisodeSource.FALLBACK


def test_uc_curl_can_play_the_declared_safe_policy_when_infeasible():
    # ε_4 = 10 H sqrt(ln 4 / 4) ≈ 17.7 is beyond any policy's slack: the ε-tight program is infeasible
    agent = fed("uc-curl", tightness_constant=10.0, on_infeasible="safe-policy")
    plan = agent.begin_episode(4)
    assert plan.source == EpisodeSource.SAFE and "declared safe policy" in plan.message
    np.testing.assert_array_equal(plan.policy, model().safe_policy)
    assert agent.describe()["on_infeasible"] == "safe-policy"
    default = fed("uc-curl", tightness_constant=10.0)
    assert default.begin_episode(4).source == EpisodeSource.FALLBACK and "on_infeasible" not in default.describe()
    with pytest.raises(AgentError, match="declares none"):
        make_episodic_agent("uc-curl", model(safe=False), on_infeasible="safe-policy")
    with pytest.raises(AgentError, match="on_infeasible"):
        make_episodic_agent("uc-curl", model(), on_infeasible="safe")


def test_uc_curl_with_the_safe_policy_option_plays_it_after_a_solver_failure():
    from types import SimpleNamespace

    agent = fed("uc-curl", on_infeasible="safe-policy")
    failed = SimpleNamespace(ok=False, fell_back=False, status=SimpleNamespace(value="unknown"),
                             tight_status=SimpleNamespace(value="unknown"), message="HiGHS model status kUnknown")
    plan = agent._plan_from(failed, 0.1, 0.0)      # the first episode: the base class would play uniform
    assert plan.source == EpisodeSource.SAFE and "solver failed (unknown)" in plan.message
    np.testing.assert_array_equal(plan.policy, model().safe_policy)
    assert fed("uc-curl")._plan_from(failed, 0.1, 0.0).source == EpisodeSource.UNIFORM


@pytest.mark.parametrize("name", ["optpess-lp", "dope"])
def test_reward_bonus_scale_moves_the_reward_bonus_alone(name):
    paper, lowered = fed(name, bonus_scale=0.5), fed(name, bonus_scale=0.5, reward_bonus_scale=0.1)
    (reward, cost), (reward_low, cost_low) = paper.bonuses(), lowered.bonuses()
    np.testing.assert_allclose(reward_low, reward * 0.1 / 0.5)
    np.testing.assert_allclose(cost_low, cost)
    assert lowered.describe()["reward_bonus_scale"] == 0.1 and "reward_bonus_scale" not in paper.describe()
    with pytest.raises(AgentError, match="reward_bonus_scale"):
        make_episodic_agent(name, model(), reward_bonus_scale=-1.0)


def test_infeasible_known_model_optimum_is_a_clear_error():
    from curlopt.experiments.simulation.episodes import episodic_optimum

    with pytest.raises(CurloptError, match="no optimal solution"):
        episodic_optimum(model(budget=-1.0, safe=False))


# -- refusals -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["dope", "optpess-lp"])
def test_safe_policy_agents_refuse_without_one(name):
    with pytest.raises(AgentError, match="declares none.*safe_policy="):
        make_episodic_agent(name, model(safe=False))


@pytest.mark.parametrize("name", ["dope", "optpess-lp"])
def test_safe_policy_agents_refuse_an_unsafe_one(name):
    with pytest.raises(AgentError, match="not strictly safe"):
        make_episodic_agent(name, model(budget=0.1))


def test_bad_options():
    with pytest.raises(AgentError, match="unknown episodic agent"):
        make_episodic_agent("nope", model())
    with pytest.raises(AgentError, match="delta"):
        make_episodic_agent("opt-cmdp", model(), delta=1.5)
    with pytest.raises(AgentError, match="replan"):
        make_episodic_agent("opt-cmdp", model(), replan="sometimes")
    with pytest.raises(AgentError, match="warmup_episodes"):
        make_episodic_agent("dope", model(), warmup_episodes=-1)
    with pytest.raises(AgentError, match="prior"):
        make_episodic_agent("ps-curl", model(), prior=0)
    with pytest.raises(AgentError, match="tightness_constant"):
        make_episodic_agent("uc-curl", model(), tightness_constant=-1)
    with pytest.raises(AgentError, match="does not take|unexpected keyword"):
        make_episodic_agent("ps-curl", model(), radius=1.0)
    with pytest.raises(CurloptError, match="episodic model"):
        from curlopt.models import random_model
        make_episodic_agent("opt-cmdp", random_model(3, 2, seed=0))
    # the concave-utility agents (conrl, moma, moma-program) and triple-q are registered too; their tests are their own
    # optpess-primal-dual's tests are in tests/test_episodic_primal_dual.py
    assert {"opt-cmdp", "optpess-lp", "dope", "uc-curl", "ps-curl", "conrl", "moma", "moma-program", "triple-q",
            "optpess-primal-dual"} == set(EPISODIC_AGENTS)


def test_doubling_replan_reuses_the_policy_until_visits_double():
    agent = fed("opt-cmdp", replan="doubling")
    first = agent.begin_episode(4)
    assert first.source == EpisodeSource.PROGRAM
    agent.end_episode(np.array([0, 0, 0]), np.array([1, 1, 1]))   # (0,1) visits 1 -> 3: doubled
    assert agent.begin_episode(5).source == EpisodeSource.PROGRAM
    agent.end_episode(np.array([1, 1, 1]), np.array([0, 0, 0]))   # (1,0): 2 -> 4, doubled
    assert agent.begin_episode(6).source == EpisodeSource.PROGRAM
    agent.end_episode(np.array([0, 1, 0]), np.array([0, 1, 0]))   # (0,0) 2 -> 3, (1,1) 1 -> 2: doubled
    assert agent.begin_episode(7).source == EpisodeSource.PROGRAM
    agent.end_episode(np.array([0, 1, 0]), np.array([0, 1, 0]))   # (0,0) 3 -> 4 (solved at 3): not doubled
    plan = agent.begin_episode(8)
    assert plan.source == EpisodeSource.REUSED and plan.policy is agent.policy


def test_policy_totals_on_a_kernel_match_backward_induction():
    from curlopt.agents.episodic.estimates import policy_totals

    rng = np.random.default_rng(5)
    policy = rng.dirichlet(np.ones(A), size=(H, S))
    totals = policy_totals(INITIAL, KERNEL, policy, np.stack([per_step(REWARDS), per_step(COSTS)], axis=1))
    for index, signal in enumerate((REWARDS, COSTS)):
        value = np.zeros(S)
        for h in reversed(range(H)):
            value = (policy[h] * (signal + KERNEL @ value)).sum(axis=1)
        assert totals[index] == pytest.approx(INITIAL @ value, rel=1e-12)


def test_ps_curl_with_a_max_min_objective_matches_an_epigraph_lp():
    """A concave f (min of two per-episode rewards): the agent's program value against the LP max t, t <= λ_1,
    t <= λ_2 written here on the agent's posterior draw."""
    from curlopt.utilities.library import MinOfLinear

    rewards = np.stack([REWARDS, REWARDS[::-1, ::-1]])
    m = EpisodicCMDP(rewards, COSTS, MinOfLinear.max_min(2), [LinearBound([1.0], 1.0)], kernel=KERNEL, initial=INITIAL,
                     horizon=H, name="two-state max-min")
    agent = make_episodic_agent("ps-curl", m, episodes=K, seed=1, tightness_constant=0.0)
    for states, actions in EPISODES:
        agent.end_episode(np.array(states), np.array(actions))
    plan = agent.begin_episode(4)
    drawn = agent.planning_kernel()
    n = H * S * A + 1                       # q, then t
    index = np.arange(H * S * A).reshape(H, S, A)
    eq, beq = [], []
    for s in range(S):
        row = np.zeros(n)
        row[index[0, s]] = 1
        eq.append(row)
        beq.append(INITIAL[s])
    for h in range(H - 1):
        for t in range(S):
            row = np.zeros(n)
            row[index[h + 1, t]] = 1
            row[index[h].ravel()] -= drawn[:, :, t].ravel()
            eq.append(row)
            beq.append(0.0)
    ub, bub = [], []
    for k in range(2):
        row = np.zeros(n)
        row[:-1] = -np.broadcast_to(rewards[k], (H, S, A)).ravel()
        row[-1] = 1.0                        # t − λ_k <= 0
        ub.append(row)
        bub.append(0.0)
    row = np.zeros(n)
    row[:-1] = np.broadcast_to(COSTS, (H, S, A)).ravel()
    ub.append(row)
    bub.append(1.0)
    objective = np.zeros(n)
    objective[-1] = -1.0
    out = linprog(objective, A_ub=np.array(ub), b_ub=bub, A_eq=np.array(eq), b_eq=beq,
                  bounds=[(0, None)] * (n - 1) + [(None, None)], method="highs")
    assert out.status == 0 and plan.source == EpisodeSource.PROGRAM, plan.message
    assert plan.planned_value == pytest.approx(-out.fun, abs=1e-7)


def test_per_step_kernels_are_counted_and_estimated_per_step():
    kernels = np.stack([KERNEL, KERNEL[:, ::-1]])           # P_1, P_2 for H = 3
    m = EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], 1.0)], kernel=kernels, initial=INITIAL,
                     horizon=H, safe_policy=SAFE)
    agent = fed("opt-cmdp", m)
    assert not agent.counts.pooled and agent.counts.transitions.shape == (H - 1, S, A, S)
    by_step = np.zeros((H - 1, S, A, S))
    for states, actions in EPISODES:
        for h in range(H - 1):
            by_step[h, states[h], actions[h], states[h + 1]] += 1
    np.testing.assert_array_equal(agent.counts.transitions, by_step)
    np.testing.assert_array_equal(agent.kernel_estimate(), empirical_kernel(by_step))
    assert agent.widths().shape == (H - 1, S, A, S)
    for name in ("opt-cmdp", "uc-curl", "ps-curl", "dope", "optpess-lp"):
        options = {"warmup_episodes": 0} if name == "dope" else {}
        plan = fed(name, m, **options).begin_episode(4)
        assert plan.policy.shape == (H, S, A) and np.allclose(plan.policy.sum(axis=2), 1.0), name

"""The concave-utility episodic agents (ConRL, MOMA, MOMA's per-episode program), traced by hand on a two-state model.

Three episodes are handed to each agent; its counts, P^ and bonuses are checked against the papers' formulas
evaluated here. The concave program of ConRL and moma-program (a sum of logs of two reward totals under a budget)
is written from scratch here in cvxpy over q_h(s,a), and the agent's policy must reach that program's optimum on P^
(evaluated here by a forward recursion of our own). MOMA's best response is recomputed here by a backward recursion
written out in loops, its direction and multipliers from their formulas. Then a short run of each agent on a random
model with a concave f and a convex g, and the refusals.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest

from curlopt.agents.episodic import EPISODIC_AGENTS, EpisodeSource, make_episodic_agent
from curlopt.errors import AgentError, CurloptError
from curlopt.experiments.simulation.episodes import run_episodes
from curlopt.models.cmdp import CMDP
from curlopt.models.episodic import EpisodicCMDP, episode_values
from curlopt.utilities.library import ConvexQuadratic, LinearBound, SumOfLogs

S, A, H, K = 2, 2, 3, 50
KERNEL = np.array([[[0.9, 0.1], [0.2, 0.8]],
                   [[0.5, 0.5], [0.3, 0.7]]])
REWARDS = np.array([[[0.1, 0.35], [0.9, 0.6]],
                    [[0.8, 0.2], [0.05, 0.4]]])
COSTS = np.array([[0.0, 0.45], [0.8, 0.15]])
INITIAL = np.array([0.6, 0.4])
EPISODES = [([0, 0, 1], [0, 1, 1]), ([1, 1, 0], [0, 1, 0]), ([0, 1, 1], [0, 0, 1])]
# their transitions (s, a) -> s': (0,0)->0, (0,1)->1, (1,0)->1, (1,1)->0, (0,0)->1, (1,0)->1
COUNTS = np.array([[[1, 1], [0, 1]], [[0, 2], [1, 0]]], dtype=float)
P_HAT = np.array([[[0.5, 0.5], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])


def model(budget: float = 1.0) -> EpisodicCMDP:
    return EpisodicCMDP(REWARDS, COSTS, SumOfLogs(2), [LinearBound([1.0], budget)], kernel=KERNEL, initial=INITIAL,
                        horizon=H, name="two-state-concave")


def fed(name: str, m: EpisodicCMDP | None = None, **options):
    agent = make_episodic_agent(name, model() if m is None else m, episodes=K, seed=0, **options)
    for states, actions in EPISODES:
        agent.end_episode(np.array(states), np.array(actions))
    return agent


def forward_totals(policy, kernel, rewards, costs):
    """Per-episode totals of ``policy`` (H, S, A) on ``kernel`` for per-step signals (H, n, S, A), by loops."""
    d = INITIAL.copy()
    lam, zeta = np.zeros(rewards.shape[1]), np.zeros(costs.shape[1])
    for h in range(H):
        q = np.array([[d[s] * policy[h, s, a] for a in range(A)] for s in range(S)])
        lam += np.einsum("ksa,sa->k", rewards[h], q)
        zeta += np.einsum("isa,sa->i", costs[h], q)
        d = np.array([sum(q[s, a] * kernel[s, a, t] for s in range(S) for a in range(A)) for t in range(S)])
    return lam, zeta


def log_program(kernel, rewards, costs, budget):
    """max log λ_1 + log λ_2 over q (H, S, A) >= 0 with the flow of ``kernel``, λ = Σ r_h q_h, Σ c_h q_h <= budget;
    rewards (H, 2, S, A), costs (H, 1, S, A). Returns the optimal value."""
    q = [cp.Variable((S, A), nonneg=True) for _ in range(H)]
    rows = [cp.sum(q[0], axis=1) == INITIAL]
    for h in range(H - 1):
        for t in range(S):
            rows.append(cp.sum(q[h + 1][t, :]) == sum(kernel[s, a, t] * q[h][s, a] for s in range(S) for a in range(A)))
    lam = [sum(cp.sum(cp.multiply(rewards[h, k], q[h])) for h in range(H)) for k in range(2)]
    zeta = sum(cp.sum(cp.multiply(costs[h, 0], q[h])) for h in range(H))
    rows.append(zeta <= budget)
    problem = cp.Problem(cp.Maximize(cp.log(lam[0]) + cp.log(lam[1])), rows)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return float(problem.value)


def shifted_signals(bonus):
    """r + b and max(c − b, 0) at every step (the kernel is time-homogeneous: pooled counts, one bonus per pair)."""
    r = np.broadcast_to(REWARDS, (H, 2, S, A)) + bonus
    c = np.maximum(np.broadcast_to(COSTS[None], (H, 1, S, A)) - bonus, 0.0)
    return r, c


# -- ConRL ------------------------------------------------------------------------------------------------------------
def test_conrl_counts_bonus_and_program_traced_by_hand():
    agent = fed("conrl", model(budget=0.1), bonus_scale=0.05)
    assert np.array_equal(agent.counts.transitions[0], COUNTS)
    assert np.allclose(agent.kernel_estimate(), P_HAT)
    k = 4
    log_term = math.log(16 * S * A * H * k ** 2 / 0.01)
    N = COUNTS.sum(axis=-1)
    bonus = 0.05 * np.minimum(2 * H, 2 * H * np.sqrt(2 * log_term / np.maximum(N, 1)))
    assert np.allclose(agent.bonus(k), bonus)
    plan = agent.begin_episode(k)
    assert plan.source is EpisodeSource.PROGRAM
    r, c = shifted_signals(bonus)
    reference = log_program(P_HAT, r, c, budget=0.1)
    lam, zeta = forward_totals(plan.policy, P_HAT, r, c)
    assert zeta[0] <= 0.1 + 1e-5                      # the policy meets the optimistic budget on P^
    assert math.log(lam[0]) + math.log(lam[1]) == pytest.approx(reference, abs=1e-5)
    assert plan.planned_value == pytest.approx(reference, abs=1e-5)
    # the budget binds here: without it the optimum is higher, so the test sees the constraint
    assert log_program(P_HAT, r, c, budget=10.0) > reference + 1e-2


def test_conrl_paper_bonus_makes_every_cost_vanish_early():
    agent = fed("conrl")
    b = agent.bonus(4)
    assert np.all(b == 2 * H)                           # min(2H, ...) saturates after three episodes
    plan = agent.begin_episode(4)
    r, c = shifted_signals(b)
    assert np.all(c == 0.0)
    lam, _ = forward_totals(plan.policy, P_HAT, r, c)
    assert math.log(lam[0]) + math.log(lam[1]) == pytest.approx(log_program(P_HAT, r, c, 1.0), abs=1e-5)


# -- moma-program -----------------------------------------------------------------------------------------------------
def test_moma_program_bonus_and_program_traced_by_hand():
    agent = fed("moma-program", bonus_scale=0.02)
    L = math.log(2 * S * A * H * K / 0.01)
    N = COUNTS.sum(axis=-1)
    bonus = 0.02 * np.minimum(H, H * np.sqrt(2 * L / np.maximum(N, 1)))
    assert np.allclose(agent.bonus(), bonus)
    plan = agent.begin_episode(4)
    r, c = shifted_signals(bonus)
    reference = log_program(P_HAT, r, c, budget=1.0)
    lam, zeta = forward_totals(plan.policy, P_HAT, r, c)
    assert zeta[0] <= 1.0 + 1e-5
    assert math.log(lam[0]) + math.log(lam[1]) == pytest.approx(reference, abs=1e-5)


# -- MOMA -------------------------------------------------------------------------------------------------------------
def test_moma_direction_multipliers_and_best_response_traced_by_hand():
    agent = fed("moma")
    # observed totals of the three episodes, from the known signals
    lam = [sum(REWARDS[:, s, a] for s, a in zip(states, actions, strict=True)) for states, actions in EPISODES]
    zeta = [sum(COSTS[s, a] for s, a in zip(states, actions, strict=True)) for states, actions in EPISODES]
    assert np.allclose(agent.reward_sum, np.sum(lam, axis=0))
    eta = 1 / (H * math.sqrt(K))
    mu = 0.0
    for z in zeta:
        mu = max(mu + eta * (z - 1.0), 0.0)
    assert agent.multipliers[0] == pytest.approx(mu)
    mean = np.mean(lam, axis=0)
    theta = (1 / mean) / np.sum(1 / mean)               # ∇ Σ log at the mean, normalised in ℓ1
    assert np.allclose(agent.direction(), theta)
    # the best response, by a backward recursion written out here
    L = math.log(2 * S * A * H * K / 0.01)
    N = COUNTS.sum(axis=-1)
    scale = theta.sum() + mu
    bonus = scale * np.minimum(H, H * np.sqrt(2 * L / np.maximum(N, 1)))
    x = np.einsum("k,ksa->sa", theta, REWARDS) - mu * COSTS
    cap = x.max()
    V = np.zeros(S)
    expected = np.zeros((H, S, A))
    for h in reversed(range(H)):
        Q = np.zeros((S, A))
        for s in range(S):
            for a in range(A):
                future = P_HAT[s, a] @ V if h < H - 1 else 0.0
                Q[s, a] = x[s, a] + bonus[s, a] + future
        expected[h, np.arange(S), Q.argmax(axis=1)] = 1     # chosen before the clip
        V = np.minimum(Q.max(axis=1), (H - h) * cap)
    plan = agent.begin_episode(4)
    assert np.array_equal(plan.policy, expected)
    assert plan.planned_value == pytest.approx(INITIAL @ V)


def test_moma_multipliers_grow_only_while_the_budget_is_exceeded():
    agent = fed("moma", model(budget=0.1))             # every episode's cost exceeds 0.1
    assert agent.multipliers[0] > 0
    agent = fed("moma", model(budget=5.0))             # none does
    assert agent.multipliers[0] == 0


# -- runs -------------------------------------------------------------------------------------------------------------
def random_model(seed: int = 3) -> EpisodicCMDP:
    rng = np.random.default_rng(seed)
    S_, A_, H_ = 4, 3, 4
    kernel = rng.dirichlet(np.ones(S_), size=(S_, A_))
    rewards = rng.uniform(size=(2, S_, A_))
    costs = rng.uniform(size=(2, S_, A_))
    # convex g: ζ_1² + ζ_2² <= (0.7 H)²
    g = ConvexQuadratic(np.eye(2), constant=-(0.7 * H_) ** 2)
    return EpisodicCMDP(rewards, costs, SumOfLogs(2), [g], kernel=kernel, horizon=H_, name="random-concave")


@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
def test_run_episodes_with_a_concave_f_and_a_convex_g(name):
    m = random_model()
    optimum = log_optimum_of(m)
    agent = make_episodic_agent(name, m)
    trace = run_episodes(m, agent, 25, seed=1, optimum=optimum)
    cols = trace.columns
    f = np.array([np.log(lam).sum() for lam in cols["rewards"]])
    assert trace.summary["regret"] == pytest.approx(np.sum(optimum - f))
    mean_f = np.log(cols["rewards"].mean(axis=0)).sum()
    assert trace.summary["weak_regret"] == pytest.approx(25 * optimum - 25 * mean_f)
    g = (cols["costs"] ** 2).sum(axis=1) - (0.7 * m.horizon) ** 2
    assert trace.summary["strong_violation"] == pytest.approx(np.maximum(g, 0).sum())
    assert trace.summary["weak_violation"] == pytest.approx(max(g.sum(), 0.0))
    # an episode whose policy meets the constraint cannot beat the constrained optimum (cvxpy's, written above)
    assert np.all(f[g <= 0] <= optimum + 1e-5)
    assert set(trace.sources) <= {"program", "fallback"}


def log_optimum_of(m: EpisodicCMDP) -> float:
    """f(λ*) of the known model, written in cvxpy here (occupancy variables, the model's kernel)."""
    S_, A_, H_ = m.n_states, m.n_actions, m.horizon
    q = [cp.Variable((S_, A_), nonneg=True) for _ in range(H_)]
    rows = [cp.sum(q[0], axis=1) == m.initial]
    for h in range(H_ - 1):
        flow = np.asarray(m.kernel).reshape(S_ * A_, S_).T
        rows.append(cp.sum(q[h + 1], axis=1) == flow @ cp.reshape(q[h], (S_ * A_,), order="C"))
    lam = cp.hstack([sum(cp.sum(cp.multiply(m.rewards[k], q[h])) for h in range(H_)) for k in range(2)])
    zeta = cp.hstack([sum(cp.sum(cp.multiply(m.costs[i], q[h])) for h in range(H_)) for i in range(2)])
    rows.append(cp.sum_squares(zeta) <= (0.7 * H_) ** 2)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.log(lam))), rows)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return float(problem.value)


def test_moma_runs_are_reproducible_and_deterministic_per_episode():
    m = random_model()
    first = run_episodes(m, make_episodic_agent("moma", m), 10, seed=4, optimum=0.0)
    again = run_episodes(m, make_episodic_agent("moma", m), 10, seed=4, optimum=0.0)
    assert np.array_equal(first.columns["rewards"], again.columns["rewards"])
    lam, _ = episode_values(m, make_episodic_agent("moma", m, episodes=10).begin_episode(1).policy)
    assert np.allclose(first.columns["rewards"][0], lam)


# -- refusals ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
@pytest.mark.parametrize("option, value", [("delta", 0.0), ("delta", 1.5), ("bonus_scale", -1.0),
                                           ("bonus_scale", math.inf), ("bonus_scale", "x")])
def test_bad_options_are_refused(name, option, value):
    with pytest.raises(AgentError, match=option):
        make_episodic_agent(name, model(), **{option: value})


def test_moma_refuses_a_bad_step_and_an_unknown_option():
    with pytest.raises(AgentError, match="step_scale"):
        make_episodic_agent("moma", model(), step_scale=-2.0)
    with pytest.raises(AgentError, match="moma"):
        make_episodic_agent("moma", model(), backend="highs")


@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
def test_a_model_without_a_horizon_is_refused(name):
    plain = CMDP(REWARDS, COSTS[None], SumOfLogs(2), [LinearBound([1.0], 0.5)], kernel=KERNEL)
    with pytest.raises(CurloptError, match="episodic"):
        EPISODIC_AGENTS[name](plain)


@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
def test_per_step_kernels_and_no_constraint(name):
    """Per-step counts (a model with one kernel per step) give per-step bonuses; without constraints MOMA has no
    multipliers and conrl's program has no constraint row."""
    kernels = np.stack([KERNEL, KERNEL[:, :, ::-1]])
    m = EpisodicCMDP(REWARDS, COSTS, SumOfLogs(2), [], kernel=kernels, initial=INITIAL, horizon=H, name="per-step")
    agent = fed(name, m)
    assert agent.counts.transitions.shape == (H - 1, S, A, S)
    # the first transition of every episode is counted at step 0 only: (0,0)->0, (1,0)->1, (0,0)->1
    assert agent.counts.transitions[0].sum() == 3 and agent.counts.transitions[0, 0, 0].tolist() == [1, 1]
    plan = agent.begin_episode(4)
    assert plan.source is EpisodeSource.PROGRAM
    assert np.allclose(plan.policy.sum(axis=-1), 1.0)
    if name == "moma":
        assert agent.multipliers.shape == (0,)
    else:
        bonus = agent.bonus(4) if name == "conrl" else agent.bonus()
        assert bonus.shape == (H - 1, S, A)

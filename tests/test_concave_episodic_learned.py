"""The concave-utility episodic agents (ConRL, MOMA, moma-program) with ``rewards="learned"``.

On the two-state model of tests/test_concave_episodic_agents.py, episodes are handed to each agent with observed
signals chosen here (not the model's means); the running means, each paper's bonus on the visits of every cell
(h, s, a), the signals of the program and the policy are checked against the formulas evaluated here and the
concave program written from scratch in cvxpy there. Then: the estimates converge to the model's means (a property
over seeds, within Hoeffding's width), mean signals are learned exactly, and an agent told the signals ignores
noisy ones.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_concave_episodic_agents import (
    COSTS,
    EPISODES,
    INITIAL,
    KERNEL,
    P_HAT,
    REWARDS,
    A,
    H,
    K,
    S,
    forward_totals,
    log_program,
    model,
)

from curlopt.agents.episodic import EpisodeSource, make_episodic_agent
from curlopt.errors import AgentError
from curlopt.experiments.simulation.episodes import run_episodes
from curlopt.models.episodic import EpisodicCMDP
from curlopt.utilities.library import SumOfLogs

#: the observed signals of the three episodes: rewards (H, 2) and costs (H, 1), each in its signal's range
#: (rewards [0.1, 0.9] and [0.05, 0.8], costs [0, 0.8]: the model's smallest and largest means), not the means
OBSERVED = [
    (np.array([[0.9, 0.05], [0.1, 0.8], [0.9, 0.8]]), np.array([[0.0], [0.8], [0.8]])),
    (np.array([[0.1, 0.8], [0.9, 0.05], [0.9, 0.05]]), np.array([[0.8], [0.0], [0.8]])),
    (np.array([[0.1, 0.8], [0.9, 0.8], [0.1, 0.05]]), np.array([[0.8], [0.8], [0.0]])),
]
REPEATS = 40


def hand_means() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Running means (H, 2, S, A), (H, 1, S, A) and visits (H, S, A) of OBSERVED, by loops (0 where unvisited)."""
    reward_sum, cost_sum, visits = np.zeros((H, 2, S, A)), np.zeros((H, 1, S, A)), np.zeros((H, S, A))
    for (states, actions), (rewards, costs) in zip(EPISODES, OBSERVED, strict=True):
        for h in range(H):
            s, a = states[h], actions[h]
            reward_sum[h, :, s, a] += REPEATS * rewards[h]
            cost_sum[h, :, s, a] += REPEATS * costs[h]
            visits[h, s, a] += REPEATS
    seen = np.maximum(visits, 1)[:, None]
    return reward_sum / seen, cost_sum / seen, visits


def fed_learned(name: str, budget: float = 1.0, **options):
    """The agent after REPEATS rounds of the three episodes, with the observed signals of OBSERVED."""
    agent = make_episodic_agent(name, model(budget), episodes=K, seed=0, rewards="learned", **options)
    for _ in range(REPEATS):
        for (states, actions), (rewards, costs) in zip(EPISODES, OBSERVED, strict=True):
            agent.observe_signals(np.array(states), np.array(actions), rewards, costs)
            agent.end_episode(np.array(states), np.array(actions))
    return agent


def test_conrl_learned_means_bonus_and_program_traced_by_hand():
    agent = fed_learned("conrl", budget=0.1, bonus_scale=0.05)
    r_hat, c_hat, visits = hand_means()
    assert set(np.unique(visits)) == {0, REPEATS, 2 * REPEATS}
    k = 3 * REPEATS + 1
    L = math.log(16 * S * A * H * k ** 2 / 0.01)
    bonus = 0.05 * np.minimum(2 * H, 2 * H * np.sqrt(2 * L / np.maximum(visits, 1)))
    # the cells seen 2·40 times are below the cap, the others at it: the bonus is not one number
    assert bonus.min() < 0.8 * 0.05 * 2 * H and bonus.max() == pytest.approx(0.05 * 2 * H)
    assert np.allclose(agent.bonus(k), bonus)
    r, c = agent.planning_signals(k)
    assert np.allclose(r, r_hat + bonus[:, None])
    assert np.allclose(c, np.maximum(c_hat - bonus[:, None], 0.0))
    plan = agent.begin_episode(k)
    assert plan.source is EpisodeSource.PROGRAM
    reference = log_program(P_HAT, r, c, budget=0.1)
    lam, zeta = forward_totals(plan.policy, P_HAT, r, c)
    assert zeta[0] <= 0.1 + 1e-5
    assert math.log(lam[0]) + math.log(lam[1]) == pytest.approx(reference, abs=1e-5)
    assert log_program(P_HAT, r, c, budget=10.0) > reference + 1e-2      # the budget binds


def test_moma_program_learned_means_and_bonus_traced_by_hand():
    agent = fed_learned("moma-program", bonus_scale=0.02)
    r_hat, c_hat, visits = hand_means()
    L = math.log(2 * S * A * H * K / 0.01)
    bonus = 0.02 * np.minimum(H, H * np.sqrt(2 * L / np.maximum(visits, 1)))
    assert np.allclose(agent.bonus(), bonus)
    r, c = agent.planning_signals()
    assert np.allclose(r, r_hat + bonus[:, None]) and np.allclose(c, np.maximum(c_hat - bonus[:, None], 0.0))
    plan = agent.begin_episode(3 * REPEATS + 1)
    lam, zeta = forward_totals(plan.policy, P_HAT, r, c)
    assert zeta[0] <= 1.0 + 1e-5
    assert math.log(lam[0]) + math.log(lam[1]) == pytest.approx(log_program(P_HAT, r, c, 1.0), abs=1e-5)


def test_moma_learned_averages_signal_cap_and_best_response_traced_by_hand():
    agent = fed_learned("moma")
    r_hat, c_hat, visits = hand_means()
    # the averages are the observed totals', not the model's
    lam = [rewards.sum(axis=0) for rewards, _ in OBSERVED]
    zeta = [costs.sum(axis=0) for _, costs in OBSERVED]
    assert np.allclose(agent.reward_sum, REPEATS * np.sum(lam, axis=0))
    assert np.allclose(agent.cost_sum, REPEATS * np.sum(zeta, axis=0))
    eta = 1 / (H * math.sqrt(K))
    mu = 0.0
    for _ in range(REPEATS):
        for z in zeta:
            mu = max(mu + eta * (z[0] - 1.0), 0.0)
    assert agent.multipliers[0] == pytest.approx(mu)
    theta = 1 / np.mean(lam, axis=0)
    theta /= theta.sum()
    assert np.allclose(agent.direction(), theta)
    x = np.einsum("k,hksa->hsa", theta, r_hat) - mu * c_hat[:, 0]
    # the largest x the ranges allow: θ ≥ 0 takes each reward's upper bound, -μ ≤ 0 the cost's lower bound 0
    cap = theta @ np.array([0.9, 0.8]) - mu * 0.0
    assert agent.signal_cap(x) == pytest.approx(cap)
    L = math.log(2 * S * A * H * K / 0.01)
    bonus = (theta.sum() + mu) * np.minimum(H, H * np.sqrt(2 * L / np.maximum(visits, 1)))
    V = np.zeros(S)
    expected = np.zeros((H, S, A))
    for h in reversed(range(H)):
        Q = np.array([[x[h, s, a] + bonus[h, s, a] + (P_HAT[s, a] @ V if h < H - 1 else 0.0) for a in range(A)]
                      for s in range(S)])
        expected[h, np.arange(S), Q.argmax(axis=1)] = 1
        V = np.minimum(Q.max(axis=1), (H - h) * cap)
    plan = agent.begin_episode(3 * REPEATS + 1)
    assert np.array_equal(plan.policy, expected)
    assert plan.planned_value == pytest.approx(INITIAL @ V)


def test_moma_learned_needs_the_observed_signals():
    agent = make_episodic_agent("moma", model(), episodes=K, rewards="learned")
    with pytest.raises(AgentError, match="observe_signals"):
        agent.end_episode(np.array(EPISODES[0][0]), np.array(EPISODES[0][1]))


# -- the estimates against the model's means -------------------------------------------------------------------------
def _true_cells() -> np.ndarray:
    """The model's means per signal and cell (h, s, a), shape (3, H·S·A), rewards first."""
    m = model()
    return np.concatenate([m.step_rewards, m.step_costs], axis=1).transpose(1, 0, 2, 3).reshape(3, -1)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2 ** 20), noise=st.sampled_from(["bernoulli", "gaussian"]))
def test_learned_estimates_converge_to_the_models_means_within_hoeffding(seed, noise):
    m = model()
    agent = make_episodic_agent("moma", m, seed=0, rewards="learned")
    run_episodes(m, agent, 300, seed=seed, optimum=0.0, signals=noise, progress=False)
    estimates = agent.signal_estimates
    n = estimates.visits
    seen = n > 0
    assert n.sum() == 300 * H   # one observation per step
    # Hoeffding for draws in [lo, hi], every signal and cell at once with probability >= 1 - 1e-6
    width = (estimates.high - estimates.low)[:, None] * np.sqrt(math.log(2 * 3 * n.size / 1e-6)
                                                                / (2 * np.maximum(n, 1)))[None]
    error = np.abs(estimates.means - _true_cells())
    assert np.all(error[:, seen] <= width[:, seen])
    assert seen.sum() >= 8   # most of the 12 cells are checked, not a few


@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
def test_mean_signals_are_learned_exactly_and_noise_is_ignored_when_told(name):
    m = model()
    agent = make_episodic_agent(name, m, seed=0, rewards="learned")
    trace = run_episodes(m, agent, 15, seed=1, progress=False)
    seen = agent.signal_estimates.visits > 0
    assert seen.any() and np.array_equal(agent.signal_estimates.means[:, seen], _true_cells()[:, seen])
    assert trace.meta["agent"]["rewards"] == "learned"
    told = run_episodes(m, make_episodic_agent(name, m, seed=0), 15, seed=2, progress=False)
    noisy = run_episodes(m, make_episodic_agent(name, m, seed=0), 15, seed=2, signals="gaussian", progress=False)
    assert np.array_equal(told.columns["rewards"], noisy.columns["rewards"])
    assert np.array_equal(told.columns["costs"], noisy.columns["costs"])
    assert "rewards" not in told.meta["agent"]


def test_a_bad_rewards_value_is_refused():
    for name in ("conrl", "moma", "moma-program"):
        with pytest.raises(AgentError, match="rewards must be one of 'known', 'learned'"):
            make_episodic_agent(name, model(), rewards="told")


def test_costs_are_the_model_range_bound_before_any_observation():
    """Before any episode every cell is unvisited: ConRL plans on r^ = 0 plus the capped bonus 2H and on
    max(0 − 2H, 0) = 0 costs (the papers' empirical estimates start at 0; the bonus carries the uncertainty)."""
    agent = make_episodic_agent("conrl", model(), episodes=K, rewards="learned")
    r, c = agent.planning_signals(1)
    assert np.all(r == 2 * H) and np.all(c == 0.0)
    assert COSTS.min() >= 0 and REWARDS.min() >= 0


@pytest.mark.parametrize("name", ["conrl", "moma", "moma-program"])
def test_learned_signals_with_per_step_kernels_and_no_constraint(name):
    """Per-step counts: the learned bonus is still one per cell (h, s, a), H steps of it (the last step's signal is
    estimated too), where the known one has H − 1; a run without constraints plans and learns."""
    kernels = np.stack([KERNEL, KERNEL[:, :, ::-1]])
    m = EpisodicCMDP(REWARDS, COSTS, SumOfLogs(2), [], kernel=kernels, initial=INITIAL, horizon=H, name="per-step")
    agent = make_episodic_agent(name, m, seed=0, rewards="learned")
    trace = run_episodes(m, agent, 12, seed=3, optimum=0.0, signals="bernoulli", progress=False)
    assert agent.counts.transitions.shape == (H - 1, S, A, S)
    assert agent.signal_estimates.visits.sum() == 12 * H
    assert set(trace.sources) == {"program"}
    if name != "moma":
        bonus = agent.bonus(13) if name == "conrl" else agent.bonus()
        assert bonus.shape == (H, S, A)
        known = make_episodic_agent(name, m, seed=0)
        assert (known.bonus(13) if name == "conrl" else known.bonus()).shape == (H - 1, S, A)

"""OptPess-PrimalDual (closest version, curlopt/agents/episodic/primal_dual.py): two episodes traced by hand.

On a two-state, two-action model with H = 2: the first episode's policy (λ = 0, uniform P^, equal bonuses: the
greedy policy of the rewards), its pessimistic cost on P^ and the dual step, all computed here from the formulas of
docs/math.md with plain arithmetic; then the second episode's policy, by a backward induction written here on the
P^ of the first episode's transition with the new multiplier. Then the refusals and a short run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curlopt.agents.episodic import EPISODIC_AGENTS, EpisodeSource, OptPessPrimalDual, make_episodic_agent
from curlopt.errors import AgentError
from curlopt.models.episodic import EpisodicCMDP
from curlopt.utilities.library import Linear, LinearBound, SumOfLogs

S, A, H, K = 2, 2, 2, 50
KERNEL = np.array([[[0.9, 0.1], [0.2, 0.8]],
                   [[0.5, 0.5], [0.3, 0.7]]])
REWARDS = np.array([[0.1, 0.35], [0.9, 0.6]])
COSTS = np.array([[0.0, 0.45], [0.8, 0.15]])
INITIAL = np.array([0.6, 0.4])
SAFE = np.array([[1.0, 0.0], [0.0, 1.0]])
BUDGET = 1.0


def model(safe: bool = True, budget: float = BUDGET) -> EpisodicCMDP:
    return EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], budget)], kernel=KERNEL, initial=INITIAL,
                        horizon=H, safe_policy=SAFE if safe else None, name="two-state-h2")


def test_two_episodes_traced_by_hand():
    agent = make_episodic_agent("optpess-primal-dual", model(), episodes=K, seed=0, bonus_scale=0.01, step_scale=3.0)
    # the safe policy's cost: step 1 from μ, step 2 from μ P_safe; C_b = 0.4·0.15 + (0.6·0.1 + 0.4·0.7)·0.15
    c_b = 0.4 * 0.15 + (0.6 * 0.1 + 0.4 * 0.7) * 0.15
    slack = BUDGET - c_b
    assert agent.slater_gap == pytest.approx(slack)
    R, C = 0.9 - 0.1, 0.8 - 0.0                                    # the spans of the per-step reward and cost
    dual_bound = 2 * H * R / slack
    step = 3.0 * dual_bound / (H * C * math.sqrt(K))
    margin = min(slack / 2, dual_bound / (step * K))
    assert agent.dual_bound == pytest.approx(dual_bound) and agent.step == pytest.approx(step)
    assert agent.margin == pytest.approx(margin)
    beta = math.sqrt(math.log(32 * S ** 2 * H * K / 0.01))                      # N = 0: β̄ = sqrt(L)
    bonus = 0.01 * (1 + S * H) * beta                                            # the cost bonus α_c β̄
    reward_bonus = 0.01 * (1 + S * H) * (1 + 4 * H / slack) * beta               # the reward bonus α_r β̄

    # episode 1: λ = 0 and every pair has the same bonus: greedy on the rewards, a = 1 in state 0, a = 0 in state 1
    plan = agent.begin_episode(1)
    assert plan.source == EpisodeSource.RULE
    first = np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(plan.policy, [first, first])
    # its pessimistic cost on P^ (uniform rows): step 1 from μ, step 2 from (½, ½), bonus at both steps
    pessimistic = (0.6 * 0.45 + 0.4 * 0.8) + (0.5 * 0.45 + 0.5 * 0.8) + 2 * bonus
    assert "pessimistic g" in plan.message
    agent.end_episode(np.array([0, 1]), np.array([1, 0]))         # the transition (0, 1) -> 1
    multiplier = min(dual_bound, max(0.0, 0.0 + step * (pessimistic - BUDGET + margin)))
    assert 0 < multiplier < dual_bound
    np.testing.assert_allclose(agent.multipliers, [multiplier])

    # episode 2: P^(.|0,1) = (0, 1), the other rows uniform; N(0,1) = 1 keeps β̄ = sqrt(L / 1) = sqrt(L) there
    p_hat = np.full((S, A, S), 0.5)
    p_hat[0, 1] = [0.0, 1.0]
    signal = (REWARDS + reward_bonus) - multiplier * (COSTS + bonus)
    last = signal.argmax(axis=1)                                   # step 2: the Lagrangian signal alone
    v2 = signal[np.arange(S), last]
    q1 = [[signal[s, a] + sum(p_hat[s, a, t] * v2[t] for t in range(S)) for a in range(A)] for s in range(S)]
    first_step = np.argmax(q1, axis=1)
    plan = agent.begin_episode(2)
    expected = np.zeros((H, S, A))
    expected[0, np.arange(S), first_step] = 1.0
    expected[1, np.arange(S), last] = 1.0
    np.testing.assert_array_equal(plan.policy, expected)
    # λ ≈ 0.63 > 0.25 / 0.45 and > 0.3 / 0.65: the multiplier turns both states' last action around
    assert list(last) == [0, 1]


def test_the_multiplier_stays_in_its_interval_and_falls_when_the_plan_is_cheap():
    agent = make_episodic_agent("optpess-primal-dual", model(), episodes=K, seed=0)
    agent.begin_episode(1)                                         # the paper's bonus: g far above 0
    agent.end_episode(np.array([0, 1]), np.array([1, 0]))
    np.testing.assert_allclose(agent.multipliers, [agent.dual_bound])
    cheap = make_episodic_agent("optpess-primal-dual", model(budget=5.0), episodes=K, seed=0, bonus_scale=0.0)
    cheap.multipliers = np.array([0.5])
    cheap.begin_episode(1)
    cheap.end_episode(np.array([0, 1]), np.array([1, 0]))
    # budget 5 and costs at most 0.8 per step: g + ε < 0, one step down from 0.5
    assert 0 <= cheap.multipliers[0] < 0.5


def test_a_given_slater_gap_needs_no_safe_policy_and_is_never_played():
    agent = make_episodic_agent("optpess-primal-dual", model(safe=False), episodes=K, slater_gap=0.5)
    assert agent.slater_gap == 0.5 and agent.describe()["slater_gap"] == 0.5
    assert agent.dual_bound == pytest.approx(2 * H * 0.8 / 0.5)


def test_refusals():
    with pytest.raises(AgentError, match="declares none"):
        make_episodic_agent("optpess-primal-dual", model(safe=False))
    with pytest.raises(AgentError, match="not strictly safe"):
        make_episodic_agent("optpess-primal-dual", model(budget=0.1))
    with pytest.raises(AgentError, match="slater_gap"):
        make_episodic_agent("optpess-primal-dual", model(), slater_gap=0.0)
    with pytest.raises(AgentError, match="step_scale"):
        make_episodic_agent("optpess-primal-dual", model(), step_scale=0)
    with pytest.raises(AgentError, match="bonus_scale"):
        make_episodic_agent("optpess-primal-dual", model(), bonus_scale=-1)
    with pytest.raises(AgentError, match="delta"):
        make_episodic_agent("optpess-primal-dual", model(), delta=1.0)
    with pytest.raises(AgentError, match="solves no program: it takes no backend"):
        make_episodic_agent("optpess-primal-dual", model(), backend="highs")
    unconstrained = EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [], kernel=KERNEL, initial=INITIAL, horizon=H)
    with pytest.raises(AgentError, match="has none"):
        make_episodic_agent("optpess-primal-dual", unconstrained, slater_gap=1.0)
    logs = EpisodicCMDP(np.stack([REWARDS, REWARDS]), COSTS, SumOfLogs(2), [LinearBound([1.0], BUDGET)],
                        kernel=KERNEL, initial=INITIAL, horizon=H, safe_policy=SAFE)
    with pytest.raises(AgentError, match="non-linear objective"):
        make_episodic_agent("optpess-primal-dual", logs)
    assert EPISODIC_AGENTS["optpess-primal-dual"] is OptPessPrimalDual


@pytest.mark.parametrize("rewards", ["known", "learned"])
def test_a_short_run_is_reproducible_and_labelled(rewards):
    from curlopt.experiments.simulation.episodes import run_episodes

    def run():
        agent = make_episodic_agent("optpess-primal-dual", model(), rewards=rewards, bonus_scale=0.05)
        return run_episodes(model(), agent, episodes=40, seed=3), agent

    (first, agent), (second, _) = run(), run()
    np.testing.assert_array_equal(first.columns["regret"], second.columns["regret"])
    assert first.summary["sources"] == {"update-rule": 40}
    assert 0 <= agent.multipliers[0] <= agent.dual_bound
    assert agent.describe()["agent"] == "optpess-primal-dual"

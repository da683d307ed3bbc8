"""The episode loop (curlopt/experiments/simulation/episodes.py): its metrics against hand computations, its
simulated trajectory against a hand trace for a fixed seed, its exact per-episode values against backward
induction written here, and its refusals.

The loop's contract: the seed is split by ``SeedSequence(seed).spawn(3)`` into the environment's, the actions' and
the agent's streams; episode k takes H environment uniforms (the first draws s_1 from μ, the next H − 1 the
transitions) and H action uniforms; a draw with uniform u is the first index whose running sum exceeds u.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curlopt.agents.episodic import EpisodePlan, EpisodeSource, EpisodicAgent
from curlopt.errors import CurloptError
from curlopt.experiments.simulation.episodes import episode_metrics, run_episodes
from curlopt.models.episodic import EpisodicCMDP
from curlopt.utilities.library import Linear, LinearBound, MinOfLinear

KERNEL = np.array([[[0.9, 0.1], [0.2, 0.8]],
                   [[0.5, 0.5], [0.3, 0.7]]])
REWARDS = np.array([[0.0, 0.2], [1.0, 0.5]])
COSTS = np.array([[0.0, 0.5], [1.0, 0.2]])
INITIAL = np.array([0.6, 0.4])


def two_state_model(horizon: int = 3, budget: float = 1.0) -> EpisodicCMDP:
    return EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], budget)], kernel=KERNEL,
                        initial=INITIAL, horizon=horizon, name="two-state")


class FixedPolicy(EpisodicAgent):
    """Plays one policy every episode and remembers the episodes it was told about."""

    name = "fixed"

    def __init__(self, model, policy):
        self.fixed = np.asarray(policy, dtype=float)
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []
        super().__init__(model)

    def _plan(self, k):
        return EpisodePlan(self.fixed, EpisodeSource.PROGRAM)

    def end_episode(self, states, actions):
        self.seen.append((np.array(states), np.array(actions)))
        super().end_episode(states, actions)


def first_index_above(weights, u: float) -> int:
    total = 0.0
    for index, weight in enumerate(weights):
        total += float(weight)
        if total > u:
            return index
    return len(weights) - 1


def backward_values(kernel, signal, policy, initial, horizon) -> float:
    """E[Σ_h signal(s_h, a_h)] by backward induction V_h(s) = Σ_a π_h(a|s) (signal(s,a) + Σ_s' P(s'|s,a) V_{h+1}(s'))."""
    S = kernel.shape[0]
    value = np.zeros(S)
    for h in reversed(range(horizon)):
        value = np.array([sum(policy[h, s, a] * (signal[s, a] + kernel[s, a] @ value) for a in range(2))
                          for s in range(S)])
    return float(initial @ value)


# -- metrics -------------------------------------------------------------------------------------------------------
def test_metrics_linear_by_hand():
    model = two_state_model()
    out = episode_metrics(model, 5.0, np.array([[1.0], [2.0], [4.0]]), np.array([[0.5], [1.5], [2.0]]))
    assert out["regret"].tolist() == [4.0, 3.0, 1.0]
    assert out["regret_total"] == 8.0
    assert out["weak_regret"] == pytest.approx(3 * 5.0 - 3 * (7.0 / 3))   # = 8 for linear f
    assert out["violation"].tolist() == [0.0, 0.5, 1.0]
    assert out["strong_violation"] == 1.5            # 0 + 0.5 + 1.0
    assert out["weak_violation"] == pytest.approx(1.0)  # (−0.5 + 0.5 + 1.0)_+


def test_metrics_concave_weak_regret_differs():
    model = EpisodicCMDP(np.stack([REWARDS, REWARDS[::-1]]), COSTS, MinOfLinear.max_min(2),
                         [LinearBound([1.0], 1.0)], kernel=KERNEL, initial=INITIAL, horizon=2)
    out = episode_metrics(model, 2.5, np.array([[1.0, 3.0], [3.0, 1.0]]), np.array([[0.0], [3.0]]))
    assert out["regret_total"] == pytest.approx(3.0)           # (2.5 − 1) twice
    assert out["weak_regret"] == pytest.approx(2 * 2.5 - 2 * 2.0)  # min of the mean (2, 2) is 2
    assert out["strong_violation"] == pytest.approx(2.0)
    assert out["weak_violation"] == pytest.approx(1.0)          # (−1 + 2)_+


# -- the loop --------------------------------------------------------------------------------------------------------
def test_trajectory_matches_hand_trace_and_values_match_backward_induction():
    H, K, seed = 3, 7, 11
    model = two_state_model(H)
    policy = np.array([[[0.3, 0.7], [1.0, 0.0]],
                       [[0.5, 0.5], [0.1, 0.9]],
                       [[0.0, 1.0], [0.6, 0.4]]])
    agent = FixedPolicy(model, policy)
    trace = run_episodes(model, agent, episodes=K, seed=seed, optimum=2.0)

    env_seq, action_seq, _ = np.random.SeedSequence(seed).spawn(3)
    env_u = np.random.default_rng(env_seq).random(K * H).reshape(K, H)
    act_u = np.random.default_rng(action_seq).random(K * H).reshape(K, H)
    realised_r, realised_c = [], []
    for k in range(K):
        s = first_index_above(INITIAL, env_u[k, 0])
        states, actions = [], []
        for h in range(H):
            a = first_index_above(policy[h, s], act_u[k, h])
            states.append(s)
            actions.append(a)
            if h < H - 1:
                s = first_index_above(KERNEL[s, a], env_u[k, h + 1])
        assert agent.seen[k][0].tolist() == states and agent.seen[k][1].tolist() == actions, k
        realised_r.append(sum(REWARDS[s_, a_] for s_, a_ in zip(states, actions, strict=True)))
        realised_c.append(sum(COSTS[s_, a_] for s_, a_ in zip(states, actions, strict=True)))
    np.testing.assert_allclose(trace.columns["realised_rewards"][:, 0], realised_r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.columns["realised_costs"][:, 0], realised_c, rtol=0, atol=1e-12)

    value = backward_values(KERNEL, REWARDS, policy, INITIAL, H)
    cost = backward_values(KERNEL, COSTS, policy, INITIAL, H)
    np.testing.assert_allclose(trace.columns["rewards"][:, 0], value, rtol=1e-12)
    np.testing.assert_allclose(trace.columns["costs"][:, 0], cost, rtol=1e-12)
    assert trace.summary["regret"] == pytest.approx(K * (2.0 - value))
    assert trace.summary["strong_violation"] == pytest.approx(K * max(cost - 1.0, 0.0))
    assert trace.summary["weak_violation"] == pytest.approx(max(K * (cost - 1.0), 0.0))
    assert trace.summary["realised_regret"] == pytest.approx(sum(2.0 - r for r in realised_r))
    assert trace.summary["realised_strong_violation"] == pytest.approx(sum(max(c - 1.0, 0) for c in realised_c))
    assert trace.summary["sources"] == {"program": K}
    assert agent.episodes == K   # the loop told the agent K


def test_counts_pooled_from_the_trajectory():
    model = two_state_model(4)
    policy = np.full((4, 2, 2), 0.5)
    agent = FixedPolicy(model, policy)
    run_episodes(model, agent, episodes=5, seed=3, optimum=0.0)
    expected = np.zeros((2, 2, 2))
    for states, actions in agent.seen:
        for h in range(3):
            expected[states[h], actions[h], states[h + 1]] += 1
    np.testing.assert_array_equal(agent.counts.transitions[0], expected)
    assert agent.counts.total == 5 * 3


def test_trace_saves_csv_and_summary(tmp_path):
    model = two_state_model()
    agent = FixedPolicy(model, np.full((3, 2, 2), 0.5))
    trace = run_episodes(model, agent, episodes=4, seed=0, optimum=1.0)
    folder = trace.save(tmp_path / "run")
    lines = (folder / "episodes.csv").read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("episode,rewards_0,costs_0,objective,regret,violation")
    import json
    payload = json.loads((folder / "summary.json").read_text())
    assert payload["summary"]["episodes"] == 4
    assert math.isclose(payload["summary"]["regret"], trace.summary["regret"])


# -- refusals --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("episodes", [0, -1, 1.5, True, "3"])
def test_bad_episode_counts(episodes):
    model = two_state_model()
    with pytest.raises(CurloptError, match="episodes must be an integer"):
        run_episodes(model, FixedPolicy(model, np.full((3, 2, 2), 0.5)), episodes=episodes, optimum=0.0)


@pytest.mark.parametrize("seed", [-1, 1.0, None])
def test_bad_seed(seed):
    model = two_state_model()
    with pytest.raises(CurloptError, match="seed must be an integer"):
        run_episodes(model, FixedPolicy(model, np.full((3, 2, 2), 0.5)), episodes=2, seed=seed, optimum=0.0)


def test_bad_policy_shape_and_rows():
    model = two_state_model()
    with pytest.raises(CurloptError, match="shape"):
        run_episodes(model, FixedPolicy(model, np.full((2, 2, 2), 0.5)), episodes=1, optimum=0.0)
    with pytest.raises(CurloptError, match="not distributions"):
        run_episodes(model, FixedPolicy(model, np.full((3, 2, 2), 0.7)), episodes=1, optimum=0.0)


def test_non_episodic_model_and_mismatched_agent():
    model = two_state_model()
    agent = FixedPolicy(model, np.full((3, 2, 2), 0.5))
    with pytest.raises(CurloptError, match="episodic model"):
        run_episodes(object(), agent, episodes=1, optimum=0.0)  # type: ignore[arg-type]
    with pytest.raises(CurloptError, match="episodic agent"):
        run_episodes(model, object(), episodes=1, optimum=0.0)  # type: ignore[arg-type]
    with pytest.raises(CurloptError, match="built for a model"):
        run_episodes(two_state_model(4), agent, episodes=1, optimum=0.0)


# -- the command line ------------------------------------------------------------------------------------------------
def test_run_command_dispatches_an_episodic_model_to_the_episode_loop(capsys, tmp_path):
    import json

    from cli_helpers import invoke

    out = tmp_path / "episodes.csv"
    code, stdout, _ = invoke(["run", "media-streaming", "--param", "horizon=10", "--agent", "dope", "--steps", "7",
                              "--json", "--out", str(out)], capsys)
    assert code == 0
    payload = json.loads(stdout)
    assert payload["meta"]["values"] == "per-episode totals" and payload["meta"]["horizon"] == 10
    assert payload["summary"]["episodes"] == 7 and payload["summary"]["sources"] == {"warm-up": 7}
    assert len(out.read_text().splitlines()) == 8
    code, _, err = invoke(["run", "media-streaming", "--param", "horizon=10", "--agent", "dope", "--steps", "3",
                           "--epochs", "linear"], capsys)
    assert code != 0 and "no --epochs" in err
    code, _, err = invoke(["run", "media-streaming", "--param", "horizon=10", "--agent", "safe-curl", "--steps", "3"],
                          capsys)
    assert code != 0 and "its agents are" in err


def test_a_run_is_reproducible_and_resets_the_agent():
    from curlopt.agents.episodic import make_episodic_agent

    model = two_state_model()
    agent = make_episodic_agent("ps-curl", model, tightness_constant=0.1)
    first = run_episodes(model, agent, episodes=6, seed=4, optimum=1.0)
    assert agent.episodes == 6 and agent.counts.total == 6 * 2
    second = run_episodes(model, agent, episodes=4, seed=4, optimum=1.0)
    assert agent.episodes == 4 and agent.counts.total == 4 * 2        # reset: K and counts of this run only
    np.testing.assert_array_equal(first.columns["rewards"][:4], second.columns["rewards"])
    assert first.sources[:4] == second.sources

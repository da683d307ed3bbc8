"""The episodic environment: truncated every H steps, per-step kernels and signals, traced by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from gymnasium.utils import seeding
from gymnasium.utils.env_checker import check_env

from curlopt.envs import EpisodicCMDPEnv, TabularCMDPEnv, make
from curlopt.errors import EnvError
from curlopt.models import EpisodicCMDP, build_model
from curlopt.utilities.library import Linear, LinearBound


def three_step_model(sparse: bool = False) -> EpisodicCMDP:
    """H = 3 on 3 states: step 0 sends every action to state 1, step 1 sends action a to state 2 − a; rewards
    per step are 10 h + s, the cost is the action."""
    S, A, H = 3, 2, 3
    first = np.zeros((S, A, S))
    first[:, :, 1] = 1.0
    second = np.zeros((S, A, S))
    second[:, 0, 2] = 1.0
    second[:, 1, 1] = 1.0
    kernels = [sp.csr_array(k.reshape(S * A, S)) for k in (first, second)] if sparse else [first, second]
    rewards = np.array([[[10.0 * h + s] * A for s in range(S)] for h in range(H)])[:, None]
    costs = np.broadcast_to(np.arange(A, dtype=float), (H, 1, S, A))
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 1.5)], kernels,
                        initial=[1.0, 0.0, 0.0], horizon=H)


@pytest.mark.parametrize("sparse", [False, True])
def test_an_episode_follows_the_per_step_kernels_and_signals(sparse):
    env = make(three_step_model(sparse))
    assert isinstance(env, EpisodicCMDPEnv)
    for _ in range(2):  # two episodes: the second starts again from μ at step 0
        state, _ = env.reset(seed=5)
        assert state == 0
        trace = [env.step(action) for action in (1, 0, 1)]
        # step 0 in state 0: reward 0, to state 1; step 1 in state 1, action 0: reward 11, to state 2;
        # step 2 in state 2: reward 22, the last step (truncated, no move)
        assert [int(t[0]) for t in trace] == [1, 2, 2]
        assert [t[1] for t in trace] == [0.0, 11.0, 22.0]
        assert [t[4]["costs"][0] for t in trace] == [1.0, 0.0, 1.0]
        assert [t[4]["step"] for t in trace] == [0, 1, 2]
        assert [(t[2], t[3]) for t in trace] == [(False, False), (False, False), (False, True)]
        with pytest.raises(EnvError, match="episode ended after H = 3 steps"):
            env.step(0)


def test_a_stochastic_episode_draws_one_uniform_per_move():
    model = build_model("random", n_states=5, n_actions=2, seed=3, horizon=4)
    env = make(model)
    state, _ = env.reset(seed=11)
    actions = [1, 0, 1, 1]
    observed = [int(state)] + [int(env.step(a)[0]) for a in actions]
    # by hand: the same generator, one uniform for the start and one per move, none at the last step
    rng, _ = seeding.np_random(11)
    kernel = np.asarray(model.kernel)
    s = min(int(np.searchsorted(np.cumsum(model.initial), rng.random(), side="right")), 4)
    expected = [s]
    for h, a in enumerate(actions):
        if h < 3:
            s = min(int(np.searchsorted(np.cumsum(kernel[s, a]), rng.random(), side="right")), 4)
        expected.append(s)
    assert observed == expected


def test_the_episodic_environment_passes_the_gymnasium_checker():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make("gridworld", horizon=6), skip_render_check=True)
        check_env(make(three_step_model(sparse=True)), skip_render_check=True)


def test_without_a_horizon_the_environment_is_continuing():
    env = make("gridworld")
    assert type(env) is TabularCMDPEnv
    env.reset(seed=0)
    assert all(env.step(0)[3] is False for _ in range(100))

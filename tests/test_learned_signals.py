"""Rewards and costs observed, not told: noisy signals, learned estimates and their bonuses, and CMDP-PSRL."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import CMDP, build_model
from curlopt.agents import CmdpPsrl, PsCurl, make_agent
from curlopt.agents.signals import SIGNAL_DELTA, SignalEstimates, hoeffding_width, signal_directions
from curlopt.envs import TabularCMDPEnv
from curlopt.errors import AgentError, CurloptError
from curlopt.experiments import run
from curlopt.models.signals import noisy_signals
from curlopt.utilities import Linear


def _two_state_model() -> CMDP:
    """Two states, two actions; reward in [0, 1], one cost in [0, 2] with the constraint ζ <= 1."""
    kernel = np.array([[[0.9, 0.1], [0.2, 0.8]],
                       [[0.7, 0.3], [0.1, 0.9]]])
    rewards = np.array([[[0.0, 0.5], [1.0, 0.25]]])
    costs = np.array([[[0.0, 2.0], [1.5, 0.5]]])
    return CMDP(rewards, costs, Linear([1.0]), [Linear([1.0], -1.0)], kernel=kernel, name="two-state")


# -- noisy signals -------------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), visits=st.integers(1, 400),
       mean=st.floats(0.0, 1.0), noise=st.sampled_from(["bernoulli", "gaussian"]))
def test_running_means_of_noisy_signals_converge_within_hoeffding(seed, visits, mean, noise):
    # one pair visited `visits` times, in epochs of random lengths; the signal's range is [-1, 3]
    model = CMDP(np.array([[[-1.0, mean * 4.0 - 1.0]]]), None, Linear([1.0]), kernel=np.ones((1, 2, 1)))
    estimates = SignalEstimates(model)
    rng = np.random.default_rng(seed)
    left = visits
    while left:
        n = int(rng.integers(1, left + 1))
        draws = noisy_signals(np.full((1, n), mean * 4.0 - 1.0), np.array([-1.0]), np.array([3.0]), noise, rng)
        assert np.all((draws >= -1.0) & (draws <= 3.0))
        estimates.add(np.array([0.0, n]), np.array([[0.0, draws.mean()]]), np.zeros((0, 2)))
        left -= n
    # Hoeffding for a mean of `visits` draws in a range of 4, at confidence 1e-9 (a failure is a bug, not bad luck)
    bound = 4.0 * math.sqrt(math.log(2 / 1e-9) / (2 * visits))
    assert estimates.visits[1] == visits
    assert abs(estimates.means[0, 1] - (mean * 4.0 - 1.0)) <= bound + 1e-12


def test_bernoulli_signals_take_the_bounds_and_gaussian_ones_keep_the_mean():
    rng = np.random.default_rng(0)
    means = np.full((2, 200_000), [[0.25], [1.5]])
    draws = noisy_signals(means, np.array([0.0, 0.0]), np.array([1.0, 2.0]), "bernoulli", rng)
    assert set(np.unique(draws[0])) == {0.0, 1.0} and set(np.unique(draws[1])) == {0.0, 2.0}
    assert abs(draws[0].mean() - 0.25) < 0.01 and abs(draws[1].mean() - 1.5) < 0.01
    gauss = noisy_signals(means, np.array([0.0, 0.0]), np.array([1.0, 2.0]), "gaussian", rng)
    assert gauss[1].min() >= 1.0 and gauss[1].max() <= 2.0        # clipped at w = min(1.5 - 0, 2 - 1.5) = 0.5
    assert abs(gauss[0].mean() - 0.25) < 0.005 and abs(gauss[1].mean() - 1.5) < 0.005
    # a constant signal (no range) is emitted as it is
    assert np.array_equal(noisy_signals(np.full((1, 5), 0.3), np.array([0.3]), np.array([0.3]), "bernoulli", rng),
                          np.full((1, 5), 0.3))


def test_the_run_refuses_an_unknown_signal_kind():
    with pytest.raises(CurloptError, match="signals must be one of 'mean', 'bernoulli', 'gaussian', got 'loud'"):
        run(PsCurl(build_model("queue")), "queue", 10, signals="loud", progress=False)


def test_noisy_signals_leave_the_trajectory_of_a_seed_unchanged():
    # PS-CURL told the rewards does not read the signals: its run is the same whatever the environment emits
    model = build_model("queue")
    plain = run(PsCurl(model), "queue", 2000, seed=3, progress=False)
    noisy = run(PsCurl(model), "queue", 2000, seed=3, signals="bernoulli", progress=False)
    assert [e.start for e in plain.epochs] == [e.start for e in noisy.epochs]
    assert np.array_equal(plain.checkpoints["regret"], noisy.checkpoints["regret"])
    assert "signals" not in plain.meta and noisy.meta["signals"] == "bernoulli"
    assert "rewards" not in plain.meta   # known-signal traces carry no new keys


def test_the_env_draws_noisy_signals_on_its_own_stream():
    model = _two_state_model()
    plain, noisy = TabularCMDPEnv(model), TabularCMDPEnv(model, signals="bernoulli", signal_seed=1)
    plain.reset(seed=5), noisy.reset(seed=5)
    for action in [0, 1, 1, 0, 1, 0, 0, 1] * 5:
        s1, _, _, _, info1 = plain.step(action)
        s2, r2, _, _, info2 = noisy.step(action)
        assert s1 == s2                                            # the same transitions
        assert info2["rewards"][0] in (0.0, 1.0) and info2["costs"][0] in (0.0, 2.0) and r2 == info2["rewards"][0]


# -- the estimates and their bonuses -------------------------------------------------------------------------------

def test_the_bonus_and_planning_tables_by_hand():
    model = _two_state_model()
    estimates = SignalEstimates(model)
    # pair (0, 1) seen 4 times (reward mean 0.5, cost mean 1.0); pair (1, 0) seen once (reward 1, cost 2)
    estimates.add(np.array([0, 4, 1, 0.0]), np.array([[0, 0.5, 1.0, 0]]), np.array([[0, 1.0, 2.0, 0]]))
    t = 10
    width_4 = math.sqrt(math.log(2 * 4 * 10 / SIGNAL_DELTA) / (2 * 4))
    width_1 = math.sqrt(math.log(2 * 4 * 10 / SIGNAL_DELTA) / 2)
    assert hoeffding_width(np.array([4.0, 0.0]), 4, t) == pytest.approx([width_4, width_1], rel=1e-15)
    rewards, costs = estimates.planning_tables(t)
    # reward range [0, 1], cost range [0, 2]; f and g increase in their signals: +b, unvisited at the upper bound
    assert rewards[0].ravel() == pytest.approx([1.0, min(1.0, 0.5 + width_4), 1.0, 1.0])
    assert costs[0].ravel() == pytest.approx([2.0, min(2.0, 1.0 + 2 * width_4), 2.0, 2.0])
    # UCRL-CMDP's optimistic costs: -b, unvisited at the lower bound
    _, optimistic = estimates.planning_tables(t, "optimistic")
    assert optimistic[0].ravel() == pytest.approx([0.0, max(0.0, 1.0 - 2 * width_4), max(0.0, 2.0 - 2 * width_1), 0.0])


def test_a_cost_that_must_stay_above_a_bound_is_moved_down():
    # the queue's constraints read -ζ_i <= 0: pessimism lowers the costs
    model = build_model("queue")
    assert signal_directions(model).tolist() == [1.0, -1.0, -1.0]
    estimates = SignalEstimates(model)
    _, costs = estimates.planning_tables(5)
    assert np.array_equal(costs, np.broadcast_to(estimates.low[1:, None, None], costs.shape))


def test_mean_signals_are_learned_exactly():
    model = build_model("queue")
    agent = PsCurl(model, rewards="learned")
    run(agent, "queue", 3000, seed=2, progress=False)
    estimates = agent.signal_estimates
    seen = estimates.visits > 0
    assert seen.sum() > 10
    table = np.concatenate([model.rewards, model.costs]).reshape(3, -1)
    assert np.array_equal(estimates.means[:, seen], table[:, seen])   # bit for bit
    assert np.all(estimates.means[:, ~seen] == 0.0)


def test_every_agent_takes_learned_rewards():
    model = build_model("queue")
    for name, options in [("uc-curl", {}), ("ps-curl", {}), ("safe-curl", {}), ("cmdp-psrl", {}),
                          ("ucrl-cmdp", {"horizon": 400}), ("primal-dual", {"horizon": 400, "episode_length": 100})]:
        trace = run(make_agent(name, model, rewards="learned", **options), "queue", 400, seed=1,
                    signals="gaussian", progress=False)
        assert trace.meta["rewards"] == "learned" and trace.epochs
    with pytest.raises(AgentError, match="rewards must be one of 'known', 'learned', got 'told'"):
        PsCurl(model, rewards="told")


def test_one_epoch_of_ps_curl_with_learned_rewards_by_hand():
    model = _two_state_model()
    agent = PsCurl(model, backend="highs", rewards="learned", tightness_constant=0.0, seed=0)
    agent.reset(0)
    # before any data: every pair at the reward's upper bound 1 and the cost's upper bound 2, so ζ = 2 > 1 for any
    # policy: the program with the constraint is infeasible and the fallback (no constraint rows) is played
    plan = agent.begin_epoch(1)
    assert np.array_equal(agent.planning.rewards, np.ones((1, 2, 2)))
    assert np.array_equal(agent.planning.costs, np.full((1, 2, 2), 2.0))
    assert plan.source == "fallback"
    # the epoch observed pair (0, 0) 400 times (mean reward 0.1, mean cost 0.05) and (1, 0) 100 times (mean reward
    # 0.9, mean cost 1.2)
    agent.observe_signals(np.array([400.0, 0, 100, 0]), np.array([[0.1, 0, 0.9, 0]]), np.array([[0.05, 0, 1.2, 0]]))
    transitions = np.zeros((2, 2, 2))
    transitions[0, 0, 0], transitions[0, 0, 1], transitions[1, 0, 0] = 300, 100, 100
    agent.end_epoch(transitions, np.array([130.0]), np.array([140.0]), 500)
    plan = agent.begin_epoch(501)
    b400 = math.sqrt(math.log(2 * 4 * 501 / SIGNAL_DELTA) / 800)
    b100 = math.sqrt(math.log(2 * 4 * 501 / SIGNAL_DELTA) / 200)
    rewards = np.array([0.1 + b400, 1.0, min(1.0, 0.9 + b100), 1.0])
    costs = np.array([0.05 + 2 * b400, 2.0, min(2.0, 1.2 + 2 * b100), 2.0])
    assert agent.planning.rewards.ravel() == pytest.approx(rewards, abs=1e-15)
    assert agent.planning.costs.ravel() == pytest.approx(costs, abs=1e-15)
    # the occupancy LP on the epoch's posterior draw with these tables, written out here
    Q = agent.program.kernel
    flow = np.zeros((2, 4))
    for s in range(2):
        for a in range(2):
            flow[:, 2 * s + a] -= Q[s, a]
            flow[s, 2 * s + a] += 1.0
    lp = linprog(-rewards, A_ub=costs[None], b_ub=[1.0], A_eq=np.vstack([flow[:1], np.ones(4)]), b_eq=[0.0, 1.0],
                 bounds=[(0, None)] * 4, method="highs")
    assert lp.status == 0 and plan.source == "tight"
    occupancy = lp.x.reshape(2, 2)
    expected = occupancy / occupancy.sum(axis=1, keepdims=True)
    reached = occupancy.sum(axis=1) > 1e-9
    assert plan.policy[reached] == pytest.approx(expected[reached], abs=1e-7)


# -- CMDP-PSRL -----------------------------------------------------------------------------------------------------

def _epochs(trace):
    return [(e.start, e.length, e.source, e.exact_objective) for e in trace.epochs]


def test_cmdp_psrl_is_ps_curl_without_tightening_on_doubling_epochs():
    model = build_model("queue")
    psrl = run(CmdpPsrl(model, backend="highs"), "queue", 3000, seed=4, progress=False)
    same = run(PsCurl(model, backend="highs", trigger="doubling", tightness_constant=0.0), "queue", 3000, seed=4,
               progress=False)
    assert _epochs(psrl) == _epochs(same)
    assert np.array_equal(psrl.checkpoints["regret"], same.checkpoints["regret"])
    assert all(e.epsilon == 0.0 for e in psrl.epochs)
    # where the rules differ (the paper's linear epochs of PS-CURL's experiments, or its tightening) so do the runs
    linear = run(PsCurl(model, backend="highs", trigger="linear", tightness_constant=0.0), "queue", 3000, seed=4,
                 progress=False)
    assert [e.start for e in linear.epochs] != [e.start for e in psrl.epochs]
    tight = run(PsCurl(model, backend="highs", trigger="doubling"), "queue", 3000, seed=4, progress=False)
    assert any(e.epsilon > 0 for e in tight.epochs) and _epochs(tight) != _epochs(psrl)


def test_cmdp_psrl_refuses_the_rules_it_fixes():
    model = build_model("queue")
    for key, value in [("trigger", "linear"), ("tightness_constant", 1.0), ("margin", "range")]:
        with pytest.raises(AgentError, match=f"cmdp-psrl does not take '{key}'"):
            make_agent("cmdp-psrl", model, **{key: value})
    assert CmdpPsrl(model).describe()["trigger"] == "doubling"


def test_fast_and_generic_paths_observe_the_same_noisy_signals():
    model = build_model("queue")
    traces = [run(PsCurl(model, rewards="learned"), "queue", 1500, seed=6, path=path, signals="bernoulli",
                  progress=False) for path in ("fast", "generic")]
    assert _epochs(traces[0]) == _epochs(traces[1])
    assert np.array_equal(traces[0].checkpoints["regret"], traces[1].checkpoints["regret"])


# -- the episodic setting ------------------------------------------------------------------------------------------

def _episodic_model():
    from curlopt.models.episodic import EpisodicCMDP
    from curlopt.utilities.library import LinearBound

    kernel = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.3, 0.7]]])
    return EpisodicCMDP(np.array([[0.1, 0.35], [0.9, 0.6]]), np.array([[0.0, 0.45], [0.8, 0.15]]), Linear([1.0]),
                        [LinearBound([1.0], 1.0)], kernel=kernel, initial=np.array([0.6, 0.4]), horizon=3,
                        safe_policy=np.array([[1.0, 0.0], [0.0, 1.0]]), name="two-state")


def test_every_episodic_agent_takes_learned_rewards_and_mean_signals_are_learned_exactly():
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    model = _episodic_model()
    table = np.concatenate([model.step_rewards, model.step_costs], axis=1).transpose(1, 0, 2, 3).reshape(2, -1)
    for name in ("opt-cmdp", "dope", "optpess-lp", "uc-curl", "ps-curl"):
        agent = make_episodic_agent(name, model, seed=0, rewards="learned")
        trace = run_episodes(model, agent, 30, seed=1, progress=False)
        seen = agent.signal_estimates.visits > 0
        assert seen.any() and np.array_equal(agent.signal_estimates.means[:, seen], table[:, seen]), name
        assert trace.meta["agent"]["rewards"] == "learned"
        noisy = run_episodes(model, make_episodic_agent(name, model, seed=0, rewards="learned"), 30, seed=1,
                             signals="bernoulli", progress=False)
        assert noisy.meta["signals"] == "bernoulli"
    with pytest.raises(AgentError, match="rewards must be one of 'known', 'learned'"):
        make_episodic_agent("opt-cmdp", model, rewards="told")


def test_episodic_noisy_signals_leave_the_known_agents_runs_unchanged():
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    model = _episodic_model()
    plain = run_episodes(model, make_episodic_agent("opt-cmdp", model, seed=0), 20, seed=2, progress=False)
    noisy = run_episodes(model, make_episodic_agent("opt-cmdp", model, seed=0), 20, seed=2, signals="gaussian",
                         progress=False)
    assert np.array_equal(plain.columns["regret"], noisy.columns["regret"])
    assert "signals" not in plain.meta and "rewards" not in plain.meta["agent"]


def test_opt_cmdp_learns_optimistic_costs_and_dope_pessimistic_ones():
    from curlopt.agents.episodic import make_episodic_agent

    model = _episodic_model()
    # before any observation: OptCMDP plans on the costs' lower bound 0, DOPE on their upper bound 0.8
    opt = make_episodic_agent("opt-cmdp", model, seed=0, rewards="learned")
    opt.begin_episode(1)
    assert np.all(opt.step_costs == 0.0) and np.all(opt.step_rewards == 0.9)
    dope = make_episodic_agent("dope", model, seed=0, rewards="learned")
    dope.begin_episode(1)
    assert np.all(dope.step_costs == 0.8) and np.all(dope.step_rewards == 0.9)

"""The minimum epoch length (``min_epoch_length``): fewer epochs, and so fewer solves, on models with many pairs.

What is checked, and against what:

* the epoch the loop plays with a minimum length is the one a step-by-step reference written here plays:
  thresholds first checked after ``L`` steps, then at every step (Hypothesis over random chains, policies,
  thresholds, ``L`` and caps; both are driven by the same uniforms);
* a hand trace of doubling epochs with ``L = 3`` on a two-state cycle, on both stepping paths;
* every epoch but the last lasts at least ``L`` steps, so a run has at most ``T / L + 1`` epochs;
* ``L = 1`` (the default) is the trigger alone: the same trace as without the option, and no key in the trace;
* invalid values are refused naming the option.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curlopt import CMDP, Linear, build_model
from curlopt.agents import PsCurl, UcCurl, make_agent
from curlopt.envs import TabularCMDPEnv, make
from curlopt.errors import AgentError
from curlopt.experiments.simulation.loop import ChainSimulator, _cumulative_rows, _epoch_steps, run


def simulator(kernel: np.ndarray, seed: int) -> ChainSimulator:
    actions, transitions = np.random.SeedSequence(seed).spawn(2)
    return ChainSimulator(kernel, np.random.default_rng(actions), np.random.default_rng(transitions))


def reference_epoch(sim: ChainSimulator, state: int, rows, thresholds: np.ndarray, cap: int, minimum: int, A: int):
    """One step at a time: the epoch ends after step ``i >= minimum`` at which some pair has reached its threshold
    (at that step or before), or after ``cap`` steps."""
    no_limit = [math.inf] * thresholds.size
    within = np.zeros(thresholds.size)
    pairs = []
    while len(pairs) < cap:
        step, _, state = sim(state, rows, no_limit, 1, A)
        pairs.append(int(step[0]))
        within[step[0]] += 1
        if len(pairs) >= minimum and np.any(within >= thresholds):
            break
    return np.array(pairs), state


@settings(max_examples=max(10, settings.default.max_examples))
@given(st.integers(2, 5), st.integers(1, 3), st.integers(0, 2**31), st.integers(1, 30), st.integers(1, 60),
       st.lists(st.integers(1, 12), min_size=15, max_size=15))
def test_the_loop_plays_the_epoch_of_the_step_by_step_rule(S, A, seed, minimum, cap, threshold_values):
    rng = np.random.default_rng(seed)
    kernel = rng.dirichlet(np.ones(S), size=(S, A))
    policy = rng.dirichlet(np.ones(A), size=S)
    thresholds = np.array(threshold_values[: S * A], dtype=float)
    if thresholds.size < S * A:
        thresholds = np.resize(thresholds, S * A)
    rows = _cumulative_rows(policy)
    loop_sim, reference_sim = simulator(kernel, seed), simulator(kernel, seed)
    pairs, nexts, state = _epoch_steps(loop_sim, 0, rows, thresholds, cap, A, minimum)
    expected, expected_state = reference_epoch(reference_sim, 0, rows, thresholds, cap, minimum, A)
    np.testing.assert_array_equal(pairs, expected)
    assert state == expected_state
    np.testing.assert_array_equal(nexts[:-1], pairs[1:] // A)


def cycle_model() -> CMDP:
    """Two states, one action, the cycle 0 -> 1 -> 0 from state 0: step t visits pair (0, 0) when t is odd."""
    kernel = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])
    return CMDP(rewards=np.array([[[1.0], [0.0]]]), objective=Linear([1.0]), kernel=kernel, initial=[1.0, 0.0])


# Hand trace, doubling (threshold max(1, N(s,a))) with L = 3, pairs written (N(0), N(1)):
#   e1 t=1  N=(0,0) thresholds (1,1): steps 1-3 unchecked, ν=(2,1) reached -> ends at 3 (length 3)
#   e2 t=4  N=(2,1) thresholds (2,1): steps 4-6, ν=(1,2): pair 1 reached -> ends at 6
#   e3 t=7  N=(3,3) thresholds (3,3): steps 7-9 ν=(2,1), none reached; step 10 ν(1)=2, step 11 ν(0)=3 -> ends (length 5)
#   e4 t=12 N=(6,5) thresholds (6,5): ν(1)=5 at step 20 (length 9, the rule's own epoch)
#   e5 t=21 N=(10,10): cut by the horizon T=30 (length 10)
HAND_STARTS, HAND_LENGTHS = [1, 4, 7, 12, 21], [3, 3, 5, 9, 10]


@pytest.mark.parametrize("agent_class", [UcCurl, PsCurl])
@pytest.mark.parametrize("path", ["fast", "generic"])
def test_hand_traced_epochs_with_a_minimum_length(agent_class, path):
    model = cycle_model()
    agent = agent_class(model, trigger="doubling", min_epoch_length=3)
    trace = run(agent, make(model), 30, seed=0, path=path, progress=False)
    assert [e.start for e in trace.epochs] == HAND_STARTS
    assert [e.length for e in trace.epochs] == HAND_LENGTHS
    np.testing.assert_array_equal(agent.visits[:, 0], [15, 15])
    assert trace.meta["min_epoch_length"] == 3


@pytest.mark.parametrize("trigger", ["doubling", "linear"])
def test_epochs_last_at_least_the_minimum(trigger):
    model = build_model("random", n_states=6, n_actions=3, seed=2)
    steps, minimum = 3000, 200
    plain = run(make_agent("ps-curl", model, trigger=trigger), TabularCMDPEnv(model), steps, seed=1, progress=False)
    bounded = run(make_agent("ps-curl", model, trigger=trigger, min_epoch_length=minimum), TabularCMDPEnv(model), steps,
                  seed=1, progress=False)
    lengths = [e.length for e in bounded.epochs]
    assert sum(lengths) == steps and all(length >= minimum for length in lengths[:-1])
    assert len(lengths) <= steps // minimum + 1 < len(plain.epochs)


def test_a_minimum_of_one_is_the_trigger_alone():
    model = build_model("queue")

    def timeless(**options):
        data = run(make_agent("uc-curl", model, radius="experiment", **options), make("queue"), 1500, seed=4,
                   progress=False).to_dict()
        data.pop("wall_time")
        for epoch in data["epochs"]:
            epoch.pop("solve_time")
        return data

    default = timeless()
    assert timeless(min_epoch_length=1) == default and "min_epoch_length" not in default["meta"]


@pytest.mark.parametrize("value", [0, -5, 2.5, True, "10"])
def test_an_invalid_minimum_is_refused(value):
    with pytest.raises(AgentError, match="min_epoch_length must be an integer >= 1"):
        PsCurl(build_model("queue"), min_epoch_length=value)

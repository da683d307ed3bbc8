"""The learning loop's stepping (curlopt/experiments/simulation/loop.py): the fast tabular path, the generic
Gymnasium path, and a trace by hand.

The contract (curlopt/experiments/simulation/loop.py and curlopt/envs/tabular.py): each step draws one action
uniform u, plays the first action a with ``π(0|s) + ... + π(a|s) > u`` (the last action if none), then one
uniform u' from the environment's generator, and moves to the first state s' with
``P(0|s,a) + ... + P(s'|s,a) > u'`` (the last state if none); an epoch ends at the step that brings a pair's
visits in the epoch to its threshold, or after ``cap`` steps. The references are a plain Python loop over the
kernel and the uniforms written out here, and the environment's own ``step``, one call per step.
The loop's exact evaluator of epoch policies is checked against the stationary distribution solved here.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from curlopt.envs.tabular import TabularCMDPEnv
from curlopt.experiments.simulation.loop import ChainSimulator, _cumulative_rows, _ExactEvaluator, _generic_epoch
from curlopt.experiments.simulation.streams import UniformStream
from curlopt.models import queue_model, random_model


def first_index_above(weights, u: float) -> int:
    """The first index whose running sum of ``weights`` exceeds ``u``; the last index if none does."""
    total = 0.0
    for index, weight in enumerate(weights):
        total += float(weight)
        if total > u:
            return index
    return len(weights) - 1


def hand_trace(kernel, policy, thresholds, cap, state, action_uniforms, state_uniforms):
    """The epoch stepped by hand: (pairs, next states, final state, uniforms used)."""
    S, A = policy.shape
    visits = np.zeros(S * A, dtype=int)
    pairs, nexts = [], []
    for step in range(cap):
        action = first_index_above(policy[state], action_uniforms[step])
        pair = state * A + action
        state = first_index_above(kernel[state, action], state_uniforms[step])
        pairs.append(pair)
        nexts.append(state)
        visits[pair] += 1
        if visits[pair] >= thresholds[pair]:  # a NaN threshold is never reached
            break
    return pairs, nexts, state, len(pairs)


def epoch_plans(S: int, A: int, kind: str, rng: np.random.Generator, count: int):
    """``count`` epochs: a policy (some with zero entries), thresholds of the given kind and a cap."""
    plans = []
    for _ in range(count):
        policy = rng.dirichlet(np.ones(A), size=S)
        policy[rng.random((S, A)) < 0.2] = 0.0  # actions a plan never plays
        policy[policy.sum(axis=1) == 0, 0] = 1.0
        policy /= policy.sum(axis=1, keepdims=True)
        thresholds = rng.integers(1, 40, size=S * A).astype(float)
        if kind == "infinite":
            thresholds[:] = math.inf
        elif kind == "mixed-nan":
            thresholds[rng.random(S * A) < 0.5] = math.nan
        elif kind == "zero":
            thresholds[rng.integers(S * A)] = 0.0
        plans.append((policy, thresholds, int(rng.integers(1, 600))))
    return plans


@pytest.mark.parametrize("kind", ["finite", "infinite", "mixed-nan", "zero"])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_generic_path_and_hand_trace_agree(kind, seed):
    model = random_model(n_states=5, n_actions=3, seed=4)
    S, A = model.n_states, model.n_actions
    plans = epoch_plans(S, A, kind, np.random.default_rng(seed), 12)
    env = TabularCMDPEnv(model)
    env.reset(seed=100 + seed, options={"state": seed % S})
    # the fast path reads the environment's generator as the loop does; a copy keeps the two paths apart
    fast = ChainSimulator(model.kernel, np.random.default_rng(seed), copy.deepcopy(env.unwrapped.np_random),
                          state=seed % S)
    generic_actions = UniformStream(np.random.default_rng(seed))
    action_uniforms = np.random.default_rng(seed).random(12 * 600)
    state_uniforms = copy.deepcopy(env.unwrapped.np_random).random(12 * 600)
    state, used = seed % S, 0
    for policy, thresholds, cap in plans:
        by_hand = hand_trace(model.kernel, policy, thresholds, cap, state, action_uniforms[used:],
                             state_uniforms[used:])
        pairs, nexts = fast.play(policy, cap, thresholds.reshape(S, A))
        g_pairs, g_nexts, g_state = _generic_epoch(env, state, _cumulative_rows(policy), thresholds.tolist(), cap,
                                                   generic_actions, A, model)
        assert pairs.tolist() == g_pairs.tolist() == by_hand[0]
        assert nexts.tolist() == g_nexts.tolist() == by_hand[1]
        assert fast.state == g_state == by_hand[2] == int(env.unwrapped.state)
        state, used = by_hand[2], used + by_hand[3]
    # both paths have consumed exactly the uniforms the hand trace used, and no more
    assert fast.actions.take() == generic_actions.take() == action_uniforms[used]
    assert fast.transitions.take() == env.unwrapped.np_random.random() == state_uniforms[used]


def test_the_hand_trace_is_the_inverse_cdf_draw():
    """The reference itself: a two-state chain whose steps can be read off the uniforms."""
    kernel = np.array([[[0.25, 0.75]], [[1.0, 0.0]]])  # state 0 stays with 1/4, state 1 always returns to 0
    policy = np.ones((2, 1))
    pairs, nexts, state, used = hand_trace(kernel, policy, [math.inf, math.inf], 4, 0, [0.5] * 4,
                                           [0.1, 0.9, 0.3, 0.25])
    # u' = 0.1 < 1/4 stays in 0; 0.9 >= 1/4 moves to 1; state 1 returns to 0 whatever u'; 0.25 is not < 1/4: to 1
    assert nexts == [0, 1, 0, 1] and pairs == [0, 0, 1, 0] and state == 1 and used == 4
    # a threshold of 2 on the pair (0, 0) ends the epoch at its second visit
    assert hand_trace(kernel, policy, [2, math.inf], 4, 0, [0.5] * 4, [0.1, 0.9, 0.3, 0.25])[3] == 2


def stationary_by_hand(kernel, policy) -> np.ndarray:
    """The stationary distribution of the chain under ``policy``: μ (P_π - I) = 0, Σ μ = 1, by least squares."""
    S = kernel.shape[0]
    chain = np.einsum("sa,sat->st", policy, kernel)
    system = np.vstack([(chain - np.eye(S)).T, np.ones((1, S))])
    mu, *_ = np.linalg.lstsq(system, np.append(np.zeros(S), 1.0), rcond=None)
    return mu


def test_exact_evaluator_gives_the_stationary_performance_and_copies():
    model = queue_model()
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(3)
    evaluator = _ExactEvaluator(model)
    policies = [rng.dirichlet(np.ones(A), size=S) for _ in range(5)]
    for policy in policies + policies[::-1]:  # the second pass reads the memory
        rho = stationary_by_hand(model.kernel, policy)[:, None] * policy
        lam = np.einsum("sa,ksa->k", rho, model.rewards)
        zeta = np.einsum("sa,ksa->k", rho, model.costs)
        rewards, costs, objective, constraints = evaluator.evaluate(policy.copy())
        np.testing.assert_allclose(rewards, lam, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(costs, zeta, rtol=1e-10, atol=1e-12)
        assert objective == pytest.approx(float(model.objective.value(lam)), rel=1e-10)
        np.testing.assert_allclose(constraints, [g.value(zeta) for g in model.constraints], rtol=1e-10, atol=1e-12)
    remembered = evaluator.evaluate(policies[0])
    assert remembered == evaluator.evaluate(policies[0].copy())  # the same bits give the same numbers
    remembered[0].append(99.0)  # a caller's list is its own
    assert len(evaluator.evaluate(policies[0])[0]) == model.n_rewards


def test_batched_evaluations_fill_every_record_with_the_policy_it_was_given(monkeypatch):
    """Records wait for their batch; each gets the stationary performance of the policy it was given, even when the
    caller's array changes afterwards, and the last partial batch is filled by flush()."""
    from curlopt.experiments.simulation.loop import _BatchedEvaluations
    from curlopt.experiments.simulation.trace import EpochRecord

    model = queue_model()
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(8)
    monkeypatch.setattr(_BatchedEvaluations, "BATCH_EPOCHS", 3)
    batched = _BatchedEvaluations(_ExactEvaluator(model))
    records, played = [], []
    policy = rng.dirichlet(np.ones(A), size=S)
    for index in range(7):
        record = EpochRecord(index=index, start=index + 1, length=1, epsilon=0.0, source="tight")
        batched.add(record, policy)
        records.append(record)
        played.append(policy.copy())
        policy[:] = rng.dirichlet(np.ones(A), size=S)  # the agent's array changes in place after its epoch
        if index == 3:  # the first batch of three is filled, the fourth record waits
            assert all(r.exact_objective is not None for r in records[:3]) and records[3].exact_objective is None
    batched.flush()
    for record, policy_played in zip(records, played, strict=True):
        rho = stationary_by_hand(model.kernel, policy_played)[:, None] * policy_played
        lam = np.einsum("sa,ksa->k", rho, model.rewards)
        zeta = np.einsum("sa,ksa->k", rho, model.costs)
        np.testing.assert_allclose(record.exact_rewards, lam, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(record.exact_costs, zeta, rtol=1e-10, atol=1e-12)
        assert record.exact_objective == pytest.approx(float(model.objective.value(lam)), rel=1e-10)
        np.testing.assert_allclose(record.exact_constraints, [g.value(zeta) for g in model.constraints],
                                   rtol=1e-10, atol=1e-12)

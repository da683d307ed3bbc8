"""The faster paths give bit for bit what the straightforward computations give.

Each test runs a fast path beside a plain reference computation (the code it replaced, or
the library routine it avoids) and asserts exact equality. Nothing here measures time.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
import pytest

from curlopt.models.chains import _strongly_connected
from curlopt.experiments.simulation.loop import _cumulative_rows, _ExactEvaluator, _fast_epoch
from curlopt.experiments.simulation.streams import UniformStream
from curlopt.models.cmdp import stationary_occupancy
from curlopt.models import queue_model, random_model
from curlopt.programs.optimistic import BoxOptimisticProgram


def _full_box_values(program: BoxOptimisticProgram) -> np.ndarray:
    """The parameter values recomputed from scratch, as before the incremental update."""
    lower, upper = program.kernel_bounds()
    values = np.empty_like(program.linear.param_values)
    groups = program.linear.param_groups
    values[groups["box_upper"]] = -upper.ravel()
    values[groups["box_lower"]] = lower.ravel()
    return values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_program_incremental_update_is_bit_identical(seed):
    model = queue_model()
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(seed)
    program = BoxOptimisticProgram(model, horizon=12345.0)
    counts = np.zeros((S, A, S))
    assert np.array_equal(program.linear.param_values, _full_box_values(program))
    for epoch in range(40):
        # a few pairs visited per epoch, as in UCRL-CMDP's short epochs
        for pair in rng.choice(S * A, size=rng.integers(0, 8), replace=False):
            counts.reshape(S * A, S)[pair] += rng.integers(0, 30, size=S)
        version = program.version
        program.update(counts=counts, time=1 + 7 * epoch, epsilon=0.0)
        assert program.version == version + 1
        assert np.array_equal(program.linear.param_values, _full_box_values(program))
    program.update(time=10 ** 6)  # the radius uses T, not the time: nothing changes
    assert np.array_equal(program.linear.param_values, _full_box_values(program))


def _reference_fast_epoch(state, policy_rows, kernel_rows, thresholds, cap, actions, transitions, n_actions):
    """The stepping loop as it was: one uniform of each stream per step, the trigger checked every step."""
    pairs, nexts, visits = [], [], [0] * len(thresholds)
    s = state
    for _ in range(cap):
        sa = s * n_actions + bisect_right(policy_rows[s], actions.take())
        s = bisect_right(kernel_rows[sa], transitions.take())
        pairs.append(sa)
        nexts.append(s)
        visits[sa] += 1
        if visits[sa] >= thresholds[sa]:
            break
    return np.asarray(pairs, dtype=np.int64), np.asarray(nexts, dtype=np.int64), s


@pytest.mark.parametrize("kind", ["finite", "infinite", "mixed-nan", "zero"])
def test_fast_epoch_matches_reference(kind):
    model = random_model(n_states=5, n_actions=3, seed=4)
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(7)
    kernel_rows = _cumulative_rows(model.kernel)
    for trial in range(20):
        policy = rng.dirichlet(np.ones(A), size=S)
        thresholds = rng.integers(1, 60, size=S * A).astype(float)
        if kind == "infinite":
            thresholds[:] = math.inf
        elif kind == "mixed-nan":
            thresholds[rng.random(S * A) < 0.5] = math.nan
        elif kind == "zero":
            thresholds[0] = 0.0
        cap = int(rng.integers(1, 3000))
        outputs = []
        for stepper in (_fast_epoch, _reference_fast_epoch):
            actions = UniformStream(np.random.default_rng(trial))
            transitions = UniformStream(np.random.default_rng(100 + trial))
            result = stepper(trial % S, _cumulative_rows(policy), kernel_rows, thresholds.tolist(), cap, actions,
                             transitions, A)
            outputs.append((*result, actions.take(), transitions.take()))  # the streams' positions too
        fast, reference = outputs
        for got, expected in zip(fast, reference):
            assert np.array_equal(got, expected)


def test_exact_evaluator_matches_direct_evaluation_and_copies():
    model = queue_model()
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(3)
    evaluator = _ExactEvaluator(model)
    policies = [rng.dirichlet(np.ones(A), size=S) for _ in range(5)]
    for policy in policies + policies[::-1]:  # the second pass reads the memory
        rho = stationary_occupancy(model.kernel, policy)
        lam, zeta = model.average_rewards(rho), model.average_costs(rho)
        rewards, costs, objective, constraints = evaluator.evaluate(policy.copy())
        assert rewards == lam.tolist() and costs == zeta.tolist()
        assert objective == float(model.objective.value(lam))
        assert constraints == model.constraint_values(zeta).tolist()
    first = evaluator.evaluate(policies[0])
    first[0].append(99.0)  # a caller's list is its own
    assert len(evaluator.evaluate(policies[0])[0]) == model.n_rewards


def test_strongly_connected_matches_scipy():
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 9))
        adjacency = rng.random((n, n)) < rng.uniform(0.05, 0.6)
        count, _ = connected_components(csr_matrix(adjacency), directed=True, connection="strong")
        assert _strongly_connected(adjacency) == (count == 1)

"""Programs on extreme data: unvisited pairs, huge counts and times, tiny probabilities, degenerate LPs and ties,
an absorbing state. Every backend solves them to a finite policy; no NaN reaches a policy."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import backend_or_skip

from curlopt import CMDP, Linear, LinearBound, OccupancyProgram, OptimisticProgram, build_model
from curlopt.programs.policy import policy_from_occupancy
from curlopt.testing.reference import model_optimum

#: the queue's optimum, from the independent reference LP (not typed in)
QUEUE_OPTIMUM = model_optimum(build_model("queue")).value


def assert_policy_sane(result, n_states, n_actions):
    assert result.ok, result.message
    policy = result.policy
    assert policy.shape == (n_states, n_actions)
    assert np.all(np.isfinite(policy)) and np.all(policy >= 0)
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, atol=1e-9)
    assert np.isfinite(result.objective)


def queue_counts(scale: float) -> np.ndarray:
    model = build_model("queue")
    return model.kernel * scale


@pytest.mark.parametrize("scale, time", [(0.0, 1.0), (1.0, 10.0), (1e6, 1e8), (1e9, 1e9)])
def test_optimistic_program_with_extreme_counts_and_times(backend_name, scale, time):
    model = build_model("queue")
    program = OptimisticProgram(model, counts=queue_counts(scale), time=time, epsilon=0.0)
    result = backend_or_skip(backend_name, program).solve()
    assert_policy_sane(result, 6, 16)
    # with 1e9 samples per pair P^ = P and β ~ 1e-3: the optimistic value is near the true optimum
    if scale >= 1e9:
        assert result.objective == pytest.approx(QUEUE_OPTIMUM, abs=0.05)


def test_unvisited_pairs_leave_the_kernel_free(backend_name):
    # Half the pairs never visited: P^ = 0 and β >= 1 there, so the program may route them anywhere.
    model = build_model("queue")
    counts = queue_counts(50.0)
    counts[:, ::2] = 0.0
    result = backend_or_skip(backend_name, OptimisticProgram(model, counts, time=1e4)).solve()
    assert_policy_sane(result, 6, 16)


def test_tiny_probabilities_in_the_kernel(backend_name):
    model = build_model("queue")
    kernel = model.kernel.copy()
    # put 1e-12 mass on every zero entry and renormalise
    kernel = np.where(kernel == 0, 1e-12, kernel)
    kernel /= kernel.sum(axis=2, keepdims=True)
    result = backend_or_skip(backend_name, OccupancyProgram(model, kernel=kernel)).solve()
    assert_policy_sane(result, 6, 16)
    assert result.objective == pytest.approx(QUEUE_OPTIMUM, abs=1e-5)


def test_degenerate_program_with_ties(backend_name):
    # Every action is identical: all policies are optimal (a tie everywhere); the LP is degenerate.
    kernel = np.full((3, 2, 3), 1 / 3)
    model = CMDP(np.ones((1, 3, 2)), np.ones((1, 3, 2)), Linear([1.0]), [LinearBound([1.0], 1.0)], kernel)
    result = backend_or_skip(backend_name, OccupancyProgram(model)).solve()
    assert_policy_sane(result, 3, 2)
    assert result.objective == pytest.approx(1.0, abs=1e-7)


def test_an_absorbing_state_leaves_others_unvisited(backend_name):
    # State 2 is absorbing under every action: the optimum puts all mass there, states 0 and 1 get
    # ρ = 0, and their policy must be uniform (docs/math.md §2), not NaN.
    kernel = np.zeros((3, 2, 3))
    kernel[:, :, 2] = 1.0
    model = CMDP(np.ones((1, 3, 2)), objective=Linear([1.0]), kernel=kernel)
    result = backend_or_skip(backend_name, OccupancyProgram(model)).solve()
    assert_policy_sane(result, 3, 2)
    np.testing.assert_allclose(result.policy[:2], 0.5, atol=1e-6)


def test_policy_extraction_never_returns_nan():
    rho = np.array([[0.0, 0.0], [np.nan, 1.0], [-1e-14, 1e-14], [1e-300, 0.0]])
    policy = policy_from_occupancy(rho)
    assert np.all(np.isfinite(policy))
    np.testing.assert_allclose(policy.sum(axis=1), 1.0)
    np.testing.assert_allclose(policy[0], [0.5, 0.5])

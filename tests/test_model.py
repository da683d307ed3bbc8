"""Validation of the CMDP model: every refusal names the argument and the problem."""

from __future__ import annotations

import numpy as np
import pytest

from curlopt import CMDP, Linear, LinearBound, ModelError, SumOfLogs
from curlopt.models.cmdp import stationary_occupancy


def tiny(**overrides):
    """A valid 2-state, 2-action model; overrides replace single arguments."""
    kernel = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.3, 0.7]]])
    args = dict(
        rewards=np.ones((1, 2, 2)),
        costs=np.zeros((1, 2, 2)),
        objective=Linear([1.0]),
        constraints=[LinearBound([1.0], 0.5)],
        kernel=kernel,
        initial=[1.0, 0.0],
    )
    args.update(overrides)
    return CMDP(**args)


def test_valid_model_has_sizes():
    model = tiny()
    assert (model.n_states, model.n_actions, model.n_rewards, model.n_costs, model.n_constraints) == (2, 2, 1, 1, 1)


def test_two_dimensional_signals_are_one_signal():
    model = tiny(rewards=np.ones((2, 2)), costs=np.zeros((2, 2)))
    assert model.rewards.shape == (1, 2, 2) and model.costs.shape == (1, 2, 2)


def test_arrays_are_read_only():
    model = tiny()
    with pytest.raises(ValueError):
        model.kernel[0, 0, 0] = 0.5


@pytest.mark.parametrize(
    "overrides, pattern",
    [
        ({"rewards": np.ones(3)}, r"rewards must have shape \(count, S, A\)"),
        ({"rewards": np.ones((1, 2, 2, 2))}, r"rewards must have shape"),
        ({"rewards": [[1.0, np.nan], [1.0, 1.0]]}, r"rewards contains NaN or infinite entries \(first at index \(0, 1\)\)"),
        ({"rewards": [[1.0, np.inf], [1.0, 1.0]]}, r"rewards contains NaN or infinite"),
        ({"rewards": "abc"}, r"rewards must be an array of numbers"),
        ({"costs": np.zeros((1, 3, 2))}, r"costs has shape \(1, 3, 2\), but the model has S=2 states and A=2 actions"),
        ({"costs": np.full((1, 2, 2), np.nan)}, r"costs contains NaN"),
        ({"kernel": np.full((2, 2, 3), 1 / 3)}, r"kernel must have shape \(S, A, S\) = \(2, 2, 2\), got \(2, 2, 3\)"),
        ({"kernel": np.full((2, 2, 2), np.nan)}, r"kernel contains NaN"),
        ({"kernel": np.array([[[1.2, -0.2], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]])}, r"kernel has an entry outside \[0, 1\] at index \(0, 0, 0\)"),
        ({"kernel": np.array([[[0.5, 0.4], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]])}, r"kernel does not sum to 1 \(tolerance 1e-09\): the row at index \(0, 0\) sums to 0\.9"),
        ({"initial": [0.5, 0.6]}, r"initial does not sum to 1"),
        ({"initial": [1.0, 0.0, 0.0]}, r"initial must have shape \(S,\) = \(2,\), got \(3,\)"),
        ({"initial": [1.5, -0.5]}, r"initial has an entry outside \[0, 1\]"),
        ({"objective": None}, r"objective is required"),
        ({"objective": "max"}, r"objective must be a curlopt Utility, got str"),
        ({"objective": Linear([1.0, 1.0])}, r"takes 2 inputs but the model has K=1 reward signals"),
        ({"constraints": [LinearBound([1.0, 2.0], 0.0)]}, r"constraints\[0\] .* takes 2 inputs but the model has d=1 cost signals"),
        ({"constraints": [SumOfLogs(dim=1)]}, r"constraints\[0\] .* is concave; constraints g\(ζ\) <= 0 must be convex"),
        ({"constraints": ["x <= 1"]}, r"constraints\[0\] must be a curlopt Utility, got str"),
    ],
)
def test_invalid_models_are_refused_with_a_message(overrides, pattern):
    with pytest.raises(ModelError, match=pattern):
        tiny(**overrides)


def test_kernel_tolerance_is_1e_9():
    kernel = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.3, 0.7]]])
    within = kernel.copy()
    within[0, 0, 0] += 5e-10
    tiny(kernel=within)  # accepted
    beyond = kernel.copy()
    beyond[0, 0, 0] += 5e-9
    with pytest.raises(ModelError, match="does not sum to 1"):
        tiny(kernel=beyond)


def test_convex_objective_is_refused():
    from curlopt import ConvexQuadratic

    with pytest.raises(ModelError, match="is convex; the objective is maximised and must be concave"):
        tiny(objective=ConvexQuadratic(np.eye(1)))


def test_stationary_occupancy_matches_closed_form():
    # Two-state chain under a fixed policy: P(0->1) = a, P(1->0) = b gives μ = (b, a) / (a + b).
    kernel = np.array([[[0.7, 0.3]], [[0.4, 0.6]]])  # one action
    rho = stationary_occupancy(kernel, np.ones((2, 1)))
    a, b = 0.3, 0.4
    np.testing.assert_allclose(rho[:, 0], [b / (a + b), a / (a + b)], atol=1e-12)

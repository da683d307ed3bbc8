"""A copied program (copy.deepcopy, pickle) is a program of its own: its update() changes the data every backend
reads (``linear.param_values``), not a detached copy of them, and leaves the original as it was.

The reference is a program built fresh and updated with the same data."""

import copy
import pickle

import numpy as np
import pytest

from curlopt.backends import get_backend
from curlopt.models import build_model
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import BoxOptimisticProgram, OptimisticProgram

MODEL = build_model("queue")
S, A = MODEL.n_states, MODEL.n_actions


def _counts(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.floor(rng.random((S, A, S)) * 20) * (rng.random((S, A, S)) < 0.5)


def _kernel(seed: int) -> np.ndarray:
    raw = np.random.default_rng(seed).random((S, A, S)) + 0.01
    return raw / raw.sum(axis=2, keepdims=True)


PROGRAMS = {
    "optimistic": (lambda: OptimisticProgram(MODEL, radius="experiment"),
                   lambda program, seed: program.update(counts=_counts(seed), time=50.0 + seed, epsilon=0.01)),
    "box": (lambda: BoxOptimisticProgram(MODEL, horizon=10_000.0),
            lambda program, seed: program.update(counts=_counts(seed), time=50.0 + seed, epsilon=0.01)),
    "occupancy": (lambda: OccupancyProgram(MODEL, kernel=MODEL.kernel),
                  lambda program, seed: program.update(kernel=_kernel(seed), epsilon=0.02)),
}


def _deepcopy(program):
    return copy.deepcopy(program)


def _pickled(program):
    return pickle.loads(pickle.dumps(program))


@pytest.mark.parametrize("copier", [_deepcopy, _pickled], ids=["deepcopy", "pickle"])
@pytest.mark.parametrize("kind", sorted(PROGRAMS))
def test_a_copy_updates_the_values_backends_read(kind, copier):
    build, update = PROGRAMS[kind]
    original = build()
    before = original.linear.param_values.copy()
    copied = copier(original)
    update(copied, 3)
    fresh = build()
    update(fresh, 3)
    np.testing.assert_array_equal(copied.linear.param_values, fresh.linear.param_values)
    np.testing.assert_array_equal(copied.linear.param_values, copied.linear.writable_values())
    np.testing.assert_array_equal(original.linear.param_values, before)
    assert not copied.linear.param_values.flags.writeable


def test_a_copied_program_solves_as_the_fresh_one():
    build, update = PROGRAMS["optimistic"]
    copied = copy.deepcopy(build())
    update(copied, 7)
    fresh = build()
    update(fresh, 7)
    backend = get_backend("highs")
    assert backend.solve(copied).objective == pytest.approx(backend.solve(fresh).objective, rel=1e-12, abs=1e-12)

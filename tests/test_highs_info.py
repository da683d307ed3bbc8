"""What the highs backend reads back after a run, and the optimistic program's parameter entries.

The backend reads HiGHS's iteration count and objective one value at a time (``getInfoValue``); these must be
the values of HiGHS's whole info record. The optimistic program writes ``-P^``, ``P^`` and ``-β`` from its counts
in one pass; here they are recomputed from the counts by the closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt import get_backend
from curlopt.errors import BackendError
from curlopt.models.queue import queue_model
from curlopt.programs.optimistic import OptimisticProgram


def _counts(seed: int, kernel: np.ndarray, fractional: bool) -> np.ndarray:
    """Counts on the kernel's support: integers, or (``fractional``) any non-negative reals."""
    rng = np.random.default_rng(seed)
    counts = rng.random(kernel.shape) * 40 * (kernel > 0)
    counts[0, 1] = 0.0  # an unvisited pair: N = 0, so P^ = 0 there and β takes max(1, N) = 1
    return counts if fractional else np.floor(counts)


def test_a_run_reports_the_iteration_count_and_objective_of_highs_info():
    model = queue_model()
    program = OptimisticProgram(model, counts=_counts(0, model.kernel, False), time=500.0, epsilon=0.01,
                                radius="experiment")
    compiled = get_backend("highs").compile(program)
    first = compiled.solve()
    program.update(counts=_counts(1, model.kernel, False), time=900.0, epsilon=0.005)
    result = compiled.solve()
    assert first.ok and result.ok
    info = compiled.highs.getInfo()
    assert result.iterations == info.simplex_iteration_count + max(0, info.ipm_iteration_count)
    assert result.statistics["objective_value"] == info.objective_function_value
    assert result.statistics["model_status"] == compiled.highs.getModelStatus().name == "kOptimal"


def test_an_invalid_info_record_is_read_as_it_stands():
    """HiGHS answers "unavailable" (and 0) for a value of an info record it has marked invalid; the backend then
    reads the record itself, whose counts say -1 (no value), as it did when it always copied the record."""
    model = queue_model()
    compiled = get_backend("highs").compile(OptimisticProgram(model, counts=_counts(0, model.kernel, False)))
    assert compiled.solve().ok
    compiled.highs.clearSolver()  # invalidates the info record
    assert compiled.highs.getInfoValue("simplex_iteration_count")[1] == 0
    assert compiled._info("simplex_iteration_count") == compiled.highs.getInfo().simplex_iteration_count == -1


def test_an_unknown_info_value_is_a_backend_error_naming_it():
    model = queue_model()
    compiled = get_backend("highs").compile(OptimisticProgram(model))
    with pytest.raises(BackendError, match="no_such_value"):
        compiled._info("no_such_value")


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("fractional", [False, True])
@pytest.mark.parametrize("radius, scale", [("experiment", 1.0), ("analysis", 0.5)])
def test_optimistic_parameter_entries_follow_the_counts(storage, fractional, radius, scale):
    model = queue_model(storage=storage)
    kernel = model.kernel if storage == "dense" else model.transitions.toarray().reshape(6, 16, 6)
    S, A = model.n_states, model.n_actions
    program = OptimisticProgram(model, radius=radius, radius_scale=scale)
    for step, time in enumerate((1.0, 37.0, 123456.0)):
        n = _counts(step, kernel, fractional)
        program.update(counts=n if storage == "dense" else sp.csr_array(n.reshape(S * A, S)), time=time)
        visits = n.sum(axis=2)
        p_hat = n / np.maximum(1.0, visits)[:, :, None]
        log = math.log(2 * A * time) * 14 if radius == "analysis" else math.log(A * time)
        beta = scale * np.sqrt(S * log / np.maximum(1.0, visits))
        if storage == "sparse":  # one entry per support entry, in the support's (row-major) order
            p_hat = p_hat[kernel > 0]
        values, groups = program.linear.param_values, program.linear.param_groups
        # integer counts sum exactly in any order, so P^ (one division) is exact; real counts may round apart
        # in the last bit when the program sums a pair's counts in another order
        same = np.testing.assert_allclose if fractional else np.testing.assert_array_equal
        tolerance = {"rtol": 1e-15, "atol": 0} if fractional else {}
        same(values[groups["deviation_upper"]], -p_hat.ravel(), **tolerance)
        same(values[groups["deviation_lower"]], p_hat.ravel(), **tolerance)
        np.testing.assert_allclose(values[groups["radius"]], -beta.ravel(), rtol=1e-14, atol=0)


@pytest.mark.parametrize("storage", ["dense", "sparse"])
@pytest.mark.parametrize("radius, scale", [("experiment", 1.0), ("analysis", 0.5), ("analysis", 0.0)])
def test_optimistic_parameter_entries_are_bit_for_bit_the_programs_own_estimates(storage, radius, scale):
    """The entries are computed in one pass (max(1, N) once for both); they must be, bit for bit, the program's
    own ``empirical_entries()`` and ``radius``, which compute each on their own."""
    model = queue_model(storage=storage)
    kernel = model.kernel if storage == "dense" else model.transitions.toarray().reshape(6, 16, 6)
    S, A = model.n_states, model.n_actions
    program = OptimisticProgram(model, radius=radius, radius_scale=scale)
    for seed in range(5):
        n = _counts(seed, kernel, fractional=bool(seed % 2))
        program.update(counts=n if storage == "dense" else sp.csr_array(n.reshape(S * A, S)), time=3.0 + 1e4 * seed)
        values, groups = program.linear.param_values, program.linear.param_groups
        p_hat = program.empirical_entries()
        beta = program.radius.ravel()
        np.testing.assert_array_equal(values[groups["deviation_upper"]], -p_hat)
        np.testing.assert_array_equal(values[groups["deviation_lower"]], p_hat)
        np.testing.assert_array_equal(values[groups["radius"]], -beta)

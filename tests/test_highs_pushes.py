"""What the highs backend pushes into HiGHS between solves, read back from HiGHS's own model.

Before each solve the backend pushes only what changed: the parameter entries (one ``changeCoeff`` each, or the
whole parameter block at once), and the g rows' upper bounds, recomputed only for a new (ε, with_constraints).
Here HiGHS's matrix and row bounds are read back (``getLp``) after every push and compared with the program's own
matrix and with ``bound - ε`` written from the model's constraints; and the solutions the backend reads through
HiGHS's C API are compared with highspy's own lists, solve after solve.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt import get_backend
from curlopt.models.queue import queue_model
from curlopt.models.registry import build_model
from curlopt.programs.lp import LPForm
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import OptimisticProgram


def _highs_matrix(compiled) -> sp.csr_matrix:
    """HiGHS's constraint matrix as HiGHS holds it (column-wise), as a CSR matrix."""
    lp = compiled.highs.getLp()
    matrix = lp.a_matrix_
    return sp.csc_matrix((np.asarray(matrix.value_), np.asarray(matrix.index_), np.asarray(matrix.start_)),
                         shape=(lp.num_row_, lp.num_col_)).tocsr()


def _expected_matrix(program) -> sp.csr_matrix:
    """The program's LP matrix at its current parameter values, rows in the backend's documented order: the rows
    without a parameter entry first, then those with one (the parameter block), each in the LP's own order."""
    form = LPForm(program)
    block = np.zeros(form.n_rows, dtype=bool)
    block[form.param_rows] = True
    order = np.concatenate([np.flatnonzero(~block), np.flatnonzero(block)])
    params = sp.csr_matrix((program.linear.param_values, (form.param_rows, form.param_cols)), shape=form.fixed.shape)
    return (form.fixed + params).tocsr()[order]


def _assert_same_matrix(compiled, program) -> None:
    difference = _highs_matrix(compiled) - _expected_matrix(program)
    assert difference.count_nonzero() == 0


def _counts(seed: int, kernel: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.floor(rng.random(kernel.shape) * 30 * (kernel > 0))


def test_every_way_of_pushing_parameter_values_leaves_the_programs_matrix_in_highs():
    model = queue_model()
    program = OptimisticProgram(model, counts=_counts(0, model.kernel), time=100.0, epsilon=0.01, radius="experiment")
    compiled = get_backend("highs").compile(program)
    _assert_same_matrix(compiled, program)
    assert compiled.solve().ok and compiled.last_update == "none"
    program.update(counts=_counts(1, model.kernel), time=900.0)  # every entry moves: the block is replaced
    assert compiled.solve().ok and compiled.last_update == "block"
    _assert_same_matrix(compiled, program)
    program.update(epsilon=0.02)  # no parameter value moves
    assert compiled.solve().ok and compiled.last_update == "none"
    _assert_same_matrix(compiled, program)

    occupancy = OccupancyProgram(model)
    compiled = get_backend("highs").compile(occupancy)
    kernel = model.kernel.copy()
    kernel[2, 3] = np.roll(kernel[2, 3], 1)  # one pair's row: a few entries move, one by one
    occupancy.update(kernel=kernel)
    assert compiled.solve().ok and compiled.last_update == "coefficients"
    _assert_same_matrix(compiled, occupancy)


def _random_model():
    return build_model("random", n_states=5, n_costs=2, seed=3)


@pytest.mark.parametrize("steps", [
    [(0.01, True), (0.02, True), (0.02, False), (0.02, True), (0.01, True), (0.01, True), (0.0, False)],
    [(0.0, False), (0.0, False), (0.05, True), (0.0, True), (0.0, False)],
])
def test_the_g_bounds_in_highs_follow_epsilon_and_the_fallback(steps):
    model = _random_model()
    program = OccupancyProgram(model, epsilon=0.03)
    compiled = get_backend("highs").compile(program)
    bounds = np.array([bound.bound for bound in model.constraints])
    for epsilon, with_constraints in steps:
        program.update(epsilon=epsilon)
        compiled._sync(with_constraints)
        upper = np.asarray(compiled.highs.getLp().row_upper_)[compiled._g_index]
        expected = bounds - epsilon if with_constraints else np.full(bounds.size, np.inf)
        np.testing.assert_allclose(upper, expected, rtol=1e-15, atol=1e-15)


def test_solutions_read_through_the_c_api_are_highs_lists_and_stay_as_read():
    model = queue_model()
    program = OptimisticProgram(model, counts=_counts(0, model.kernel), time=50.0, radius="experiment")
    compiled = get_backend("highs").compile(program)
    assert compiled._reader is not None  # this platform's highspy gives the C API; else the lists are read
    kept = []
    for seed, time in ((1, 80.0), (2, 400.0), (3, 7000.0)):
        program.update(counts=_counts(seed, model.kernel), time=time)
        result = compiled.solve()
        assert result.ok
        listed = np.asarray(compiled.highs.getSolution().col_value)
        np.testing.assert_array_equal(result.x, listed[: program.n_vars])
        kept.append((result.x.copy(), result.x))
    assert not np.array_equal(kept[0][0], kept[-1][0])  # the solves differ, so a shared buffer would show
    for copy, held in kept:
        np.testing.assert_array_equal(held, copy)

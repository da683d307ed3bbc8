"""The checks of dense counts and kernels (``check_counts``, ``check_kernel``) on arrays with bad entries.

The checks look for a bad entry with two reductions (a minimum and a maximum) and only then locate it; here
random arrays with NaN, ±inf, negative and (for kernels) above-1 entries planted at random places are checked
against numpy's own elementwise tests: an array is refused exactly when one of its entries is bad, and the
message names the first bad entry in row-major order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curlopt.errors import ProgramError
from curlopt.models.queue import queue_model
from curlopt.programs.support import check_counts, check_kernel

MODEL = queue_model()
S, A = MODEL.n_states, MODEL.n_actions
BAD = [np.nan, np.inf, -np.inf, -1.0, -1e-300, 1.5, 1e308]


def _plant(plants: list[tuple[int, int]], base: np.ndarray) -> np.ndarray:
    array = base.copy()
    flat = array.reshape(-1)
    for where, which in plants:
        flat[where % flat.size] = BAD[which]
    return array


def _first(bad: np.ndarray) -> tuple[int, int]:
    row, successor = np.argwhere(bad.reshape(S * A, S))[0]
    return int(row), int(successor)


def _first_bad_count(counts: np.ndarray) -> tuple[int, int] | None:
    """The (pair row, successor) of the first NaN, infinite or negative count in row-major order."""
    bad = ~np.isfinite(counts) | (counts < 0)
    return _first(bad) if bad.any() else None


def _first_bad_kernel(kernel: np.ndarray) -> tuple[int, int] | None:
    """The first NaN or infinite entry in row-major order, else the first outside [0, 1] (as the message says)."""
    for bad in (~np.isfinite(kernel), (kernel < 0) | (kernel > 1)):
        if bad.any():
            return _first(bad)
    return None


plants = st.lists(st.tuples(st.integers(0, S * A * S - 1), st.integers(0, len(BAD) - 1)), max_size=3)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), planted=plants)
def test_counts_are_refused_exactly_when_an_entry_is_bad(seed, planted):
    counts = _plant(planted, np.floor(np.random.default_rng(seed).random((S, A, S)) * 50))
    _assert_refused_exactly_at(check_counts, counts, _first_bad_count(counts))


@settings(max_examples=60, deadline=None)
@given(planted=plants)
def test_kernels_are_refused_exactly_when_an_entry_is_bad(planted):
    kernel = _plant(planted, MODEL.kernel)
    _assert_refused_exactly_at(check_kernel, kernel, _first_bad_kernel(kernel))


def _assert_refused_exactly_at(check, data, first):
    """``check`` returns ``data`` unchanged when no entry is bad (``first`` is None), else refuses it naming the first
    bad entry ``first = (row s·A + a, successor)``."""
    if first is None:
        np.testing.assert_array_equal(check(MODEL, data), data)
        return
    s, a = divmod(first[0], A)
    with pytest.raises(ProgramError, match=rf"row of \(s, a\) = \({s}, {a}\), successor {first[1]}"):
        check(MODEL, data)


def test_huge_finite_counts_are_accepted():
    """Entries whose sum overflows are still finite counts: nothing is refused."""
    counts = np.full((S, A, S), 1e308)
    np.testing.assert_array_equal(check_counts(MODEL, counts), counts)

"""The second eigenvalue modulus of birth-death chains (tridiagonal symmetric forms) against a dense eigensolver."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt.models.spectrum import SMALL_CHAIN, second_modulus


def birth_death(n: int, seed: int) -> sp.csr_array:
    """A random birth-death chain on ``n`` states (up, down and stay probabilities per state)."""
    rng = np.random.default_rng(seed)
    up, down = rng.uniform(0.05, 0.5, n), rng.uniform(0.05, 0.5, n)
    up[-1], down[0] = 0.0, 0.0
    rows = np.concatenate([np.arange(n), np.arange(n - 1), np.arange(1, n)])
    cols = np.concatenate([np.arange(n), np.arange(1, n), np.arange(n - 1)])
    vals = np.concatenate([1.0 - up - down, up[:-1], down[1:]])
    return sp.csr_array((vals, (rows, cols)), shape=(n, n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_birth_death_second_modulus_matches_every_eigenvalue(seed: int) -> None:
    n = 4 * SMALL_CHAIN  # above the size where every eigenvalue is computed, so the tridiagonal route runs
    chain = birth_death(n, seed)
    expected = np.sort(np.abs(np.linalg.eigvals(chain.toarray())))[::-1][1]
    assert second_modulus(chain, dense_limit=0) == pytest.approx(expected, abs=1e-10)

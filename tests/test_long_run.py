"""Long-run laws where the plain stationary solve fails: several recurrent classes, nearly decomposable chains.

References are closed forms: a lumpable two-block chain's block masses are δ_B / (δ_A + δ_B) whatever its size, and a
transient state's absorption probabilities are its one-step probabilities into each class when it cannot return.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt.errors import ModelError
from curlopt.models.cmdp import stationary_occupancy
from curlopt.models.long_run import gth_stationary


def two_blocks(size: int, leak_a: float, leak_b: float, seed: int = 0) -> np.ndarray:
    """A chain of two blocks of ``size`` states: every state of block A leaks ``leak_a`` in all to block B (spread
    evenly), every state of B leaks ``leak_b`` to A; inside a block the rows are random. The chain is lumpable, so
    block A's stationary mass is ``leak_b / (leak_a + leak_b)`` exactly."""
    rng = np.random.default_rng(seed)
    n = 2 * size
    chain = np.zeros((n, n))
    for block, leak in ((slice(0, size), leak_a), (slice(size, n), leak_b)):
        other = slice(size, n) if block.start == 0 else slice(0, size)
        rows = rng.dirichlet(np.ones(size), size=size)
        chain[block, block] = (1.0 - leak) * rows
        chain[block, other] = leak / size
    return chain


def as_kernel(chain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain as a one-action kernel (S, 1, S) and its only policy."""
    return chain[:, None, :], np.ones((chain.shape[0], 1))


@pytest.mark.parametrize(("size", "leak_a", "leak_b"), [(3, 1e-12, 3e-12), (50, 1e-10, 0.18e-10), (3, 0.2, 0.6)])
def test_nearly_decomposable_blocks_get_their_exact_mass(size: int, leak_a: float, leak_b: float) -> None:
    chain = two_blocks(size, leak_a, leak_b)
    exact = leak_b / (leak_a + leak_b)
    assert gth_stationary(chain)[:size].sum() == pytest.approx(exact, rel=1e-9)
    kernel, policy = as_kernel(chain)
    rho = stationary_occupancy(kernel, policy)
    assert rho[:size].sum() == pytest.approx(exact, rel=1e-9)
    rho_sparse = stationary_occupancy(sp.csr_array(chain), policy)
    assert rho_sparse[:size].sum() == pytest.approx(exact, rel=1e-9)


def multichain() -> np.ndarray:
    """State 0 transient (to class {1, 2} w.p. 0.3, to the absorbing state 3 w.p. 0.7); {1, 2} alternates."""
    return np.array([
        [0.0, 0.1, 0.2, 0.7],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ])


@pytest.mark.parametrize("stored", ["dense", "sparse"])
def test_several_classes_mix_by_absorption_from_the_initial_law(stored: str) -> None:
    kernel, policy = as_kernel(multichain())
    if stored == "sparse":
        kernel = sp.csr_array(multichain())
    initial = np.array([0.5, 0.25, 0.0, 0.25])
    # absorbed in {1, 2}: 0.25 directly + 0.5·0.3; that class spends half its time in each state; the rest in 3
    into_pair = 0.25 + 0.5 * 0.3
    expected = np.array([0.0, into_pair / 2, into_pair / 2, 1.0 - into_pair])
    rho = stationary_occupancy(kernel, policy, initial=initial)
    np.testing.assert_allclose(rho[:, 0], expected, atol=1e-12)


@pytest.mark.parametrize("stored", ["dense", "sparse"])
def test_several_classes_without_an_initial_law_are_refused(stored: str) -> None:
    kernel, policy = as_kernel(multichain())
    if stored == "sparse":
        kernel = sp.csr_array(multichain())
    with pytest.raises(ModelError, match="recurrent classes"):
        stationary_occupancy(kernel, policy)


def test_gth_refuses_a_reducible_chain() -> None:
    with pytest.raises(ModelError, match="not irreducible"):
        gth_stationary(np.eye(2))

"""The stationary occupancy of a sparse kernel against closed forms and an eigenvector written out here.

Both routes of ``_sparse_stationary`` are exercised: power iteration (a chain that mixes fast) and the sparse LU
with a pivot state (a chain that mixes slowly), each also forced by setting the sweep budget.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt.errors import ModelError
from curlopt.models import cmdp
from curlopt.models.cmdp import stationary_occupancy


def birth_death(n: int, up: float, down: float) -> sp.csr_array:
    """One action; from i: up with ``up``, down with ``down``, stay otherwise (reflecting ends), as CSR (n, n)."""
    rows, cols, vals = [], [], []
    for i in range(n):
        p_up = up if i < n - 1 else 0.0
        p_down = down if i > 0 else 0.0
        for j, p in ((i - 1, p_down), (i, 1.0 - p_up - p_down), (i + 1, p_up)):
            if p > 0:
                rows.append(i), cols.append(j), vals.append(p)
    return sp.csr_array((vals, (rows, cols)), shape=(n, n))


def birth_death_law(n: int, up: float, down: float) -> np.ndarray:
    """Detailed balance μ(i+1)/μ(i) = up/down, normalised in log space (entries below 1e-308 underflow to 0)."""
    logs = np.arange(n) * np.log(up / down)
    logs -= logs.max() + np.log(np.exp(logs - logs.max()).sum())
    return np.exp(logs)


@pytest.mark.parametrize("sweeps", [0, cmdp.POWER_SWEEPS])
@pytest.mark.parametrize("up,down", [(0.3, 0.1), (0.1, 0.3), (0.2, 0.2)])
def test_a_long_birth_death_chain_has_its_detailed_balance_law(monkeypatch, sweeps, up, down):
    # 3,000 states: a drift either way spreads μ over ~1,400 orders of magnitude, so most entries underflow and
    # the pivot must be the heavy end; no drift gives the uniform law
    monkeypatch.setattr(cmdp, "POWER_SWEEPS", sweeps)
    n = 3000
    mu = stationary_occupancy(birth_death(n, up, down), np.ones((n, 1)))[:, 0]
    law = birth_death_law(n, up, down)
    assert mu.sum() == pytest.approx(1.0, abs=1e-12)
    heavy = law > 1e-250
    np.testing.assert_allclose(mu[heavy], law[heavy], rtol=1e-8)
    assert np.all(mu[~heavy] <= 1e-240)


def _dense_eigenvector(kernel: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """μ as the eigenvector of P_πᵀ for eigenvalue 1, with P_π written out by hand (not through curlopt)."""
    n, a = policy.shape
    chain = np.zeros((n, n))
    for s in range(n):
        for b in range(a):
            chain[s] += policy[s, b] * kernel[s, b]
    values, vectors = np.linalg.eig(chain.T)
    vector = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    return vector / vector.sum()


@pytest.mark.parametrize("sweeps", [0, cmdp.POWER_SWEEPS])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_sparse_kernel_matches_the_eigenvector(monkeypatch, sweeps, seed):
    monkeypatch.setattr(cmdp, "POWER_SWEEPS", sweeps)
    rng = np.random.default_rng(seed)
    n, a, k = 120, 3, 4
    dense = np.zeros((n, a, n))
    for s in range(n):
        for b in range(a):
            successors = rng.choice(n, size=k, replace=False)
            dense[s, b, successors] = rng.dirichlet(np.ones(k))
        dense[s, :, (s + 1) % n] += 0.05  # a ring: one recurrent class whatever the policy
    dense /= dense.sum(axis=2, keepdims=True)
    policy = rng.dirichlet(np.ones(a), size=n)
    rho = stationary_occupancy(sp.csr_array(dense.reshape(n * a, n)), policy)
    np.testing.assert_allclose(rho.sum(axis=1), _dense_eigenvector(dense, policy), atol=1e-12)
    np.testing.assert_allclose(rho, rho.sum(axis=1, keepdims=True) * policy, atol=1e-15)


@pytest.mark.parametrize("sweeps", [0, cmdp.POWER_SWEEPS])
def test_transient_states_get_no_mass_and_a_periodic_chain_its_uniform_law(monkeypatch, sweeps):
    monkeypatch.setattr(cmdp, "POWER_SWEEPS", sweeps)
    # states 0 -> 1 -> 2 -> 3 -> 2: {2, 3} is a closed class of period 2, 0 and 1 are transient
    kernel = sp.csr_array(([1.0, 1.0, 1.0, 1.0], ([0, 1, 2, 3], [1, 2, 3, 2])), shape=(4, 4))
    mu = stationary_occupancy(kernel, np.ones((4, 1)))[:, 0]
    np.testing.assert_allclose(mu, [0.0, 0.0, 0.5, 0.5], atol=1e-13)


@pytest.mark.parametrize("sweeps", [0, cmdp.POWER_SWEEPS])
def test_two_recurrent_classes_are_refused(monkeypatch, sweeps):
    monkeypatch.setattr(cmdp, "POWER_SWEEPS", sweeps)
    # {0, 1} and {2} are both closed; 3 is transient into either
    kernel = sp.csr_array(([0.5, 0.5, 1.0, 1.0, 0.5, 0.5], ([0, 0, 1, 2, 3, 3], [0, 1, 0, 2, 0, 2])), shape=(4, 4))
    with pytest.raises(ModelError, match="2 recurrent classes"):
        stationary_occupancy(kernel, np.ones((4, 1)))


def test_the_sparse_and_the_dense_path_agree_on_the_queue():
    from curlopt import build_model

    dense = build_model("queue", buffer=40, storage="dense")
    sparse = build_model("queue", buffer=40, storage="sparse")
    policy = np.random.default_rng(3).dirichlet(np.full(dense.n_actions, 0.3), size=dense.n_states)
    np.testing.assert_allclose(stationary_occupancy(sparse.transitions, policy),
                               stationary_occupancy(dense.kernel, policy), atol=1e-13)


def test_a_policy_whose_first_pivot_is_negligible_gets_its_detailed_balance_law():
    """A policy PS-CURL played on the queue with buffer 1,000 (saved from a run): its mass sits at x = 2 while 300
    sweeps of power iteration still point at x = 568, where pivoting once gave an answer of both signs (regression)."""
    from pathlib import Path

    from curlopt import build_model
    from curlopt.models.queue import FLOW_GRID, SERVICE_GRID

    policy = np.load(Path(__file__).parent / "data" / "queue-buffer-1000-policy.npz")["policy"]
    model = build_model("queue", buffer=1000)
    a = np.repeat(SERVICE_GRID, len(FLOW_GRID))
    b = np.tile(FLOW_GRID, len(SERVICE_GRID))
    up = policy[:-1] @ ((1 - a) * b)            # P(x -> x+1), x < L
    down = policy[1:-1] @ (a * (1 - b))         # P(x -> x-1), 0 < x < L
    down = np.append(down, policy[-1] @ a)      # at the full buffer a service always leaves
    logs = np.concatenate([[0.0], np.cumsum(np.log(up) - np.log(down))])
    law = np.exp(logs - logs.max())
    law /= law.sum()
    mu = stationary_occupancy(model.transitions, policy).sum(axis=1)
    np.testing.assert_allclose(mu, law, atol=1e-14)
    assert int(np.argmax(mu)) == int(np.argmax(law))


@pytest.mark.parametrize("sweeps", [0, cmdp.POWER_SWEEPS])
def test_a_leak_below_round_off_leaves_its_states_transient(monkeypatch, sweeps):
    """{0, 1} leaks to {2, 3} with probability 1e-320: 1 − 1e-320 == 1 in floating point, so their block of the balance
    equations is singular; the states are transient all the same (μ = 0 there) and {2, 3} is a closed class with
    the law (1/3, 2/3) by detailed balance (2 → 3 w.p. 1/2, 3 → 2 w.p. 1/4)."""
    monkeypatch.setattr(cmdp, "POWER_SWEEPS", sweeps)
    leak = 1e-320
    rows = [0, 0, 0, 1, 1, 2, 2, 3, 3]
    cols = [0, 1, 2, 0, 1, 2, 3, 2, 3]
    vals = [0.5 - leak, 0.5, leak, 0.5, 0.5, 0.5, 0.5, 0.25, 0.75]
    kernel = sp.csr_array((vals, (rows, cols)), shape=(4, 4))
    mu = stationary_occupancy(kernel, np.ones((4, 1)))[:, 0]
    np.testing.assert_allclose(mu, [0.0, 0.0, 1 / 3, 2 / 3], atol=1e-14)

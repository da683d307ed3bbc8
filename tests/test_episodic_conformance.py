"""The conformance checks of the episodic and discounted programs (curlopt.testing.episodic_cases).

* every installed backend passes them (also run by test_conformance.py's families; here one test per backend
  and kind, so a failure names both);
* they are not vacuous: a backend ignoring updates and one never falling back fail them, naming the check;
* their reference (curlopt.testing.episodic_reference) is checked against closed forms computed here:
  backward induction, policy iteration, and the extended program with zero radius;
* the reference imports nothing of curlopt.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_conformance import IgnoresUpdates, NeverFallsBack
from test_import import loaded_after

from curlopt.testing import episodic_reference as ref
from curlopt.testing import run_conformance
from curlopt.testing.conformance import CHECK_NAMES
from curlopt.testing.episodic_cases import EPISODIC_KINDS


@pytest.mark.parametrize("kind", EPISODIC_KINDS)
def test_installed_backend_passes_the_episodic_checks(backend_name, kind):
    names = [n for n in CHECK_NAMES if n.split("/")[1:2] == [kind]]
    assert len(names) == 6   # optimum, fallback, update; linear and piecewise
    report = run_conformance(backend_name, checks=names, raise_on_failure=False, examples=1)
    assert report.ok, str(report)
    required = {n for n in names if n.endswith("/linear")}
    assert {r.name for r in report.passed} >= required


@pytest.mark.parametrize("backend, failing", [
    (IgnoresUpdates(), "update/episodic-occupancy/linear"),
    (IgnoresUpdates(), "update/episodic-l1/linear"),
    (IgnoresUpdates(), "update/discounted/linear"),
    (NeverFallsBack(), "fallback/episodic-entry/linear"),
])
def test_a_broken_backend_fails_the_episodic_checks(backend, failing):
    report = run_conformance(backend, checks=[failing], raise_on_failure=False)
    assert not report.ok
    assert [r.name for r in report.failed] == [failing], str(report)
    assert "EpisodicCase(seed=" in report.failed[0].detail


def _backward_induction(kernels, rewards, mu):
    H, S, A = rewards.shape
    value = np.zeros(S)
    for h in reversed(range(H)):
        value = (rewards[h] + (kernels[h] @ value if h < H - 1 else 0.0)).max(axis=1)
    return float(mu @ value)


@pytest.mark.parametrize("seed", range(4))
def test_reference_equals_backward_induction_and_policy_iteration(seed):
    """Unconstrained linear: the episodic reference LP is the backward-induction value; the extended one with
    zero radius around the same kernels too; the discounted one is (1 − γ) μ·V* by policy iteration."""
    rng = np.random.default_rng(seed)
    S, A, H = 4, 3, 4
    kernels = [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(H - 1)]
    rewards = rng.uniform(-1, 1, size=(H, 1, S, A))
    costs = np.zeros((H, 1, S, A))
    mu = rng.dirichlet(np.ones(S))
    pieces = (np.ones((1, 1)), np.zeros(1))
    expected = _backward_induction(kernels, rewards[:, 0], mu)
    _, value = ref.solve_pieces(ref.episodic_polytope(kernels, mu, H, S, A), rewards, costs, pieces, [], 0.0)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-10)
    for confidence, radius in (("entry", np.zeros((S, A, S))), ("l1", np.zeros((S, A)))):
        polytope = ref.extended_polytope(kernels, [radius] * (H - 1), confidence, mu, H, S, A)
        _, value = ref.solve_pieces(polytope, rewards, costs, pieces, [], 0.0)
        assert value == pytest.approx(expected, rel=1e-8, abs=1e-9)
    gamma = 0.9
    kernel, r = kernels[0], rewards[0, 0]
    policy = np.zeros(S, dtype=int)
    for _ in range(100):   # policy iteration with exact solves
        v = np.linalg.solve(np.eye(S) - gamma * kernel[np.arange(S), policy], r[np.arange(S), policy])
        q = r + gamma * kernel @ v
        if np.all(q.max(axis=1) <= q[np.arange(S), policy] + 1e-12):
            break
        policy = q.argmax(axis=1)
    _, value = ref.solve_pieces(ref.discounted_polytope(kernel, mu, gamma), rewards[0], costs[0], pieces, [], 0.0)
    assert value == pytest.approx((1 - gamma) * mu @ v, rel=1e-9, abs=1e-10)


def test_episodic_reference_imports_nothing_of_curlopt():
    modules = loaded_after("import curlopt.testing.episodic_reference")
    assert sorted(m for m in modules if m.startswith("curlopt.")) == ["curlopt.testing",
                                                                      "curlopt.testing.episodic_reference"]

"""Model diagnostics: ergodicity, hitting/relaxation times, the Slater margin, `curlopt diagnose`.

Reference values come from hand calculations (written out next to the assertions), brute-force
enumeration of deterministic policies, or an LP built here with scipy — never from the code under test.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import CMDP, ConvexQuadratic, Linear, LinearBound, Norm, diagnose
from curlopt.diagnostics import slater_margin
from curlopt.errors import ModelError, UnsupportedUtilityError
from curlopt.models import build_model
from curlopt.models.chains import (
    EXACT_CHECK,
    SUFFICIENT_CHECK,
    check_ergodicity,
    diameter,
    ergodicity_warning,
    max_hitting_time,
    relaxation_time,
)


def irreducible(chain_support: np.ndarray) -> bool:
    """Every state reaches every state: the transitive closure of the support is full (independent of csgraph)."""
    n = chain_support.shape[0]
    reach = (np.eye(n, dtype=int) + chain_support.astype(int)) > 0
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        reach = (reach.astype(int) @ reach.astype(int)) > 0
    return bool(reach.all())


def brute_force_ergodic(kernel: np.ndarray) -> bool:
    S, A = kernel.shape[:2]
    support = kernel > 0
    return all(irreducible(support[np.arange(S), list(policy)])
               for policy in itertools.product(range(A), repeat=S))


def cvxpy_or_skip():
    from curlopt.backends import installed_backends

    if "cvxpy" not in installed_backends():
        pytest.skip("the cvxpy backend is not installed")


# ----------------------------------------------------------------------------
# Ergodicity
# ----------------------------------------------------------------------------


def test_nonergodic_is_flagged_with_a_reducible_counterexample():
    model = build_model("nonergodic")
    report = diagnose(model)
    assert not report.ergodic
    assert report.ergodicity.communicating  # left/right moves can reach every state
    policy = report.ergodicity.policy
    chain = model.kernel[np.arange(3), list(policy)] > 0
    assert not irreducible(chain)
    # the reported classes are closed, and together with the transient states cover every state
    for cls in report.ergodicity.recurrent_classes:
        assert not chain[np.ix_(cls, [s for s in range(3) if s not in cls])].any()
    covered = sorted(sum(report.ergodicity.recurrent_classes, []) + report.ergodicity.transient_states)
    assert covered == [0, 1, 2]
    assert len(report.ergodicity.recurrent_classes) > 1 or report.ergodicity.transient_states
    warning = ergodicity_warning(model)
    assert warning is not None and "not ergodic" in warning and "left→" in warning
    assert report.warning == warning
    assert report.hitting_time == math.inf


@pytest.mark.parametrize("name, params", [
    ("queue", {}), ("queue", {"buffer": 8}), ("scheduler", {}), ("scheduler", {"sla": None}),
    ("random", {}), ("random", {"n_states": 7, "n_actions": 4, "seed": 11, "n_costs": 3}), ("maxent", {}),
])
def test_ergodic_models_pass(name, params):
    model = build_model(name, **params)
    report = diagnose(model)
    assert report.ergodic and report.ergodicity.communicating
    assert report.warning is None and ergodicity_warning(model) is None
    assert report.ergodicity.method == SUFFICIENT_CHECK
    assert 0 < report.hitting_time < math.inf and 0 < report.diameter <= report.hitting_time
    assert report.feasible is True


def test_exact_check_confirms_an_ergodic_model_the_sufficient_check_misses():
    # State 0 moves to 1 (action 0) or to 2 (action 1); state 1 -> {0, 2}; state 2 -> {0, 1}, whatever the action.
    # No edge out of 0 exists under every action, but each policy's chain is irreducible:
    # 0->1 gives 0->1->{0,2}, 2->{0,1}; 0->2 gives 0->2->{0,1}, 1->{0,2}.
    kernel = np.zeros((3, 2, 3))
    kernel[0, 0, 1] = kernel[0, 1, 2] = 1.0
    kernel[1, :, [0, 2]] = 0.5
    kernel[2, :, [0, 1]] = 0.5
    check = check_ergodicity(kernel)
    assert check.ergodic and check.method == EXACT_CHECK and check.policy is None


@st.composite
def sparse_kernels(draw):
    S = draw(st.integers(1, 5))
    A = draw(st.integers(1, 3))
    mask = np.array(draw(st.lists(st.booleans(), min_size=S * A * S, max_size=S * A * S))).reshape(S, A, S)
    forced = draw(st.lists(st.integers(0, S - 1), min_size=S * A, max_size=S * A))
    mask[np.repeat(np.arange(S), A), np.tile(np.arange(A), S), forced] = True  # every row has a successor
    weights = mask * np.array(draw(st.lists(st.floats(0.1, 1.0), min_size=S * A * S, max_size=S * A * S))).reshape(S, A, S)
    return weights / weights.sum(axis=2, keepdims=True)


@given(sparse_kernels())
def test_ergodicity_check_matches_brute_force_enumeration(kernel):
    check = check_ergodicity(kernel)
    assert check.ergodic == brute_force_ergodic(kernel)
    S = kernel.shape[0]
    if not check.ergodic:
        chain = kernel[np.arange(S), list(check.policy)] > 0
        assert not irreducible(chain)
    # communicating: the graph of transitions possible under some action is strongly connected
    assert check.communicating == irreducible((kernel > 0).any(axis=1))


def test_strong_connectivity_matches_scipy_csgraph():
    """The check's own graph search against scipy's strongly connected components on random digraphs."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from curlopt.models.chains import strongly_connected

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 9))
        adjacency = rng.random((n, n)) < rng.uniform(0.05, 0.6)
        count, _ = connected_components(csr_matrix(adjacency), directed=True, connection="strong")
        assert strongly_connected(adjacency) == (count == 1)
        assert strongly_connected(adjacency) == irreducible(adjacency)


def test_ergodicity_warning_without_kernel_is_none():
    assert ergodicity_warning(CMDP(rewards=np.zeros((2, 2)), objective=Linear([1.0]))) is None


# ----------------------------------------------------------------------------
# Hitting, diameter and relaxation times
# ----------------------------------------------------------------------------


def test_times_of_a_two_state_model_by_hand():
    # From state 0 the actions switch with probability 0.5 or 0.25; from state 1 with 0.2 or 0.1.
    # A switch probability p gives a geometric hitting time of mean 1/p.
    kernel = np.zeros((2, 2, 2))
    for s, probabilities in ((0, (0.5, 0.25)), (1, (0.2, 0.1))):
        for a, p in enumerate(probabilities):
            kernel[s, a, 1 - s] = p
            kernel[s, a, s] = 1 - p
    assert max_hitting_time(kernel) == pytest.approx(max(1 / 0.25, 1 / 0.1))  # worst policy: 10
    assert diameter(kernel) == pytest.approx(max(1 / 0.5, 1 / 0.2))  # best policy: 5
    # Uniform policy: switch probabilities p = 0.375, q = 0.15; second eigenvalue 1 - p - q = 0.475.
    assert relaxation_time(kernel) == pytest.approx(1 / (1 - 0.475))


def test_scheduler_hitting_time_by_hand():
    # The kernel ignores the action. Track how many clients are in their target state: a matched client
    # stays matched w.p. 5/8, an unmatched one becomes matched w.p. 1/8. With h1 (one matched) and
    # h0 (none matched):
    #   h1 = 1 + (5/8 * 7/8 + 3/8 * 1/8) h1 + (3/8 * 7/8) h0 = 1 + 19/32 h1 + 21/64 h0
    #   h0 = 1 + (2 * 1/8 * 7/8) h1 + (7/8)^2 h0          = 1 + 7/32 h1 + 49/64 h0
    # so 13/32 h1 = 1 + 21/64 h0 and 15/64 h0 = 1 + 7/32 h1, giving h0 = 80/3 and h1 = 24.
    model = build_model("scheduler")
    assert max_hitting_time(model.kernel) == pytest.approx(80 / 3)
    assert diameter(model.kernel) == pytest.approx(80 / 3)
    # Each client's chain has eigenvalues 1 and 5/8 - 1/8 = 1/2 (three times); the product chain's
    # second-largest modulus is 1/2, so the relaxation time is 2.
    assert relaxation_time(model.kernel) == pytest.approx(2.0)


def test_times_of_the_nonergodic_model():
    kernel = build_model("nonergodic").kernel
    assert max_hitting_time(kernel) == math.inf
    with pytest.raises(ModelError, match="ergodic"):
        diameter(kernel)
    # Uniform policy: P = [[.5,.5,0],[.5,0,.5],[0,.5,.5]] has eigenvalues 1, 1/2, -1/2.
    assert relaxation_time(kernel) == pytest.approx(2.0)
    # "left in left, right elsewhere" has two recurrent classes {left}, {right}: eigenvalue 1 twice.
    assert relaxation_time(kernel, np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])) == math.inf
    # "always right": 0 -> 1 -> 2 -> 2 has eigenvalues 1, 0, 0 (one class, reached within 2 steps): time 1.
    assert relaxation_time(kernel, np.tile([0.0, 1.0], (3, 1))) == pytest.approx(1.0)


# ----------------------------------------------------------------------------
# Slater margin and feasibility
# ----------------------------------------------------------------------------


def test_queue_slater_margin_by_hand():
    # The costs depend on the action only, and a state-independent policy realises any action mix, so
    # δ = max_q min(E_q[-10a + 6], E_q[-8(1-b)^2 + 2]). Both terms are largest at a = 0.2 (c1 = 4) and
    # b = 0.7 (c2 = -8 * 0.09 + 2 = 1.28): δ = min(4, 1.28) = 1.28.
    report = diagnose(build_model("queue"))
    assert report.slater_margin == pytest.approx(1.28, abs=1e-8)
    assert report.feasible and report.slater.strictly_feasible


def test_scheduler_and_nonergodic_slater_margins_by_hand():
    # Serving client 1 always gives ζ = 0: δ = 0.3 - 0 = 0.3 (SLA). Never pushing right gives ζ = 0: δ = 0.5.
    assert slater_margin(build_model("scheduler")).margin == pytest.approx(0.3, abs=1e-9)
    assert slater_margin(build_model("nonergodic")).margin == pytest.approx(0.5, abs=1e-9)
    unconstrained = slater_margin(build_model("scheduler", sla=None))
    assert unconstrained.margin == math.inf and unconstrained.feasible


def independent_slater_lp(model: CMDP) -> float:
    """max t s.t. t <= b_i - c_i·ρ for every linear constraint, ρ a stationary occupancy (scipy linprog)."""
    S, A = model.n_states, model.n_actions
    n = S * A
    # flow: Σ_a ρ(s',a) - Σ_{s,a} P(s'|s,a) ρ(s,a) = 0 for every s'; mass: Σ ρ = 1
    flow = np.repeat(np.eye(S), A, axis=1) - model.kernel.reshape(n, S).T
    equalities = np.vstack([np.hstack([flow, np.zeros((S, 1))]), np.append(np.ones(n), 0.0)])
    rhs = np.append(np.zeros(S), 1.0)
    rows, bounds = [], []
    for g in model.constraints:
        weights = np.einsum("k,ksa->sa", g.weights, model.costs).ravel()
        rows.append(np.append(weights, 1.0))  # c·ρ + t <= b
        bounds.append(g.bound)
    objective = np.append(np.zeros(n), -1.0)
    result = linprog(objective, A_ub=np.array(rows), b_ub=np.array(bounds), A_eq=equalities, b_eq=rhs,
                     bounds=[(0, None)] * n + [(None, None)], method="highs")
    assert result.status == 0
    return -result.fun


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_model_slater_margin(seed):
    model = build_model("random", n_states=6, n_actions=3, n_costs=2, seed=seed, margin=0.05)
    margin = slater_margin(model).margin
    assert margin >= 0.05 - 1e-9  # the reference policy has slack 0.05 in every constraint, by construction
    assert margin == pytest.approx(independent_slater_lp(model), abs=1e-7)


def one_state_model(costs, constraints):
    """One state; each action a has cost vector costs[a]; so ζ is any mix of the action costs."""
    costs = np.asarray(costs, dtype=float)  # (A, d)
    return CMDP(rewards=np.zeros((1, costs.shape[0])), costs=costs.T[:, None, :], objective=Linear([1.0]),
                constraints=constraints, kernel=np.ones((1, costs.shape[0], 1)), name="one-state")


def test_infeasible_model():
    # ζ lies in [0, 1] but must be <= -0.1: δ = max_q -(q + 0.1) = -0.1.
    model = one_state_model([[0.0], [1.0]], [LinearBound([1.0], -0.1)])
    report = diagnose(model)
    assert report.slater_margin == pytest.approx(-0.1, abs=1e-9)
    assert report.feasible is False
    assert any("infeasible" in note for note in report.notes)


def test_slater_margin_of_non_lp_constraints():
    cvxpy_or_skip()
    # ζ = q (1, 1) with q the share of action 1. g1 = ||ζ - (1,1)||_2 - 0.5 = √2 (1-q) - 0.5 and
    # g2 = ζᵀζ - 1.5 = 2q² - 1.5. δ = max_q min(0.5 - √2 (1-q), 1.5 - 2q²): the first term rises and the
    # second falls in q, so the optimum is where they meet: 2q² + √2 q - (1 + √2) = 0.
    model = one_state_model([[0.0, 0.0], [1.0, 1.0]], [Norm([1.0, 1.0], 0.5), ConvexQuadratic(np.eye(2), constant=-1.5)])
    q = (-math.sqrt(2) + math.sqrt(2 + 8 * (1 + math.sqrt(2)))) / 4
    result = slater_margin(model)
    assert result.backend == "cvxpy"
    assert result.margin == pytest.approx(1.5 - 2 * q**2, abs=1e-5)
    # one smooth constraint: δ = max_q 0.5 - √2 (1 - q) = 0.5 at q = 1
    single = one_state_model([[0.0, 0.0], [1.0, 1.0]], [Norm([1.0, 1.0], 0.5)])
    assert slater_margin(single).margin == pytest.approx(0.5, abs=1e-5)
    with pytest.raises(UnsupportedUtilityError, match="Slater margin"):
        slater_margin(single, backend="highs")


# ----------------------------------------------------------------------------
# The report and the command line
# ----------------------------------------------------------------------------


def test_report_text_and_dict():
    report = diagnose(build_model("nonergodic"))
    text = str(report)
    for piece in ("ergodic          no", "Slater margin    δ = 0.5", "warning: model 'nonergodic' is not ergodic"):
        assert piece in text
    data = report.to_dict()
    json.dumps(data, allow_nan=False)  # JSON-ready: infinities become None
    assert data["ergodic"] is False and data["hitting_time"] is None and data["slater_margin"] == pytest.approx(0.5)
    assert data["counterexample_policy"] == list(report.ergodicity.policy)


def test_diagnose_refuses_models_without_kernel():
    with pytest.raises(ModelError, match="kernel"):
        diagnose(CMDP(rewards=np.zeros((2, 2)), objective=Linear([1.0])))
    with pytest.raises(ModelError, match="CMDP"):
        diagnose("queue")


@pytest.fixture(scope="module")
def cli():
    from typer.testing import CliRunner

    import curlopt.cli

    curlopt.cli._register()
    runner = CliRunner()
    return lambda *args: runner.invoke(curlopt.cli.app, list(args))


@pytest.mark.parametrize("args", [
    ["queue"], ["queue", "--param", "buffer=8"], ["scheduler"], ["nonergodic"], ["random", "-p", "seed=3"],
    ["maxent"], ["maxent", "-p", "base='scheduler'", "-p", "shift=0.1"],
])
def test_cli_diagnose(cli, args):
    result = cli("diagnose", *args)
    assert result.exit_code == 0, result.output
    assert "Slater margin" in result.stdout
    assert ("ergodic          no" in result.stdout) == (args[0] == "nonergodic")
    data = json.loads(cli("diagnose", *args, "--json").stdout)
    assert data["ergodic"] == (args[0] != "nonergodic")
    if "buffer=8" in args:
        assert data["n_states"] == 9


def test_cli_diagnose_errors(cli):
    result = cli("diagnose", "nowhere")
    assert result.exit_code != 0 and "unknown model" in str(result.exception)

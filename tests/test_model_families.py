"""The paper's models grown: the queue with any buffer, the scheduler with N clients, sparse random models.

References are computed here, independently of the builders: the queue's and the scheduler's arrays from the
tables of docs/math.md §8 written out by hand, optima by small programs built from scratch (an LP with
scipy.optimize.linprog, a concave program with cvxpy), the random draws from their documented order.
"""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from curlopt import build_model, solve_optimum
from curlopt.errors import ModelError
from curlopt.models.cmdp import AUTO_DENSE_ENTRIES, choose_storage
from curlopt.models.files import utility_to_spec
from curlopt.models.random import SUPPORT_FLOOR

SERVICE, FLOW = (0.2, 0.4, 0.6, 0.8), (0.4, 0.5, 0.6, 0.7)


# -- references ------------------------------------------------------------------------------------------------------
def queue_table(buffer: int) -> np.ndarray:
    """The queue's kernel (S, A, S) from the table of docs/math.md §8, state by state."""
    S, A = buffer + 1, len(SERVICE) * len(FLOW)
    kernel = np.zeros((S, A, S))
    for action, (a, b) in enumerate(itertools.product(SERVICE, FLOW)):
        kernel[0, action, 0], kernel[0, action, 1] = 1 - b * (1 - a), b * (1 - a)
        for x in range(1, buffer):
            kernel[x, action, x - 1] = a * (1 - b)
            kernel[x, action, x] = a * b + (1 - a) * (1 - b)
            kernel[x, action, x + 1] = (1 - a) * b
        kernel[buffer, action, buffer - 1], kernel[buffer, action, buffer] = a, 1 - a
    return kernel


def occupancy_lp(transitions: sp.csr_array, reward: np.ndarray, costs_at_least: list[np.ndarray]) -> float:
    """max Σ ρ r over stationary occupancies ρ (S·A) with Σ ρ c_i >= 0 for each i, by linprog (HiGHS).

    Flow: Σ_a ρ(s', a) − Σ_{s,a} ρ(s, a) P(s'|s, a) = 0 for every s', and Σ ρ = 1.
    """
    rows, S = transitions.shape
    A = rows // S
    outflow = sp.csr_array((np.ones(rows), (np.repeat(np.arange(S), A), np.arange(rows))), shape=(S, rows))
    equalities = sp.vstack([outflow - transitions.T, sp.csr_array(np.ones((1, rows)))])
    result = linprog(-reward, A_ub=-np.vstack(costs_at_least) if costs_at_least else None,
                     b_ub=np.zeros(len(costs_at_least)) if costs_at_least else None,
                     A_eq=equalities, b_eq=np.append(np.zeros(S), 1.0), bounds=(0, None), method="highs",
                     # tight: a slowly mixing chain makes this LP badly conditioned (at the default 1e-7 the
                     # queue with buffer 1000 comes out 6e-7 too high)
                     options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert result.status == 0, result.message
    return -result.fun


CLIENT = np.full((4, 4), 0.125) + np.eye(4) * 0.5  # stay 0.625, each other state 0.125
TABLE = ((0.75, 0.375, 0.5, 0.375), (0.25, 0.5, 0.75, 1.0))


def fair_share_optimum(clients: int, sla: float) -> float:
    """The scheduler's optimum by a concave program written from the model's definition (cvxpy, Clarabel).

    The clients move whatever the action, so the state's law is the stationary law of their product chain,
    uniform (each client chain is doubly stochastic); only the policy x(s, a) = μ(s) π(a|s) is chosen:
    max Σ_k ln λ_k with λ_k = Σ_s x(s, k) r_k(s), Σ_a x(s, a) = 4^−N, and Σ_s Σ_{a≠1} x(s, a) <= sla.
    """
    import cvxpy as cp

    S = 4 ** clients
    states = np.array(list(itertools.product(range(4), repeat=clients)))  # client 1 the most significant digit
    x = cp.Variable((S, clients), nonneg=True)
    rates = [x[:, k] @ np.array([TABLE[k % 2][i] for i in states[:, k]]) for k in range(clients)]
    problem = cp.Problem(cp.Maximize(sum(cp.log(r) for r in rates)),
                         [cp.sum(x, axis=1) == 1 / S, cp.sum(x[:, 1:]) <= sla])
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return problem.value


# -- queue -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("buffer", [1, 2, 5, 13])
def test_queue_at_the_paper_sizes_is_dense_and_equals_the_table(buffer):
    model = build_model("queue", buffer=buffer)
    assert not model.sparse
    assert np.array_equal(model.kernel, queue_table(buffer))
    sparse = build_model("queue", buffer=buffer, storage="sparse")
    assert sparse.sparse and np.array_equal(sparse.kernel, queue_table(buffer))
    for name in ("rewards", "costs", "initial"):
        assert np.array_equal(getattr(model, name), getattr(sparse, name))


def test_queue_storage_rule_switches_above_two_to_the_twentieth_entries():
    # 16·(L+1)² entries: L = 255 gives exactly 2**20 (dense), L = 256 more (sparse)
    assert 16 * 256 ** 2 == AUTO_DENSE_ENTRIES
    assert not build_model("queue", buffer=255).sparse
    large = build_model("queue", buffer=256)
    assert large.sparse
    assert np.array_equal(large.kernel, queue_table(256))  # the dense view of a sparse kernel: the same numbers
    assert not build_model("queue", buffer=256, storage="dense").sparse
    with pytest.raises(ModelError, match="storage must be one of auto, dense, sparse, got 'csr'"):
        build_model("queue", storage="csr")


def test_a_large_queue_is_built_sparse_with_at_most_three_successors_a_row():
    model = build_model("queue", buffer=10_000)
    matrix = model.transitions
    assert model.sparse and matrix.shape == (10_001 * 16, 10_001)
    assert model.nnz == 16 * (3 * 10_001 - 2) and np.diff(matrix.indptr).max() == 3
    # row (x, action) holds P(x−1), P(x), P(x+1) of the table, here for x = 4,321 and the action (a, b) = (0.6, 0.5)
    a, b, x = 0.6, 0.5, 4321
    row = x * 16 + SERVICE.index(a) * 4 + FLOW.index(b)
    stored = dict(zip(matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]].tolist(),
                      matrix.data[matrix.indptr[row]:matrix.indptr[row + 1]].tolist(), strict=True))
    assert stored == {x - 1: a * (1 - b), x: a * b + (1 - a) * (1 - b), x + 1: (1 - a) * b}
    with pytest.raises(ModelError, match="dense view would hold"):
        _ = model.kernel


@pytest.mark.parametrize("buffer, reference", [(5, 4.4737383), (1000, 4.4725932)])
def test_queue_optimum_matches_an_independent_sparse_lp(buffer, reference):
    model = build_model("queue", buffer=buffer)
    S, A = model.n_states, model.n_actions
    transitions = sp.csr_array(queue_table(buffer).reshape(S * A, S)) if buffer < 100 else model.transitions
    # service cost 6 − 10a and flow cost 2 − 8(1 − b)², both at least 0 on average; reward 5 − x
    pairs = list(itertools.product(SERVICE, FLOW))
    service = np.tile([6 - 10 * a for a, _ in pairs], S)
    flow = np.tile([2 - 8 * (1 - b) ** 2 for _, b in pairs], S)
    value = occupancy_lp(transitions, np.repeat(5.0 - np.arange(S), A), [service, flow])
    assert value == pytest.approx(reference, abs=1e-6)
    result = solve_optimum(model)
    assert result.ok and result.objective == pytest.approx(value, abs=1e-7)


# -- scheduler -------------------------------------------------------------------------------------------------------
def paper_scheduler_arrays():
    """The two-client scheduler of docs/math.md §8, entry by entry: state s = 4 i1 + i2."""
    kernel, rewards, costs = np.zeros((16, 2, 16)), np.zeros((2, 16, 2)), np.zeros((1, 16, 2))
    for (i1, i2), (j1, j2) in itertools.product(itertools.product(range(4), repeat=2), repeat=2):
        kernel[4 * i1 + i2, :, 4 * j1 + j2] = CLIENT[i1, j1] * CLIENT[i2, j2]
    for i1, i2 in itertools.product(range(4), repeat=2):
        rewards[0, 4 * i1 + i2, 0] = TABLE[0][i1]  # action 0 serves client 1
        rewards[1, 4 * i1 + i2, 1] = TABLE[1][i2]
        costs[0, 4 * i1 + i2, 1] = 1.0  # client 2 served
    return kernel, rewards, costs


@pytest.mark.parametrize("arguments", [{}, {"clients": 2}, {"sla": 0.3}, {"sla": "default", "clients": 2}])
def test_two_clients_with_the_default_sla_are_the_papers_scheduler_exactly(arguments):
    model = build_model("scheduler", **arguments)
    kernel, rewards, costs = paper_scheduler_arrays()
    assert np.array_equal(model.kernel, kernel) and np.array_equal(model.rewards, rewards)
    assert np.array_equal(model.costs, costs) and np.array_equal(model.initial, np.full(16, 1 / 16))
    assert utility_to_spec(model.objective) == {"type": "SumOfLogs", "weights": [1.0, 1.0], "shift": 0.0}
    assert [utility_to_spec(g) for g in model.constraints] == [{"type": "LinearBound", "weights": [1.0], "bound": 0.3}]
    assert model.name == "scheduler" and not model.sparse
    assert model.labels["states"][6] == "(2,3)" and model.labels["actions"] == ["serve client 1", "serve client 2"]
    unconstrained = build_model("scheduler", sla=None)
    assert unconstrained.constraints == () and unconstrained.name == "scheduler-unconstrained"


def test_n_clients_follow_the_definition_entry_by_entry():
    model = build_model("scheduler", clients=3)
    S, A = 64, 3
    assert (model.n_states, model.n_actions, model.n_rewards, model.n_costs) == (S, A, 3, 1)
    digits = list(itertools.product(range(4), repeat=3))  # s = 16 i1 + 4 i2 + i3
    for s, t in itertools.product(range(S), repeat=2):
        moved = math.prod(CLIENT[i, j] for i, j in zip(digits[s], digits[t], strict=True))
        assert np.all(model.kernel[s, :, t] == moved)
    for s, k in itertools.product(range(S), range(A)):
        served = np.zeros(3)
        served[k] = TABLE[k % 2][digits[s][k]]  # clients 1 and 3 use the paper's client 1 row
        assert np.array_equal(model.rewards[:, s, k], served)
        assert model.costs[0, s, k] == (k != 0)
    # default SLA 1 − 1.4/N, and sla=None for no constraint
    assert model.constraints[0].to_spec()["bound"] == pytest.approx(1 - 1.4 / 3, abs=1e-15)
    assert build_model("scheduler", clients=5).constraints[0].to_spec()["bound"] == pytest.approx(0.72, abs=1e-15)


def test_scheduler_optima_match_an_independent_concave_program():
    # the values docs/math.md gives, reproduced here from the definition
    assert fair_share_optimum(2, 0.3) == pytest.approx(-2.2708196, abs=1e-6)
    assert fair_share_optimum(3, 0.6) == pytest.approx(-4.3625854, abs=1e-6)
    assert fair_share_optimum(4, 0.6) == pytest.approx(-6.6996609, abs=1e-6)
    # and the builder's model has that optimum
    result = solve_optimum(build_model("scheduler", clients=3, sla=0.6), "cvxpy")
    assert result.ok and result.objective == pytest.approx(fair_share_optimum(3, 0.6), abs=1e-5)


@pytest.mark.parametrize("arguments, message", [
    ({"clients": 1}, "clients must be an integer >= 2, got 1"),
    ({"clients": 2.0}, "clients must be an integer >= 2"),
    ({"sla": 1.5}, r"sla must be a share in \[0, 1\], None \(no constraint\) or 'default', got 1.5"),
    ({"sla": "most"}, "sla must be a share"),
])
def test_bad_scheduler_arguments_are_refused_by_name(arguments, message):
    with pytest.raises(ModelError, match=message):
        build_model("scheduler", **arguments)


def test_too_many_clients_are_refused_before_anything_is_allocated():
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match=r"'scheduler\(clients=7\)' with S=16,384 states and A=7 actions would"
                                             r" need 14 GiB"):
            build_model("scheduler", clients=7)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20


def test_the_scheduler_kernel_stays_dense_under_auto_storage():
    # every entry is positive: a sparse matrix would be larger than the dense array
    assert choose_storage("auto", 1024, 5, 1024 * 5 * 1024) == "dense"
    assert not build_model("scheduler", clients=4).sparse
    forced = build_model("scheduler", clients=3, storage="sparse")
    assert forced.sparse and forced.nnz == 64 * 3 * 64
    assert np.array_equal(forced.kernel, build_model("scheduler", clients=3).kernel)


# -- random ----------------------------------------------------------------------------------------------------------
def test_random_without_successors_draws_as_documented():
    """The kernel, signals and bound from the draw order of random_model's docstring, replayed here."""
    S, A, seed, concentration, margin = 6, 3, 17, 0.7, 0.05
    model = build_model("random", n_states=S, n_actions=A, seed=seed, concentration=concentration, margin=margin)
    rng = np.random.default_rng(seed)
    kernel = np.maximum(rng.dirichlet(np.full(S, concentration), size=(S, A)), SUPPORT_FLOOR)
    kernel /= kernel.sum(axis=2, keepdims=True)
    rewards, costs = rng.random((1, S, A)), rng.random((1, S, A))
    reference = rng.dirichlet(np.ones(A), size=S)
    assert not model.sparse
    assert np.array_equal(model.kernel, kernel) and np.array_equal(model.rewards, rewards)
    assert np.array_equal(model.costs, costs)
    chain = np.einsum("sa,sat->st", reference, kernel)
    mu = np.linalg.matrix_power(chain, 2000)[0]  # full support: the rows converge to the stationary law
    bound = float(np.einsum("sa,sa->", mu[:, None] * reference, costs[0])) + margin
    assert model.constraints[0].to_spec()["bound"] == pytest.approx(bound, abs=1e-12)


@pytest.mark.parametrize("S, A, k", [(2, 3, 2), (7, 2, 4), (40, 3, 5), (9, 1, 9)])
def test_sparse_random_rows_have_exactly_k_successors_with_self_and_ring(S, A, k):
    model = build_model("random", n_states=S, n_actions=A, successors=k, seed=3, storage="sparse")
    matrix = model.transitions
    assert model.sparse and np.all(np.diff(matrix.indptr) == k)
    for row in range(S * A):
        s = row // A
        successors = matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]]
        weights = matrix.data[matrix.indptr[row]:matrix.indptr[row + 1]]
        assert len(set(successors.tolist())) == k and {s, (s + 1) % S} <= set(successors.tolist())
        assert weights.sum() == pytest.approx(1.0, abs=1e-12) and np.all(weights > 0)


def test_sparse_random_extra_successors_are_uniform_without_replacement():
    # S = 6, k = 4: the two extra successors of a row are a pair among the 4 other states, each pair with chance 1/6
    model = build_model("random", n_states=6, n_actions=2000, successors=4, seed=11, storage="sparse")
    matrix = model.transitions
    counts: dict[tuple[int, ...], int] = {}
    for row in range(6 * 2000):
        s = row // 2000
        extra = tuple(sorted((t - s) % 6 for t in matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]]
                             if t not in (s, (s + 1) % 6)))
        counts[extra] = counts.get(extra, 0) + 1
    assert sorted(counts) == sorted(itertools.combinations(range(2, 6), 2))
    expected = 12_000 / 6
    chi_square = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi_square < 20.5  # the 99.9% quantile of chi-square with 5 degrees of freedom


def test_sparse_random_models_are_the_same_model_in_either_storage_and_for_the_same_seed():
    sparse = build_model("random", n_states=12, n_actions=3, successors=4, seed=5, storage="sparse")
    dense = build_model("random", n_states=12, n_actions=3, successors=4, seed=5)
    again = build_model("random", n_states=12, n_actions=3, successors=4, seed=5, storage="sparse")
    assert sparse.sparse and not dense.sparse  # 12·3·12 entries: auto keeps it dense
    assert np.array_equal(sparse.kernel, dense.kernel) and np.array_equal(sparse.costs, dense.costs)
    assert sparse.constraints[0].to_spec() == dense.constraints[0].to_spec() == again.constraints[0].to_spec()
    assert sparse.name == "random(S=12,A=3,K=1,d=1,successors=4,seed=5)"
    assert build_model("random", n_states=1000, n_actions=5, successors=5).sparse


def test_sparse_random_optimum_matches_an_independent_lp():
    model = build_model("random", n_states=200, n_actions=4, successors=5, seed=2, storage="sparse")
    bound = model.constraints[0].to_spec()["bound"]
    value = occupancy_lp(model.transitions, model.rewards[0].ravel(), [bound - model.costs[0].ravel()])
    result = solve_optimum(model)
    assert result.ok and result.objective == pytest.approx(value, abs=1e-7)


@pytest.mark.parametrize("arguments, message", [
    ({"successors": 1}, r"successors must be an integer with 2 <= successors <= n_states \(= 5\)"),
    ({"successors": 6}, r"2 <= successors <= n_states \(= 5\), or None for full support, got 6"),
    ({"successors": True}, "successors must be an integer"),
    ({"storage": "packed"}, "storage must be one of auto, dense, sparse"),
])
def test_bad_random_arguments_are_refused_by_name(arguments, message):
    with pytest.raises(ModelError, match=message):
        build_model("random", **arguments)


def test_model_size_counts_nonzeros_for_sparse_storage():
    # 10^8 buffer: 1.6·10^9 rows, 4.8·10^9 nonzeros — refused from the counts, naming the size
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match=r"'queue' with S=100,000,001 states and A=16 actions would need"
                                             r" [\d.]+ GiB for its sparse kernel \(4,800,000,016 nonzeros\)"):
            build_model("queue", buffer=10 ** 8)
        with pytest.raises(ModelError, match=r"S=20,001 states .* would need 47.7 GiB for its kernel and signals"):
            build_model("queue", buffer=20_000, storage="dense")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20

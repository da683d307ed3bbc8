"""Sparse kernels on the model side: validation at construction, model files, chain properties, diagnose, simulation.

References are independent of the code under test: brute-force enumeration of deterministic policies, a
symmetric tridiagonal eigenproblem written from the queue's table, an LP built here with scipy, a hand trace of
the inverse-CDF draws, dense cumulative sums.
"""

from __future__ import annotations

import copy
import itertools
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.linalg import eigh_tridiagonal
from scipy.optimize import linprog

from curlopt import CMDP, Linear, build_model
from curlopt.diagnostics import diagnose
from curlopt.envs.tabular import TabularCMDPEnv
from curlopt.errors import ModelError
from curlopt.experiments.simulation.loop import ChainSimulator, _cumulative_rows, _generic_epoch
from curlopt.experiments.simulation.streams import UniformStream
from curlopt.models import chains
from curlopt.models.chains import UNDECIDED_CHECK, check_ergodicity, ergodicity_warning, relaxation_time
from curlopt.models.files import load_model, save_model
from curlopt.models.sampling import cumulative_transitions


def one_reward(S: int, A: int) -> np.ndarray:
    return np.zeros((1, S, A))


def csr(data, indices, indptr, shape) -> sp.csr_array:
    return sp.csr_array((np.array(data, dtype=float), np.array(indices), np.array(indptr)), shape=shape)


# -- validation at construction ----------------------------------------------------------------------------------------
# S = 2, A = 2: rows are (0, 0), (0, 1), (1, 0), (1, 1)
@pytest.mark.parametrize("kernel, message", [
    (csr([1, 1, 0.5, 0.4, 1], [0, 1, 0, 1, 1], [0, 1, 2, 4, 5], (4, 2)),
     r"does not sum to 1 .* the row of \(s, a\) = \(1, 0\) sums to 0.9"),
    (csr([1, 1, 1.5, -0.5, 1], [0, 1, 0, 1, 1], [0, 1, 2, 4, 5], (4, 2)),
     r"entry outside \[0, 1\] in the row of \(s, a\) = \(1, 0\), successor 0: 1.5"),
    (csr([1, 1, np.nan, 1], [0, 1, 0, 1], [0, 1, 2, 3, 4], (4, 2)),
     r"NaN or infinite entries \(first in the row of \(s, a\) = \(1, 0\)\)"),
    (csr([1, 1, 1, 1], [0, 1, 7, 1], [0, 1, 2, 3, 4], (4, 2)),
     r"successor index 7 outside 0..1 in the row of \(s, a\) = \(1, 0\)"),
    (csr([1, 1, 1, 1], [0, 1, 0, 1], [0, 2, 1, 3, 4], (4, 2)), r"not a well-formed CSR matrix \(indptr"),
    (sp.csr_array(np.eye(2)), r"must have shape \(S·A, S\) = \(4, 2\) .* got \(2, 2\)"),
])
def test_a_bad_sparse_kernel_is_refused_naming_the_row(kernel, message):
    with pytest.raises(ModelError, match=message):
        CMDP(one_reward(2, 2), objective=Linear([1.0]), kernel=kernel)


def test_a_sparse_kernel_is_copied_sorted_and_summed_and_its_storage_fixed():
    # duplicate entries are summed, unsorted columns sorted, explicit zeros dropped
    given_matrix = csr([0.25, 0.25, 0.5, 0.0, 1.0, 1.0, 1.0], [1, 1, 0, 1, 0, 1, 1], [0, 4, 5, 6, 7], (4, 2))
    model = CMDP(one_reward(2, 2), objective=Linear([1.0]), kernel=given_matrix)
    assert model.sparse and model.nnz == 5
    assert model.transitions.indices.tolist() == [0, 1, 0, 1, 1] and model.transitions.data[:2].tolist() == [0.5, 0.5]
    assert not np.shares_memory(model.transitions.data, given_matrix.data)
    with pytest.raises(ValueError):
        model.transitions.data[0] = 0.0  # read-only
    _ = model.kernel  # the dense view ...
    assert model.sparse  # ... does not change how the model is stored


# -- model files ---------------------------------------------------------------------------------------------------------
def test_a_sparse_model_file_round_trip_keeps_the_model_identical(tmp_path):
    model = build_model("random", n_states=30, n_actions=3, successors=4, seed=8, storage="sparse")
    path = save_model(model, tmp_path / "sparse.json")
    written = json.loads(path.read_text())
    assert written["version"] == 2 and written["kernel"]["format"] == "csr"
    again = load_model(path)
    assert again.sparse and again.name == model.name
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(again.transitions, name), getattr(model.transitions, name))
    for name in ("rewards", "costs", "initial"):
        assert np.array_equal(getattr(again, name), getattr(model, name))
    assert [g.to_spec() for g in again.constraints] == [g.to_spec() for g in model.constraints]


def test_a_dense_model_file_is_written_as_before_and_an_old_file_loads_unchanged(tmp_path):
    written = json.loads(save_model(build_model("queue", buffer=3), tmp_path / "dense.json").read_text())
    assert written["version"] == 1 and isinstance(written["kernel"], list)
    old = {"format": "curlopt-model", "version": 1, "name": "old", "rewards": [[[1.0], [0.0]]], "costs": [],
           "kernel": [[[0.5, 0.5]], [[1.0, 0.0]]], "initial": None, "objective": {"type": "Linear", "weights": [1.0]},
           "constraints": []}
    (tmp_path / "old.json").write_text(json.dumps(old))
    model = load_model(tmp_path / "old.json")
    assert not model.sparse and np.array_equal(model.kernel, [[[0.5, 0.5]], [[1.0, 0.0]]])


@pytest.mark.parametrize("kernel, message", [
    ({"format": "csc", "shape": [2, 2], "indptr": [0, 1, 2], "indices": [0, 1], "data": [1, 1]},
     r"a sparse 'kernel' must be an object with the keys format \(\"csr\"\)"),
    ({"format": "csr", "shape": [2], "indptr": [0, 1, 2], "indices": [0, 1], "data": [1, 1]}, r"kernel.shape must be"),
    ({"format": "csr", "shape": [2, 2], "indptr": [0, 2, 1], "indices": [0, 1], "data": [1, 1]},
     r"kernel.indptr must rise from 0"),
    ({"format": "csr", "shape": [2, 2], "indptr": [0, 1, 2], "indices": [0, 5], "data": [1, 1]},
     r"kernel.indices must be successor states in 0..1"),
    ({"format": "csr", "shape": [2, 2], "indptr": [0, 1, 2], "indices": [0, 1.5], "data": [1, 1]},
     r"kernel.indices must be a list of integers"),
    ({"format": "csr", "shape": [2, 2], "indptr": [0, 1, 2], "indices": [0, 1], "data": [1]},
     r"kernel.data must be a list of as many numbers as kernel.indices \(2\)"),
    ({"format": "csr", "shape": [2, 2], "indptr": [0, 1, 2], "indices": [0, 1], "data": [1, 0.5]},
     r"the row of \(s, a\) = \(1, 0\) sums to 0.5"),
])
def test_a_bad_sparse_kernel_in_a_file_is_refused_naming_the_key(tmp_path, kernel, message):
    data = {"format": "curlopt-model", "version": 2, "rewards": [[[1.0], [0.0]]], "kernel": kernel,
            "objective": {"type": "Linear", "weights": [1.0]}}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ModelError, match=message):
        load_model(tmp_path / "bad.json")


# -- ergodicity ------------------------------------------------------------------------------------------------------
def irreducible(support: np.ndarray) -> bool:
    """Every state reaches every state (transitive closure by repeated squaring)."""
    n = support.shape[0]
    reach = (np.eye(n, dtype=int) + support.astype(int)) > 0
    for _ in range(n):
        reach = (reach.astype(int) @ reach.astype(int)) > 0
    return bool(reach.all())


def brute_force_ergodic(kernel: np.ndarray) -> bool:
    S, A = kernel.shape[:2]
    return all(irreducible(kernel[np.arange(S), list(policy)] > 0) for policy in itertools.product(range(A), repeat=S))


@st.composite
def sparse_kernels(draw):
    S, A = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    mask = np.array(draw(st.lists(st.booleans(), min_size=S * A * S, max_size=S * A * S))).reshape(S, A, S)
    forced = draw(st.lists(st.integers(0, S - 1), min_size=S * A, max_size=S * A))
    mask[np.repeat(np.arange(S), A), np.tile(np.arange(A), S), forced] = True  # every row has a successor
    weights = mask * np.array(draw(st.lists(st.floats(0.1, 1.0), min_size=S * A * S, max_size=S * A * S))).reshape(
        S, A, S)
    return weights / weights.sum(axis=2, keepdims=True)


@given(sparse_kernels())
def test_sparse_ergodicity_check_matches_brute_force_enumeration(kernel):
    S, A = kernel.shape[:2]
    check = check_ergodicity(sp.csr_array(kernel.reshape(S * A, S)))
    assert check.ergodic == brute_force_ergodic(kernel)
    assert check.communicating == irreducible((kernel > 0).any(axis=1))
    if not check.ergodic:
        chain = kernel[np.arange(S), list(check.policy)] > 0
        assert not irreducible(chain)
        assert len(check.recurrent_classes) > 1 or check.transient_states  # what makes it reducible is named


def needs_the_exact_search() -> sp.csr_array:
    """State 0 moves to 1 (action 0) or to 2 (action 1); 1 moves to 2; 2 to 0 or 1 with 1/2 each. No move of
    state 0 is possible under every action, so the sufficient check fails, yet every policy's chain is irreducible."""
    kernel = np.zeros((3, 2, 3))
    kernel[0, 0, 1] = kernel[0, 1, 2] = 1.0
    kernel[1, :, 2] = 1.0
    kernel[2, :, :2] = 0.5
    assert brute_force_ergodic(kernel)
    return sp.csr_array(kernel.reshape(6, 3))


def test_sparse_exact_search_decides_and_reports_when_its_round_budget_runs_out(monkeypatch):
    kernel = needs_the_exact_search()
    decided = check_ergodicity(kernel)
    assert decided.ergodic is True and decided.method == chains.EXACT_CHECK
    monkeypatch.setattr(chains, "MAX_EXACT_ROUNDS", 0)
    undecided = check_ergodicity(kernel)
    assert undecided.ergodic is None and undecided.method == UNDECIDED_CHECK
    model = CMDP(one_reward(3, 2), objective=Linear([1.0]), kernel=kernel, name="detour")
    assert "ergodicity not decided" in ergodicity_warning(model)
    report = diagnose(model)
    assert report.ergodic is None and report.hitting_time is None
    assert "ergodic          unknown" in str(report)
    assert "hitting time and diameter are not computed: ergodicity was not decided" in report.notes


def test_large_sparse_models_pass_the_sufficient_check():
    for model in (build_model("queue", buffer=10_000), build_model("random", n_states=1000, n_actions=5, successors=5)):
        check = check_ergodicity(model.transitions)
        assert model.sparse and check.ergodic and check.method == chains.SUFFICIENT_CHECK


# -- relaxation time -----------------------------------------------------------------------------------------------------
def birth_death_relaxation(buffer: int) -> float:
    """The queue under the uniform policy is a birth-death chain: reversible, so its eigenvalues are those of the
    symmetric tridiagonal matrix with diagonal P(x, x) and off-diagonal sqrt(P(x, x+1) P(x+1, x))."""
    grid = list(itertools.product((0.2, 0.4, 0.6, 0.8), (0.4, 0.5, 0.6, 0.7)))
    up = np.mean([(1 - a) * b for a, b in grid])
    down = np.mean([a * (1 - b) for a, b in grid])
    first_up, last_down = np.mean([b * (1 - a) for a, b in grid]), np.mean([a for a, _ in grid])
    ups = np.array([first_up] + [up] * (buffer - 1))
    downs = np.array([down] * (buffer - 1) + [last_down])
    diagonal = 1 - np.append(ups, 0.0) - np.append(0.0, downs)
    values = eigh_tridiagonal(diagonal, np.sqrt(ups * downs), eigvals_only=True)
    return 1 / (1 - np.sort(np.abs(values))[-2])


@pytest.mark.parametrize("buffer", [40, 3000])
def test_relaxation_time_of_the_sparse_queue_matches_its_symmetric_tridiagonal_form(buffer):
    model = build_model("queue", buffer=buffer, storage="sparse")
    assert relaxation_time(model.transitions) == pytest.approx(birth_death_relaxation(buffer), rel=1e-7)


def test_relaxation_time_of_a_small_nonreversible_sparse_chain_matches_dense_eigenvalues():
    model = build_model("random", n_states=40, n_actions=3, successors=4, seed=1, storage="sparse")
    chain = np.einsum("sa,sat->st", np.full((40, 3), 1 / 3), model.kernel)
    second = np.sort(np.abs(np.linalg.eigvals(chain)))[-2]
    assert relaxation_time(model.transitions) == pytest.approx(1 / (1 - second), rel=1e-9)


def test_relaxation_time_of_many_clients_is_two():
    # each client's chain has eigenvalues 1 and 0.625 − 0.125 = 1/2; the product chain's second is 1/2
    assert relaxation_time(build_model("scheduler", clients=5).kernel) == pytest.approx(2.0, rel=1e-9)


def test_a_large_nonreversible_chain_says_why_its_relaxation_time_is_not_computed():
    model = build_model("random", n_states=1500, n_actions=2, successors=3, seed=0)
    with pytest.raises(ModelError, match=r"1,500-state chain is not computed: the chain is not reversible"):
        relaxation_time(model.transitions)


# -- diagnose at scale -----------------------------------------------------------------------------------------------
def test_diagnose_a_sparse_queue_and_its_slater_margin_against_an_independent_lp():
    model = build_model("queue", buffer=300)
    assert model.sparse
    report = diagnose(model)
    assert report.ergodic and report.hitting_time is None and report.diameter is None
    assert any("computed up to 200 states only" in note for note in report.notes)
    assert report.relaxation_time == pytest.approx(birth_death_relaxation(300), rel=1e-7)
    # δ = max over stationary occupancies of min(ζ_service, ζ_flow): an LP in (ρ, t), maximise t
    S, A = model.n_states, model.n_actions
    rows = S * A
    outflow = sp.csr_array((np.ones(rows), (np.repeat(np.arange(S), A), np.arange(rows))), shape=(S, rows))
    flow = sp.hstack([outflow - model.transitions.T, sp.csr_array((S, 1))])
    total = sp.csr_array(np.append(np.ones(rows), 0.0)[None])
    costs = model.costs.reshape(2, rows)
    below = sp.hstack([sp.csr_array(-costs), sp.csr_array(np.ones((2, 1)))])  # t − ζ_i <= 0
    result = linprog(np.append(np.zeros(rows), -1.0), A_ub=below, b_ub=np.zeros(2), A_eq=sp.vstack([flow, total]),
                     b_eq=np.append(np.zeros(S), 1.0), bounds=[(0, None)] * rows + [(None, None)], method="highs")
    assert report.slater.margin == pytest.approx(-result.fun, abs=1e-6) and report.slater.strictly_feasible


def test_cli_diagnose_a_sparse_model_prints_its_notes():
    from typer.testing import CliRunner

    import curlopt.cli

    curlopt.cli._register()
    result = CliRunner().invoke(curlopt.cli.app, ["diagnose", "random", "-p", "n_states=1500", "-p", "n_actions=2",
                                                  "-p", "successors=3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ergodic"] is True and data["relaxation_time"] is None and data["hitting_time"] is None
    assert any("not reversible" in note for note in data["notes"])
    assert data["slater_margin"] > 0


# -- simulation ------------------------------------------------------------------------------------------------------
@given(sparse_kernels())
def test_cumulative_tables_hold_the_dense_cumulative_sums_at_the_stored_successors(kernel):
    S, A = kernel.shape[:2]
    table = cumulative_transitions(sp.csr_array(kernel.reshape(S * A, S)))
    dense = np.cumsum(kernel.reshape(S * A, S), axis=1)
    rows = np.repeat(np.arange(S * A), np.diff(table.indptr))
    assert np.array_equal(table.data, dense[rows, table.indices])  # exactly: the same sums in the same order


@pytest.mark.parametrize("name, params", [("queue", {"buffer": 20}), ("random", {"n_states": 30, "n_actions": 3,
                                                                               "successors": 4})])
def test_environment_trajectories_are_equal_whether_the_kernel_is_stored_sparse_or_dense(name, params):
    trajectories = []
    for storage in ("dense", "sparse"):
        model = build_model(name, **params, storage=storage)
        assert model.sparse == (storage == "sparse")
        env = TabularCMDPEnv(model)
        state, _ = env.reset(seed=7)
        actions = np.random.default_rng(2).integers(model.n_actions, size=5000)
        trajectories.append([int(state)] + [int(env.step(int(a))[0]) for a in actions])
    assert trajectories[0] == trajectories[1]


def hand_trace(kernel, policy, steps, state, action_uniforms, state_uniforms):
    """Inverse-CDF steps written out: the first index whose running sum exceeds the uniform."""
    def first_above(weights, u):
        total = 0.0
        for index, weight in enumerate(weights):
            total += float(weight)
            if total > u:
                return index
        return len(weights) - 1

    pairs = []
    for step in range(steps):
        action = first_above(policy[state], action_uniforms[step])
        pairs.append(state * policy.shape[1] + action)
        state = first_above(kernel[state, action], state_uniforms[step])
    return pairs, state


def test_fast_path_equals_generic_path_and_a_hand_trace_on_a_sparse_model():
    model = build_model("random", n_states=12, n_actions=3, successors=3, seed=6, storage="sparse")
    S, A = model.n_states, model.n_actions
    policy = np.random.default_rng(0).dirichlet(np.ones(A), size=S)
    env = TabularCMDPEnv(model)
    env.reset(seed=21, options={"state": 4})
    state_uniforms = copy.deepcopy(env.unwrapped.np_random).random(4000)
    fast = ChainSimulator(model.transitions, np.random.default_rng(3), copy.deepcopy(env.unwrapped.np_random), state=4)
    fast_pairs, _ = fast.play(policy, 4000)
    generic_pairs, _, generic_state = _generic_epoch(env, 4, _cumulative_rows(policy), [math.inf] * (S * A), 4000,
                                                     UniformStream(np.random.default_rng(3)), A, model)
    by_hand, hand_state = hand_trace(model.kernel, policy, 4000, 4, np.random.default_rng(3).random(4000),
                                     state_uniforms)
    assert fast_pairs.tolist() == generic_pairs.tolist() == by_hand
    assert fast.state == generic_state == hand_state


def test_fast_path_on_sparse_and_dense_storage_gives_the_same_epochs_with_thresholds():
    dense = build_model("queue", buffer=15)
    sparse = build_model("queue", buffer=15, storage="sparse")
    policy = np.random.default_rng(4).dirichlet(np.ones(16), size=16)
    thresholds = np.random.default_rng(5).integers(1, 30, size=(16, 16)).astype(float)
    runs = []
    for kernel in (dense.kernel, sparse.transitions):
        simulator = ChainSimulator(kernel, np.random.default_rng(8), np.random.default_rng(9))
        runs.append([simulator.play(policy, 500, thresholds) for _ in range(20)] + [simulator.state])
    for (dense_pairs, dense_nexts), (sparse_pairs, sparse_nexts) in zip(runs[0][:-1], runs[1][:-1], strict=True):
        assert np.array_equal(dense_pairs, sparse_pairs) and np.array_equal(dense_nexts, sparse_nexts)
    assert runs[0][-1] == runs[1][-1]

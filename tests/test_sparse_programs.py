"""Programs built on a sparse support: the kernel's nonzeros fix every program's structure.

What is checked, and against what:

* structure — a program on a sparse-stored model equals, entry by entry once densified, the program on the
  dense model: the same matrix for the occupancy, safe and least-violation programs; for the optimistic and
  box programs the dense program's matrix with the columns of ``p``/``α`` off the support removed (the rows
  it then loses hold for every ρ >= 0);
* solutions — on every installed backend that accepts the program (the ``backend_name`` fixture): a sparse-
  stored copy of a model gives the optimum and solution of the dense model; a joint program on a narrow support
  gives the optimum of an independent LP (``curlopt.testing.reference``, ``p = 0`` off the support);
* the conformance suite's sparse checks pass on every installed backend;
* the queue at buffer 50 against a sparse LP written here from the model's arrays with ``linprog``;
* bad kernels, counts and supports are refused naming the row (s, a) and the successor; a program too large is
  refused before it is built, naming its size.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import backend_or_skip
from hypothesis import HealthCheck, assume, given, note, settings
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound, build_model, get_backend, solve_optimum
from curlopt.errors import ProgramError
from curlopt.programs import (
    BoxOptimisticProgram,
    LeastViolationProgram,
    OccupancyProgram,
    OptimisticProgram,
    SafeProgram,
    Support,
    blocks,
)
from curlopt.testing import reference as ref
from curlopt.testing import run_conformance
from curlopt.testing.conformance import check_solution
from curlopt.testing.strategies import cases

HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
#: structure only (no solver): as many examples as the profile gives
STRUCTURE = settings(suppress_health_check=HEALTH)
#: two solves and a reference LP per example, on every backend: a third of the profile's examples
SOLVES = settings(suppress_health_check=HEALTH, max_examples=max(4, settings.default.max_examples // 3))
OBJECTIVE_ABS, OBJECTIVE_REL = 1e-7, 1e-6
SOLUTION = 1e-6
JOINT_KINDS = ("optimistic", "box-optimistic")


def sparse_copy(model: CMDP) -> CMDP:
    """``model`` with its kernel stored sparse (the same data)."""
    S, A = model.n_states, model.n_actions
    return CMDP(model.rewards, model.costs, model.objective, model.constraints,
                kernel=sp.csr_array(np.asarray(model.kernel).reshape(S * A, S)), initial=model.initial,
                name=model.name, storage="sparse")


def joint_program(case, kind: str, model: CMDP):
    if kind == "optimistic":
        return OptimisticProgram(model, counts=case.counts, time=case.time, epsilon=case.epsilon)
    return BoxOptimisticProgram(model, case.horizon, counts=case.counts, time=case.time, epsilon=case.epsilon)


def dense_model(case) -> CMDP:
    """The case's model with its kernel dense (zeros off the support)."""
    return case.with_data(support=None).model()


def occupancy_family(case, model: CMDP) -> list:
    """The occupancy, safe and (with a constraint) least-violation programs of ``case`` on ``model``."""
    S, A, M = case.n_states, case.n_actions, len(case.constraint_pieces)
    rng = np.random.default_rng(case.seed)
    bonus, penalty = rng.uniform(0, 1, size=(S, A)), rng.uniform(0, 1, size=(M, S, A))
    programs = [OccupancyProgram(model, kernel=case.kernel, epsilon=case.epsilon),
                SafeProgram(model, kernel=case.kernel, bonus=bonus, penalty=penalty, epsilon=case.epsilon)]
    if M:
        programs.append(LeastViolationProgram(model, kernel=case.kernel, penalty=penalty))
    return programs


def close(a: float, b: float) -> bool:
    return abs(a - b) <= max(OBJECTIVE_ABS, OBJECTIVE_REL * max(abs(a), abs(b)))


# ----------------------------------------------------------------------------
# structure: the sparse program is the dense one, densified
# ----------------------------------------------------------------------------


@STRUCTURE
@given(case=cases(sparse=True, max_states=6, max_actions=3, max_constraints=2))
def test_occupancy_family_on_a_sparse_model_has_the_dense_matrix(case):
    note(repr(case))
    S, A = case.n_states, case.n_actions
    support = case.support.reshape(S * A, S)
    for dense, sparse in zip(occupancy_family(case, dense_model(case)), occupancy_family(case, case.model()), strict=True):
        assert dense.support.is_dense and not sparse.support.is_dense
        np.testing.assert_array_equal(sparse.linear.matrix().toarray(), dense.linear.matrix().toarray())
        np.testing.assert_array_equal(sparse.linear.lower, dense.linear.lower)
        np.testing.assert_array_equal(sparse.linear.upper, dense.linear.upper)
        # parameter entries only where (s,a) -> s' is allowed, or s' = s (the diagonal term of the flow rows)
        flow = sparse.linear.param_groups["flow"]
        rows = sparse.linear.param_rows[flow] - sparse.linear.groups["flow"].start
        pairs = sparse.linear.param_cols[flow] - sparse.blocks["occupancy"].start
        assert np.all(support[pairs, rows] | (rows == pairs // A))
        assert flow.stop - flow.start <= int(support[:, : S - 1].sum()) + S * A


def densify_joint(program, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each column and row of a joint program on a sparse support sits in the dense program's layout."""
    support = program.support
    entry = support.pairs * S + support.successors          # the entry's place in an (S, A, S) ravel
    columns = np.arange(program.n_vars)
    rows = np.arange(program.linear.n_rows)
    for name in ("joint", "deviation"):
        if name in program.blocks:
            block = program.blocks[name]
            # the dense program lays its blocks out (ρ, p, α), each S·A·S long after ρ
            offset = S * A + (0 if name == "joint" else S * A * S)
            columns[block.slice] = offset + entry
    start = 0
    for name, group in program.linear.groups.items():
        # the confidence rows have one row per entry (S·A·S of them in the dense program); the others match
        per_entry = name in ("deviation_upper", "deviation_lower", "box_upper", "box_lower")
        rows[group] = start + (entry if per_entry else np.arange(group.stop - group.start))
        start += S * A * S if per_entry else group.stop - group.start
    return columns, rows


@pytest.mark.parametrize("kind", JOINT_KINDS)
@STRUCTURE
@given(case=cases(sparse=True, max_states=5, max_actions=3, max_constraints=1))
def test_joint_programs_on_a_sparse_model_are_the_dense_program_without_the_off_support_columns(kind, case):
    note(repr(case))
    S, A = case.n_states, case.n_actions
    assume(case.support.sum() < case.support.size)
    dense, sparse = joint_program(case, kind, dense_model(case)), joint_program(case, kind, case.model())
    assert sparse.joint(np.arange(sparse.n_vars, dtype=float)).shape == (int(case.support.sum()),)
    columns, rows = densify_joint(sparse, S, A)
    full = dense.linear.matrix().tocsr()
    np.testing.assert_array_equal(sparse.linear.matrix().toarray(), full[rows][:, columns].toarray())
    np.testing.assert_array_equal(sparse.linear.upper, dense.linear.upper[rows])
    np.testing.assert_array_equal(sparse.linear.lower, dense.linear.lower[rows])
    # the dense rows the sparse program does not have (confidence rows of off-support entries) hold at p = α = 0
    # for every ρ >= 0: on the kept columns they read c·ρ <= 0 with c <= 0
    dropped = np.setdiff1d(np.arange(dense.linear.n_rows), rows)
    kept = full[dropped][:, columns]
    assert np.all(dense.linear.upper[dropped] == 0.0) and np.all(kept.toarray() <= 0.0)
    assert np.all(kept[:, S * A:].toarray() == 0.0)
    # the sparse program's p and α live on the support: the column map hits exactly the support's entries
    on_support = np.flatnonzero(case.support.ravel())
    np.testing.assert_array_equal(np.sort(columns[sparse.blocks["joint"].slice]) - S * A, on_support)


@pytest.mark.parametrize("kind", ("occupancy", *JOINT_KINDS))
@STRUCTURE
@given(case=cases(max_states=4, max_actions=3, max_constraints=1))
def test_a_full_kernel_stored_sparse_gives_the_same_program(kind, case):
    # every entry of a random kernel is positive: the sparse model's support is every successor, so the sparse
    # code path must build exactly the dense program (same layout, same values)
    dense_model_ = case.model()
    stored = sparse_copy(dense_model_)
    if kind == "occupancy":
        dense, sparse = OccupancyProgram(dense_model_), OccupancyProgram(stored)
    else:
        dense, sparse = joint_program(case, kind, dense_model_), joint_program(case, kind, stored)
    assert dense.support.is_dense and not sparse.support.is_dense
    assert (sparse.linear.matrix() != dense.linear.matrix()).nnz == 0
    np.testing.assert_array_equal(sparse.linear.param_rows, dense.linear.param_rows)
    np.testing.assert_array_equal(sparse.linear.param_cols, dense.linear.param_cols)


def test_a_kernel_given_dense_or_sparse_sets_the_same_values():
    model = build_model("queue", buffer=4)
    stored = sparse_copy(model)
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(0)
    kernel = rng.uniform(0.1, 1.0, size=(S, A, S)) * (model.kernel > 0)
    kernel /= kernel.sum(axis=2, keepdims=True)
    for program in (OccupancyProgram(stored), OccupancyProgram(model)):
        program.update(kernel=kernel)
        from_dense = np.array(program.linear.param_values)
        program.update(kernel=sp.csr_array(kernel.reshape(S * A, S)))
        np.testing.assert_array_equal(np.asarray(program.linear.param_values), from_dense)
    assert sp.issparse(OccupancyProgram(stored).kernel) and OccupancyProgram(model).kernel.shape == (S, A, S)


def test_the_dense_support_numbers_its_entries_in_ravel_order():
    support = Support.dense(3, 2)
    assert support.is_dense and support.nnz == 18 and support.shape == (3, 2, 3)
    np.testing.assert_array_equal(support.pairs * 3 + support.successors, np.arange(18))
    pattern = sp.csr_array(np.array([[0, 1, 1], [1, 0, 0], [0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 0, 1]], dtype=float))
    sparse = Support.from_pattern(pattern, 3, 2)
    np.testing.assert_array_equal(sparse.successors, [1, 2, 0, 2, 0, 1, 2, 1, 0, 2])
    np.testing.assert_array_equal(sparse.pairs, [0, 0, 1, 2, 3, 3, 3, 4, 5, 5])


# ----------------------------------------------------------------------------
# solutions on every backend
# ----------------------------------------------------------------------------


def solve(name: str, program):
    return backend_or_skip(name, program).solve()


def assert_same_solution(first, second, what: str, unique: bool) -> None:
    assert first.status.has_solution and second.status.has_solution, (what, first.message, second.message)
    assert first.program is second.program, what
    assert close(first.objective, second.objective), (what, first.objective, second.objective)
    np.testing.assert_allclose(first.rewards, second.rewards, rtol=0, atol=SOLUTION, err_msg=what)
    if unique:  # a linear objective on random data: the optimal vertex is unique (almost surely)
        np.testing.assert_allclose(first.occupancy, second.occupancy, rtol=0, atol=SOLUTION, err_msg=what)


@SOLVES
@given(case=cases(sparse=True, max_states=5, max_actions=3, max_constraints=2))
def test_occupancy_family_solves_the_same_on_a_sparse_model(backend_name, case):
    note(repr(case))
    unique = case.objective_kind == "linear"
    for dense, sparse in zip(occupancy_family(case, dense_model(case)), occupancy_family(case, case.model()), strict=True):
        what = f"{backend_name}, {dense.kind}"
        d, s = solve(backend_name, dense), solve(backend_name, sparse)
        assert_same_solution(d, s, what, unique and dense.kind == "occupancy")


@pytest.mark.parametrize("kind", JOINT_KINDS)
@SOLVES
@given(case=cases(max_states=4, max_actions=3, max_constraints=1))
def test_joint_programs_solve_the_same_on_a_full_kernel_stored_sparse(backend_name, kind, case):
    note(repr(case))
    dense_model_ = case.model()
    d = solve(backend_name, joint_program(case, kind, dense_model_))
    s = solve(backend_name, joint_program(case, kind, sparse_copy(dense_model_)))
    assert_same_solution(d, s, f"{backend_name}, {kind}", unique=False)
    assert s.joint.shape == (case.n_states * case.n_actions * case.n_states,)


@pytest.mark.parametrize("kind", JOINT_KINDS)
@SOLVES
@given(case=cases(sparse=True, max_states=5, max_actions=3, max_constraints=1))
def test_joint_programs_on_a_narrow_support_match_the_reference(backend_name, kind, case):
    note(repr(case))
    margin = case.tightness_margin(kind)
    assume(abs(margin) > 1e-6)  # razor-thin feasibility: solvers may disagree (see tests/test_programs.py)
    result = solve(backend_name, case.program(kind))
    expected = case.reference(kind, with_constraints=margin > 0)
    slack = max(OBJECTIVE_ABS, OBJECTIVE_REL * abs(expected.value))
    assert expected.lower - slack <= result.objective <= expected.upper + slack, (result.objective, expected.value)
    check_solution(case, kind, result, tight=margin > 0)


@pytest.mark.parametrize("family", ["sparse-optimum/", "sparse-update/"])
def test_installed_backend_passes_the_sparse_conformance_checks(backend_name, family):
    report = run_conformance(backend_name, checks=[family], examples=1, raise_on_failure=False)
    assert report.ok, str(report)
    assert any(r.name.startswith(family) for r in report.passed)


def test_column_generation_prices_over_the_support_only():
    # a random walk on a line, rewarded at its far end: the dense L1 ball lets the optimistic kernel jump there
    # from anywhere, the walk's support only one step at a time, so the two optima differ; highs-columns (whose
    # pricing builds the optimistic kernels itself) must find each, as the independent reference LP does
    S = 6
    kernel = np.zeros((S, 1, S))
    for s in range(S):
        kernel[s, 0, max(s - 1, 0)] += 0.5
        kernel[s, 0, min(s + 1, S - 1)] += 0.5
    rewards = np.zeros((S, 1))
    rewards[S - 1] = 1.0
    walk = CMDP(rewards, objective=Linear([1.0]), kernel=kernel, name="walk")
    counts, time = 5000 * kernel, 10_000
    values = {}
    for label, model, support in (("dense", walk, None), ("sparse", sparse_copy(walk), kernel > 0)):
        expected = ref.solve_reference(ref.optimistic_polytope(counts, time, support), rewards[None], np.zeros((0, S, 1)),
                                       ref.LinearObjective(np.ones(1)), [], 0.0).value
        for name in ("highs", "highs-columns"):
            result = get_backend(name).compile(OptimisticProgram(model, counts=counts, time=time)).solve()
            assert close(result.objective, expected), (label, name, result.objective, expected)
            values[label] = expected
    assert values["sparse"] < values["dense"] - 0.01


def test_queue_optimum_matches_an_independent_sparse_lp():
    model = build_model("queue", buffer=50, storage="sparse")
    assert model.sparse
    S, A = model.n_states, model.n_actions
    # the LP over ρ (S·A) from the model's arrays, every flow row kept: Σ_a ρ(s',a) = Σ_{s,a} P(s'|s,a) ρ(s,a)
    P = sp.csr_array(model.transitions)
    own = sp.csr_array((np.ones(S * A), (np.repeat(np.arange(S), A), np.arange(S * A))), shape=(S, S * A))
    A_eq = sp.vstack([sp.csr_array(np.ones((1, S * A))), own - P.T]).tocsr()
    b_eq = np.concatenate([[1.0], np.zeros(S)])
    costs = model.costs.reshape(model.n_costs, S * A)
    # both constraints of the queue: ζ_1 >= 0 and ζ_2 >= 0
    lp = linprog(-model.rewards.reshape(-1), A_ub=-costs, b_ub=np.zeros(model.n_costs), A_eq=A_eq, b_eq=b_eq,
                 bounds=(0, None), method="highs",
                 options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert lp.status == 0, lp.message
    result = solve_optimum(model, "highs")
    assert result.status.has_solution and not result.fell_back
    assert abs(result.objective - (-lp.fun)) <= 1e-7
    program = OccupancyProgram(model)
    assert program.linear.n_params <= model.nnz + S * A < (S - 1) * S * A // 10


def test_solve_optimum_never_builds_the_dense_view_of_a_large_sparse_kernel():
    model = build_model("queue", buffer=600)
    assert model.sparse and model.n_states * model.n_actions * model.n_states > 2 ** 22
    result = solve_optimum(model)
    assert result.status.has_solution
    with pytest.raises(Exception, match="dense view"):
        model.kernel  # noqa: B018  (still refused: nothing built it)


# ----------------------------------------------------------------------------
# refusals
# ----------------------------------------------------------------------------


@pytest.fixture
def small():
    """A 3-state, 2-action model (dense) and the kernel of its sparse copy's support."""
    kernel = np.zeros((3, 2, 3))
    kernel[:, :, 0] = 0.5
    kernel[np.arange(3), :, np.arange(3)] += 0.5
    model = CMDP(np.ones((3, 2)), np.ones((3, 2)), Linear([1.0]), [LinearBound([1.0], 2.0)], kernel=kernel)
    return model, sparse_copy(model), kernel


def bad_kernels(kernel: np.ndarray) -> list[tuple[str, np.ndarray, str]]:
    nan, negative, short = kernel.copy(), kernel.copy(), kernel.copy()
    nan[1, 0, 0] = np.nan
    negative[2, 1, 0], negative[2, 1, 2] = -0.5, 1.5
    short[1, 1, 1] = 0.25
    return [("nan", nan, r"NaN or infinite entries \(first in the row of \(s, a\) = \(1, 0\), successor 0\)"),
            ("negative", negative, r"entry outside \[0, 1\] in the row of \(s, a\) = \(2, 1\), successor 0"),
            ("sum", short, r"does not sum to 1 .* the row of \(s, a\) = \(1, 1\) sums to 0\.75")]


@pytest.mark.parametrize("form", ["dense", "sparse"])
@pytest.mark.parametrize("which", ["nan", "negative", "sum"])
def test_bad_kernels_are_refused_naming_the_row(small, form, which):
    model, stored, kernel = small
    _, bad, message = next(k for k in bad_kernels(kernel) if k[0] == which)
    given_kernel = bad if form == "dense" else sp.csr_array(bad.reshape(6, 3))
    for program in (OccupancyProgram(model), OccupancyProgram(stored), SafeProgram(stored)):
        with pytest.raises(ProgramError, match=message):
            program.update(kernel=given_kernel)


def test_kernels_and_counts_of_the_wrong_shape_are_refused(small):
    _, stored, _ = small
    with pytest.raises(ProgramError, match=r"kernel must have shape \(S, A, S\) = \(3, 2, 3\) or, sparse"):
        OccupancyProgram(stored, kernel=np.ones((3, 2, 4)) / 4)
    with pytest.raises(ProgramError, match=r"\(S·A, S\) = \(6, 3\), got \(3, 6\)"):
        OccupancyProgram(stored, kernel=sp.csr_array(np.ones((3, 6)) / 6))
    with pytest.raises(ProgramError, match=r"counts must have shape"):
        OptimisticProgram(stored, counts=sp.csr_array(np.ones((6, 2))))


def test_data_outside_the_support_is_refused_naming_the_row_and_successor(small):
    model, stored, _ = small
    dense_elsewhere = np.full((3, 2, 3), 1.0 / 3)
    with pytest.raises(ProgramError, match=r"outside the program's support: the row of \(s, a\) = \(0, 0\), successor 1"):
        OccupancyProgram(stored, kernel=dense_elsewhere)
    program = OccupancyProgram(stored)
    with pytest.raises(ProgramError, match=r"the row of \(s, a\) = \(0, 0\), successor 1"):
        program.update(kernel=sp.csr_array(dense_elsewhere.reshape(6, 3)))
    counts = np.zeros((3, 2, 3))
    counts[2, 1, 1] = 4
    with pytest.raises(ProgramError, match=r"counts has a nonzero entry outside .* \(s, a\) = \(2, 1\), successor 1"):
        OptimisticProgram(stored, counts=counts)
    negative = np.zeros((3, 2, 3))
    negative[1, 0, 0] = -1.0
    with pytest.raises(ProgramError, match=r"counts must be finite and non-negative: the row of \(s, a\) = \(1, 0\),"
                                           r" successor 0"):
        BoxOptimisticProgram(stored, 100, counts=negative)
    # the dense model's programs take any successor
    OccupancyProgram(model, kernel=dense_elsewhere)


def test_a_support_without_a_successor_for_some_pair_is_refused(small):
    model, _, _ = small
    pattern = np.ones((6, 3))
    pattern[4] = 0
    with pytest.raises(ProgramError, match=r"no successor for the pair \(s, a\) = \(2, 0\)"):
        OptimisticProgram(model, support=sp.csr_array(pattern))
    with pytest.raises(ProgramError, match=r"support must be a scipy sparse matrix"):
        OccupancyProgram(model, support=pattern)


def test_a_program_too_large_is_refused_before_it_is_built():
    # S = 1,000 and A = 16 without a kernel: the optimistic program on every successor would have 2·S²·A
    # variables p and α (32 M) and ~150 M nonzeros; it must be refused from its counts, not by running out of memory
    model = CMDP(np.zeros((1000, 16)), objective=Linear([1.0]), name="big")
    tracemalloc.start()
    try:
        with pytest.raises(ProgramError, match=r"optimistic program of model 'big' .* 32,016,000 variables and"
                                               r" [\d,]+ nonzeros, about [\d.]+ GiB .* limit of 2 GiB"):
            OptimisticProgram(model)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2 ** 20
    # the same model on a sparse support (three successors a state) is small
    support = sp.diags_array([np.ones(999), np.ones(1000), np.ones(999)], offsets=[-1, 0, 1]).tocsr()
    program = OptimisticProgram(model, support=sp.csr_array(support[np.repeat(np.arange(1000), 16)]))
    assert program.n_vars == 16_000 + 2 * program.support.nnz


def test_the_size_limit_names_every_program_kind(small, monkeypatch):
    model, stored, _ = small
    monkeypatch.setattr(blocks, "MAX_PROGRAM_BYTES", 1000)
    for make in (lambda: OccupancyProgram(stored), lambda: SafeProgram(stored), lambda: LeastViolationProgram(stored),
                 lambda: OptimisticProgram(model), lambda: BoxOptimisticProgram(model, 10)):
        with pytest.raises(ProgramError, match=r"program of model .* variables and [\d,]+ nonzeros"):
            make()

"""The ``highs-box-columns`` backend (curlopt/backends/highs/box_columns.py): UCRL-CMDP's box program by column
generation, priced by the box's closed-form inner step.

Every reference is computed apart from the code under test: the closed form against ``scipy.optimize.linprog`` on
the box intersected with the simplex; the backend's optimal value against the plain ``highs`` backend on the whole
box LP of docs/math.md §9, compiled afresh for every instance; and one UCRL-CMDP epoch on a two-state model whose
box vertices, optimum and policy are worked out by hand in the test.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import get_backend
from curlopt.agents import make_agent
from curlopt.agents.baselines import UcrlCmdp
from curlopt.backends.base import DelegatedProgram
from curlopt.backends.highs.backend import CompiledHighs
from curlopt.backends.highs.box_columns import CompiledBoxColumns
from curlopt.backends.highs.box_master import SLOT_MAJOR_SUMS_BELOW, BoxMaster
from curlopt.backends.highs.box_vertices import box_usable, box_vertices
from curlopt.backends.highs.columns import CompiledColumns
from curlopt.backends.registry import auto_candidates, backend_names
from curlopt.backends.results import ProgramVariant, Status
from curlopt.models import queue_model, random_model
from curlopt.models.cmdp import CMDP
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import BoxOptimisticProgram, OptimisticProgram
from curlopt.testing import run_conformance
from curlopt.utilities.library import Linear, LinearBound, MinOfLinear

NAME = "highs-box-columns"
#: the same optimal value as the whole LP, and every row satisfied, to this
EXACT = 1e-9


def _counts(rng: np.random.Generator, kernel: np.ndarray, scale: float, unvisited: float = 0.3) -> np.ndarray:
    """Transition counts drawn from ``kernel`` (S, A, S); a share ``unvisited`` of the pairs never visited."""
    S, A, _ = kernel.shape
    visits = rng.poisson(scale, size=(S, A)) * (rng.random((S, A)) >= unvisited)
    counts = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            counts[s, a] = rng.multinomial(visits[s, a], kernel[s, a])
    return counts


def _agree(result, expected, program) -> None:
    """Same status and program variant as the whole LP on highs, the same value to EXACT, every row holding."""
    assert result.status is expected.status, (result.status, expected.status, result.message)
    assert result.program is expected.program
    assert result.backend == NAME
    if not expected.status.has_solution:
        return
    assert result.objective == pytest.approx(expected.objective, rel=EXACT, abs=EXACT)
    residuals = program.residuals(result.x, include_constraints=result.program is ProgramVariant.TIGHT)
    assert max(residuals.values()) <= EXACT, residuals


def _whole_lp(program_args: tuple, **kwargs):
    """The reference: the whole box LP, compiled afresh, on the plain highs backend."""
    return get_backend("highs").solve(BoxOptimisticProgram(*program_args, **kwargs))


# -- the closed form ---------------------------------------------------------------------------------------------

@given(st.integers(2, 6), st.integers(0, 2**32 - 1), st.floats(0.0, 1.2), st.booleans())
def test_the_closed_form_is_the_linprog_maximiser_over_the_box(width, seed, radius, ties):
    rng = np.random.default_rng(seed)
    centre = rng.dirichlet(np.ones(width)) * (rng.random(width) < 0.8)
    centre = centre / centre.sum() if centre.sum() > 0 else centre         # a visited pair, or an unvisited one
    lower, upper = np.maximum(centre - radius, 0.0), centre + radius
    h = rng.integers(0, 3, width).astype(float) if ties else rng.normal(size=width)
    reference = linprog(-h, A_eq=np.ones((1, width)), b_eq=[1.0], bounds=list(zip(lower, upper, strict=True)), method="highs",
                        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    usable = box_usable(lower[None, :], upper[None, :])[0]
    assert usable == (reference.status == 0)
    if not usable:
        return
    vertex = box_vertices(np.argsort(-h, kind="stable")[None, :], lower[None, :], upper[None, :])[0]
    assert vertex @ h == pytest.approx(-reference.fun, abs=1e-9)        # linprog's own tolerances: 1e-10 a row
    assert vertex.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(vertex >= lower - 1e-15) and np.all(vertex <= upper + 1e-15)


def test_one_order_serves_every_row_as_each_row_its_own():
    rng = np.random.default_rng(3)
    lower = rng.random((5, 4)) * 0.2
    upper = lower + rng.random((5, 4))
    order = np.array([2, 0, 3, 1])
    shared = box_vertices(order, lower, upper)
    assert np.array_equal(shared, box_vertices(np.tile(order, (5, 1)), lower, upper))



@given(st.integers(2, 12), st.integers(1, 3), st.integers(0, 10_000))
def test_pricing_on_the_dense_support_is_the_plain_pours_bit_for_bit(S, A, seed):
    """Pricing pours slot-major (W rows gathered by rank); its reduced costs are, bit for bit, those of the plain
    (pairs, W) pour written out here, with the product taken on the layout a column gather gives (as pricing's
    always was), and the visited pairs it keeps are those with counts. Up to S = 12: numpy sums 8 or more numbers
    pairwise."""
    rng = np.random.default_rng(seed)
    model = _model(S, A, seed, piecewise=False)
    program = BoxOptimisticProgram(model, 1e4)
    master = get_backend(NAME).compile(program).master
    counts = np.zeros((S, A, S))
    for _ in range(3):
        counts = counts + _counts(rng, model.kernel, scale=50, unvisited=0.4)
        program.update(counts=counts)
        master.read()
        assert np.array_equal(program.visited_pairs(), counts.sum(axis=2).ravel() > 0)
        duals = rng.normal(size=master.n_global)
        h = np.append(duals[1: S], 0.0)
        lower, upper = np.maximum(program.kernel_bounds()[0], 0.0).reshape(S * A, S), program.kernel_bounds()[1].reshape(S * A, S)
        order = np.argsort(-h, kind="stable")
        room = (upper - lower)[:, order]                  # a column gather: the (pairs, W) layout pricing has had
        poured = np.add.accumulate(room, axis=1)
        poured -= room
        poured = np.minimum(np.maximum((1.0 - lower.sum(axis=1))[:, None] - poured, 0.0), room) + lower[:, order]
        expected = master.cost - duals[0] - h[np.repeat(np.arange(S), A)]
        if master.n_extra:
            expected -= master.extra_of_pair @ duals[S:]
        expected += poured @ h[order]
        expected[~box_usable(lower, upper)] = -np.inf
        reduced, got_order = master.price(duals, 2)
        assert np.array_equal(got_order, order) and np.array_equal(_bits(reduced), _bits(expected))


def _bits(values) -> np.ndarray:
    """The float64 values' bit patterns (-0.0 and 0.0 differ), for bit-for-bit comparisons."""
    return np.asarray(values, dtype=float).view(np.int64)

@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10_000), st.booleans())
def test_the_masters_kept_boxes_and_recomputed_vertices_are_the_closed_forms(S, A, seed, sparse):
    """The warm start recomputes moved pool vertices from the boxes the master keeps (``u - l`` and ``1 - Σ l``
    computed once per read): bit for bit the closed form on the program's own bounds, epoch after epoch."""
    rng = np.random.default_rng(seed)
    model = _model(S, A, seed, piecewise=False, successors=min(3, S) if sparse else None)
    kernel = model.transitions.toarray().reshape(S, A, S) if model.sparse else model.kernel
    program = BoxOptimisticProgram(model, 1e4)
    master = get_backend(NAME).compile(program).master
    counts, last_lower, last_upper = np.zeros((S, A, S)), None, None
    for _ in range(3):
        counts = counts + _counts(rng, kernel, scale=300, unvisited=0.5)    # radii small enough for l > 0
        program.update(counts=counts)
        moved = master.read()
        low, high = program.kernel_bounds()
        lower, upper = np.zeros((S * A, master.W)), np.zeros((S * A, master.W))
        lower[master.valid], upper[master.valid] = np.maximum(low, 0.0).ravel(), high.ravel()
        assert np.array_equal(master.lower, lower) and np.array_equal(master.upper, upper)
        if last_lower is not None:
            assert np.array_equal(moved, ((lower != last_lower) | (upper != last_upper)).any(axis=1))
        last_lower, last_upper = lower, upper
        assert np.array_equal(master.room, upper - lower)
        assert np.array_equal(_bits(master.free[:, 0]), _bits(1.0 - lower.sum(axis=1)))
        assert np.array_equal(master.usable, box_usable(lower, upper))
        pairs = rng.integers(0, S * A, size=4)
        orders = np.argsort(rng.random((4, master.W)), axis=1).astype(np.int32)
        if sparse:                                          # a pair's own slots first, as pricing ranks them
            orders = np.argsort(np.where(master.valid[pairs], rng.random((4, master.W)), 2.0), axis=1).astype(np.int32)
        assert np.array_equal(master.ranked_vertices(pairs, orders), box_vertices(orders, lower[pairs], upper[pairs]))
        # pricing from the kept boxes: each pair's reduced cost is c - y·a of its best vertex's column in the master
        duals = rng.normal(size=master.n_global)
        reduced, order = master.price(duals, 2)
        h = np.append(duals[1: S], 0.0)[np.maximum(master.successor, 0)]
        best = box_vertices(np.argsort(np.where(master.valid, -h, np.inf), axis=1, kind="stable"), lower, upper)
        columns = master.columns(np.arange(S * A), best)
        dense = np.zeros(columns.shape)
        for j in range(columns.shape[1]):
            dense[columns.indices[columns.indptr[j]: columns.indptr[j + 1]], j] = columns.data[columns.indptr[j]: columns.indptr[j + 1]]
        expected = np.where(master.usable, master.cost - duals @ dense, -np.inf)
        assert reduced == pytest.approx(expected, rel=1e-12, abs=1e-12)


@given(st.integers(1, 12), st.integers(1, 40), st.integers(0, 10_000))
def test_the_masters_slot_sums_are_numpys_row_sums_bit_for_bit(W, n, seed):
    """The box master sums each pair's slots down its slot-major copy where that adds in numpy's order (below
    SLOT_MAJOR_SUMS_BELOW slots) and along the rows elsewhere: bit for bit ``np.add.reduce(rows, axis=1)`` on
    either side of the threshold, on values of mixed scales with zeros of both signs."""
    rng = np.random.default_rng(seed)
    rows = rng.random((n, W)) * rng.choice([1e-9, 1e-3, 1.0, 1e3], size=(n, W))
    rows[rng.random((n, W)) < 0.2] = 0.0
    rows[rng.random((n, W)) < 0.1] = -0.0
    rows[rng.random((n, W)) < 0.1] *= -1.0
    master = object.__new__(BoxMaster)          # only W is read
    master.W = W
    assert np.array_equal(_bits(master._row_sums(np.ascontiguousarray(rows.T), rows)), _bits(np.add.reduce(rows, axis=1)))
    if W < SLOT_MAJOR_SUMS_BELOW:                # the order both take there: from 0, left to right, in Python floats
        left_to_right = [functools.reduce(operator.add, row, 0.0) for row in rows.tolist()]
        assert np.array_equal(_bits(master._row_sums(np.ascontiguousarray(rows.T), rows)), _bits(left_to_right))


# -- the backend against the whole LP ------------------------------------------------------------------------------

def _model(S: int, A: int, seed: int, piecewise: bool, successors: int | None = None) -> CMDP:
    """A random model (its kernel stored sparse with ``successors``); ``piecewise``: the objective
    min(λ, λ/2 + 0.1) (an epigraph column in the master)."""
    model = random_model(S, A, seed=seed, successors=successors, storage="dense" if successors is None else "sparse")
    if not piecewise:
        return model
    return CMDP(model.rewards, model.costs, MinOfLinear([[1.0], [0.5]], [0.0, 0.1]), model.constraints,
                kernel=model.transitions if model.sparse else model.kernel, name="random, piecewise")


@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10_000), st.booleans(), st.sampled_from([3.0, 1e3, 5e5]),
       st.sampled_from([0.0, 0.05]))
def test_the_optimal_value_is_the_whole_lps(S, A, seed, piecewise, horizon, epsilon):
    model = _model(S, A, seed, piecewise)
    counts = _counts(np.random.default_rng(seed), model.kernel, scale=40)
    program = BoxOptimisticProgram(model, horizon, counts=counts, epsilon=epsilon)
    result = get_backend(NAME).solve(program)
    _agree(result, _whole_lp((model, horizon), counts=counts, epsilon=epsilon), program)


@given(st.integers(4, 7), st.integers(1, 3), st.integers(0, 10_000))
def test_a_sparse_support_gives_the_whole_lps_value(S, A, seed):
    model = _model(S, A, seed, piecewise=seed % 2 == 1, successors=3)
    kernel = model.transitions.toarray().reshape(S, A, S)
    counts = _counts(np.random.default_rng(seed), kernel, scale=30)
    program = BoxOptimisticProgram(model, 1e4, counts=counts)
    assert not program.support.is_dense
    _agree(get_backend(NAME).solve(program), _whole_lp((model, 1e4), counts=counts), program)


def test_re_solves_over_epochs_match_fresh_solves_of_the_whole_lp():
    """One compiled program through many epochs (the warm start, kept columns, blocks): each epoch's value is the
    whole LP's; counts also shrink once (new counts need not extend the old ones), which drops columns."""
    model = queue_model()
    rng = np.random.default_rng(0)
    horizon = 2e4
    program = BoxOptimisticProgram(model, horizon)
    compiled = get_backend(NAME).compile(program)
    counts = np.zeros((6, 16, 6))
    kept = 0
    for epoch in range(40):
        counts = counts + _counts(rng, model.kernel, scale=3, unvisited=0.8)
        if epoch == 25:
            counts = np.floor(counts / 3)
        program.update(counts=counts, time=epoch + 1)
        result = compiled.solve()
        _agree(result, _whole_lp((model, horizon), counts=counts), program)
        kept += result.iterations == 0 and compiled.last_rounds == 1
    assert kept > 0  # some re-solves were answered by the kept basis (this is what makes them fast)


def test_an_infeasible_tight_program_falls_back_as_the_whole_lp_does():
    # the one cost is 1 everywhere and must stay <= 0.5: no kernel and no policy can meet it
    base = random_model(3, 2, seed=4)
    model = CMDP(base.rewards, np.ones((1, 3, 2)), Linear([1.0]), [LinearBound([1.0], 0.5)], kernel=base.kernel)
    counts = _counts(np.random.default_rng(4), model.kernel, scale=20, unvisited=0.0)
    program = BoxOptimisticProgram(model, 100.0, counts=counts)
    result = get_backend(NAME).solve(program)
    assert result.program is ProgramVariant.FALLBACK and result.tight_status is Status.INFEASIBLE
    assert "phase 1 of column generation" in result.message
    _agree(result, _whole_lp((model, 100.0), counts=counts), program)


def test_a_round_limit_says_so_and_returns_no_point():
    model = queue_model()
    counts = _counts(np.random.default_rng(1), model.kernel, scale=30, unvisited=0.0)
    result = get_backend(NAME, max_rounds=1).solve(BoxOptimisticProgram(model, 1e4, counts=counts))
    assert result.status is Status.ITERATION_LIMIT and result.x is None
    assert "limit of 1 pricing rounds" in result.message


def test_the_backend_is_registered_never_auto_and_routes_the_other_programs():
    assert NAME in backend_names() and NAME not in auto_candidates()
    backend = get_backend(NAME)
    assert backend.keep_solves == 100 and get_backend(NAME, keep_solves=5).keep_solves == 5
    model = random_model(3, 2, seed=0)
    assert isinstance(backend.compile(BoxOptimisticProgram(model, 10.0)), CompiledBoxColumns)
    assert isinstance(backend.compile(OptimisticProgram(model)), CompiledColumns)
    delegated = backend.compile(OccupancyProgram(model))
    assert isinstance(delegated, DelegatedProgram) and isinstance(delegated.inner, CompiledHighs)


def test_conformance():
    report = run_conformance(NAME, raise_on_failure=False)
    assert report.ok, str(report)


# -- UCRL-CMDP ---------------------------------------------------------------------------------------------------

def test_ucrl_cmdp_solves_its_box_program_by_columns_unless_told_otherwise():
    model = queue_model()
    assert UcrlCmdp(model, horizon=100).backend.name == NAME
    assert UcrlCmdp(model, horizon=100, backend="highs").backend.name == "highs"


def test_a_hand_traced_ucrl_cmdp_epoch():
    """Two states, two actions, reward 1 in state 1, no constraint, T = 100. With these counts every box is
    worked out below; the optimistic kernel pushes mass towards state 1, so in each pair the closed form puts
    as much mass on state 1 as its box allows: from state 0, ``min(1, P^(1|0,a) + b)``; back from state 1,
    ``max(0, P^(0|1,a) - b)``. The best plan moves 0 -> 1 with the largest chance and 1 -> 0 with the
    smallest, and earns the stationary share of state 1, ``p01 / (p01 + p10)``."""
    rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    model = CMDP(rewards, objective=Linear([1.0]), kernel=np.full((2, 2, 2), 0.5), name="two states")
    horizon = 100
    counts = np.zeros((2, 2, 2))
    counts[0, 0] = [60, 40]      # N = 100, P^(1|0,0) = 0.4
    counts[0, 1] = [300, 100]    # N = 400, P^(1|0,1) = 0.25
    counts[1, 0] = [50, 50]      # N = 100, P^(0|1,0) = 0.5
    counts[1, 1] = [120, 280]    # N = 400, P^(0|1,1) = 0.3

    def radius(visits: float) -> float:                                 # b(s,a) of docs/math.md §9, S = A = 2
        return min(1.0, math.sqrt(math.log(2 * 2**2 * 2 * horizon**2) / (2 * visits)))

    to_one = {a: min(1.0, counts[0, a, 1] / counts[0, a].sum() + radius(counts[0, a].sum())) for a in (0, 1)}
    back = {a: max(0.0, counts[1, a, 0] / counts[1, a].sum() - radius(counts[1, a].sum())) for a in (0, 1)}
    # by hand: ln(2·4·2·100²) = ln(160000) = 11.98293; b = sqrt(11.98293 / 200) = 0.244775 for N = 100 and
    # sqrt(11.98293 / 800) = 0.122387 for N = 400
    assert to_one == pytest.approx({0: 0.4 + 0.244775, 1: 0.25 + 0.122387}, abs=1e-6)
    assert back == pytest.approx({0: 0.5 - 0.244775, 1: 0.3 - 0.122387}, abs=1e-6)
    p01, p10 = max(to_one.values()), min(back.values())                 # actions 0 in state 0, 1 in state 1
    share = p01 / (p01 + p10)

    agent = UcrlCmdp(model, horizon=horizon)
    agent.counts = counts
    plan = agent.begin_epoch(401)
    assert np.array_equal(plan.policy, [[1.0, 0.0], [0.0, 1.0]]) and plan.source == "tight"
    assert agent.limits(401)[1] == 5                                     # the epoch: ceil(100^(1/3)) steps
    result = agent.compiled.solve()                                      # the same data: the plan's solution
    assert result.objective == pytest.approx(share, abs=EXACT)
    rho = result.occupancy
    assert rho[0, 0] == pytest.approx(1 - share, abs=EXACT) and rho[1, 1] == pytest.approx(share, abs=EXACT)
    kernel = result.joint / np.where(rho > 0, rho, 1.0)[:, :, None]     # the optimistic kernel p / ρ
    assert kernel[0, 0] == pytest.approx([1 - p01, p01], abs=EXACT)
    assert kernel[1, 1] == pytest.approx([p10, 1 - p10], abs=EXACT)
    assert result.objective == pytest.approx(_whole_lp((model, horizon), counts=counts).objective, abs=EXACT)


def test_a_ucrl_cmdp_run_plans_every_epoch_at_the_whole_lps_value():
    model = queue_model()
    horizon = 3000
    agent = make_agent("ucrl-cmdp", model, horizon=horizon)
    reference = BoxOptimisticProgram(model, horizon)
    solve = agent.compiled.solve
    seen = []

    def checked():
        result = solve()
        reference.update(counts=agent.counts)
        seen.append((result.objective, get_backend("highs").solve(reference).objective))
        return result

    agent.compiled.solve = checked
    from curlopt.envs import make
    from curlopt.experiments.simulation import loop

    trace = loop.run(agent, make(model), horizon, seed=0, progress=False, model=model)
    assert len(seen) == len(trace.epochs) == 200
    got, expected = np.array(seen).T
    np.testing.assert_allclose(got, expected, rtol=EXACT, atol=EXACT)


def test_the_kept_centre_flag_is_whether_the_pool_holds_a_p_hat_column():
    """The compiled program keeps whether its pool holds a P^ column (its seeds) rather than looking at every solve:
    after each solve the flag is what the pool's rankings say, through the seeding, the columns' drop and a count
    shrink (which drops P^ columns of pairs left without counts)."""
    model = queue_model()
    rng = np.random.default_rng(3)
    program = BoxOptimisticProgram(model, 2e4)
    compiled = get_backend(NAME, keep_solves=2).compile(program)
    counts, seen = np.zeros((6, 16, 6)), set()
    for epoch in range(30):
        counts = counts + _counts(rng, model.kernel, scale=3, unvisited=0.8)
        if epoch == 15:
            counts = np.floor(counts / 3)
        program.update(counts=counts, time=epoch + 1)
        assert compiled.solve().status is Status.OPTIMAL
        holds = bool(np.any(compiled._pool_ranking[:, 0] < 0))
        assert compiled._has_centre == holds
        seen.add(holds)
    assert seen == {True, False}     # both cases met


def test_the_list_path_of_highspy_gives_the_c_apis_solutions_bit_for_bit(monkeypatch):
    """Where HiGHS's C API cannot be reached, the master's solution, basis and status come through highspy's lists:
    the same points, iterations and statuses, epoch after epoch (the warm start included), as through the C API."""
    from curlopt.backends.highs import column_generation

    def epochs(c_api: bool) -> list[tuple[np.ndarray, int | None, str]]:
        model = queue_model()
        rng = np.random.default_rng(2)
        program = BoxOptimisticProgram(model, 2e4)
        compiled = get_backend(NAME).compile(program)
        counts, out = np.zeros((6, 16, 6)), []
        for epoch in range(12):
            counts = counts + _counts(rng, model.kernel, scale=3, unvisited=0.8)
            program.update(counts=counts, time=epoch + 1)
            result = compiled.solve()
            out.append((result.x, result.iterations, result.status.value))
        assert (compiled._access._api is not None) == c_api
        return out

    through_c = epochs(True)

    class NoReader:
        @classmethod
        def create(cls, highs):
            return None

    monkeypatch.setattr(column_generation, "SolutionReader", NoReader)
    through_lists = epochs(False)
    for (x_c, its_c, status_c), (x_l, its_l, status_l) in zip(through_c, through_lists, strict=True):
        assert status_c == status_l and its_c == its_l
        assert np.array_equal(_bits(x_c), _bits(x_l))

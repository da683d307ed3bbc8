"""The ``highs-columns`` backend (curlopt/backends/highs/columns.py): column generation for the optimistic program.

Every reference is computed independently of the code under test: the optimistic program's value by the
plain ``highs`` backend on the whole LP (docs/math.md §3), the closed-form pricing step by
``scipy.optimize.linprog`` on the L1 ball intersected with the simplex, and the conformance suite's own
reference (curlopt/testing/reference.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from curlopt import OptimisticProgram, get_backend
from curlopt.backends.highs.backend import CompiledHighs
from curlopt.backends.highs.columns import ColumnsBackend, CompiledColumns, optimistic_kernels
from curlopt.backends.registry import auto_candidates, backend_names
from curlopt.backends.results import ProgramVariant, Status
from curlopt.errors import BackendOptionError
from curlopt.models import queue_model, random_model
from curlopt.models.cmdp import CMDP
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import BoxOptimisticProgram
from curlopt.testing import run_conformance
from curlopt.utilities.library import Linear, MaxOfLinear, MinOfLinear, SumOfLogs

RELATIVE = 1e-7
FEASIBLE = 1e-7


def _counts(rng: np.random.Generator, model: CMDP, scale: float, unvisited: float = 0.3) -> np.ndarray:
    """Transition counts drawn from the model's kernel; a share ``unvisited`` of the pairs never visited."""
    S, A = model.n_states, model.n_actions
    visits = rng.poisson(scale, size=(S, A)) * (rng.random((S, A)) >= unvisited)
    counts = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            if visits[s, a]:
                counts[s, a] = rng.multinomial(visits[s, a], model.kernel[s, a])
    return counts


def _agree(result, expected, program) -> None:
    """Same status and variant as the plain highs result, same value to RELATIVE, and every row holds."""
    assert result.status is expected.status, (result.status, expected.status, result.message)
    assert result.program is expected.program
    assert result.tight_status is expected.tight_status
    if not expected.status.has_solution:
        return
    assert result.objective == pytest.approx(expected.objective, rel=RELATIVE, abs=RELATIVE)
    residuals = program.residuals(result.x, include_constraints=result.program is ProgramVariant.TIGHT)
    assert max(residuals.values()) <= FEASIBLE, residuals
    assert result.x.shape == (program.n_vars,)
    assert result.backend == "highs-columns"


# -- the pricing step --------------------------------------------------------------------------------------------


def _linprog_best(h: np.ndarray, p_hat: np.ndarray, beta: float) -> float | None:
    """max h·q over {q >= 0, Σq = 1, ||q - P^||_1 <= β} with variables (q, d), d >= |q - P^|; None if empty."""
    S = h.size
    eye = np.eye(S)
    a_ub = np.vstack([np.hstack([eye, -eye]), np.hstack([-eye, -eye]), np.concatenate([np.zeros(S), np.ones(S)])[None]])
    b_ub = np.concatenate([p_hat, -p_hat, [beta]])
    a_eq = np.concatenate([np.ones(S), np.zeros(S)])[None]
    res = linprog(-np.concatenate([h, np.zeros(S)]), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (2 * S), method="highs")
    if res.status == 2:
        return None
    assert res.status == 0, res.message
    return -res.fun


@pytest.mark.parametrize("seed", range(6))
def test_closed_form_pricing_matches_linprog(seed):
    rng = np.random.default_rng(seed)
    S, n = int(rng.integers(2, 9)), 40
    h = rng.normal(size=S)
    if seed % 2:  # ties among the duals, as a degenerate master gives them
        h = np.round(h, 1)
    p_hat = rng.dirichlet(np.full(S, 0.5), size=n) * (rng.random((n, S)) > 0.3)
    p_hat /= np.maximum(p_hat.sum(axis=1, keepdims=True), 1e-300)
    p_hat[rng.random(n) < 0.2] = 0.0                             # unvisited pairs: zero rows
    beta = rng.choice([0.0, 0.05, 0.4, 0.99, 1.0, 1.5, 2.0, 3.0], size=n) * rng.uniform(0.9, 1.1, size=n)
    q, valid = optimistic_kernels(h, p_hat, beta)
    for i in range(n):
        expected = _linprog_best(h, p_hat[i], beta[i])
        assert valid[i] == (expected is not None), (p_hat[i], beta[i])
        if expected is None:
            continue
        assert q[i] @ h == pytest.approx(expected, abs=1e-9)
        assert np.all(q[i] >= 0) and q[i].sum() == pytest.approx(1.0, abs=1e-12)
        assert np.abs(q[i] - p_hat[i]).sum() <= beta[i] + 1e-12


# -- values against the whole LP ----------------------------------------------------------------------------------


def _offset_model() -> CMDP:
    """One action, rewards of both signs and f with an offset (phase 1 must not read f's offset as a shortfall)."""
    base = random_model(3, 1, seed=11)
    return CMDP(base.rewards - 0.5, base.costs, Linear([-2.0], offset=-0.9), base.constraints, base.kernel,
                name="offset")


def _models():
    return [("random-4x3", random_model(4, 3, seed=1)), ("random-7x2", random_model(7, 2, seed=2, n_costs=2)),
            ("random-6x4", random_model(6, 4, seed=3)), ("queue", queue_model()), ("offset-3x1", _offset_model())]


@pytest.mark.parametrize("name,model", _models(), ids=[m[0] for m in _models()])
@pytest.mark.parametrize("radius", ["experiment", "analysis"])
def test_value_matches_the_whole_lp(name, model, radius):
    rng = np.random.default_rng(len(name))
    for scale in (0.0, 3.0, 40.0, 400.0):
        counts = _counts(rng, model, scale)
        for time in (1, 50, 10_000):
            for epsilon in (0.0, 0.01, 0.3, 5.0):
                args = dict(counts=counts, time=time, epsilon=epsilon, radius=radius)
                expected = get_backend("highs").solve(OptimisticProgram(model, **args))
                program = OptimisticProgram(model, **args)
                _agree(get_backend("highs-columns").solve(program), expected, program)


@pytest.mark.parametrize("name,model", _models(), ids=[m[0] for m in _models()])
def test_resolves_after_updates_match_the_whole_lp(name, model):
    """One compiled program re-solved as a run's data grow (kept columns, blocks and basis reused)."""
    rng = np.random.default_rng(7)
    program = OptimisticProgram(model, radius="experiment")
    reference = OptimisticProgram(model, radius="experiment")
    columns = get_backend("highs-columns").compile(program)
    highs = get_backend("highs").compile(reference)
    counts = np.zeros((model.n_states, model.n_actions, model.n_states))
    time = 1
    for epoch in range(40):
        if epoch:
            new = _counts(rng, model, float(rng.choice([0.5, 3.0, 20.0])), unvisited=0.7)
            counts = counts + new
            time += int(new.sum()) + 1
        epsilon = float(rng.choice([0.0, 0.02, 0.5]) if epoch % 5 else 3.0)  # every fifth: the fallback
        for p in (program, reference):
            p.update(counts=counts, time=time, epsilon=epsilon)
        _agree(columns.solve(), highs.solve(), program)


def test_piecewise_objective_and_constraint_use_the_epigraph_rows():
    base = random_model(5, 3, seed=4, n_rewards=2, n_costs=2)
    objective = MinOfLinear(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), np.array([0.0, 0.05, 0.0]))
    constraint = MaxOfLinear(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.6, 0.7]))
    model = CMDP(base.rewards, base.costs, objective, [constraint], base.kernel, name="piecewise")
    rng = np.random.default_rng(3)
    for scale in (0.0, 10.0, 200.0):
        counts = _counts(rng, model, scale)
        for epsilon in (0.0, 0.05, 2.0):
            args = dict(counts=counts, time=500, epsilon=epsilon, radius="experiment")
            program = OptimisticProgram(model, **args)
            _agree(get_backend("highs-columns").solve(program), get_backend("highs").solve(OptimisticProgram(model, **args)),
                   program)


# -- infeasibility, fallback, limits ------------------------------------------------------------------------------


def test_infeasible_tight_program_falls_back_like_highs():
    model = random_model(6, 3, seed=5)
    counts = _counts(np.random.default_rng(0), model, 50.0)
    args = dict(counts=counts, time=1000, epsilon=50.0, radius="experiment")   # no policy has costs 50 below b
    expected = get_backend("highs").solve(OptimisticProgram(model, **args))
    assert expected.program is ProgramVariant.FALLBACK and expected.tight_status is Status.INFEASIBLE
    program = OptimisticProgram(model, **args)
    compiled = get_backend("highs-columns").compile(program)
    result = compiled.solve()
    _agree(result, expected, program)
    assert result.fell_back and "infeasible" in result.message
    alone = compiled.solve(fallback=False)
    assert alone.status is Status.INFEASIBLE and alone.x is None and "phase 1" in alone.message


def test_a_program_with_no_admissible_kernel_is_infeasible():
    """radius 0 and no data: every Q(s,a) is empty, so no occupancy has mass 1 — with or without the g rows."""
    model = random_model(4, 2, seed=6)
    args = dict(time=100, epsilon=0.0, radius="experiment", radius_scale=0.0)
    expected = get_backend("highs").solve(OptimisticProgram(model, **args))
    assert expected.status is Status.INFEASIBLE
    result = get_backend("highs-columns").solve(OptimisticProgram(model, **args))
    assert result.status is Status.INFEASIBLE and result.tight_status is Status.INFEASIBLE
    assert result.x is None and result.policy is None


def test_the_round_limit_is_reported_not_hidden():
    model = random_model(8, 3, seed=7)
    counts = _counts(np.random.default_rng(1), model, 30.0)
    program = OptimisticProgram(model, counts=counts, time=1000, radius="experiment")
    free = get_backend("highs-columns").compile(program)
    free.solve()
    assert free.last_rounds > 1  # else the limit below would not bite
    result = get_backend("highs-columns", max_rounds=1).solve(OptimisticProgram(model, counts=counts, time=1000,
                                                                                radius="experiment"))
    assert result.status is Status.ITERATION_LIMIT and result.x is None
    assert "1 pricing rounds" in result.message and "max_rounds" in result.message


def test_the_gap_certificate_is_below_the_tolerance_at_the_end():
    model = random_model(10, 4, seed=8)
    program = OptimisticProgram(model, counts=_counts(np.random.default_rng(2), model, 100.0), time=5000,
                                radius="experiment")
    compiled = get_backend("highs-columns").compile(program)
    assert isinstance(compiled, CompiledColumns)
    assert compiled.solve().ok
    assert 0.0 <= compiled.last_gap <= compiled.backend.pricing_tolerance


# -- the other programs, the declaration, the contract -----------------------------------------------------------


def test_other_programs_go_to_the_plain_highs_path():
    model = random_model(5, 3, seed=9)
    counts = _counts(np.random.default_rng(3), model, 20.0)
    for program, again in [(OccupancyProgram(model, epsilon=0.01), OccupancyProgram(model, epsilon=0.01)),
                           (BoxOptimisticProgram(model, 1e4, counts=counts, time=300),
                            BoxOptimisticProgram(model, 1e4, counts=counts, time=300))]:
        compiled = get_backend("highs-columns").compile(program)
        assert isinstance(compiled, CompiledHighs)
        _agree(compiled.solve(), get_backend("highs").solve(again), program)


def test_declaration_and_options():
    assert "highs-columns" in backend_names() and "highs-columns" not in auto_candidates()
    assert ColumnsBackend.accepts(Linear([1.0])) and not ColumnsBackend.accepts(SumOfLogs(weights=[1.0]))
    with pytest.raises(BackendOptionError, match="max_rounds"):
        get_backend("highs-columns", max_rounds=0)
    with pytest.raises(BackendOptionError, match="pricing_tolerance"):
        get_backend("highs-columns", pricing_tolerance=-1.0)
    with pytest.raises(BackendOptionError, match="no_such_option"):
        get_backend("highs-columns", options={"no_such_option": 1})
    with pytest.raises(BackendOptionError):
        get_backend("highs-columns", rounds=3)


def test_conformance_suite_passes():
    report = run_conformance("highs-columns", raise_on_failure=False)
    assert report.ok, str(report)
    assert not [r for r in report.skipped if "/linear" in r.name or "/piecewise" in r.name], str(report)


def test_an_agent_plans_with_the_optimal_value_every_epoch():
    """UC-CURL on the queue with highs-columns: each epoch's optimistic value equals the whole LP's on the same
    program data (solved by highs, compiled on the same program object)."""
    from curlopt.agents import make_agent
    from curlopt.envs.tabular import TabularCMDPEnv
    from curlopt.experiments.simulation.loop import run

    model = queue_model()
    agent = make_agent("uc-curl", model, backend="highs-columns", radius="experiment", trigger="doubling")
    highs = get_backend("highs").compile(agent.program)
    compiled, checked = agent.compiled, []
    solve = compiled.solve

    def both(*args, **kwargs):
        result = solve(*args, **kwargs)
        _agree(result, highs.solve(), agent.program)
        checked.append(result.objective)
        return result

    compiled.solve = both
    trace = run(agent, TabularCMDPEnv(model), 20_000, seed=0, progress=False, model=model)
    assert len(checked) == len(trace.epochs) >= 10

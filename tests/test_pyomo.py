"""The ``pyomo`` backend (Pyomo model, Ipopt through cyipopt): agreement with ``cvxpy``, constraints, faults.

Constraint checks are an independent numpy transcription of docs/math.md §2 and §3 (flow
balance on every state, total mass, the L1 rows with β and P^ recomputed from the
counts, the g rows), not the program's own residuals. Reference LPs for choosing
feasible bounds use scipy's ``linprog`` on the formulas of docs/math.md.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cli_helpers import fresh_process
from hypothesis import given
from hypothesis import strategies as st
from reference import occupancy_polytope
from scipy.optimize import linprog

pytest.importorskip("pyomo")
pytest.importorskip("cyipopt")

from curlopt import (  # noqa: E402
    CMDP,
    AlphaFairness,
    ConvexQuadratic,
    CustomUtility,
    Entropy,
    Linear,
    LinearBound,
    MaxOfLinear,
    MinOfLinear,
    Norm,
    OccupancyProgram,
    OptimisticProgram,
    ProgramVariant,
    Status,
    SumOfLogs,
    get_backend,
)
from curlopt.backends.registry import installed_backends  # noqa: E402
from curlopt.backends.results import OPTIMAL_TOLERANCE, SolutionStatus  # noqa: E402
from curlopt.errors import BackendError, UnsupportedUtilityError  # noqa: E402
from curlopt.models import queue_model, scheduler_model  # noqa: E402

HAS_CVXPY = "cvxpy" in installed_backends()
needs_cvxpy = pytest.mark.skipif(not HAS_CVXPY, reason="the cvxpy backend is not installed")

#: the agreement asked of the pyomo backend: objectives within 1e-5 relative, constraints within 1e-6
AGREE = 1e-5
FEASIBLE = 1e-6


# ----------------------------------------------------------------------------
# Independent helpers (formulas of docs/math.md in numpy/scipy)
# ----------------------------------------------------------------------------


def random_kernel(rng, S, A):
    """Dirichlet(1) rows with every entry at least 1e-3 (full support, ergodic)."""
    kernel = rng.dirichlet(np.ones(S), size=(S, A))
    kernel = 0.99 * kernel + 0.01 / S
    return kernel / kernel.sum(axis=2, keepdims=True)


def occupancy_lp(kernel, objective, sense=1.0):
    """max (sense=1) or min (sense=-1) of ``Σ objective·ρ`` over stationary occupancies of ``kernel`` (docs/math.md §2)."""
    poly = occupancy_polytope(kernel)  # the independent statement of docs/math.md §2 in tests/reference.py
    res = linprog(-sense * np.ravel(objective), A_eq=poly.A_eq.toarray(), b_eq=poly.b_eq, bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return sense * -res.fun


def radius(visits, time, S, A):
    return np.sqrt(14.0 * S * math.log(2.0 * A * time) / np.maximum(1.0, visits))


def check_occupancy_solution(result, kernel, model, epsilon, with_constraints=True):
    """Every row of docs/math.md §2 at the result's ρ, to FEASIBLE."""
    rho = result.occupancy
    assert rho.min() >= -FEASIBLE
    assert abs(rho.sum() - 1.0) <= FEASIBLE
    inflow = np.einsum("sa,sat->t", rho, kernel)
    assert np.max(np.abs(rho.sum(axis=1) - inflow)) <= FEASIBLE
    check_g_rows(rho, model, epsilon, with_constraints)


def check_optimistic_solution(result, program, counts, time, epsilon, with_constraints=True):
    """Every row of docs/math.md §3 (β and P^ recomputed from the counts), to FEASIBLE."""
    model = program.model
    S, A = model.n_states, model.n_actions
    x = result.x
    p = x[program.blocks["joint"].slice].reshape(S, A, S)
    alpha = x[program.blocks["deviation"].slice].reshape(S, A, S)
    assert p.min() >= -FEASIBLE and alpha.min() >= -FEASIBLE
    rho = p.sum(axis=2)
    assert np.max(np.abs(result.occupancy - rho)) <= FEASIBLE
    assert abs(p.sum() - 1.0) <= FEASIBLE
    assert np.max(np.abs(p.sum(axis=(1, 2)) - p.sum(axis=(0, 1)))) <= FEASIBLE
    visits = counts.sum(axis=2)
    p_hat = counts / np.maximum(1.0, visits)[:, :, None]
    deviation = np.abs(p - p_hat * rho[:, :, None])
    assert np.max(deviation - alpha) <= FEASIBLE
    assert np.max(alpha.sum(axis=2) - radius(visits, time, S, A) * rho) <= FEASIBLE
    check_g_rows(rho, model, epsilon, with_constraints)


def check_g_rows(rho, model, epsilon, with_constraints):
    if not with_constraints or not model.constraints:
        return
    costs = np.einsum("ksa,sa->k", model.costs, rho)
    for g in model.constraints:
        assert g.value(costs) <= -epsilon + FEASIBLE


def close(a, b, tolerance):
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def random_model(seed, fair, regime):
    """A random ergodic CMDP with one linear cost constraint ``ζ <= b`` and a tightness ε.

    ``regime`` "feasible": the ε-tight program keeps a Slater margin; "infeasible": ε exceeds it clearly.
    Returns (model, epsilon).
    """
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    kernel = random_kernel(rng, S, A)
    K = 2 if fair else 1
    rewards = rng.uniform(0.1, 1.0, (K, S, A))
    costs = rng.uniform(0.0, 1.0, (1, S, A))
    low = occupancy_lp(kernel, costs[0], -1.0)
    high = occupancy_lp(kernel, costs[0], 1.0)
    bound = low + rng.uniform(0.2, 0.8) * (high - low)
    if regime == "feasible":
        epsilon = rng.uniform(0.0, 0.5) * (bound - low)
    else:
        epsilon = (bound - low) + rng.uniform(0.05, 0.3)
    objective = SumOfLogs(dim=2) if fair else Linear([1.0])
    model = CMDP(rewards, costs, objective, [LinearBound([1.0], bound)], kernel=kernel, name=f"random-{seed}")
    return model, float(epsilon)


def random_counts(rng, model, total):
    """Transition counts of ``total`` steps spread over random pairs, drawn from the model's kernel."""
    S, A = model.n_states, model.n_actions
    counts = np.zeros((S, A, S))
    pairs = rng.integers(0, S * A, size=total)
    for pair in pairs:
        s, a = divmod(int(pair), A)
        counts[s, a, rng.choice(S, p=model.kernel[s, a])] += 1
    return counts


def feasible_optimistic_epsilon(rng, model, counts):
    """A tightness keeping a margin in the optimistic program (occupancy LP on P^, unvisited rows uniform)."""
    S = model.n_states
    visits = counts.sum(axis=2)
    k_hat = counts / np.maximum(1.0, visits)[:, :, None]
    k_hat[visits == 0] = 1.0 / S
    low = occupancy_lp(k_hat, model.costs[0], -1.0)
    bound = model.constraints[0].bound
    margin = bound - low
    return float(rng.uniform(0.0, 0.5) * margin) if margin > 0 else 0.0


def solve_both(program):
    """The pyomo and cvxpy results of one program (each compiled fresh)."""
    return get_backend("pyomo").compile(program).solve(), get_backend("cvxpy").compile(program).solve()


# ----------------------------------------------------------------------------
# Hypothesis: pyomo agrees with cvxpy; every row of docs/math.md holds
# ----------------------------------------------------------------------------


@needs_cvxpy
@given(seed=st.integers(0, 2**32 - 1), fair=st.booleans(), regime=st.sampled_from(["feasible", "infeasible"]))
def test_occupancy_program_agrees_with_cvxpy(seed, fair, regime):
    model, epsilon = random_model(seed, fair, regime)
    program = OccupancyProgram(model, epsilon=epsilon)
    ours, ref = solve_both(program)
    assert ours.ok and ref.ok, (ours.message, ref.message)
    assert ours.program is ref.program
    assert ours.program is (ProgramVariant.TIGHT if regime == "feasible" else ProgramVariant.FALLBACK)
    assert close(ours.objective, ref.objective, AGREE), (ours.objective, ref.objective)
    check_occupancy_solution(ours, model.kernel, model, epsilon, with_constraints=not ours.fell_back)


@needs_cvxpy
@given(seed=st.integers(0, 2**32 - 1), fair=st.booleans(), steps=st.integers(0, 300),
       time=st.floats(1.0, 1e5))
def test_optimistic_program_agrees_with_cvxpy(seed, fair, steps, time):
    model, _ = random_model(seed, fair, "feasible")
    rng = np.random.default_rng(seed + 1)
    counts = random_counts(rng, model, steps)
    time = max(time, float(steps))
    epsilon = feasible_optimistic_epsilon(rng, model, counts)
    program = OptimisticProgram(model, counts=counts, time=time, epsilon=epsilon)
    ours, ref = solve_both(program)
    assert ours.ok and ref.ok, (ours.message, ref.message)
    assert ours.program is ProgramVariant.TIGHT and ref.program is ProgramVariant.TIGHT
    assert close(ours.objective, ref.objective, AGREE), (ours.objective, ref.objective)
    check_optimistic_solution(ours, program, counts, time, epsilon)


# ----------------------------------------------------------------------------
# The fair scheduler (docs/math.md §8)
# ----------------------------------------------------------------------------


@needs_cvxpy
@pytest.mark.parametrize("sla", [0.3, None])
def test_scheduler_optimum_agrees_with_cvxpy(sla):
    model = scheduler_model(sla)
    program = OccupancyProgram(model)
    ours, ref = solve_both(program)
    assert ours.status is Status.OPTIMAL and ours.program is ProgramVariant.TIGHT
    assert abs(ours.objective - ref.objective) <= 1e-6
    assert np.allclose(ours.rewards, ref.rewards, atol=1e-6)
    check_occupancy_solution(ours, model.kernel, model, 0.0)
    if sla is not None:  # the SLA binds: client 2 is served exactly 30% of the time
        assert ours.costs[0] == pytest.approx(0.3, abs=1e-8)


def test_scheduler_constrained_optimum_below_unconstrained():
    constrained = get_backend("pyomo").solve(OccupancyProgram(scheduler_model()))
    free = get_backend("pyomo").solve(OccupancyProgram(scheduler_model(None)))
    assert constrained.objective < free.objective
    assert free.costs[0] > 0.3  # so the SLA matters


# ----------------------------------------------------------------------------
# Re-solves
# ----------------------------------------------------------------------------


def test_resolve_after_update_matches_fresh_build():
    model = scheduler_model()
    rng = np.random.default_rng(3)
    first = random_counts(rng, model, 400)
    second = first + random_counts(rng, model, 800)
    program = OptimisticProgram(model, counts=first, time=400.0, epsilon=0.05)
    compiled = get_backend("pyomo").compile(program)
    assert compiled.solve().ok
    program.update(counts=second, time=1200.0, epsilon=0.03)
    again = compiled.solve()
    assert any(run.warm for run in compiled.last_solve)  # the re-solve was warm-started
    fresh = get_backend("pyomo").solve(OptimisticProgram(model, counts=second, time=1200.0, epsilon=0.03))
    assert again.ok and fresh.ok
    assert abs(again.objective - fresh.objective) <= 1e-7 * max(1.0, abs(fresh.objective))
    assert np.allclose(again.rewards, fresh.rewards, atol=1e-6)
    check_optimistic_solution(again, program, second, 1200.0, 0.03)


def test_occupancy_resolve_with_new_kernel_and_cold_option():
    model, epsilon = random_model(11, True, "feasible")
    rng = np.random.default_rng(5)
    other = random_kernel(rng, model.n_states, model.n_actions)
    for warm in (True, False):
        program = OccupancyProgram(model, epsilon=epsilon)
        compiled = get_backend("pyomo", warm_start=warm).compile(program)
        compiled.solve()
        program.update(kernel=other, epsilon=0.0)
        again = compiled.solve()
        fresh = get_backend("pyomo").solve(OccupancyProgram(model, kernel=other))
        assert again.ok and abs(again.objective - fresh.objective) <= 1e-7
        assert all(not run.warm for run in compiled.last_solve) or warm
        check_occupancy_solution(again, other, model, 0.0)


def test_bridge_matrix_is_the_program_matrix():
    """The sparse matrix read from Pyomo's standard representation equals the program's, before and after an update."""
    model = queue_model(buffer=2)
    program = OptimisticProgram(model, counts=np.ones((3, 16, 3)), time=10.0)
    compiled = get_backend("pyomo").compile(program)
    rows = program.linear.n_rows
    assert (compiled.bridge.linear.matrix()[:rows] != program.linear.matrix()).nnz == 0
    program.update(counts=np.arange(3 * 16 * 3, dtype=float).reshape(3, 16, 3), time=50.0)
    compiled.solve()
    assert abs(compiled.bridge.linear.matrix()[:rows] - program.linear.matrix()).max() == 0
    positions = set(zip(*[a.tolist() for a in compiled.bridge.linear.dynamic_positions], strict=True))
    assert positions == set(zip(program.linear.param_rows.tolist(), program.linear.param_cols.tolist(), strict=True))


# ----------------------------------------------------------------------------
# Faults come back as statuses
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("sla", [0.3, None])
def test_iteration_limit_is_a_status(sla):
    program = OccupancyProgram(scheduler_model(sla))
    result = get_backend("pyomo", options={"max_iter": 1}).solve(program)
    assert result.status is Status.ITERATION_LIMIT
    assert result.tight_status is Status.ITERATION_LIMIT
    assert not result.ok and "Maximum_Iterations_Exceeded" in result.message
    if result.solution_status is SolutionStatus.FEASIBLE:  # the iterate it stopped at is kept only if its rows hold
        assert max(program.residuals(result.x).values()) <= OPTIMAL_TOLERANCE
        assert "not proven optimal" in result.message and math.isfinite(result.objective)
    else:
        assert result.policy is None and math.isnan(result.objective)


def test_time_limit_is_a_status():
    result = get_backend("pyomo", options={"max_cpu_time": 1e-9}).solve(OccupancyProgram(queue_model()))
    assert result.status is Status.TIME_LIMIT


@pytest.mark.parametrize("feasibility_check", [True, False])
def test_infeasible_tight_program_gives_labelled_fallback(feasibility_check):
    model = scheduler_model()  # ζ <= 0.3 - ε is impossible for ε > 0.3
    compiled = get_backend("pyomo", feasibility_check=feasibility_check).compile(OccupancyProgram(model, epsilon=0.5))
    result = compiled.solve()
    assert result.tight_status is Status.INFEASIBLE
    assert result.status is Status.OPTIMAL and result.program is ProgramVariant.FALLBACK
    assert "infeasible" in result.message
    assert compiled.last_violation == pytest.approx(0.2, abs=1e-7)  # the phase 1: ζ >= 0, so 0 - 0.3 + 0.5
    free = get_backend("pyomo").solve(OccupancyProgram(scheduler_model(None)))
    assert abs(result.objective - free.objective) <= 1e-7


def test_optimistic_infeasible_then_feasible():
    """ε above the SLA early on (fallback), then small enough: the same compiled program switches back."""
    model = scheduler_model()
    program = OptimisticProgram(model, counts=np.zeros((16, 2, 16)), time=2.0, epsilon=0.6)
    compiled = get_backend("pyomo").compile(program)
    first = compiled.solve()
    assert first.fell_back and first.ok
    counts = random_counts(np.random.default_rng(0), model, 500)
    program.update(counts=counts, time=500.0, epsilon=0.05)
    second = compiled.solve()
    assert second.ok and second.program is ProgramVariant.TIGHT
    check_optimistic_solution(second, program, counts, 500.0, 0.05)


def test_exception_in_a_utility_is_an_error_naming_it():
    # A bug in the user's own code is theirs to see: it propagates, naming the utility; it is not a solver status.
    from curlopt.errors import UtilityCodeError

    def broken(y):
        raise RuntimeError("broken utility")

    base = scheduler_model(None)
    objective = CustomUtility(2, "concave", value=SumOfLogs(dim=2).value, gradient=broken,
                              hessian=SumOfLogs(dim=2).hessian)
    model = CMDP(base.rewards, base.costs, objective, kernel=base.kernel)
    with pytest.raises(UtilityCodeError, match="broken utility"):
        get_backend("pyomo").solve(OccupancyProgram(model))


def test_bad_ipopt_option_is_refused_when_the_backend_is_built():
    from curlopt.errors import BackendOptionError

    with pytest.raises(BackendOptionError, match="no_such_option"):
        get_backend("pyomo", options={"no_such_option": 1})


def test_ipopt_status_table():
    from curlopt.backends.pyomo.solvers import IPOPT_STATUS

    # reduced accuracy has its own status, judged once for every backend (tests/test_status.py)
    assert IPOPT_STATUS[0] is Status.OPTIMAL and IPOPT_STATUS[1] is Status.ALMOST_OPTIMAL
    assert IPOPT_STATUS[2] is Status.INFEASIBLE
    assert IPOPT_STATUS[-1] is Status.ITERATION_LIMIT
    assert IPOPT_STATUS[-4] is Status.TIME_LIMIT
    assert IPOPT_STATUS[-2] is Status.NUMERICAL_ERROR and IPOPT_STATUS[-3] is Status.NUMERICAL_ERROR
    assert IPOPT_STATUS.get(-100, Status.SOLVER_ERROR) is Status.SOLVER_ERROR


# ----------------------------------------------------------------------------
# Utilities: smooth ones, Pyomo-only derivatives, epigraph reformulation, refusals
# ----------------------------------------------------------------------------


def _small_model(objective, constraints=(), K=2, d=2, seed=7):
    rng = np.random.default_rng(seed)
    S, A = 4, 3
    return CMDP(rng.uniform(0.1, 1.0, (K, S, A)), rng.uniform(0.0, 1.0, (d, S, A)), objective, constraints,
                kernel=random_kernel(rng, S, A))


@needs_cvxpy
@pytest.mark.parametrize("derivatives", ["auto", "pyomo"])
@pytest.mark.parametrize(
    "objective, constraints",
    [
        (AlphaFairness(0.5, dim=2), [ConvexQuadratic(np.eye(2), constant=-0.3)]),
        (AlphaFairness(2.0, dim=2, shift=0.1), [Norm([0.4, 0.4], 0.2)]),
        (Entropy(2, shift=0.05), [LinearBound([1.0, 1.0], 1.0)]),
        (SumOfLogs(weights=[1.0, 2.0]), [ConvexQuadratic([[2.0, 0.5], [0.5, 1.0]], linear=[0.1, 0.0], constant=-0.4)]),
    ],
    ids=["alpha0.5-quadratic", "alpha2-norm", "entropy-linear", "logs-quadratic"],
)
def test_smooth_utilities_agree_with_cvxpy(objective, constraints, derivatives):
    model = _small_model(objective, constraints)
    program = OccupancyProgram(model, epsilon=0.01)
    compiled = get_backend("pyomo", derivatives=derivatives).compile(program)
    ours = compiled.solve()
    ref = get_backend("cvxpy").solve(program)
    assert ours.ok and ref.ok and ours.program is ref.program
    assert close(ours.objective, ref.objective, AGREE)
    check_occupancy_solution(ours, model.kernel, model, 0.01, with_constraints=not ours.fell_back)
    expected = "pyomo" if derivatives == "pyomo" else "numpy"
    assert set(compiled.derivative_sources.values()) == {expected}


def test_custom_utility_with_only_a_pyomo_expression():
    """No numpy gradient/hessian: Pyomo differentiates the expression on the 2-dimensional aggregate."""
    from pyomo.environ import log

    custom = CustomUtility(2, "concave", value=SumOfLogs(dim=2).value, pyomo=lambda y: log(y[0]) + log(y[1]),
                           lower=[0.0, 0.0])
    base = scheduler_model()
    model = CMDP(base.rewards, base.costs, custom, base.constraints, kernel=base.kernel)
    compiled = get_backend("pyomo").compile(OccupancyProgram(model))
    assert compiled.derivative_sources["objective"] == "pyomo"
    ours = compiled.solve()
    reference = get_backend("pyomo").solve(OccupancyProgram(base))
    assert ours.ok and abs(ours.objective - reference.objective) <= 1e-8


def test_custom_utility_with_only_numpy_derivatives():
    logs = SumOfLogs(dim=2)
    custom = CustomUtility(2, "concave", value=logs.value, gradient=logs.gradient, hessian=logs.hessian,
                           lower=[0.0, 0.0])
    base = scheduler_model()
    model = CMDP(base.rewards, base.costs, custom, base.constraints, kernel=base.kernel)
    assert get_backend("pyomo").accepts(custom)
    ours = get_backend("pyomo").solve(OccupancyProgram(model))
    reference = get_backend("pyomo").solve(OccupancyProgram(base))
    assert ours.ok and abs(ours.objective - reference.objective) <= 1e-8
    if "highs" in installed_backends():  # a named Pyomo solver needs Pyomo expressions
        with pytest.raises(UnsupportedUtilityError, match="pyomo_expr"):
            get_backend("pyomo", solver="appsi_highs").compile(OccupancyProgram(model))


def test_pyomo_expression_that_disagrees_with_value_is_refused():
    from pyomo.environ import log

    wrong = CustomUtility(2, "concave", value=SumOfLogs(dim=2).value, gradient=SumOfLogs(dim=2).gradient,
                          hessian=SumOfLogs(dim=2).hessian, pyomo=lambda y: 2 * log(y[0]) + log(y[1]))
    base = scheduler_model(None)
    model = CMDP(base.rewards, base.costs, wrong, kernel=base.kernel)
    with pytest.raises(BackendError, match="same function"):
        get_backend("pyomo").compile(OccupancyProgram(model))


@pytest.mark.skipif("highs" not in installed_backends(), reason="needs the highs backend")
@pytest.mark.parametrize(
    "objective, constraints",
    [
        (MinOfLinear.max_min(2), [LinearBound([1.0, 0.0], 0.5)]),
        (Linear([1.0, 0.5]), [MaxOfLinear([[1.0, 0.0], [0.0, 1.0]], [0.45, 0.5])]),
        (MinOfLinear([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), [Norm([0.5, 0.5], 0.3, ord=1)]),
        (Linear([1.0, 1.0]), [Norm([0.5, 0.5], 0.1, ord=math.inf)]),
    ],
    ids=["maxmin", "max-of-linear", "min3-norm1", "norm-inf"],
)
def test_non_smooth_utilities_through_epigraph_rows_agree_with_highs(objective, constraints):
    model = _small_model(objective, constraints, seed=3)
    program = OccupancyProgram(model, epsilon=0.01)
    ours = get_backend("pyomo").solve(program)
    ref = get_backend("highs").solve(program)
    assert ours.ok and ref.ok and ours.program is ref.program
    assert close(ours.objective, ref.objective, AGREE)
    check_occupancy_solution(ours, model.kernel, model, 0.01, with_constraints=not ours.fell_back)


def test_non_smooth_utility_without_pieces_is_refused():
    from curlopt.backends.pyomo.backend import PyomoBackend

    kinked = CustomUtility(2, "concave", value=lambda y: float(min(y)), smooth=False)
    assert not PyomoBackend.accepts(kinked)
    assert not PyomoBackend.accepts(Norm(np.zeros(11), 1.0, ord=1))  # 2**11 pieces: not offered
    model = _small_model(kinked, [], d=1)
    with pytest.raises(UnsupportedUtilityError, match="pyomo"):
        get_backend("pyomo").compile(OccupancyProgram(model))


def test_utility_without_derivatives_or_expression_is_refused():
    from curlopt.backends.pyomo.backend import PyomoBackend

    bare = CustomUtility(2, "concave", value=lambda y: float(np.sum(np.log(y))))
    assert not PyomoBackend.accepts(bare)


# ----------------------------------------------------------------------------
# Named Pyomo solvers, options, lazy import
# ----------------------------------------------------------------------------


def test_unknown_or_unavailable_pyomo_solver_is_a_backend_error():
    from pyomo.opt import SolverFactory

    with pytest.raises(BackendError, match="no solver named"):
        get_backend("pyomo", solver="no_such_solver_xyz")
    if not SolverFactory("ipopt").available(exception_flag=False):
        with pytest.raises(BackendError, match="not available"):
            get_backend("pyomo", solver="ipopt")
    from pyomo.contrib.pynumero.asl import AmplInterface

    if not AmplInterface.available():
        with pytest.raises(BackendError, match="AMPL Solver Library"):
            get_backend("pyomo", solver="cyipopt")


def test_bad_constructor_options():
    with pytest.raises(BackendError):
        get_backend("pyomo", derivatives="finite-differences")
    with pytest.raises(BackendError):
        get_backend("pyomo", options=["tol", 1e-8])
    with pytest.raises(BackendError):
        get_backend("pyomo", infeasibility_threshold=-1.0)


def test_named_pyomo_solver_appsi_highs_on_a_linear_program():
    from pyomo.opt import SolverFactory

    if not SolverFactory("appsi_highs").available(exception_flag=False) or "highs" not in installed_backends():
        pytest.skip("appsi_highs is not available")
    model = queue_model(buffer=3)
    for program in (OccupancyProgram(model, epsilon=0.05),
                    OptimisticProgram(model, counts=np.ones((4, 16, 4)), time=100.0, epsilon=0.05)):
        compiled = get_backend("pyomo", solver="appsi_highs").compile(program)
        ours = compiled.solve()
        ref = get_backend("highs").solve(program)
        assert ours.ok and ours.solver == "appsi_highs"
        assert ours.program is ref.program and abs(ours.objective - ref.objective) <= 1e-7
    # infeasible ε-tight program: the phase 1 through the named solver, then the fallback
    program = OccupancyProgram(model, epsilon=5.0)
    result = get_backend("pyomo", solver="appsi_highs").solve(program)
    assert result.tight_status is Status.INFEASIBLE and result.fell_back and result.ok


def test_import_does_not_load_pyomo_or_cyipopt():
    code = (
        "import sys, curlopt.backends.pyomo.backend as m\n"
        "b = m.PyomoBackend()\n"
        "from curlopt import get_backend; get_backend('pyomo')\n"
        "from curlopt.backends import installed_backends; installed_backends()\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in ('pyomo', 'cyipopt')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_backend_is_registered_and_declares_its_extra():
    from curlopt.backends.pyomo.backend import PyomoBackend
    from curlopt.backends.registry import backend_class

    assert backend_class("pyomo") is PyomoBackend
    assert PyomoBackend.extra == "pyomo" and set(PyomoBackend.requires) == {"pyomo", "cyipopt"}
    assert PyomoBackend.is_installed()


def test_pyomo_refuses_a_utility_whose_hessian_contradicts_its_curvature():
    import numpy as np

    from curlopt import CMDP, CustomUtility, OccupancyProgram, UnsupportedUtilityError, get_backend

    liar = CustomUtility(1, "concave", value=lambda y: float(y[0] ** 2), gradient=lambda y: 2 * y,
                         hessian=lambda y: 2 * np.eye(1), pyomo=lambda y: y[0] ** 2)
    kernel = np.full((2, 2, 2), 0.5)
    model = CMDP(np.ones((1, 2, 2)), objective=liar, kernel=kernel)
    with pytest.raises(UnsupportedUtilityError, match="declared concave but its Hessian"):
        get_backend("pyomo").compile(OccupancyProgram(model))


def test_each_solver_path_is_its_own_compiled_class():
    from pyomo.opt import SolverFactory

    from curlopt.backends.pyomo.compiled import CompiledPyomo, CompiledPyomoBridge, CompiledPyomoSolver

    program = OccupancyProgram(queue_model(buffer=3), epsilon=0.05)
    bridged = get_backend("pyomo").compile(program)
    assert type(bridged) is CompiledPyomoBridge and bridged.bridge is not None
    if not SolverFactory("appsi_highs").available(exception_flag=False):
        pytest.skip("appsi_highs is not available")
    named = get_backend("pyomo", solver="appsi_highs").compile(program)
    assert type(named) is CompiledPyomoSolver and isinstance(named, CompiledPyomo) and named.bridge is None
    assert bridged.solve().objective == pytest.approx(named.solve().objective, abs=1e-7)


def test_epigraph_rows_of_kinked_utilities_are_the_lp_rows():
    """Objective pieces read ``t - (W R)_j x <= c_j`` and constraint pieces ``(W C)_j x + c_j <= -ε``, with
    ``W R`` and ``W C`` computed here by dense numpy."""
    from pyomo.repn import generate_standard_repn

    from curlopt.backends.pyomo.expressions import build_pyomo_model

    w_f, c_f = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), np.array([0.0, 0.1, -0.2])
    w_g, b_g = np.array([[1.0, 0.0], [0.3, 1.0]]), np.array([0.45, 0.5])
    model = _small_model(MinOfLinear(w_f, c_f), [MaxOfLinear(w_g, b_g)], seed=3)
    program = OccupancyProgram(model, epsilon=0.01)
    built = build_pyomo_model(program)
    m = built.model
    reward, cost = model.rewards.reshape(2, -1), model.costs.reshape(2, -1)  # occupancy columns come first
    n_occ = reward.shape[1]

    def coefficients(body):
        repn = generate_standard_repn(body, compute_values=True)
        out = {id(v): a for v, a in zip(repn.linear_vars, repn.linear_coefs, strict=True)}
        return np.array([out.get(id(m.x[i]), 0.0) for i in range(program.n_vars)]), out.get(id(m.t), 0.0), repn.constant

    for j in range(3):
        row = m.objective_pieces[j]
        x_coef, t_coef, constant = coefficients(row.body)
        np.testing.assert_allclose(x_coef[:n_occ], -(w_f[j] @ reward), atol=1e-15)
        assert not x_coef[n_occ:].any() and t_coef == 1.0 and constant == 0.0 and row.upper() == c_f[j]
    for j in range(2):
        row = m.g_pieces[0, j]
        x_coef, _, constant = coefficients(row.body)
        np.testing.assert_allclose(x_coef[:n_occ], w_g[j] @ cost, atol=1e-15)
        assert constant == -b_g[j] and row.upper() == -0.01


def test_a_safe_mode_utility_is_one_pyomo_expression():
    """``u(y[:n]) + k·y[n:]`` (AugmentedUtility's form) written by the Pyomo compiler equals its numpy value."""
    import pyomo.environ as pyo

    from curlopt.backends.pyomo.expressions import can_express, pyomo_expression
    from curlopt.utilities.augmented import AugmentedUtility

    wrapped = AugmentedUtility(SumOfLogs(weights=[1.0, 2.0], shift=0.1), [0.5, 0.0, -2.0])
    assert can_express(wrapped) and not can_express(AugmentedUtility(MinOfLinear.max_min(2), [1.0]))
    y = np.array([0.3, 0.7, 1.5, 9.0, 0.25])
    model = pyo.ConcreteModel()
    model.y = pyo.Var(range(5), initialize=dict(enumerate(y)))
    expr = pyomo_expression(wrapped, [model.y[i] for i in range(5)])
    expected = math.log(0.4) + 2 * math.log(0.8) + 0.5 * 1.5 - 2.0 * 0.25
    assert pyo.value(expr) == pytest.approx(expected, rel=1e-14)


# -- solvers by name, and Pyomo's messages, in a fresh process -------------------------------------------------------
def test_a_pyomo_solver_by_name_works_in_a_fresh_process():
    done = fresh_process("run", "queue", "--backend", "pyomo", "--option", "solver=appsi_highs", "--steps", "5", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["meta"]["backend"] == "pyomo"
    assert "knows no solver" not in done.stderr and "Traceback" not in done.stdout + done.stderr
    # ipopt: found if installed, else "not available" — never "knows no solver", never a traceback on stdout
    done = fresh_process("run", "queue", "--backend", "pyomo", "--option", "solver=ipopt", "--steps", "5", "--json")
    assert "knows no solver" not in done.stderr and "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0 or (done.returncode == 2 and "is not available on this machine" in done.stderr
                                    and done.stdout == "")


def test_pyomo_messages_are_one_line_on_stderr():
    code = textwrap.dedent("""
        import logging
        from curlopt.errors import BackendError
        from curlopt.backends import get_backend
        try:
            get_backend("pyomo", solver="no_such_solver")  # Pyomo logged a warning and a traceback on stdout
        except BackendError as exc:
            print("refused:", exc)
        from curlopt.backends.pyomo.solvers import pyomo_messages
        with pyomo_messages():
            try:
                raise RuntimeError("inner")
            except RuntimeError:
                logging.getLogger("pyomo.core").warning("a Pyomo warning\\nover two lines", exc_info=True)
    """)
    done = fresh_process(code=code)
    assert done.stdout.strip() == "refused: Pyomo knows no solver named 'no_such_solver'; the default solver is" \
                                  " 'cyipopt-bridge'."
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "Pyomo: a Pyomo warning over two lines (RuntimeError: inner)"

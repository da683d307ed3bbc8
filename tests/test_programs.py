"""Property and reference tests of the optimisation layer (docs/math.md §2–§4).

Every test body runs on every installed backend that accepts the program (the
``backend_name`` fixture plus ``backend_or_skip``), so a new backend is covered by
registering it. What is checked, and against what:

* optimum — against the independent reference of ``tests/reference.py`` (scipy
  ``linprog`` on LPs written from docs/math.md; cutting planes for the log objective);
* feasibility and the program variant — against the reference's proof of
  (in)feasibility;
* every constraint of the returned solution — by the numpy checks in
  :func:`check_solution`, written from the formulas of docs/math.md (never via
  ``program.residuals``);
* backends against each other, update-then-resolve against a fresh compile, and a
  2-state model solved by hand.

Tolerances
----------
Objectives agree to ``max(1e-7, 1e-6·|value|)``; constraints hold to 1e-7; policy
rows sum to 1 within 1e-9. The log reference is certified to a bracket
``[lower, upper]`` of width <= 1e-10 (see ``reference._kelley``), far inside the
objective tolerance, so log cases use the *same* tolerance as linear ones, widened
only by the (negligible) bracket width.

Razor-thin cases
----------------
Whether the ε-tight program is feasible is a discontinuous function of the data:
with ε within ~1e-6 of the largest feasible tightness ``ε_max`` (computed by its own
reference LP, :func:`reference.max_tightness`), solvers with feasibility tolerances
of ~1e-9 on scaled rows may legitimately disagree with each other and with the
reference about feasibility, and near that boundary the optimum's sensitivity to ε
(the dual of the g row) can be large. Such examples are discarded with
``assume(abs(ε_max - ε) > MARGIN)``; they are rare (ε and the bounds are continuous
draws), so Hypothesis's filter never starves.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import backend_or_skip
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from reference import (
    LinearObjective,
    constraint_value,
    empirical_kernel,
    l1_radius,
    max_tightness,
    occupancy_polytope,
    optimistic_polytope,
    solve_reference,
)
from strategies import Case, cases, data_updates

from curlopt import CMDP, Linear, LinearBound, OccupancyProgram, OptimisticProgram, get_backend
from curlopt.backends import installed_backends
from curlopt.backends.results import ProgramVariant, Status
from curlopt.errors import UnsupportedUtilityError

OBJECTIVE_REL = 1e-6
OBJECTIVE_ABS = 1e-7
FEASIBILITY = 1e-7
POLICY_SUM = 1e-9
#: ε closer than this to the feasibility boundary ε_max is "razor-thin" (see module docstring)
MARGIN = 1e-6

PROGRAMS = ["occupancy", "optimistic"]
OBJECTIVES = ["linear", "log"]

# The loaded profile (ci/dev/thorough) decides max_examples; the backend fixture is
# a plain string, so sharing it across examples is safe.
HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
PROFILE = settings(suppress_health_check=HEALTH)
# The update test solves 7 programs and 6 references per example: run a third as many examples of it.
FEWER = settings(suppress_health_check=HEALTH, max_examples=max(4, settings.default.max_examples // 3))


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------


def close(a: float, b: float) -> bool:
    """Relative 1e-6 or absolute 1e-7."""
    return abs(a - b) <= max(OBJECTIVE_ABS, OBJECTIVE_REL * max(abs(a), abs(b)))


def make_program(case: Case, kind: str):
    model = case.model()
    if kind == "occupancy":
        return OccupancyProgram(model, kernel=case.kernel, epsilon=case.epsilon)
    return OptimisticProgram(model, counts=case.counts, time=case.time, epsilon=case.epsilon)


def polytope(case: Case, kind: str):
    if kind == "occupancy":
        return occupancy_polytope(case.kernel)
    return optimistic_polytope(case.counts, case.time)


def reference(case: Case, kind: str, with_constraints: bool = True):
    return solve_reference(
        polytope(case, kind),
        case.rewards,
        case.costs,
        case.reference_objective(),
        case.constraint_pieces,
        case.epsilon,
        with_constraints=with_constraints,
    )


def tightness_margin(case: Case, kind: str) -> float:
    """``ε_max - ε``: positive when the ε-tight program is feasible, negative when not."""
    return max_tightness(polytope(case, kind), case.costs, case.constraint_pieces) - case.epsilon


def assume_clear_of_boundary(case: Case, kind: str) -> float:
    margin = tightness_margin(case, kind)
    note(f"ε_max - ε = {margin!r}")
    assume(abs(margin) > MARGIN)
    return margin


def assert_objective_matches(result, ref, what: str = "") -> None:
    """``result.objective`` equals the reference optimum (inside its certified bracket for log)."""
    value = result.objective
    slack = max(OBJECTIVE_ABS, OBJECTIVE_REL * abs(ref.value))
    assert ref.lower - slack <= value <= ref.upper + slack, (
        f"{what}objective {value!r} != reference {ref.value!r} (bracket [{ref.lower!r}, {ref.upper!r}],"
        f" difference {value - ref.value:.3g})"
    )


def check_solution(case: Case, kind: str, result, tight: bool) -> None:
    """Every constraint of the solved program holds at the returned solution (formulas of docs/math.md, numpy only).

    ``tight`` asks for the g rows ``g_m(ζ) <= -ε`` too (the ε-tight program);
    a fallback result is checked without them.
    """
    S, A = case.n_states, case.n_actions
    assert result.status.has_solution, result.message
    rho = np.asarray(result.occupancy, dtype=float)
    assert rho.shape == (S, A)
    assert np.all(np.isfinite(rho))
    assert rho.min() >= -FEASIBILITY, f"negative occupancy {rho.min()!r}"
    assert abs(rho.sum() - 1.0) <= FEASIBILITY, f"total mass {rho.sum()!r}"

    if kind == "occupancy":
        assert result.joint is None
        outflow = rho.sum(axis=1)  # Σ_a ρ(s',a)
        inflow = np.einsum("sa,sat->t", rho, case.kernel)  # Σ_{s,a} Q(s'|s,a) ρ(s,a)
        flow = np.abs(outflow - inflow)  # all S rows, including the one the program drops
        assert flow.max() <= FEASIBILITY, f"flow balance violated by {flow.max():.3g} at state {int(flow.argmax())}"
    else:
        p = np.asarray(result.joint, dtype=float)
        assert p.shape == (S, A, S)
        assert np.all(np.isfinite(p))
        assert p.min() >= -FEASIBILITY, f"negative joint probability {p.min()!r}"
        assert abs(p.sum() - 1.0) <= FEASIBILITY
        rho_p = p.sum(axis=2)  # ρ(s,a) = Σ_{s'} p(s,a,s')
        link = np.abs(rho - rho_p)
        assert link.max() <= FEASIBILITY, f"occupancy differs from Σ_s' p by {link.max():.3g}"
        flow = np.abs(p.sum(axis=(1, 2)) - p.sum(axis=(0, 1)))  # out of s vs into s, every s
        assert flow.max() <= FEASIBILITY, f"flow balance violated by {flow.max():.3g} at state {int(flow.argmax())}"
        # |p - P^ρ| <= α, Σα <= βρ  <=>  Σ_s' |p(s,a,s') - P^(s'|s,a) ρ(s,a)| <= β(s,a) ρ(s,a)
        P_hat = empirical_kernel(case.counts)
        beta = l1_radius(case.counts, case.time)
        deviation = np.abs(p - P_hat * rho_p[:, :, None]).sum(axis=2)
        excess = deviation - beta * rho_p
        assert excess.max() <= FEASIBILITY, (
            f"L1 confidence row violated by {excess.max():.3g} at (s,a)={np.unravel_index(excess.argmax(), excess.shape)}"
        )

    lam = np.einsum("ksa,sa->k", case.rewards, rho)
    zeta = np.einsum("dsa,sa->d", case.costs, rho)
    g = np.array([constraint_value(pieces, zeta) for pieces in case.constraint_pieces])
    if tight:
        if g.size:
            worst = float((g + case.epsilon).max())
            assert worst <= FEASIBILITY, f"g_m(ζ) <= -ε violated by {worst:.3g} (g={g}, ε={case.epsilon})"

    # what the result reports about its own solution
    np.testing.assert_allclose(result.rewards, lam, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.costs, zeta, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.constraint_values, g, rtol=0, atol=1e-9)
    f = case.reference_objective().value(lam)
    assert abs(result.objective - f) <= 1e-9 * max(1.0, abs(f))
    assert result.epsilon == pytest.approx(case.epsilon, abs=0)

    # the policy: a distribution per state, ρ(s,a)/Σ_b ρ(s,b), uniform where ρ(s,·) = 0
    policy = np.asarray(result.policy, dtype=float)
    assert policy.shape == (S, A)
    assert np.all(np.isfinite(policy)) and policy.min() >= 0.0
    assert np.abs(policy.sum(axis=1) - 1.0).max() <= POLICY_SUM
    totals = rho.sum(axis=1)
    for s in range(S):
        if totals[s] == 0.0:
            np.testing.assert_allclose(policy[s], 1.0 / A, rtol=0, atol=1e-12, err_msg=f"state {s} unvisited")
        elif totals[s] > 1e-8 * A:  # up to 1e-8 per action the toolkit documents the state as unvisited (README)
            np.testing.assert_allclose(policy[s], rho[s] / totals[s], rtol=0, atol=1e-9, err_msg=f"state {s}")


def compile_on_accepting_backends(program) -> dict:
    """``program`` compiled on every installed backend that accepts it (a refusal is expected, any other error fails)."""
    compiled = {}
    for name in installed_backends():
        try:
            compiled[name] = get_backend(name).compile(program)
        except UnsupportedUtilityError:
            continue
    return compiled


# ----------------------------------------------------------------------------
# optimum against the reference
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("kind", PROGRAMS)
@PROFILE
@given(data=st.data())
def test_optimum_matches_reference(backend_name, kind, objective, data):
    """Random CMDPs: the backend's variant and optimum equal the reference's, and the solution is feasible."""
    case = data.draw(cases(objective=objective), label="case")
    program = make_program(case, kind)
    compiled = backend_or_skip(backend_name, program)
    margin = assume_clear_of_boundary(case, kind)
    feasible = margin > 0
    ref = reference(case, kind)
    assert ref.feasible == feasible, "the margin LP and the reference disagree"
    if not feasible:
        ref = reference(case, kind, with_constraints=False)
        assert ref.feasible, "the program without g rows is always feasible"

    result = compiled.solve()
    assert result.status.has_solution, result.message
    expected = ProgramVariant.TIGHT if feasible else ProgramVariant.FALLBACK
    event(f"variant {expected.value}")
    assert result.program is expected, f"{result.program} but the reference says {expected} ({result.message})"
    assert result.tight_status is (Status.OPTIMAL if feasible else Status.INFEASIBLE)
    assert_objective_matches(result, ref)
    check_solution(case, kind, result, tight=feasible)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("kind", PROGRAMS)
@PROFILE
@given(data=st.data())
def test_backends_agree(kind, objective, data):
    """Every installed backend accepting the program reports the same variant and optimum (highs vs cvxpy, ...)."""
    case = data.draw(cases(objective=objective), label="case")
    program = make_program(case, kind)
    compiled = compile_on_accepting_backends(program)
    if len(compiled) < 2:
        pytest.skip(f"fewer than two installed backends accept a {objective} {kind} program: {list(compiled)}")
    assume_clear_of_boundary(case, kind)
    results = {name: handle.solve() for name, handle in compiled.items()}
    first, *others = list(results)
    for name in others:
        a, b = results[first], results[name]
        assert a.status.has_solution and b.status.has_solution, (a.message, b.message)
        assert a.program is b.program, f"{first}: {a.program}, {name}: {b.program}"
        assert close(a.objective, b.objective), f"{first}: {a.objective!r}, {name}: {b.objective!r}"


# ----------------------------------------------------------------------------
# infeasible ε-tight program: the labelled fallback
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("kind", PROGRAMS)
@PROFILE
@given(data=st.data())
def test_infeasible_tight_program_falls_back_labelled(backend_name, kind, objective, data):
    """ε above the largest feasible tightness: the result is the labelled fallback, optimal for the program without g rows."""
    case = data.draw(cases(objective=objective, min_constraints=1), label="case")
    epsilon_max = max_tightness(polytope(case, kind), case.costs, case.constraint_pieces)
    excess = data.draw(st.floats(1e-4, 0.5), label="ε - max(0, ε_max)")
    case = case.with_data(epsilon=max(0.0, epsilon_max) + excess)
    assert not reference(case, kind).feasible

    result = backend_or_skip(backend_name, make_program(case, kind)).solve()
    assert result.program is ProgramVariant.FALLBACK and result.fell_back
    assert result.tight_status is Status.INFEASIBLE
    assert result.status.has_solution and result.ok
    assert "infeasible" in result.message.lower(), result.message
    assert result.epsilon == case.epsilon
    assert_objective_matches(result, reference(case, kind, with_constraints=False), "fallback ")
    check_solution(case, kind, result, tight=False)


# ----------------------------------------------------------------------------
# re-solve after update == fresh compile + solve
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("kind", PROGRAMS)
@FEWER
@given(data=st.data())
def test_update_then_resolve_equals_fresh_compile(backend_name, kind, objective, data):
    """Compile once, solve, then update (kernel/counts/time/ε, a random subset each time) and re-solve, three times."""
    case = data.draw(cases(objective=objective), label="case")
    steps = data.draw(data_updates(case, kind), label="updates")
    for _, current in steps:
        assume_clear_of_boundary(current, kind)

    program = make_program(case, kind)
    compiled = backend_or_skip(backend_name, program)
    backend = get_backend(backend_name)
    compiled.solve()  # the first solve leaves state behind (basis, warm start) that the updates must not corrupt
    for number, (fields, current) in enumerate(steps, start=1):
        changes = {name: getattr(current, name) for name in fields}
        program.update(**changes)
        updated = compiled.solve()
        fresh = backend.compile(make_program(current, kind)).solve()
        where = f"after update {number} ({', '.join(sorted(fields))}): "
        assert updated.status.has_solution, where + updated.message
        assert fresh.status.has_solution, where + fresh.message
        assert updated.program is fresh.program, where + f"updated {updated.program}, fresh {fresh.program}"
        assert close(updated.objective, fresh.objective), where + f"updated {updated.objective!r}, fresh {fresh.objective!r}"
        tight = tightness_margin(current, kind) > 0
        event(f"step {number}: {'tight' if tight else 'fallback'}")
        assert updated.program is (ProgramVariant.TIGHT if tight else ProgramVariant.FALLBACK), where
        assert_objective_matches(updated, reference(current, kind, with_constraints=tight), where)
        check_solution(current, kind, updated, tight=tight)


# ----------------------------------------------------------------------------
# a model solved by hand
# ----------------------------------------------------------------------------
#
# Two states {0, 1}, two actions {0, 1}. Action 1 pushes towards state 1:
#
#     P(1 | s=0, a=0) = 0.1    P(1 | s=0, a=1) = 0.6
#     P(1 | s=1, a=0) = 0.5    P(1 | s=1, a=1) = 0.9
#
# reward r(s,a) = 1{s = 1} (linear f(λ) = λ), cost c(s,a) = 1{a = 1}, one constraint
# ζ <= B, i.e. g(ζ) = ζ - B, and the ε-tight row ζ <= B - ε =: b.
#
# Write (a, b_, c, d) = (ρ(0,0), ρ(0,1), ρ(1,0), ρ(1,1)). Mass: a + b_ + c + d = 1.
# Flow into state 1 (the row of state 0 is the same equation):
#     c + d = 0.1 a + 0.6 b_ + 0.5 c + 0.9 d   <=>   0.5 c + 0.1 d = 0.1 a + 0.6 b_.
# λ = c + d (time in state 1), ζ = b_ + d (time playing action 1).
#
# Two equality rows, four variables: the vertices have two non-zero entries, one
# per state, i.e. are the deterministic policies:
#     (a, c):   0.5c = 0.1a, a + c = 1       -> a = 5/6,  c = 1/6         ζ = 0,    λ = 1/6
#     (a, d):   0.1d = 0.1a                  -> a = d = 1/2               ζ = 1/2,  λ = 1/2
#     (b_, c):  0.5c = 0.6b_                 -> b_ = 5/11, c = 6/11       ζ = 5/11, λ = 6/11
#     (b_, d):  0.1d = 0.6b_                 -> b_ = 1/7,  d = 6/7        ζ = 1,    λ = 6/7
# The achievable (ζ, λ) set is the convex hull of these four points. Its upper
# boundary runs (0, 1/6) -> (5/11, 6/11) with slope (6/11 - 1/6)/(5/11) = 5/6, then
# (5/11, 6/11) -> (1, 6/7) with slope (6/7 - 6/11)/(6/11) = 4/7 (decreasing: concave);
# (1/2, 1/2) lies below it (1/6 + 5/6 · 1/2 = 7/12 > 1/2). Hence
#     λ*(b) = 1/6 + (5/6) b                  for 0 <= b <= 5/11,
#     λ*(b) = 6/11 + (4/7)(b - 5/11)         for 5/11 <= b <= 1,
#     λ*(b) = 6/7                             for b >= 1, and infeasible for b < 0.
# The optimum is unique (the frontier point lies on an edge between two vertices and
# no other vertex maps onto that edge), so ρ* and π* are checkable too:
#
# * B = 0.5, ε = 0.1 (b = 0.4): weight θ = 0.4 / (5/11) = 0.88 on (b_, c), 0.12 on (a, c):
#       ρ* = (0.1, 0.4, 0.5, 0),  λ* = 1/2,  π*(·|0) = (0.2, 0.8),  π*(·|1) = (1, 0).
# * B = 0.8, ε = 0.1 (b = 0.7): weight θ with 5/11 + θ·6/11 = 0.7, θ = 0.45 on (b_, d):
#       ρ* = (0, 11/35, 3/10, 27/70),  λ* = 24/35,  π*(·|0) = (0, 1),  π*(·|1) = (7/16, 9/16).
# * B = 0.05, ε = 0.1 (b = -0.05 < 0 <= ζ): infeasible; the fallback drops the row and
#   takes the best vertex (b_, d): ρ = (0, 1/7, 0, 6/7), λ = 6/7, π = action 1 everywhere.
#
# The optimistic program with no data (counts 0, t_e = 1): P^ = 0 and
# β = sqrt(14·2·ln 4) ≈ 6.2 > 1 for every pair, so |p - 0| <= α, Σα <= βρ only asks
# ρ <= βρ: any kernel is allowed and any ρ in the simplex is reachable (take
# p(s,a,s') = ρ(s,a)·μ(s')). The optimum puts all mass on (s=1, a=0): λ* = 1 at ζ = 0,
# feasible for b >= 0; for b < 0 the fallback has the same optimum. State 0 is then
# never visited (ρ(0,·) = 0), so its policy is uniform (1/2, 1/2).

HAND_P1 = np.array([[0.1, 0.6], [0.5, 0.9]])  # P(1 | s, a)
HAND_KERNEL = np.stack([1.0 - HAND_P1, HAND_P1], axis=2)
HAND_REWARDS = np.array([[0.0, 0.0], [1.0, 1.0]])
HAND_COSTS = np.array([[0.0, 1.0], [0.0, 1.0]])

HAND_CASES = [
    # bound B, ε, variant, λ*, ρ*, π*
    (0.5, 0.1, ProgramVariant.TIGHT, 1 / 2, [[0.1, 0.4], [0.5, 0.0]], [[0.2, 0.8], [1.0, 0.0]]),
    (0.8, 0.1, ProgramVariant.TIGHT, 24 / 35, [[0.0, 11 / 35], [3 / 10, 27 / 70]], [[0.0, 1.0], [7 / 16, 9 / 16]]),
    (0.05, 0.1, ProgramVariant.FALLBACK, 6 / 7, [[0.0, 1 / 7], [0.0, 6 / 7]], [[0.0, 1.0], [0.0, 1.0]]),
]


def hand_model(bound: float) -> CMDP:
    return CMDP(HAND_REWARDS, HAND_COSTS, Linear([1.0]), [LinearBound([1.0], bound)], kernel=HAND_KERNEL, name="hand")


@pytest.mark.parametrize("bound, epsilon, variant, value, occupancy, policy", HAND_CASES)
def test_hand_solved_occupancy_program(backend_name, bound, epsilon, variant, value, occupancy, policy):
    result = backend_or_skip(backend_name, OccupancyProgram(hand_model(bound), epsilon=epsilon)).solve()
    assert result.status.has_solution, result.message
    assert result.program is variant, result.message
    assert result.objective == pytest.approx(value, rel=OBJECTIVE_REL, abs=OBJECTIVE_ABS)
    np.testing.assert_allclose(result.occupancy, occupancy, rtol=0, atol=1e-7)
    np.testing.assert_allclose(result.policy, policy, rtol=0, atol=1e-6)
    assert result.rewards == pytest.approx([value], abs=1e-7)


@pytest.mark.parametrize("bound, epsilon, variant", [(0.5, 0.1, ProgramVariant.TIGHT), (0.05, 0.1, ProgramVariant.FALLBACK)])
def test_hand_solved_optimistic_program_without_data(backend_name, bound, epsilon, variant):
    program = OptimisticProgram(hand_model(bound), counts=np.zeros((2, 2, 2)), time=1, epsilon=epsilon)
    result = backend_or_skip(backend_name, program).solve()
    assert result.status.has_solution, result.message
    assert result.program is variant, result.message
    assert result.objective == pytest.approx(1.0, abs=OBJECTIVE_ABS)
    np.testing.assert_allclose(result.occupancy[0], [0.0, 0.0], rtol=0, atol=1e-7)
    # state 0 is never visited by the optimum (ρ*(0,·) = 0): docs/math.md §2 asks for the uniform policy there
    np.testing.assert_allclose(result.policy[0], [0.5, 0.5], rtol=0, atol=1e-6)


def test_hand_model_reference_agrees_with_closed_form():
    """The reference solvers reproduce the hand derivation (a check of the reference itself)."""
    for bound, epsilon, variant, value, occupancy, _ in HAND_CASES:
        feasible = variant is ProgramVariant.TIGHT
        pieces = [(np.array([[1.0]]), np.array([bound]))]
        ref = solve_reference(
            occupancy_polytope(HAND_KERNEL), HAND_REWARDS[None], HAND_COSTS[None], LinearObjective(np.array([1.0])),
            pieces, epsilon,
        )
        assert ref.feasible is feasible
        if not feasible:
            ref = solve_reference(
                occupancy_polytope(HAND_KERNEL), HAND_REWARDS[None], HAND_COSTS[None],
                LinearObjective(np.array([1.0])), pieces, epsilon, with_constraints=False,
            )
        assert ref.value == pytest.approx(value, abs=1e-9)
        np.testing.assert_allclose(ref.occupancy, occupancy, atol=1e-9)
        assert max_tightness(occupancy_polytope(HAND_KERNEL), HAND_COSTS[None], pieces) == pytest.approx(bound, abs=1e-9)
        opt = solve_reference(
            optimistic_polytope(np.zeros((2, 2, 2)), 1), HAND_REWARDS[None], HAND_COSTS[None],
            LinearObjective(np.array([1.0])), pieces, epsilon, with_constraints=feasible,
        )
        assert opt.value == pytest.approx(1.0, abs=1e-9)


def test_parameter_values_are_read_only_outside_update():
    """Writing a program's parameter array directly is refused (one backend would read it, another ignore it);
    ``update()`` is the way in, and it still writes."""
    from curlopt.models import random_model

    program = OptimisticProgram(random_model(3, 2, seed=0), counts=np.ones((3, 2, 3)), time=10.0)
    with pytest.raises(ValueError, match="read-only"):
        program.linear.param_values[0] = 1.0
    before = program.linear.param_values.copy()
    program.update(counts=np.full((3, 2, 3), 5.0), time=100.0)
    assert not np.array_equal(before, program.linear.param_values)

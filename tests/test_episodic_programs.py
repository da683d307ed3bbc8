"""The episodic programs (per-step occupancy, extended optimistic) on every installed backend.

References are written here from the formulas, independently of curlopt's programs and LP form: LPs assembled
with numpy and solved by ``scipy.optimize.linprog``, backward induction for the unconstrained linear optimum, and a
CVXPY problem written here for a logarithmic objective. The extended program's reference keeps a joint at the last
step too (as the written program does), which the program leaves out: the two agree whenever every confidence set
holds a distribution, which the instances here ensure.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import backend_or_skip, installed_backend_names
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from curlopt import get_backend
from curlopt.backends.results import ProgramVariant, Status
from curlopt.errors import ProgramError
from curlopt.models.cmdp import CMDP
from curlopt.models.episodic import EpisodicCMDP, episode_values
from curlopt.programs import EpisodicExtendedProgram, EpisodicOccupancyProgram
from curlopt.utilities.library import Linear, LinearBound, MinOfLinear, SumOfLogs

HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
PROFILE = settings(suppress_health_check=HEALTH)
FEWER = settings(suppress_health_check=HEALTH, max_examples=max(4, settings.default.max_examples // 3))
#: objectives agree within this relative difference (an absolute floor for values near 0)
REL, ABS = 1e-7, 1e-9
#: rows hold to this
FEASIBILITY = 1e-7
#: a budget within this of the edge of feasibility is razor-thin (solver tolerances decide): redrawn
MARGIN = 1e-6


def close(value: float, expected: float, rel: float = REL) -> bool:
    return abs(value - expected) <= max(ABS, rel * abs(expected))


# ----------------------------------------------------------------------------
# Random instances
# ----------------------------------------------------------------------------


def random_kernels(rng, S, A, count):
    return [rng.dirichlet(np.full(S, 0.7), size=(S, A)) for _ in range(count)]


def random_instance(seed, S, A, H, K=1, d=1, per_step=False, objective="linear", budget=(0.15, 0.8)):
    """``(model, data)``: an EpisodicCMDP and its arrays (kernels per step, rewards/costs (H, ·, S, A), μ, the
    objective weights and the constraints as (weights, bound) pairs)."""
    rng = np.random.default_rng(seed)
    kernels = random_kernels(rng, S, A, H - 1) if per_step else random_kernels(rng, S, A, 1) * (H - 1)
    rewards = rng.uniform(0.1, 1.0, size=(H, K, S, A)) if per_step else np.broadcast_to(
        rng.uniform(0.1, 1.0, size=(K, S, A)), (H, K, S, A))
    costs = rng.uniform(0.0, 1.0, size=(H, d, S, A))
    mu = rng.dirichlet(np.ones(S))
    # budgets between the least and the largest total of each cost: feasible or not, mostly clear of the edge
    bounds = [float(H * rng.uniform(*budget)) for _ in range(d)]
    constraints = [(np.eye(d)[i], bounds[i]) for i in range(d)]
    weights = rng.uniform(0.5, 1.5, size=K)
    if objective == "linear":
        f = Linear(weights)
    elif objective == "max-min":
        f = MinOfLinear(np.diag(weights))
    else:
        f = SumOfLogs(weights=weights, shift=0.1)
    kernel_arg = kernels if per_step else (kernels[0] if H > 1 else random_kernels(rng, S, A, 1)[0])
    model = EpisodicCMDP(rewards if per_step else rewards[0], costs if d else None, f,
                         [LinearBound(w, b) for w, b in constraints], kernel=kernel_arg, initial=mu, horizon=H)
    data = {"kernels": kernels, "rewards": np.array(rewards), "costs": costs, "mu": mu, "weights": weights,
            "constraints": constraints}
    return model, data


instances = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "S": st.integers(1, 5),
    "A": st.integers(1, 3),
    "H": st.integers(1, 4),
    "d": st.integers(0, 2),
    "per_step": st.booleans(),
})


# ----------------------------------------------------------------------------
# References written from the formulas
# ----------------------------------------------------------------------------


def occupancy_rows(kernels, mu, H, S, A, n_cols=None):
    """Equality rows over q (H·S·A columns, index h·S·A + s·A + a): Σ_a q_0(s,a) = μ(s) and the flow."""
    n = H * S * A
    n_cols = n if n_cols is None else n_cols
    rows, rhs = [], []
    for s in range(S):
        row = np.zeros(n_cols)
        row[s * A:(s + 1) * A] = 1.0
        rows.append(row)
        rhs.append(mu[s])
    for h in range(H - 1):
        for t in range(S):
            row = np.zeros(n_cols)
            row[(h + 1) * S * A + t * A:(h + 1) * S * A + (t + 1) * A] = 1.0
            for s in range(S):
                for a in range(A):
                    row[h * S * A + s * A + a] -= kernels[h][s, a, t]
            rows.append(row)
            rhs.append(0.0)
    return np.array(rows).reshape(-1, n_cols), np.array(rhs)


def solve_lp(c, A_eq, b_eq, A_ub, b_ub, bounds, maximise=True):
    """``(feasible, optimum)`` of max (or min) c·x by linprog (HiGHS, tight tolerances)."""
    res = linprog(-c if maximise else c, A_ub=A_ub if len(b_ub) else None, b_ub=b_ub if len(b_ub) else None,
                  A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status == 2:
        return False, None
    assert res.status == 0, res.message
    return True, (-res.fun if maximise else res.fun)


def signal_map(signals, n_cols):
    """(count, n_cols) rows mapping q (the first H·S·A columns) to the totals of (H, count, S, A) signals."""
    H, count, S, A = signals.shape
    out = np.zeros((count, n_cols))
    out[:, :H * S * A] = signals.transpose(1, 0, 2, 3).reshape(count, H * S * A)
    return out


def reference(reward_map, weights, cost_map, constraints, epsilon, A_eq, b_eq, bounds, objective="linear",
              with_constraints=True):
    """The optimum of ``Σ_k w_k λ_k`` (linear) or ``min_k w_k λ_k`` (max-min, by an epigraph column), with the
    budget rows ``w_m·ζ <= bound_m − ε`` (when ``with_constraints``); ``(feasible, value, slack)`` where ``slack``
    is the largest ``t`` with ``w_m·ζ + t <= bound_m − ε`` for all m (razor-thin budgets have ``|t|`` tiny)."""
    n = A_eq.shape[1]
    ub = [(w @ cost_map, b - epsilon) for w, b in constraints] if with_constraints else []
    A_ub = np.array([r for r, _ in ub]).reshape(-1, n)
    b_ub = np.array([v for _, v in ub])
    if objective == "linear":
        feasible, value = solve_lp(weights @ reward_map, A_eq, b_eq, A_ub, b_ub, bounds)
    else:  # max t  s.t.  t <= w_k λ_k
        K = reward_map.shape[0]
        aug = lambda m: np.hstack([m, np.zeros((m.shape[0], 1))])  # noqa: E731
        epi = np.hstack([-(weights[:, None] * reward_map), np.ones((K, 1))])
        c = np.zeros(n + 1)
        c[-1] = 1.0
        feasible, value = solve_lp(c, aug(A_eq), b_eq, np.vstack([aug(A_ub), epi]),
                                   np.concatenate([b_ub, np.zeros(K)]), bounds + [(None, None)])
    slack = None
    if constraints:
        c = np.zeros(n + 1)
        c[-1] = 1.0
        rows = np.array([np.append(w @ cost_map, 1.0) for w, _ in constraints])
        _, slack = solve_lp(c, np.hstack([A_eq, np.zeros((A_eq.shape[0], 1))]), b_eq, rows,
                            np.array([b - epsilon for _, b in constraints]), bounds + [(None, 10.0 * (1 + epsilon))])
    return feasible, value, slack


def occupancy_reference(kernels, data, H, S, A, epsilon, rewards=None, costs=None, objective="linear",
                        with_constraints=True):
    A_eq, b_eq = occupancy_rows(kernels, data["mu"], H, S, A)
    n = H * S * A
    rewards = data["rewards"] if rewards is None else rewards
    costs = data["costs"] if costs is None else costs
    return reference(signal_map(rewards, n), data["weights"], signal_map(costs, n), data["constraints"],
                     epsilon, A_eq, b_eq, [(0, None)] * n, objective, with_constraints)


def extended_reference(p_hat, beta, confidence, data, H, S, A, epsilon, rewards=None, costs=None,
                       with_constraints=True):
    """The written extended program: q (H, S, A), z (H, S, A, S) at every step including the last, α for L1."""
    nq, nz = H * S * A, H * S * A * S
    n = nq + nz + (nz if confidence == "l1" else 0)
    zi = lambda h, s, a, t: nq + ((h * S + s) * A + a) * S + t  # noqa: E731
    qi = lambda h, s, a: (h * S + s) * A + a  # noqa: E731
    ai = lambda h, s, a, t: nq + nz + ((h * S + s) * A + a) * S + t  # noqa: E731
    eq, rhs, ub, ubr = [], [], [], []
    for s in range(S):  # Σ_a q_0(s,a) = μ(s)
        row = np.zeros(n)
        for a in range(A):
            row[qi(0, s, a)] = 1.0
        eq.append(row)
        rhs.append(data["mu"][s])
    for h in range(H):
        for s in range(S):
            for a in range(A):  # q_h(s,a) = Σ_t z_h(s,a,t)
                row = np.zeros(n)
                row[qi(h, s, a)] = 1.0
                for t in range(S):
                    row[zi(h, s, a, t)] = -1.0
                eq.append(row)
                rhs.append(0.0)
    for h in range(H - 1):
        for t in range(S):  # Σ_a q_{h+1}(t,a) = Σ_{s,a} z_h(s,a,t)
            row = np.zeros(n)
            for a in range(A):
                row[qi(h + 1, t, a)] = 1.0
            for s in range(S):
                for a in range(A):
                    row[zi(h, s, a, t)] -= 1.0
            eq.append(row)
            rhs.append(0.0)
    for h in range(H):
        P, b = p_hat[min(h, H - 2)] if H > 1 else p_hat[0], beta[min(h, H - 2)] if H > 1 else beta[0]
        for s in range(S):
            for a in range(A):
                if confidence == "entry":
                    for t in range(S):
                        for sign in (1.0, -1.0):  # ±(z − P q) <= β q
                            row = np.zeros(n)
                            row[zi(h, s, a, t)] = sign
                            row[qi(h, s, a)] = -sign * P[s, a, t] - b[s, a, t]
                            ub.append(row)
                            ubr.append(0.0)
                else:
                    for t in range(S):
                        for sign in (1.0, -1.0):  # ±(z − P q) <= α
                            row = np.zeros(n)
                            row[zi(h, s, a, t)] = sign
                            row[qi(h, s, a)] = -sign * P[s, a, t]
                            row[ai(h, s, a, t)] = -1.0
                            ub.append(row)
                            ubr.append(0.0)
                    row = np.zeros(n)  # Σ_t α <= β q
                    for t in range(S):
                        row[ai(h, s, a, t)] = 1.0
                    row[qi(h, s, a)] = -b[s, a]
                    ub.append(row)
                    ubr.append(0.0)
    rewards = data["rewards"] if rewards is None else rewards
    costs = data["costs"] if costs is None else costs
    A_eq = np.array(eq)
    reward_map, cost_map = signal_map(rewards, n), signal_map(costs, n)
    budget = [(w @ cost_map, bound - epsilon) for w, bound in data["constraints"]] if with_constraints else []
    A_ub = np.array(ub + [r for r, _ in budget]).reshape(-1, n)
    b_ub = np.array(ubr + [v for _, v in budget])
    feasible, value = solve_lp(data["weights"] @ reward_map, A_eq, np.array(rhs), A_ub, b_ub, [(0, None)] * n)
    slack = None
    if data["constraints"]:
        c = np.zeros(n + 1)
        c[-1] = 1.0
        rows = np.vstack([np.hstack([np.array(ub).reshape(-1, n), np.zeros((len(ub), 1))])]
                         + [np.append(w @ cost_map, 1.0)[None] for w, _ in data["constraints"]])
        _, slack = solve_lp(c, np.hstack([A_eq, np.zeros((A_eq.shape[0], 1))]), np.array(rhs), rows,
                            np.array(ubr + [bound - epsilon for _, bound in data["constraints"]]),
                            [(0, None)] * n + [(None, 10.0 * (1 + epsilon))])
    return feasible, value, slack


def backward_induction(kernels, rewards, mu):
    """The optimal value of Σ_h r_h (rewards (H, S, A)) from μ, by V_H = 0, Q_h = r_h + P_h V_{h+1}, V_h = max_a Q_h."""
    H, S, A = rewards.shape
    value = np.zeros(S)
    for h in reversed(range(H)):
        future = kernels[h] @ value if h < H - 1 else np.zeros((S, A))
        value = (rewards[h] + future).max(axis=1)
    return float(mu @ value)


# ----------------------------------------------------------------------------
# Checks of a solution from its arrays
# ----------------------------------------------------------------------------


def assert_rows_hold(result, program, kernels, mu, tight):
    """The result's occupancy satisfies the initial and flow rows (numpy, from the formulas), its policy is a
    distribution at every step, and every program row holds at x (``program.residuals``)."""
    q = np.asarray(result.occupancy)
    H = q.shape[0]
    assert q.min() >= 0
    assert np.abs(q[0].sum(axis=1) - mu).max() <= FEASIBILITY
    for h in range(H - 1):
        assert np.abs(q[h + 1].sum(axis=1) - np.einsum("sat,sa->t", kernels[h], q[h])).max() <= FEASIBILITY
    assert np.abs(result.policy.sum(axis=2) - 1.0).max() <= 1e-9
    residuals = program.residuals(result.x, include_constraints=tight)
    assert max(residuals.values()) <= FEASIBILITY, residuals


def assert_matches(result, feasible, value, fallback_value=None):
    assert result.status.has_solution, result.message
    if feasible:
        assert result.program is ProgramVariant.TIGHT, result.message
        assert close(result.objective, value), (result.objective, value)
    else:
        assert result.program is ProgramVariant.FALLBACK and result.fell_back
        assert result.tight_status is Status.INFEASIBLE
        assert "infeasible" in result.message
        assert close(result.objective, fallback_value), (result.objective, fallback_value)


# ----------------------------------------------------------------------------
# The occupancy program
# ----------------------------------------------------------------------------


@PROFILE
@given(draw=instances, sampled=st.sampled_from(["model", "homogeneous", "per-step"]),
       epsilon=st.sampled_from([0.0, 0.05]), new_signals=st.booleans())
def test_occupancy_program_matches_linprog(backend_name, draw, sampled, epsilon, new_signals):
    """Random episodic CMDPs, the model's kernels or a sampled kernel (one for every step, or per step), optionally
    new signals: the optimum and variant equal the LP written here, the rows hold, and the policy's exact values
    (the model's forward recursion) are λ and ζ."""
    model, data = random_instance(draw["seed"], draw["S"], draw["A"], draw["H"], d=draw["d"],
                                  per_step=draw["per_step"])
    S, A, H = draw["S"], draw["A"], draw["H"]
    rng = np.random.default_rng(draw["seed"] + 1)
    kernels, arg = data["kernels"], None
    if sampled == "homogeneous":
        kernel = random_kernels(rng, S, A, 1)[0]
        kernels, arg = [kernel] * (H - 1), kernel
    elif sampled == "per-step":
        kernels = random_kernels(rng, S, A, H - 1)
        arg = kernels
    rewards = costs = None
    if new_signals:
        rewards = rng.uniform(-0.5, 1.0, size=(H, 1, S, A))
        costs = rng.uniform(-0.2, 1.0, size=(draw["d"], S, A))
    program = EpisodicOccupancyProgram(model, kernels=arg, epsilon=epsilon, rewards=rewards, costs=costs)
    compiled = backend_or_skip(backend_name, program)
    full_costs = None if costs is None else np.broadcast_to(costs, (H, *costs.shape))
    feasible, value, slack = occupancy_reference(kernels, data, H, S, A, epsilon, rewards, full_costs)
    assume(slack is None or abs(slack) > MARGIN)
    fallback = None if feasible else occupancy_reference(kernels, data, H, S, A, epsilon, rewards, full_costs,
                                                         with_constraints=False)[1]
    result = compiled.solve()
    assert_matches(result, feasible, value, fallback)
    assert_rows_hold(result, program, kernels, data["mu"], feasible)
    if sampled == "model" and not new_signals:
        lam, zeta = episode_values(model, result.policy)
        assert np.allclose(lam, result.rewards, atol=1e-7) and np.allclose(zeta, result.costs, atol=1e-7)


@FEWER
@given(draw=instances)
def test_update_equals_reference_on_new_data(backend_name, draw):
    """Compile once, solve, then change the kernels, the signals and ε with ``update``: each re-solve equals the
    LP written here on the new data (the signals reach the backend as parameters, without recompiling)."""
    S, A, H = draw["S"], draw["A"], draw["H"]
    model, data = random_instance(draw["seed"], S, A, H, d=draw["d"], per_step=draw["per_step"])
    program = EpisodicOccupancyProgram(model)
    compiled = backend_or_skip(backend_name, program)
    compiled.solve()
    rng = np.random.default_rng(draw["seed"] + 7)
    for _ in range(2):
        kernels = random_kernels(rng, S, A, H - 1)
        rewards = rng.uniform(-1.0, 1.0, size=(H, 1, S, A))
        costs = rng.uniform(0.0, 1.0, size=(H, draw["d"], S, A))
        epsilon = float(rng.uniform(0.0, 0.1))
        program.update(kernels=kernels, rewards=rewards, costs=costs, epsilon=epsilon)
        feasible, value, slack = occupancy_reference(kernels, data, H, S, A, epsilon, rewards, costs)
        assume(slack is None or abs(slack) > MARGIN)
        fallback = None if feasible else occupancy_reference(kernels, data, H, S, A, epsilon, rewards, costs,
                                                             with_constraints=False)[1]
        result = compiled.solve()
        assert_matches(result, feasible, value, fallback)
        assert_rows_hold(result, program, kernels, data["mu"], feasible)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_unconstrained_optimum_equals_backward_induction(backend_name, seed):
    """The optimal linear unconstrained episodic value is the backward-induction value (per-step kernels and
    rewards), and the program's policy attains it (exact forward recursion of the model)."""
    rng = np.random.default_rng(seed)
    S, A, H = 5, 3, 6
    kernels = random_kernels(rng, S, A, H - 1)
    rewards = rng.uniform(-1.0, 1.0, size=(H, 1, S, A))
    mu = rng.dirichlet(np.ones(S))
    model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernels, initial=mu, horizon=H)
    compiled = backend_or_skip(backend_name, EpisodicOccupancyProgram(model))
    result = compiled.solve()
    expected = backward_induction(kernels, rewards[:, 0], mu)
    assert result.status is Status.OPTIMAL
    assert close(result.objective, expected), (result.objective, expected)
    assert close(float(episode_values(model, result.policy)[0][0]), expected)


@pytest.mark.parametrize("objective", ["max-min", "log"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_concave_objective_matches_independent_reference(backend_name, objective, seed):
    """A max-min objective (epigraph LP written here) and a sum of logs (a CVXPY problem written here, Clarabel),
    with a budget, on every backend that takes them."""
    S, A, H, K = 4, 2, 3, 2
    model, data = random_instance(seed, S, A, H, K=K, d=1, per_step=True, objective=objective, budget=(0.45, 0.6))
    program = EpisodicOccupancyProgram(model)
    compiled = backend_or_skip(backend_name, program)
    if objective == "max-min":
        feasible, value, slack = occupancy_reference(data["kernels"], data, H, S, A, 0.0, objective="max-min")
        rel = REL
    else:
        cp = pytest.importorskip("cvxpy")
        A_eq, b_eq = occupancy_rows(data["kernels"], data["mu"], H, S, A)
        n = H * S * A
        R, C = signal_map(data["rewards"], n), signal_map(data["costs"], n)
        q = cp.Variable(n, nonneg=True)
        rows = [A_eq @ q == b_eq] + [w @ C @ q <= b for w, b in data["constraints"]]
        problem = cp.Problem(cp.Maximize(data["weights"] @ cp.log(R @ q + 0.1)), rows)
        problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        feasible, value = problem.status == "optimal", problem.value
        rel = 1e-6   # two interior-point solutions of a nonlinear program: agreement to their own accuracy
    assert feasible, "the instances' budgets leave room"
    result = compiled.solve()
    assert result.status.has_solution and result.program is ProgramVariant.TIGHT, result.message
    assert close(result.objective, value, rel), (result.objective, value)
    assert_rows_hold(result, program, data["kernels"], data["mu"], True)


def test_sparse_kernels_stay_sparse():
    """A model storing its per-step kernels sparse gives a program with one flow entry per stored kernel entry
    (not S² per action), the same optimum as the dense program, and kernels kept as CSR matrices."""
    rng = np.random.default_rng(5)
    S, A, H, successors = 60, 3, 5, 3
    kernels = []
    for _ in range(H - 1):
        cols = np.array([rng.choice(S, successors, replace=False) for _ in range(S * A)])
        values = rng.dirichlet(np.ones(successors), size=S * A)
        kernels.append(sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), successors), cols.ravel())),
                                    shape=(S * A, S)))
    rewards = rng.uniform(size=(1, S, A))
    costs = rng.uniform(size=(1, S, A))
    constraint = [LinearBound([1.0], 0.4 * H)]
    sparse_model = EpisodicCMDP(rewards, costs, Linear([1.0]), constraint, kernel=kernels, horizon=H)
    program = EpisodicOccupancyProgram(sparse_model)
    assert not program.support.is_dense
    union = sum(k.astype(bool).astype(int) for k in kernels).nnz
    assert program.linear.param_groups["flow"].stop - program.linear.param_groups["flow"].start == (H - 1) * union
    assert all(sp.issparse(k) for k in program.kernels)
    dense_model = EpisodicCMDP(rewards, costs, Linear([1.0]), constraint,
                               kernel=np.stack([k.toarray().reshape(S, A, S) for k in kernels]), horizon=H)
    sparse_result = get_backend("highs").solve(program)
    dense_result = get_backend("highs").solve(EpisodicOccupancyProgram(dense_model))
    assert sparse_result.status is Status.OPTIMAL
    assert close(sparse_result.objective, dense_result.objective)
    dense = [k.toarray().reshape(S, A, S) for k in kernels]
    assert_rows_hold(sparse_result, program, dense, sparse_model.initial, True)


# ----------------------------------------------------------------------------
# The extended program
# ----------------------------------------------------------------------------


def estimate_and_radius(rng, S, A, H, confidence, per_step, unvisited):
    """``(P^ per transition, β per transition, the arguments)``: estimates with possibly a pair never visited (a
    zero row, given a radius wide enough that its set holds a distribution)."""
    T = max(H - 1, 1)
    p_hat = random_kernels(rng, S, A, T if per_step else 1) * (1 if per_step else T)
    if confidence == "entry":
        beta = [rng.uniform(0.0, 0.3, size=(S, A, S)) for _ in range(T if per_step else 1)] * (1 if per_step else T)
    else:
        beta = [rng.uniform(0.0, 0.8, size=(S, A)) for _ in range(T if per_step else 1)] * (1 if per_step else T)
    if unvisited:
        p_hat = [p.copy() for p in p_hat]
        beta = [b.copy() for b in beta]
        for p, b in zip(p_hat, beta, strict=True):
            p[0, 0] = 0.0
            b[0, 0] = 1.0 if confidence == "entry" else 2.0
    kernel_arg = p_hat[: H - 1] if per_step else p_hat[0]
    radius_arg = beta[: H - 1] if per_step else beta[0]
    return p_hat, beta, kernel_arg, radius_arg


@PROFILE
@given(draw=instances, confidence=st.sampled_from(["entry", "l1"]), unvisited=st.booleans(),
       epsilon=st.sampled_from([0.0, 0.05]), bonus=st.booleans())
def test_extended_program_matches_linprog(backend_name, draw, confidence, unvisited, epsilon, bonus):
    """Random estimates and radii (per entry or L1, one for every step or per step, a pair never visited),
    optionally optimistic/pessimistic signals: the optimum and variant equal the written extended LP (built here
    with a joint at every step), the rows hold, and the joint lies in its confidence set."""
    S, A, H = draw["S"], draw["A"], draw["H"]
    model, data = random_instance(draw["seed"], S, A, H, d=draw["d"], per_step=draw["per_step"])
    rng = np.random.default_rng(draw["seed"] + 3)
    p_hat, beta, kernel_arg, radius_arg = estimate_and_radius(rng, S, A, H, confidence, draw["per_step"], unvisited)
    rewards = costs = None
    if bonus:  # r^ + b_r and c^ − b_c (possibly negative)
        rewards = data["rewards"] + rng.uniform(0.0, 0.5, size=data["rewards"].shape)
        costs = data["costs"] - rng.uniform(0.0, 0.5, size=data["costs"].shape)
    program = EpisodicExtendedProgram(model, kernel=kernel_arg, radius=radius_arg, confidence=confidence,
                                      rewards=rewards, costs=costs, epsilon=epsilon)
    compiled = backend_or_skip(backend_name, program)
    feasible, value, slack = extended_reference(p_hat, beta, confidence, data, H, S, A, epsilon, rewards, costs)
    assume(slack is None or abs(slack) > MARGIN)
    fallback = None if feasible else extended_reference(p_hat, beta, confidence, data, H, S, A, epsilon, rewards,
                                                        costs, with_constraints=False)[1]
    result = compiled.solve()
    assert_matches(result, feasible, value, fallback)
    residuals = program.residuals(result.x, include_constraints=feasible)
    assert max(residuals.values()) <= FEASIBILITY, residuals
    q, z = np.asarray(result.occupancy), np.asarray(result.joint)
    assert z.shape == (H - 1, S, A, S)
    assert np.abs(q[0].sum(axis=1) - data["mu"]).max() <= FEASIBILITY
    for h in range(H - 1):
        assert np.abs(z[h].sum(axis=2) - q[h]).max() <= FEASIBILITY
        assert np.abs(q[h + 1].sum(axis=1) - z[h].sum(axis=(0, 1))).max() <= FEASIBILITY
        gap = np.abs(z[h] - p_hat[h] * q[h][:, :, None])
        if confidence == "entry":
            assert (gap - beta[h] * q[h][:, :, None]).max() <= FEASIBILITY
        else:
            assert (gap.sum(axis=2) - beta[h] * q[h]).max() <= FEASIBILITY


@FEWER
@given(draw=instances, confidence=st.sampled_from(["entry", "l1"]))
def test_extended_update_equals_reference(backend_name, draw, confidence):
    """Compile once; new P^, β, signals and ε by ``update``: each re-solve equals the written LP on the new data."""
    S, A, H = draw["S"], draw["A"], draw["H"]
    model, data = random_instance(draw["seed"], S, A, H, d=draw["d"], per_step=draw["per_step"])
    program = EpisodicExtendedProgram(model, confidence=confidence)
    compiled = backend_or_skip(backend_name, program)
    compiled.solve()
    rng = np.random.default_rng(draw["seed"] + 11)
    for step in range(2):
        p_hat, beta, kernel_arg, radius_arg = estimate_and_radius(rng, S, A, H, confidence, True, step == 1)
        rewards = rng.uniform(0.0, 1.5, size=(H, 1, S, A))
        epsilon = float(rng.uniform(0.0, 0.1))
        program.update(kernel=kernel_arg, radius=radius_arg, rewards=rewards, epsilon=epsilon)
        feasible, value, slack = extended_reference(p_hat, beta, confidence, data, H, S, A, epsilon, rewards)
        assume(slack is None or abs(slack) > MARGIN)
        fallback = None if feasible else extended_reference(p_hat, beta, confidence, data, H, S, A, epsilon,
                                                            rewards, with_constraints=False)[1]
        assert_matches(compiled.solve(), feasible, value, fallback)


@pytest.mark.parametrize("confidence", ["entry", "l1"])
def test_extended_program_with_zero_radius_is_the_occupancy_program(confidence):
    """β = 0 around the true kernels leaves one kernel: the extended optimum is the occupancy program's (the
    backward-induction value, unconstrained)."""
    rng = np.random.default_rng(9)
    S, A, H = 4, 3, 5
    kernels = random_kernels(rng, S, A, H - 1)
    rewards = rng.uniform(size=(H, 1, S, A))
    model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernels, horizon=H)
    result = get_backend("highs").solve(EpisodicExtendedProgram(model, confidence=confidence))
    assert close(result.objective, backward_induction(kernels, rewards[:, 0], model.initial))


def test_extended_sparse_support():
    """On a sparse support the joint has one variable per support entry and step, and the optimum equals the
    dense program's whose estimate has the same zeros and whose radius is 0 off the support."""
    rng = np.random.default_rng(4)
    S, A, H, successors = 12, 2, 4, 3
    cols = np.array([rng.choice(S, successors, replace=False) for _ in range(S * A)])
    values = rng.dirichlet(np.ones(successors), size=S * A)
    kernel = sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), successors), cols.ravel())), shape=(S * A, S))
    rewards = rng.uniform(size=(1, S, A))
    sparse_model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernel, horizon=H)
    beta = sp.csr_array((rng.uniform(0, 0.3, size=kernel.nnz), kernel.indices, kernel.indptr), shape=kernel.shape)
    program = EpisodicExtendedProgram(sparse_model, radius=beta)
    assert program.blocks["joint"].shape == (H - 1, kernel.nnz)
    dense_model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernel.toarray().reshape(S, A, S), horizon=H)
    dense = EpisodicExtendedProgram(dense_model, radius=beta.toarray().reshape(S, A, S))
    a, b = get_backend("highs").solve(program), get_backend("highs").solve(dense)
    assert a.status is Status.OPTIMAL and close(a.objective, b.objective)


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------


def small_model(H=3, bound=1.0):
    rng = np.random.default_rng(0)
    kernel = random_kernels(rng, 3, 2, 1)[0]
    return EpisodicCMDP(rng.uniform(size=(1, 3, 2)), rng.uniform(size=(1, 3, 2)), Linear([1.0]),
                        [LinearBound([1.0], bound)], kernel=kernel, horizon=H)


@pytest.mark.parametrize("kernels, message", [
    ([np.full((3, 2, 3), 1 / 3)] * 3, "H − 1 = 2 items"),
    (np.full((4, 3, 2, 3), 1 / 3), "H − 1 = 2 items"),
    (np.full((3, 2, 4), 0.25), "shape"),
    (np.full((3, 2, 3), 0.5), "does not sum to 1"),
    ([np.full((3, 2, 3), 1 / 3), np.full((3, 2, 3), 0.5)], "step 1"),
    (sp.csr_array(np.ones((5, 3)) / 3), "shape"),
])
def test_bad_kernels_are_refused(kernels, message):
    with pytest.raises(ProgramError, match=message):
        EpisodicOccupancyProgram(small_model(), kernels=kernels)
    with pytest.raises(ProgramError, match=message if "sum" not in message else "sum"):
        EpisodicExtendedProgram(small_model(), kernel=kernels)


@pytest.mark.parametrize("build", [
    lambda m: EpisodicOccupancyProgram(m, rewards=np.ones((2, 3, 2))),
    lambda m: EpisodicOccupancyProgram(m, costs=np.full((1, 3, 2), np.nan)),
    lambda m: EpisodicExtendedProgram(m, radius=-1.0),
    lambda m: EpisodicExtendedProgram(m, radius=np.ones((3, 2, 3)), confidence="l1"),
    lambda m: EpisodicExtendedProgram(m, confidence="box"),
    lambda m: EpisodicExtendedProgram(m, kernel=np.full((3, 2, 3), 0.5)),
])
def test_bad_signals_radii_and_sets_are_refused(build):
    with pytest.raises(ProgramError):
        build(small_model())


def test_a_model_without_a_horizon_is_refused():
    model = CMDP(np.ones((1, 2, 2)), objective=Linear([1.0]), kernel=np.full((2, 2, 2), 0.5))
    with pytest.raises(ProgramError, match="EpisodicCMDP"):
        EpisodicOccupancyProgram(model)


@pytest.mark.parametrize("program", ["occupancy", "entry", "l1"])
def test_infeasible_budget_falls_back_labelled(backend_name, program):
    """A budget below the least achievable cost: the result says the ε-tight program is infeasible and the
    fallback (no constraint rows) is labelled, with the optimum of the program without them (backward induction
    for the occupancy program, the LP written here for the extended one)."""
    model = small_model(H=3, bound=-1.0)   # costs are >= 0: no policy has a total below 0
    kernels = [model.step_kernel(h) for h in range(2)]
    if program == "occupancy":
        built = EpisodicOccupancyProgram(model)
        expected = backward_induction(kernels, model.step_rewards[:, 0], model.initial)
    else:
        # a radius with room (a zero radius makes each set one point, with no interior for Ipopt)
        beta = np.full((3, 2, 3), 0.1) if program == "entry" else np.full((3, 2), 0.2)
        built = EpisodicExtendedProgram(model, radius=beta, confidence=program)
        data = {"mu": model.initial, "weights": np.array([1.0]), "rewards": np.array(model.step_rewards),
                "costs": np.array(model.step_costs), "constraints": [(np.array([1.0]), -1.0)]}
        expected = extended_reference(kernels, [beta] * 2, program, data, 3, 3, 2, 0.0, with_constraints=False)[1]
    compiled = backend_or_skip(backend_name, built)
    result = compiled.solve()
    assert result.tight_status is Status.INFEASIBLE
    assert result.program is ProgramVariant.FALLBACK and result.fell_back
    assert "infeasible" in result.message
    assert close(result.objective, expected), (result.objective, expected)
    assert compiled.solve(fallback=False).status is Status.INFEASIBLE


def test_horizon_one_needs_no_kernel_rows():
    """H = 1: the program is one step from μ (the best action in each state), whatever kernel is given."""
    rng = np.random.default_rng(2)
    rewards = rng.uniform(size=(1, 3, 2))
    model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=np.full((3, 2, 3), 1 / 3), horizon=1)
    program = EpisodicOccupancyProgram(model)
    assert program.linear.groups["flow"].stop == program.linear.groups["flow"].start
    result = get_backend("highs").solve(program)
    assert close(result.objective, float(model.initial @ rewards[0].max(axis=1)))


def test_backends_are_listed():
    """The parametrisation is not empty (a test over no backend would pass vacuously)."""
    assert "highs" in installed_backend_names()


@pytest.mark.parametrize("confidence, radius", [("entry", 0.15), ("l1", 0.4)])
def test_implied_kernels_give_the_optimistic_value(confidence, radius):
    """The kernels z/q that the extended program's solution implies are transition kernels within the radius of
    P^, and the program's policy played on them (the model's exact forward recursion) earns the program's value."""
    rng = np.random.default_rng(6)
    S, A, H = 4, 2, 4
    p_hat = rng.dirichlet(np.ones(S), size=(S, A))
    rewards = rng.uniform(size=(1, S, A))
    model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=p_hat, horizon=H)
    program = EpisodicExtendedProgram(model, radius=radius, confidence=confidence)
    result = get_backend("highs").solve(program)
    kernels = program.implied_kernels(result.x)
    assert len(kernels) == H - 1
    for kernel in kernels:
        assert np.abs(kernel.sum(axis=2) - 1.0).max() <= 1e-9 and kernel.min() >= 0
        gap = np.abs(kernel - p_hat)
        assert (gap.max() if confidence == "entry" else gap.sum(axis=2).max()) <= radius + 1e-7
    optimistic = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernels, horizon=H)
    assert close(float(episode_values(optimistic, result.policy)[0][0]), result.objective)
    assert result.objective >= backward_induction([p_hat] * (H - 1), np.broadcast_to(rewards[0], (H, S, A)),
                                                  model.initial) - 1e-9


@pytest.mark.parametrize("kind", ["occupancy", "entry"])
def test_a_refused_update_changes_nothing(kind):
    """Data refused by ``update`` (a bad kernel after good signals, or bad signals after a good kernel) leaves every
    parameter, ε and the version as they were."""
    model = small_model()
    program = EpisodicOccupancyProgram(model) if kind == "occupancy" else EpisodicExtendedProgram(model, radius=0.1)
    key = "kernels" if kind == "occupancy" else "kernel"
    before, version = program.linear.param_values.copy(), program.version
    good_kernel = np.full((3, 2, 3), 1 / 3)
    for data in ({key: np.full((3, 2, 3), 0.5), "rewards": np.zeros((1, 3, 2)), "epsilon": 0.1},
                 {key: good_kernel, "rewards": np.full((1, 3, 2), np.nan)},
                 {key: good_kernel, "epsilon": -1.0}):
        with pytest.raises(ProgramError):
            program.update(**data)
        assert np.array_equal(program.linear.param_values, before) and program.version == version
        assert program.epsilon == 0.0

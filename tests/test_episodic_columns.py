"""The episodic occupancy program on ``mdp-columns``: column generation over deterministic Markov policies, priced by
backward induction.

Reference values come from programs written here from the formulas, sharing no code with curlopt's programs: the
episodic occupancy LP over q_h(s,a) for ``scipy.optimize.linprog`` (a piecewise-linear objective and constraints by
their epigraphs), and a sum-of-logs program in CVXPY.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from curlopt import Linear, LinearBound, SumOfLogs
from curlopt.backends.mdp.backend import CompiledEpisodicColumns, MdpColumnsBackend
from curlopt.backends.registry import get_backend
from curlopt.backends.results import ProgramVariant, Status
from curlopt.models.episodic import EpisodicCMDP
from curlopt.programs import EpisodicOccupancyProgram
from curlopt.testing import Tolerances, run_conformance
from curlopt.testing.conformance import CHECK_NAMES
from curlopt.utilities.library import MaxOfLinear, MinOfLinear

# -- the reference LP, from the formulas ----------------------------------------------------------------------------


def episodic_rows(kernels: list[np.ndarray], mu: np.ndarray, H: int, S: int, A: int):
    """``Σ_a q_0(s,a) = μ(s)`` and ``Σ_a q_{h+1}(s',a) = Σ_{s,a} P_h(s'|s,a) q_h(s,a)``, over q flattened (h, s, a);
    ``kernels[h]`` is dense (S, A, S)."""
    n = H * S * A
    rows, rhs = [], []
    for s in range(S):
        row = np.zeros(n)
        row[s * A:(s + 1) * A] = 1.0
        rows.append(row)
        rhs.append(mu[s])
    for h in range(H - 1):
        for t in range(S):
            row = np.zeros(n)
            row[(h + 1) * S * A + t * A:(h + 1) * S * A + (t + 1) * A] = 1.0
            row[h * S * A:(h + 1) * S * A] -= kernels[h][:, :, t].ravel()
            rows.append(row)
            rhs.append(0.0)
    return np.array(rows), np.array(rhs)


def reference_optimum(kernels, mu, rewards, costs, objective, constraints, epsilon=0.0):
    """The optimum of the episodic program by linprog, or None when infeasible.

    ``rewards`` (H, K, S, A), ``costs`` (H, d, S, A); ``objective`` = (W (J, K), c (J)): f = min_j (W_j λ + c_j);
    ``constraints``: a list of (W_m (J_m, d), c_m (J_m)), each g_m = max_j (W_mj ζ + c_mj) <= −ε."""
    H, K, S, A = rewards.shape
    n = H * S * A
    reward_maps = rewards.transpose(1, 0, 2, 3).reshape(K, n)
    cost_maps = costs.transpose(1, 0, 2, 3).reshape(costs.shape[1], n)
    a_eq, b_eq = episodic_rows(kernels, mu, H, S, A)
    a_eq = np.hstack([a_eq, np.zeros((a_eq.shape[0], 1))])          # the last variable is the epigraph's t
    W, c = objective
    upper = [np.hstack([-(W @ reward_maps), np.ones((W.shape[0], 1))])]   # t − W_j λ <= c_j
    bounds = [c]
    for Wm, cm in constraints:
        upper.append(np.hstack([Wm @ cost_maps, np.zeros((Wm.shape[0], 1))]))
        bounds.append(-cm - epsilon)
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=np.vstack(upper), b_ub=np.concatenate(bounds), A_eq=a_eq, b_eq=b_eq,
                  bounds=[(0, None)] * n + [(None, None)], method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status == 2:
        return None
    assert res.status == 0, res.message
    return float(-res.fun)


def random_instance(seed: int, per_step: bool, piecewise: bool, constrained: bool, share: float = 0.5):
    """A random episodic model (dense kernels, per-step signals) whose constraint binds: each cost's budget lies
    ``share`` of the way from its least total to its total at the unconstrained optimum (both by linprog)."""
    rng = np.random.default_rng(seed)
    S, A, H = int(rng.integers(2, 7)), int(rng.integers(2, 4)), int(rng.integers(1, 7))
    K = 2 if piecewise else 1
    kernels = [rng.dirichlet(np.full(S, 0.5), size=(S, A)) for _ in range(max(H - 1, 1) if per_step else 1)]
    steps = kernels[:H - 1] if per_step else kernels * (H - 1)
    mu = rng.dirichlet(np.ones(S))
    rewards = rng.uniform(0.0, 1.0, size=(H, K, S, A))
    costs = rng.uniform(0.0, 1.0, size=(H, 1, S, A))
    objective = ((np.eye(2) * rng.uniform(0.5, 1.5, size=2), rng.uniform(-0.2, 0.2, size=2)) if piecewise
                 else (rng.uniform(0.5, 1.5, size=(1, 1)), np.zeros(1)))
    constraints = []
    if constrained:
        least = -reference_optimum(steps, mu, -costs, costs, (np.ones((1, 1)), np.zeros(1)), [])
        W, c = objective
        free = reference_optimum(steps, mu, rewards, costs, objective, [])
        # the cost total at the unconstrained optimum: minimise it among the optima (a second LP on the same rows)
        n = H * S * A
        a_eq, b_eq = episodic_rows(steps, mu, H, S, A)
        reward_maps = rewards.transpose(1, 0, 2, 3).reshape(K, n)
        cost_map = costs[:, 0].reshape(n)
        res = linprog(-cost_map, A_ub=-(W @ reward_maps), b_ub=c - free + 1e-9, A_eq=a_eq, b_eq=b_eq,
                      bounds=(0, None), method="highs")
        spent = float(cost_map @ res.x)
        budget = least + share * (spent - least)
        constraints = ([(np.array([[1.0], [0.5]]), np.array([-budget, -0.5 * budget - 0.05]))] if piecewise
                       else [(np.ones((1, 1)), np.array([-budget]))])
    f = Linear(objective[0][0], offset=float(objective[1][0])) if not piecewise else MinOfLinear(*objective)
    g = [LinearBound(Wm[0], -cm[0]) if Wm.shape[0] == 1 else MaxOfLinear(Wm, -cm) for Wm, cm in constraints]
    kernel = kernels if per_step and H > 1 else kernels[0]
    model = EpisodicCMDP(rewards, costs, f, g, kernel=kernel, initial=mu, horizon=H)
    return model, steps, mu, rewards, costs, objective, constraints


def assert_flows(result, kernels, mu, tol=1e-9):
    """The result's occupancy satisfies the initial and every flow row (numpy, from the formulas)."""
    q = result.occupancy
    assert q.min() >= 0
    np.testing.assert_allclose(q[0].sum(axis=1), mu, rtol=0, atol=tol)
    for h in range(q.shape[0] - 1):
        np.testing.assert_allclose(q[h + 1].sum(axis=1), np.einsum("sat,sa->t", kernels[h], q[h]), rtol=0, atol=tol)


# -- the optimum against the references -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("per_step", [False, True])
@pytest.mark.parametrize("piecewise", [False, True])
@pytest.mark.parametrize("constrained", [False, True])
def test_the_optimum_matches_linprog(seed, per_step, piecewise, constrained):
    model, steps, mu, rewards, costs, objective, constraints = random_instance(seed, per_step, piecewise, constrained)
    expected = reference_optimum(steps, mu, rewards, costs, objective, constraints)
    result = get_backend("mdp-columns").solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.OPTIMAL and result.program is ProgramVariant.TIGHT, result.message
    assert "backward induction" in result.solver
    assert result.objective == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert_flows(result, steps, mu)
    for Wm, cm in constraints:
        assert float(np.max(Wm @ result.costs + cm)) <= 1e-8


def test_a_sum_of_logs_matches_a_conic_program_written_from_scratch():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(4)
    S, A, H = 5, 3, 6
    kernels = [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(H - 1)]
    mu = rng.dirichlet(np.ones(S))
    rewards = rng.uniform(0.0, 1.0, size=(H, 2, S, A))
    costs = rng.uniform(0.0, 1.0, size=(H, 1, S, A))
    budget = 0.4 * H
    q = [cp.Variable((S, A), nonneg=True) for _ in range(H)]
    lam = [sum(cp.sum(cp.multiply(rewards[h, k], q[h])) for h in range(H)) for k in range(2)]
    rows = [cp.sum(q[0], axis=1) == mu,
            sum(cp.sum(cp.multiply(costs[h, 0], q[h])) for h in range(H)) <= budget]
    rows += [cp.sum(q[h + 1], axis=1) == cp.hstack([cp.sum(cp.multiply(kernels[h][:, :, t], q[h])) for t in range(S)])
             for h in range(H - 1)]
    problem = cp.Problem(cp.Maximize(cp.log(lam[0]) + cp.log(lam[1])), rows)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    model = EpisodicCMDP(rewards, costs, SumOfLogs(dim=2), [LinearBound([1.0], budget)], kernel=kernels, initial=mu,
                         horizon=H)
    result = get_backend("mdp-columns").solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(problem.value, rel=1e-7)
    assert_flows(result, kernels, mu)


def test_a_sparse_kernel_gives_the_dense_answer():
    rng = np.random.default_rng(8)
    S, A, H, successors = 30, 3, 8, 4
    cols = np.argsort(rng.uniform(size=(S * A, S)), axis=1)[:, :successors]
    values = rng.dirichlet(np.ones(successors), size=S * A)
    sparse = sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), successors), cols.ravel())), shape=(S * A, S))
    dense = sparse.toarray().reshape(S, A, S)
    rewards, costs = rng.uniform(size=(1, S, A)), rng.uniform(size=(1, S, A))
    mu = np.full(S, 1.0 / S)
    budget = 0.4 * H
    expected = reference_optimum([dense] * (H - 1), mu, np.broadcast_to(rewards, (H, 1, S, A)),
                                 np.broadcast_to(costs, (H, 1, S, A)), (np.ones((1, 1)), np.zeros(1)),
                                 [(np.ones((1, 1)), np.array([-budget]))])
    model = EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], budget)], kernel=sparse, horizon=H,
                         storage="sparse")
    assert model.sparse
    program = EpisodicOccupancyProgram(model)
    compiled = get_backend("mdp-columns").compile(program)
    result = compiled.solve()
    assert result.status is Status.OPTIMAL, result.message
    assert compiled.kernels.steps[0].sparse and len({id(k) for k in compiled.kernels.steps}) == 1
    assert result.objective == pytest.approx(expected, rel=1e-7)
    assert_flows(result, [dense] * (H - 1), mu)


def test_one_step_episodes():
    rng = np.random.default_rng(2)
    rewards, costs = rng.uniform(size=(1, 4, 3)), rng.uniform(size=(1, 4, 3))
    mu = rng.dirichlet(np.ones(4))
    budget = float(mu @ costs[0].min(axis=1)) + 0.05   # just above the least cost: binding
    model = EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], budget)],
                         kernel=np.full((4, 3, 4), 0.25), initial=mu, horizon=1)
    expected = reference_optimum([], mu, rewards[None], costs[None], (np.ones((1, 1)), np.zeros(1)),
                                 [(np.ones((1, 1)), np.array([-budget]))])
    assert expected is not None and expected < float(mu @ rewards[0].max(axis=1)) - 1e-6
    result = get_backend("mdp-columns").solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.OPTIMAL and result.program is ProgramVariant.TIGHT, result.message
    assert result.objective == pytest.approx(expected, rel=1e-7)


# -- statuses: infeasible budgets, limits ----------------------------------------------------------------------------


def test_an_infeasible_budget_falls_back_and_says_so():
    model, steps, mu, rewards, costs, objective, _ = random_instance(3, True, False, False)
    least = -reference_optimum(steps, mu, -costs, costs, (np.ones((1, 1)), np.zeros(1)), [])
    infeasible = EpisodicCMDP(rewards, costs, model.objective, [LinearBound([1.0], 0.9 * least)],
                              kernel=steps if model.horizon > 1 else np.full((len(mu), rewards.shape[3], len(mu)), 1 / len(mu)),
                              initial=mu, horizon=model.horizon)
    assert reference_optimum(steps, mu, rewards, costs, objective, [(np.ones((1, 1)), np.array([-0.9 * least]))]) is None
    result = get_backend("mdp-columns").solve(EpisodicOccupancyProgram(infeasible))
    assert result.tight_status is Status.INFEASIBLE and result.program is ProgramVariant.FALLBACK and result.fell_back
    assert "infeasible" in result.message and "no occupancy satisfies the rows" in result.message
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(reference_optimum(steps, mu, rewards, costs, objective, []), rel=1e-7)


def test_a_time_limit_gives_time_limit_and_a_round_limit_iteration_limit():
    model = random_instance(1, False, False, True)[0]
    result = get_backend("mdp-columns", time_limit=1e-9).solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.TIME_LIMIT and result.occupancy is None
    assert "time limit" in result.message
    result = get_backend("mdp-columns", max_rounds=1).solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.ITERATION_LIMIT and result.occupancy is None
    assert "max_rounds" in result.message


# -- re-solves and conformance ---------------------------------------------------------------------------------------


def test_updates_re_solve_with_the_kept_policies():
    model, steps, mu, rewards, costs, objective, constraints = random_instance(5, True, False, True)
    program = EpisodicOccupancyProgram(model)
    compiled = get_backend("mdp-columns").compile(program)
    assert isinstance(compiled, CompiledEpisodicColumns)
    compiled.solve()
    rng = np.random.default_rng(0)
    H, _, S, A = rewards.shape
    for epsilon in (0.0, 0.05):
        new = [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(H - 1)]
        new_rewards = rng.uniform(size=rewards.shape)
        program.update(kernels=new if H > 1 else None, rewards=new_rewards, epsilon=epsilon)
        kept = len(compiled.pool)
        result = compiled.solve()
        expected = reference_optimum(new if H > 1 else steps, mu, new_rewards, costs, objective, constraints, epsilon)
        if expected is None:
            assert result.fell_back
            continue
        assert kept > 0 and result.status is Status.OPTIMAL, result.message
        assert result.objective == pytest.approx(expected, rel=1e-7, abs=1e-9)


def test_the_episodic_conformance_checks_with_the_declared_accuracy():
    names = [n for n in CHECK_NAMES if n.split("/")[1:2] == ["episodic-occupancy"]]
    assert len(names) == 6
    report = run_conformance(MdpColumnsBackend(), checks=names, tolerances=Tolerances(**MdpColumnsBackend.ACCURACY),
                             raise_on_failure=False)
    assert report.ok, str(report)
    assert {r.name for r in report.passed} >= set(names)


def test_the_extended_program_is_still_delegated():
    from curlopt.programs import EpisodicExtendedProgram

    model = random_instance(0, False, False, True)[0]
    result = get_backend("mdp-columns").solve(EpisodicExtendedProgram(model, radius=0.1))
    assert "delegated to the highs backend" in result.solver


# -- the auto rule -----------------------------------------------------------------------------------------------------


def _dense_episodic(S: int, A: int, H: int, objective=None, per_step: bool = False) -> EpisodicCMDP:
    rng = np.random.default_rng(0)
    kernels = [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(H - 1 if per_step else 1)]
    rewards = rng.uniform(size=(1 if objective is None else 2, S, A))
    return EpisodicCMDP(rewards, rng.uniform(size=(1, S, A)), objective or Linear([1.0]),
                        [LinearBound([1.0], 0.45 * H)], kernel=kernels if per_step else kernels[0], horizon=H)


def test_auto_takes_mdp_columns_for_the_episodic_optimum_from_its_threshold():
    from curlopt.backends.registry import (
        EPISODIC_COLUMNS_FROM_ENTRIES,
        EPISODIC_CONIC_COLUMNS_FROM_ENTRIES,
        choose_backend,
        episode_entries,
    )
    from curlopt.programs import EpisodicExtendedProgram

    def auto(model, program=EpisodicOccupancyProgram):
        return choose_backend((model.objective, *model.constraints), model, program)

    # 10·10·4·9 = 3,600 entries over the episode's nine transitions, 5·5·3·4 = 300
    large, small = _dense_episodic(10, 4, 10), _dense_episodic(5, 3, 5)
    assert episode_entries(large) == 3600 >= EPISODIC_COLUMNS_FROM_ENTRIES > episode_entries(small) == 300
    assert auto(large) == "mdp-columns" and auto(small) == "highs"
    assert auto(large, EpisodicExtendedProgram) == "highs"       # the extended program stays on its route
    from curlopt.programs import OccupancyProgram

    assert auto(large, OccupancyProgram) == "highs"    # a long-run program on an episodic model: the long-run rules
    per_step = _dense_episodic(10, 4, 10, per_step=True)
    assert episode_entries(per_step) == 3600 and auto(per_step) == "mdp-columns"
    pytest.importorskip("cvxpy")
    logs_small, logs_large = _dense_episodic(10, 4, 10, SumOfLogs(dim=2)), _dense_episodic(20, 4, 10, SumOfLogs(dim=2))
    assert episode_entries(logs_small) < EPISODIC_CONIC_COLUMNS_FROM_ENTRIES <= episode_entries(logs_large)
    assert auto(logs_small) == "cvxpy" and auto(logs_large) == "mdp-columns"


def test_auto_on_a_large_episodic_model_with_per_step_sparse_kernels():
    """Per-step kernels have no single kernel to measure a reach depth on: the long-run rules are not asked."""
    from curlopt.backends.registry import choose_backend, episode_entries
    from curlopt.programs import EpisodicExtendedProgram

    rng = np.random.default_rng(1)
    S, A, H = 200, 2, 3
    kernels = []
    for _ in range(H - 1):
        cols = np.argsort(rng.uniform(size=(S * A, S)), axis=1)[:, :3]
        values = rng.dirichlet(np.ones(3), size=S * A)
        kernels.append(sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), 3), cols.ravel())), shape=(S * A, S)))
    model = EpisodicCMDP(rng.uniform(size=(1, S, A)), rng.uniform(size=(1, S, A)), Linear([1.0]),
                         [LinearBound([1.0], 0.45 * H)], kernel=kernels, horizon=H, storage="sparse")
    utilities = (model.objective, *model.constraints)
    assert choose_backend(utilities, model, EpisodicExtendedProgram) == "highs"
    assert episode_entries(model) == 2 * 400 * 3     # the stored nonzeros of each transition's kernel
    assert choose_backend(utilities, model, EpisodicOccupancyProgram) == "mdp-columns"


def test_a_model_without_costs():
    rng = np.random.default_rng(6)
    S, A, H = 4, 3, 5
    kernels = [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(H - 1)]
    mu = rng.dirichlet(np.ones(S))
    rewards = rng.uniform(size=(H, 1, S, A))
    model = EpisodicCMDP(rewards, None, Linear([1.0]), kernel=kernels, initial=mu, horizon=H)
    expected = reference_optimum(kernels, mu, rewards, np.zeros((H, 0, S, A)), (np.ones((1, 1)), np.zeros(1)), [])
    result = get_backend("mdp-columns").solve(EpisodicOccupancyProgram(model))
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(expected, rel=1e-7)

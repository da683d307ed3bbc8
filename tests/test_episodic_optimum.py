"""The known-model optimum of every criterion: episodic and discounted models through curlopt.optimum and the CLI,
against LPs written here with scipy's linprog (not curlopt's programs) and against backward induction."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import invoke as cli
from conftest import installed_backend_names
from scipy.optimize import linprog

from curlopt.models import DiscountedCMDP, EpisodicCMDP, build_model, discounted
from curlopt.models.backward import episode_backward_induction
from curlopt.models.discounted import discounted_values
from curlopt.models.episodic import episode_values
from curlopt.optimum import solve_optimum
from curlopt.utilities.library import Linear, LinearBound

RELATIVE = 1e-7
EXACT = {"highs", "scipy", "highs-columns", "highs-box-columns", "mdp-columns"}


def episodic_lp(model: EpisodicCMDP) -> float:
    """max w·λ over per-step occupancies with the flow rows and the linear budget rows w_m·ζ <= b_m (linprog)."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    n = H * S * A
    equalities, right = [], []
    for s in range(S):
        row = np.zeros(n)
        row[s * A:(s + 1) * A] = 1.0
        equalities.append(row)
        right.append(model.initial[s])
    for h in range(H - 1):
        kernel = model.step_kernel_dense(h)
        for t in range(S):
            row = np.zeros(n)
            row[(h + 1) * S * A + t * A:(h + 1) * S * A + (t + 1) * A] = 1.0
            row[h * S * A:(h + 1) * S * A] -= kernel[:, :, t].ravel()
            equalities.append(row)
            right.append(0.0)
    costs = model.step_costs  # (H, d, S, A)
    upper = [np.einsum("i,hisa->hsa", g.weights, costs).ravel() for g in model.constraints]
    bounds = [g.bound for g in model.constraints]
    objective = np.einsum("k,hksa->hsa", model.objective.weights, model.step_rewards).ravel()
    result = linprog(-objective, A_ub=np.array(upper) if upper else None, b_ub=bounds or None,
                     A_eq=np.array(equalities), b_eq=right, bounds=(0, None), method="highs")
    assert result.status == 0
    return -result.fun


def discounted_lp(model: DiscountedCMDP) -> float:
    S, A, gamma = model.n_states, model.n_actions, model.discount
    kernel = np.asarray(model.kernel)
    equalities = np.zeros((S, S * A))
    for t in range(S):
        equalities[t, t * A:(t + 1) * A] += 1.0
        equalities[t] -= gamma * kernel[:, :, t].ravel()
    upper = [np.einsum("i,isa->sa", g.weights, model.costs).ravel() for g in model.constraints]
    objective = np.einsum("k,ksa->sa", model.objective.weights, model.rewards).ravel()
    result = linprog(-objective, A_ub=np.array(upper), b_ub=[g.bound for g in model.constraints], A_eq=equalities,
                     b_eq=(1 - gamma) * model.initial, bounds=(0, None), method="highs")
    assert result.status == 0
    return -result.fun


def random_constrained(seed: int, per_step: bool) -> EpisodicCMDP:
    rng = np.random.default_rng(seed)
    S, A, H = 5, 3, 6
    kernels = rng.dirichlet(np.full(S, 0.4), size=(H - 1, S, A)) if per_step else rng.dirichlet(np.ones(S), (S, A))
    rewards = rng.random((H, 1, S, A)) if per_step else rng.random((1, S, A))
    costs = rng.random((H, 1, S, A)) if per_step else rng.random((1, S, A))
    # a budget between the cheapest and the unconstrained optimum's cost, so that it binds
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 0.35 * H)], kernels,
                        initial=rng.dirichlet(np.ones(S)), horizon=H)


@pytest.mark.parametrize("backend", installed_backend_names())
@pytest.mark.parametrize("seed", range(3))
def test_the_episodic_optimum_on_every_backend_equals_the_lp(backend, seed):
    model = random_constrained(seed, per_step=seed % 2 == 0)
    result = solve_optimum(model, backend)
    assert result.ok, result.message
    tolerance = RELATIVE if backend in EXACT else 1e-6
    assert result.objective == pytest.approx(episodic_lp(model), rel=tolerance, abs=tolerance)
    # the policy it returns attains the value on the exact forward recursion and keeps the budget
    rewards, costs = episode_values(model, result.policy)
    assert rewards[0] == pytest.approx(result.objective, rel=1e-6, abs=1e-6)
    assert costs[0] <= model.constraints[0].bound + 1e-6


@pytest.mark.parametrize("name", ["gridworld", "marsrover", "factored-cmdp", "media-streaming", "inventory",
                                  "queue", "random"])
def test_the_optimum_of_the_built_in_models_with_a_horizon(name):
    model = build_model(name, horizon=8)
    result = solve_optimum(model)
    assert result.ok
    assert result.objective == pytest.approx(episodic_lp(model), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_without_constraints_the_optimum_is_backward_induction(seed):
    model = random_constrained(seed, per_step=True)
    free = EpisodicCMDP(model.step_rewards, model.step_costs, model.objective, (),
                        [model.step_kernel(h) for h in range(model.horizon - 1)], initial=model.initial,
                        horizon=model.horizon)
    assert solve_optimum(free).objective == pytest.approx(episode_backward_induction(free).value, rel=1e-9)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("name", ["queue", "random", "media-streaming"])
def test_the_discounted_optimum_equals_the_lp(name, gamma):
    model = discounted(build_model(name), gamma)
    result = solve_optimum(model)
    assert result.ok and result.policy.shape == (model.n_states, model.n_actions)
    # both are HiGHS solves at its default tolerances (1e-7): they agree to those
    assert result.objective == pytest.approx(discounted_lp(model), rel=RELATIVE, abs=1e-10)
    # the policy returned has that value, evaluated exactly (a linear solve)
    rewards, costs = discounted_values(model, result.policy)
    assert rewards[0] == pytest.approx(result.objective, rel=RELATIVE, abs=1e-10)
    assert np.all(model.constraint_values(costs) <= 1e-7)


def test_the_factored_model_has_its_hand_computed_optimum():
    # H = 6, budget 3 moves: the best three moves are from states 0, 1, 2 in turn, (1 + 2 + 3) / 3 = 2
    assert solve_optimum(build_model("factored-cmdp", horizon=6)).objective == pytest.approx(2.0, rel=1e-12)


def test_the_cli_solves_every_criterion(capsys):
    model = build_model("gridworld", horizon=10)
    code, out, err = cli(["optimum", "gridworld", "--horizon", "10", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["objective"] == pytest.approx(episodic_lp(model), rel=1e-9)
    assert np.asarray(data["policy"]).shape == (10, 16, 4)
    code, out, err = cli(["optimum", "queue", "--discount", "0.9", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["objective"] == pytest.approx(discounted_lp(discounted(build_model("queue"), 0.9)),
                                                                rel=1e-9)
    code, out, err = cli(["optimum", "factored-cmdp", "--horizon", "6"], capsys)
    assert code == 0 and "per-episode totals over H = 6 steps" in out
    for argv, message in ((["optimum", "queue", "--discount", "1.0"], "strictly between 0 and 1"),
                          (["optimum", "queue", "--horizon", "0"], "horizon must be an integer >= 1"),
                          (["optimum", "queue", "--horizon", "3", "--discount", "0.5"], "not both")):
        code, out, err = cli(argv, capsys)
        assert code != 0 and message in err

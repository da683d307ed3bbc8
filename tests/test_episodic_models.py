"""Episodic and discounted models: the horizon and discount on built-in models, exact evaluation, the literature's grids.

References are computed here from scratch: an LP over q_h(s,a) with scipy's linprog, sums of matrix powers, hand
traces, and the exact optima of the peer models' README (a rational-arithmetic LP outside curlopt).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from curlopt.backends import installed_backends
from curlopt.errors import ModelError
from curlopt.models import (
    DiscountedCMDP,
    EpisodicCMDP,
    budget_constraints,
    build_model,
    discounted,
    episodic,
)
from curlopt.models.backward import episode_backward_induction, episode_policy_values
from curlopt.models.discounted import discounted_occupancy, discounted_values
from curlopt.models.episodic import episode_values
from curlopt.utilities.library import AlphaFairness, Entropy, Linear, LinearBound, MinOfLinear, SumOfLogs

PEER = Path(__file__).parent / "data" / "peer"


def random_episodic(seed: int, S: int = 4, A: int = 3, H: int = 5, K: int = 2, per_step: bool = True,
                    sparse: bool = False) -> EpisodicCMDP:
    rng = np.random.default_rng(seed)
    kernels = rng.dirichlet(np.full(S, 0.5), size=(H - 1, S, A)) if per_step else rng.dirichlet(np.ones(S), (S, A))
    if sparse:
        kernels = [sp.csr_array(k.reshape(S * A, S)) for k in kernels] if per_step else \
            sp.csr_array(kernels.reshape(S * A, S))
    rewards = rng.random((H, K, S, A)) if per_step else rng.random((K, S, A))
    costs = rng.random((H, 1, S, A)) if per_step else rng.random((1, S, A))
    return EpisodicCMDP(rewards, costs, Linear(rng.random(K)), [LinearBound([1.0], float(H))], kernels,
                        initial=rng.dirichlet(np.ones(S)), horizon=H)


def lp_optimum(kernels: np.ndarray, signal: np.ndarray, mu: np.ndarray) -> float:
    """max Σ_h Σ signal_h(s,a) q_h(s,a) over q >= 0 with the episodic flow rows (linprog, written from scratch)."""
    H, S, A = signal.shape
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
    result = linprog(-signal.ravel(), A_eq=np.array(rows), b_eq=np.array(rhs), bounds=(0, None), method="highs")
    assert result.status == 0
    return -result.fun


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("per_step", [True, False])
def test_backward_induction_equals_the_lp_optimum(seed, per_step):
    model = random_episodic(seed, per_step=per_step, sparse=seed % 2 == 1)
    H = model.horizon
    kernels = [model.step_kernel_dense(h) for h in range(H - 1)]
    weights = model.objective.weights
    signal = np.einsum("k,hksa->hsa", weights, model.step_rewards)
    result = episode_backward_induction(model)
    assert result.value == pytest.approx(lp_optimum(kernels, signal, model.initial), rel=1e-9)
    # its deterministic policy attains the value on the forward recursion
    rewards, _ = episode_values(model, result.policy)
    assert float(weights @ rewards) == pytest.approx(result.value, rel=1e-12)
    assert set(np.unique(result.policy)) <= {0.0, 1.0}


@pytest.mark.parametrize("seed", range(4))
def test_backward_induction_with_cost_weights_is_a_lagrangian(seed):
    model = random_episodic(seed)
    v = np.array([-0.7])
    result = episode_backward_induction(model, weights=[1.0, 0.5], cost_weights=v)
    signal = np.einsum("k,hksa->hsa", [1.0, 0.5], model.step_rewards) + v[0] * model.step_costs[:, 0]
    kernels = [model.step_kernel_dense(h) for h in range(model.horizon - 1)]
    assert result.value == pytest.approx(lp_optimum(kernels, signal, model.initial), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_forward_and_backward_evaluation_agree(seed):
    model = random_episodic(seed, sparse=seed >= 3)
    rng = np.random.default_rng(100 + seed)
    policy = rng.dirichlet(np.ones(model.n_actions), size=(model.horizon, model.n_states))
    forward_rewards, forward_costs = episode_values(model, policy)
    backward = episode_policy_values(model, policy)
    np.testing.assert_allclose(backward.rewards, forward_rewards, rtol=1e-12)
    np.testing.assert_allclose(backward.costs, forward_costs, rtol=1e-12)
    assert backward.reward_values.shape == (model.horizon + 1, 2, model.n_states)
    assert np.all(backward.reward_values[-1] == 0)


def test_policy_values_on_a_hand_traced_two_state_model():
    # state 0 --a1--> state 1 surely; state 1 absorbs; reward 1 in state 1; H = 3, start in 0
    kernel = np.zeros((2, 2, 2))
    kernel[0, 0, 0] = kernel[0, 1, 1] = kernel[1, :, 1] = 1.0
    rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    model = EpisodicCMDP(rewards, None, Linear([1.0]), (), kernel, initial=[1.0, 0.0], horizon=3)
    always_move = np.tile([0.0, 1.0], (2, 1))
    values = episode_policy_values(model, always_move)
    # steps 1, 2, 3: states 0, 1, 1: total 2; from state 1 at step 2 the rest is 2, at step 3 it is 1
    assert values.rewards[0] == pytest.approx(2.0)
    np.testing.assert_allclose(values.reward_values[:, 0, 1], [3.0, 2.0, 1.0, 0.0])
    assert episode_backward_induction(model).value == pytest.approx(2.0)


# -- the discounted criterion --------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("storage", ["dense", "sparse"])
def test_discounted_values_are_the_normalised_discounted_sums(gamma, storage):
    base = build_model("random", n_states=6, n_actions=3, seed=4)
    model = DiscountedCMDP(base.rewards, base.costs, base.objective, base.constraints, base.kernel,
                           initial=np.eye(6)[2], discount=gamma, storage=storage)
    policy = np.random.default_rng(1).dirichlet(np.ones(3), size=6)
    chain = np.einsum("sa,sat->st", policy, base.kernel)
    # (1 − γ) Σ_t γ^t μ P_π^t, summed until the tail is below 1e-16
    law, total, weight = np.eye(6)[2], np.zeros(6), 1.0 - gamma
    for _ in range(20_000):
        total += weight * law
        law, weight = law @ chain, weight * gamma
        if weight < 1e-17:
            break
    reference = total[:, None] * policy
    np.testing.assert_allclose(discounted_occupancy(model, policy), reference, rtol=1e-9, atol=1e-15)
    rewards, costs = discounted_values(model, policy)
    np.testing.assert_allclose(rewards, np.einsum("ksa,sa->k", base.rewards, reference), rtol=1e-9)


@pytest.mark.parametrize("gamma", [0.0, 1.0, -0.1, 1.5, float("nan"), True, "0.9", None])
def test_a_discount_outside_zero_one_is_refused(gamma):
    with pytest.raises(ModelError, match="discount must be a number strictly between 0 and 1"):
        build_model("queue", discount=gamma)


@pytest.mark.parametrize("horizon", [0, -3, 2.5, True, "4", None])
def test_a_bad_horizon_is_refused(horizon):
    base = build_model("random")
    with pytest.raises(ModelError, match="horizon must be an integer >= 1"):
        episodic(base, horizon)


def test_a_per_step_kernel_of_the_wrong_length_is_refused():
    kernels = np.full((2, 3, 2, 3), 1 / 3)  # H − 1 = 3 expected
    with pytest.raises(ModelError, match="H − 1 = 3 kernels"):
        EpisodicCMDP(np.zeros((3, 2)), None, Linear([1.0]), (), kernels, horizon=4)


# -- a horizon on the built-in models ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["queue", "random", "lazy", "scaled", "nonergodic", "scheduler", "maxent"])
def test_a_horizon_lifts_a_built_in_model_to_per_episode_totals(name):
    base = build_model(name)
    lifted = build_model(name, horizon=7)
    assert isinstance(lifted, EpisodicCMDP) and lifted.horizon == 7 and lifted.time_homogeneous
    np.testing.assert_array_equal(lifted.kernel, base.kernel)
    np.testing.assert_array_equal(lifted.rewards, base.rewards)
    # a per-step bound b becomes 7 b on totals: the same policies are feasible on per-step averages
    for g, g7 in zip(base.constraints, lifted.constraints, strict=True):
        y = np.random.default_rng(0).random(base.n_costs)
        assert g7.value(7 * y) == pytest.approx(7 * g.value(y), rel=1e-12)
    y = np.random.default_rng(1).random(base.n_rewards)
    assert lifted.objective.value(7 * y) == pytest.approx(7 * base.objective.value(y), rel=1e-12)


@pytest.mark.parametrize("name", ["queue", "scheduler", "nonergodic", "random", "maxent", "scaled", "lazy"])
def test_without_a_horizon_every_model_is_the_builders_own(name):
    from curlopt.models import MODELS

    model, again = build_model(name), MODELS[name]()
    assert type(model) is type(again) and repr(model) == repr(again)
    np.testing.assert_array_equal(model.kernel, again.kernel)
    np.testing.assert_array_equal(model.rewards, again.rewards)
    np.testing.assert_array_equal(model.costs, again.costs)
    assert [g.to_spec() for g in model.constraints] == [g.to_spec() for g in again.constraints]


def test_budgets_make_per_episode_budget_constraints():
    constraints = budget_constraints([2.0, 3.5])
    assert [g.value(np.array([2.0, 3.5])) for g in constraints] == [0.0, 0.0]
    assert constraints[1].value(np.array([0.0, 4.5])) == pytest.approx(1.0)
    model = build_model("queue", horizon=5, budgets=[1.0, 2.0])
    assert [g.bound for g in model.constraints] == [1.0, 2.0]
    with pytest.raises(ModelError, match="need a horizon"):
        build_model("queue", budgets=[1.0, 2.0])
    with pytest.raises(ModelError, match="one per signal"):
        build_model("queue", horizon=5, budgets=[1.0])
    with pytest.raises(ModelError, match="not both"):
        build_model("queue", horizon=5, discount=0.9)


def evaluate(form, y):
    """A form's value, written here for the forms a lift produces (a reference independent of the backends)."""
    from curlopt.utilities import forms as F

    if isinstance(form, F.AffinePieces):
        values = form.matrix @ y + form.offset
        return {"affine": values[0], "min": values.min(), "max": values.max()}[form.combine]
    if isinstance(form, F.Logs):
        return float(np.sum(form.weights * np.log(y + form.shift)))
    if isinstance(form, F.Powers):
        return float(np.sum(form.weights * (y + form.shift) ** form.exponent / form.exponent))
    if isinstance(form, F.Entropy):
        return float(-np.sum(y * np.log(y + form.shift)))
    if isinstance(form, F.Sum):
        return sum(evaluate(term, y) for term in form.terms)
    raise AssertionError(f"no evaluator for {form!r}")


@pytest.mark.parametrize("objective", [
    SumOfLogs(weights=[1.0, 2.0], shift=0.3), AlphaFairness(0.5, weights=[1.0, 0.5], shift=0.1),
    AlphaFairness(2.0, dim=2, shift=0.2), Entropy(2, shift=0.05), MinOfLinear([[1.0, 0.0], [0.0, 1.0]], [0.1, 0.0]),
])
@pytest.mark.parametrize("horizon", [1, 3, 20])
def test_a_nonlinear_objective_lifts_exactly_to_per_episode_totals(objective, horizon):
    from curlopt.models.units import per_episode_objective

    lifted = per_episode_objective(objective, horizon)
    rng = np.random.default_rng(horizon)
    for _ in range(5):
        y = rng.random(2) + 0.05  # per-step averages
        assert lifted.value(horizon * y) == pytest.approx(horizon * objective.value(y), rel=1e-12)
        assert evaluate(lifted.describe(), horizon * y) == pytest.approx(horizon * objective.value(y), rel=1e-12)
        np.testing.assert_allclose(lifted.gradient(horizon * y), objective.gradient(y), rtol=1e-12)


@pytest.mark.skipif("cvxpy" not in installed_backends(), reason="cvxpy is not installed")
def test_the_scheduler_with_a_horizon_is_its_lift():
    from curlopt.optimum import solve_optimum

    H = 6
    lifted = build_model("scheduler", horizon=H)
    base = build_model("scheduler")
    w = base.objective.weights
    # by hand: H Σ w ln(x / H) = Σ (H w) ln(x) − H ln(H) Σ w
    by_hand = episodic(base, H, objective=SumOfLogs(weights=H * w, shift=0.0))
    value = solve_optimum(lifted, "cvxpy").objective
    assert value == pytest.approx(solve_optimum(by_hand, "cvxpy").objective - H * np.log(H) * w.sum(), rel=1e-6)


def test_an_objective_whose_form_does_not_lift_is_refused():
    from curlopt.models.cmdp import CMDP
    from curlopt.utilities.library import CustomUtility

    base = build_model("random")
    custom = CustomUtility(1, "concave", lambda y: -float(y[0] ** 2))  # no form: nothing to lift
    model = CMDP(base.rewards, base.costs, custom, base.constraints, base.kernel, initial=base.initial)
    with pytest.raises(ModelError, match="objective=..."):
        episodic(model, 4)
    assert episodic(model, 1).objective is custom  # H = 1: the totals are the averages
    assert episodic(model, 4, objective=custom).objective is custom


def test_discounted_keeps_the_utilities():
    base = build_model("queue")
    model = discounted(base, 0.95)
    assert model.discount == 0.95 and model.constraints == base.constraints and model.criterion == "discounted"
    with pytest.raises(ModelError, match="already has the discounted criterion"):
        episodic(model, 3)


# -- the literature's grids and the DOPE paper's models ------------------------------------------------------------


@pytest.mark.parametrize(("name", "file", "optimum"), [
    ("gridworld", "gridworld_4x4.json", -0.775),
    ("marsrover", "marsrover_8x8.json", -0.9380952381),
])
def test_the_danilprov_grids_are_the_peer_models(name, file, optimum):
    from curlopt.optimum import solve_optimum

    model = build_model(name)
    data = json.loads((PEER / file).read_text())
    theirs = np.array(data["kernel"])
    ours = np.asarray(model.kernel)
    # the same model up to the order of the states: follow each action from the start in both (no slip: one successor)
    mapping = {int(np.argmax(model.initial)): int(np.argmax(data["initial"]))}
    frontier = list(mapping)
    while frontier:
        s = frontier.pop()
        for a in range(4):
            t, u = int(np.argmax(ours[s, a])), int(np.argmax(theirs[mapping[s], a]))
            if t not in mapping:
                mapping[t] = u
                frontier.append(t)
            assert mapping[t] == u
    order = np.argsort([mapping[s] for s in range(model.n_states)])  # their state i is our state order[i]
    np.testing.assert_array_equal(ours[order][:, :, order], theirs)
    np.testing.assert_array_equal(model.rewards[:, order], np.array(data["rewards"]))
    np.testing.assert_array_equal(model.costs[:, order], np.array(data["costs"]))
    assert model.constraints[0].bound == data["constraints"][0]["bound"]
    assert solve_optimum(model).objective == pytest.approx(optimum, rel=1e-9)


@pytest.mark.parametrize("name", ["gridworld", "marsrover", "boxpushing", "factored-cmdp", "media-streaming",
                                  "inventory"])
def test_each_declared_safe_policy_is_strictly_safe(name):
    model = build_model(name, horizon=8)
    assert model.safe_policy is not None
    # the forward recursion written here: d_{h+1} = d_h π P
    law, total = model.initial.copy(), 0.0
    kernel = np.asarray(model.kernel)
    for h in range(8):
        q = law[:, None] * model.safe_policy[h]
        total += float(np.sum(q * model.costs[0]))
        law = np.einsum("sa,sat->t", q, kernel)
    assert total < model.constraints[0].bound


def test_a_slippery_grid_declares_no_safe_policy_it_cannot_keep():
    # a corridor next to a hazard with a large slip: the path policy's cost exceeds a tiny budget
    model = build_model("gridworld", layout="S.HG/....", slip=0.9, horizon=10, budgets=1e-3)
    assert model.safe_policy is None
    model = build_model("gridworld", layout="S.HG/....", slip=0.0, horizon=10, budgets=1e-3)
    assert model.safe_policy is not None


def test_the_box_pushing_grid_costs_a_box_in_a_corner():
    model = build_model("boxpushing")
    labels = model.labels["states"]
    start = int(np.argmax(model.initial))
    assert labels[start] == "agent 0,1 box 1,1"
    down = labels.index("agent 0,1 box 1,1")
    # pushing the box down puts it at (2,1): walls left and below, cost 1
    assert model.costs[0, down, 1] == 1.0
    assert labels[int(np.argmax(model.kernel[down, 1]))] == "agent 1,1 box 2,1"


def test_the_dope_models_have_the_papers_optima_structure():
    # factored: with budget 3 over 6 steps the optimum moves exactly 3 times; every move from state s pays (s+1)/3
    model = build_model("factored-cmdp", horizon=6)
    result = episode_backward_induction(model)  # unconstrained: move every step, 6 moves
    assert result.value == pytest.approx((1 + 2 + 3 + 1 + 2 + 3) / 3)
    inventory = build_model("inventory")
    assert inventory.n_states == 6 and np.max(inventory.rewards) == 1.0 and np.max(inventory.costs) == 1.0
    # an order beyond capacity is the largest allowed one
    np.testing.assert_array_equal(inventory.kernel[5, 3], inventory.kernel[5, 0])
    streaming = build_model("media-streaming")
    np.testing.assert_allclose(streaming.kernel[4, 0, [3, 4, 5]], [0.1 * 0.8, 1 - 0.1 * 0.8 - 0.9 * 0.2, 0.9 * 0.2])


# -- model files ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
def test_model_files_carry_the_horizon_the_per_step_arrays_and_the_safe_policy(tmp_path, sparse):
    from curlopt.models.files import load_model, save_model

    model = random_episodic(3, sparse=sparse)
    model.safe_policy = np.full((model.horizon, model.n_states, model.n_actions), 1 / model.n_actions)
    path = save_model(model, tmp_path / "episodic.json")
    assert json.loads(path.read_text())["version"] == 3
    again = load_model(path)
    assert isinstance(again, EpisodicCMDP) and again.horizon == model.horizon and not again.time_homogeneous
    np.testing.assert_array_equal(again.step_rewards, model.step_rewards)
    np.testing.assert_array_equal(again.step_costs, model.step_costs)
    np.testing.assert_array_equal(again.safe_policy, model.safe_policy)
    for h in range(model.horizon - 1):
        np.testing.assert_array_equal(again.step_kernel_dense(h), model.step_kernel_dense(h))
    policy = np.random.default_rng(0).dirichlet(np.ones(model.n_actions), size=(model.horizon, model.n_states))
    np.testing.assert_array_equal(episode_values(again, policy)[0], episode_values(model, policy)[0])


def test_model_files_carry_the_discount_and_refuse_both_criteria(tmp_path):
    from curlopt.models.files import load_model, save_model

    path = save_model(build_model("queue", discount=0.9), tmp_path / "discounted.json")
    again = load_model(path)
    assert isinstance(again, DiscountedCMDP) and again.discount == 0.9
    data = json.loads(path.read_text())
    data["horizon"] = 4
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="a horizon or a discount, not both"):
        load_model(path)
    data.pop("horizon")
    data["discount"] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="strictly between 0 and 1"):
        load_model(path)
    # an average-criterion model is written as before (version 1)
    plain = save_model(build_model("queue"), tmp_path / "plain.json")
    assert json.loads(plain.read_text())["version"] == 1 and "horizon" not in json.loads(plain.read_text())

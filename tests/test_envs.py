"""Environments: the built-in models, the Gymnasium API, `curlopt.envs.make` and `curlopt optimum`.

Reference numbers are computed by hand from docs/math.md §8 (the arithmetic is written out next to each
assertion) or by an independent computation in this file, never by the code under test.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from conftest import registered_models
from gymnasium.utils import seeding
from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

import curlopt.envs
from curlopt import CMDP, Linear, stationary_occupancy
from curlopt.envs import ENV_IDS, TabularCMDPEnv, env_id, make
from curlopt.errors import CurloptError, EnvError, ModelError
from curlopt.models import MODELS, build_model, env_name, register_model

# ----------------------------------------------------------------------------
# Kernels are transition kernels for every parameter choice
# ----------------------------------------------------------------------------

probability_grid = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5)
#: a strategy over the parameters of each registered model that takes any (a model without one is drawn with its
#: defaults; test_every_model_with_parameters_has_a_strategy keeps this list complete)
PARAMETERS = {
    "queue": st.fixed_dictionaries({"buffer": st.integers(1, 12), "service": probability_grid, "flow": probability_grid}),
    "scheduler": st.fixed_dictionaries({"sla": st.none() | st.floats(0.0, 1.0)}),
    "nonergodic": st.fixed_dictionaries({"bound": st.none() | st.floats(0.0, 1.0)}),
    "random": st.fixed_dictionaries({
        "n_states": st.integers(1, 8), "n_actions": st.integers(1, 4), "n_rewards": st.integers(1, 3),
        "n_costs": st.integers(0, 3), "seed": st.integers(0, 2**32 - 1),
        "objective": st.sampled_from(["linear", "log"]), "margin": st.floats(0.0, 0.5),
        "concentration": st.floats(0.05, 5.0),
    }),
    "maxent": st.fixed_dictionaries({
        "base": st.sampled_from(["queue", "scheduler", "nonergodic", "random"]), "shift": st.floats(0.0, 1.0)}),
    # the transforms over a base with a linear objective (scaling rewards needs one)
    "scaled": st.fixed_dictionaries({
        "base": st.sampled_from(["queue", "random"]), "costs": st.floats(0.01, 100.0), "rewards": st.floats(0.01, 100.0)}),
    "lazy": st.fixed_dictionaries({
        "base": st.sampled_from(["queue", "scheduler", "random"]), "stay": st.floats(0.0, 0.99)}),
    "gridworld": st.fixed_dictionaries({
        "layout": st.sampled_from(["4x4", "marsrover", "corridor", "random"]), "size": st.integers(2, 6),
        "hazards": st.floats(0.0, 0.3), "seed": st.integers(0, 100), "slip": st.floats(0.0, 1.0),
        "hazard_cost": st.floats(0.0, 5.0), "goal_reward": st.floats(-1.0, 1.0)}),
    "marsrover": st.fixed_dictionaries({"slip": st.floats(0.0, 1.0), "budget": st.floats(0.0, 1.0)}),
    "boxpushing": st.fixed_dictionaries({"slip": st.floats(0.0, 1.0), "budget": st.floats(0.0, 1.0)}),
    "factored-cmdp": st.fixed_dictionaries({"budget": st.floats(0.0, 1.0)}),
    "media-streaming": st.fixed_dictionaries({
        "levels": st.integers(2, 12), "fast": st.floats(0.0, 1.0), "slow": st.floats(0.0, 1.0),
        "arrival": st.floats(0.0, 1.0)}),
    "inventory": st.fixed_dictionaries({"budget": st.floats(0.0, 1.0)}),
}
model_params = st.sampled_from(registered_models()).flatmap(
    lambda name: st.tuples(st.just(name), PARAMETERS.get(name, st.just({}))))


@given(model_params)
def test_kernel_rows_are_distributions(case):
    name, params = case
    model = build_model(name, **params)
    kernel = np.asarray(model.kernel)
    S, A = model.n_states, model.n_actions
    assert kernel.shape == (S, A, S)
    assert np.all(kernel >= 0)
    np.testing.assert_allclose(kernel.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.initial.sum(), 1.0, rtol=0, atol=1e-12)
    # The environment built from the same parameters steps inside its spaces.
    env = make(name, **params)
    obs, _ = env.reset(seed=0)
    for action in range(A):
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(action)


def test_every_model_with_parameters_has_a_strategy():
    assert set(PARAMETERS) <= set(MODELS), "a strategy for a model that is not registered"
    for name in registered_models():
        takes = [p for p in inspect.signature(MODELS[name]).parameters.values()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        assert not takes or name in PARAMETERS, f"model {name!r} takes {[p.name for p in takes]}: add a strategy"


def test_every_registered_model_has_its_environment_id():
    # the built-in ids are public names: they never change
    builtin = {"queue": "curlopt/Queue-v0", "scheduler": "curlopt/Scheduler-v0",
               "nonergodic": "curlopt/NonErgodic-v0", "random": "curlopt/Random-v0", "maxent": "curlopt/MaxEnt-v0"}
    assert {name: ENV_IDS[name] for name in builtin} == builtin
    assert list(ENV_IDS) == list(MODELS) and len(ENV_IDS) == len(MODELS)
    assert len(set(ENV_IDS.values())) == len(MODELS)  # no two models share an id
    for name in MODELS:
        assert ENV_IDS[name] == env_id(name) == f"curlopt/{env_name(name)}-v0"
        assert gymnasium.spec(ENV_IDS[name]).kwargs == {"name": name}
    assert "nowhere" not in ENV_IDS and ENV_IDS.get("nowhere") is None
    with pytest.raises(ModelError, match="unknown model 'nowhere'"):
        env_id("nowhere")


def test_registering_a_model_gives_it_an_environment_id():
    def machine(wear: float = 0.5) -> CMDP:
        kernel = np.array([[[1 - wear, wear]], [[1.0, 0.0]]])
        return CMDP(np.array([[[1.0], [0.0]]]), objective=Linear([1.0]), kernel=kernel, name="machine")

    try:
        register_model("machine-repair", machine)
        assert ENV_IDS["machine-repair"] == env_id("machine-repair") == "curlopt/MachineRepair-v0"
        # curlopt.envs is imported, so the Gymnasium id exists at once, with the model's parameters
        env = gymnasium.make("curlopt/MachineRepair-v0", wear=0.25)
        np.testing.assert_array_equal(env.unwrapped.model.kernel[0, 0], [0.75, 0.25])
        assert make("machine-repair").spec.id == "curlopt/MachineRepair-v0"
        register_model("machine-repair", machine, env_name="Machine")
        assert ENV_IDS["machine-repair"] == "curlopt/Machine-v0" and "curlopt/Machine-v0" in gymnasium.registry
    finally:
        MODELS.pop("machine-repair", None)
        for spec_id in ("curlopt/MachineRepair-v0", "curlopt/Machine-v0"):
            gymnasium.registry.pop(spec_id, None)
    assert "machine-repair" not in ENV_IDS


@pytest.mark.parametrize("name, builder, env, pattern", [
    ("", None, None, "non-empty string"),
    ("machine", "not callable", None, "must be callable"),
    ("machine", lambda: None, "Machine-v1/x", "env_name must be"),
    ("über", lambda: None, None, "needs an env_name"),
])
def test_register_model_refuses_what_would_have_no_environment(name, builder, env, pattern):
    with pytest.raises(ModelError, match=pattern):
        register_model(name, builder, env_name=env)
    assert name not in MODELS


# ----------------------------------------------------------------------------
# Hand-checked entries
# ----------------------------------------------------------------------------


def queue_action(model, a, b):
    """Index of action (a, b): documented as i_a * len(flow) + i_b with the default grids."""
    i_a = [0.2, 0.4, 0.6, 0.8].index(a)
    i_b = [0.4, 0.5, 0.6, 0.7].index(b)
    index = i_a * 4 + i_b
    assert model.labels["actions"][index] == f"a={a:g},b={b:g}"
    return index


def test_queue_table_by_hand():
    model = build_model("queue")
    P = model.kernel
    assert model.n_states == 6 and model.n_actions == 16
    # a = 0.8, b = 0.4.  Interior x = 3: down a(1-b) = 0.8*0.6 = 0.48,
    # stay ab + (1-a)(1-b) = 0.32 + 0.2*0.6 = 0.44, up (1-a)b = 0.2*0.4 = 0.08.
    i = queue_action(model, 0.8, 0.4)
    np.testing.assert_allclose(P[3, i], [0, 0, 0.48, 0.44, 0.08, 0], atol=1e-15)
    # x = 0: stay 1 - b(1-a) = 1 - 0.4*0.2 = 0.92, up b(1-a) = 0.08.
    np.testing.assert_allclose(P[0, i], [0.92, 0.08, 0, 0, 0, 0], atol=1e-15)
    # x = L = 5: down a = 0.8, stay 1 - a = 0.2.
    np.testing.assert_allclose(P[5, i], [0, 0, 0, 0, 0.8, 0.2], atol=1e-15)
    # a = 0.6, b = 0.5 at x = 1: down 0.6*0.5 = 0.3, stay 0.3 + 0.4*0.5 = 0.5, up 0.4*0.5 = 0.2.
    j = queue_action(model, 0.6, 0.5)
    np.testing.assert_allclose(P[1, j], [0.3, 0.5, 0.2, 0, 0, 0], atol=1e-15)
    # x = 0 with a = 0.6, b = 0.5: up 0.5*0.4 = 0.2; x = L: down 0.6.
    np.testing.assert_allclose(P[0, j], [0.8, 0.2, 0, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(P[5, j], [0, 0, 0, 0, 0.6, 0.4], atol=1e-15)
    # reward 5 - x; c1 = -10a + 6 = -2 for a = 0.8; c2 = -8(1-b)^2 + 2 = -8*0.36 + 2 = -0.88 for b = 0.4.
    np.testing.assert_allclose(model.rewards[0, :, i], [5, 4, 3, 2, 1, 0])
    np.testing.assert_allclose(model.costs[:, 2, i], [-2.0, -0.88])
    # a = 0.6: c1 = 0; b = 0.5: c2 = -8*0.25 + 2 = 0.
    np.testing.assert_allclose(model.costs[:, 4, j], [0.0, 0.0], atol=1e-15)
    np.testing.assert_array_equal(model.initial, [1, 0, 0, 0, 0, 0])
    # g_1 = -ζ_1, g_2 = -ζ_2
    np.testing.assert_allclose(model.constraint_values(np.array([2.0, 3.0])), [-2.0, -3.0])


def test_queue_parameters():
    model = build_model("queue", buffer=8, service=[0.5], flow=[0.25, 0.75])
    assert (model.n_states, model.n_actions) == (9, 2)
    # a = 0.5, b = 0.75 at x = 8 = L: down 0.5; at x = 4: down 0.5*0.25, up 0.5*0.75.
    np.testing.assert_allclose(model.kernel[8, 1, 7:], [0.5, 0.5])
    np.testing.assert_allclose(model.kernel[4, 1, 3:6], [0.125, 0.5, 0.375])


def test_scheduler_by_hand():
    model = build_model("scheduler")
    P = model.kernel
    assert (model.n_states, model.n_actions, model.n_rewards, model.n_costs) == (16, 2, 2, 1)

    def state(i1, i2):  # client states 1..4 -> joint index 4 (i1-1) + (i2-1), as documented
        return 4 * (i1 - 1) + (i2 - 1)

    for a in (0, 1):
        # both stay: 0.625^2; one moves to a given state: 0.625 * 0.125; both move: 0.125^2
        assert P[state(1, 1), a, state(1, 1)] == pytest.approx(0.390625, abs=1e-15)
        assert P[state(1, 1), a, state(1, 2)] == pytest.approx(0.078125, abs=1e-15)
        assert P[state(3, 2), a, state(2, 2)] == pytest.approx(0.078125, abs=1e-15)
        assert P[state(1, 1), a, state(2, 3)] == pytest.approx(0.015625, abs=1e-15)
        assert P[state(4, 4), a, state(1, 3)] == pytest.approx(0.015625, abs=1e-15)
    table = {1: [0.75, 0.375, 0.5, 0.375], 2: [0.25, 0.5, 0.75, 1.0]}
    for i1 in range(1, 5):
        for i2 in range(1, 5):
            s = state(i1, i2)
            # serve client 1: it earns its table entry, client 2 earns 0; and vice versa
            assert model.rewards[:, s, 0].tolist() == [table[1][i1 - 1], 0.0]
            assert model.rewards[:, s, 1].tolist() == [0.0, table[2][i2 - 1]]
            assert model.costs[0, s].tolist() == [0.0, 1.0]
    np.testing.assert_allclose(model.initial, 1 / 16)
    assert model.constraint_values(np.array([0.3])) == pytest.approx([0.0])
    assert build_model("scheduler", sla=None).n_constraints == 0


def test_nonergodic_moves_by_hand():
    model = build_model("nonergodic")
    LEFT, MIDDLE, RIGHT = 0, 1, 2
    go_left, go_right = 0, 1
    expected = {  # (state, action) -> next state
        (LEFT, go_left): LEFT, (LEFT, go_right): MIDDLE,
        (MIDDLE, go_left): LEFT, (MIDDLE, go_right): RIGHT,
        (RIGHT, go_left): MIDDLE, (RIGHT, go_right): RIGHT,
    }
    for (s, a), t in expected.items():
        row = np.zeros(3)
        row[t] = 1.0
        np.testing.assert_array_equal(model.kernel[s, a], row)
    reward = np.zeros((3, 2))
    reward[LEFT, go_left] = 1.0
    cost = np.zeros((3, 2))
    cost[RIGHT, go_right] = 1.0
    np.testing.assert_array_equal(model.rewards[0], reward)
    np.testing.assert_array_equal(model.costs[0], cost)
    assert model.constraint_values(np.array([0.5])) == pytest.approx([0.0])  # ζ <= 0.5 by default
    assert build_model("nonergodic", bound=None).n_constraints == 0


def test_random_model_construction():
    model = build_model("random", n_states=4, n_actions=3, n_rewards=2, n_costs=2, seed=5)
    again = build_model("random", n_states=4, n_actions=3, n_rewards=2, n_costs=2, seed=5)
    other = build_model("random", n_states=4, n_actions=3, n_rewards=2, n_costs=2, seed=6)
    np.testing.assert_array_equal(model.kernel, again.kernel)
    assert not np.array_equal(model.kernel, other.kernel)
    assert np.all(model.kernel > 0)  # full support: ergodic by construction
    assert (model.n_rewards, model.n_costs, model.n_constraints) == (2, 2, 2)
    assert np.all((model.rewards >= 0) & (model.rewards < 1))
    log_model = build_model("random", n_rewards=3, objective="log")
    # SumOfLogs: f(1, e, e^2) = 0 + 1 + 2
    assert log_model.objective.value(np.exp([0.0, 1.0, 2.0])) == pytest.approx(3.0)


def test_maxent_model():
    base = build_model("scheduler")
    model = build_model("maxent", base="scheduler", shift=0.1)
    S, A = 16, 2
    assert model.n_rewards == S * A
    rho = np.random.default_rng(0).dirichlet(np.ones(S * A)).reshape(S, A)
    # r_k = 1{(s,a) = k}: the average rewards are the occupancy itself
    np.testing.assert_allclose(model.average_rewards(rho), rho.ravel())
    lam = rho.ravel()
    assert model.objective.value(lam) == pytest.approx(-np.sum(lam * np.log(lam + 0.1)))
    np.testing.assert_array_equal(model.kernel, base.kernel)
    np.testing.assert_array_equal(model.costs, base.costs)
    assert [repr(g) for g in model.constraints] == [repr(g) for g in base.constraints]
    assert build_model("maxent", base="queue", buffer=3).n_states == 4
    wrapped = build_model("maxent", base=base)
    assert wrapped.n_rewards == S * A and wrapped.constraints == base.constraints  # the same utilities
    np.testing.assert_array_equal(wrapped.initial, base.initial)


@pytest.mark.parametrize("name, params, argument", [
    ("queue", {"buffer": 0}, "buffer"),
    ("queue", {"service": [1.5]}, "service"),
    ("scheduler", {"sla": 2}, "sla"),
    ("nonergodic", {"bound": -1}, "bound"),
    ("random", {"n_states": 0}, "n_states"),
    ("random", {"n_costs": -1}, "n_costs"),
    ("random", {"objective": "cubic"}, "objective"),
    ("random", {"margin": -0.1}, "margin"),
    ("random", {"concentration": 0}, "concentration"),
    ("random", {"seed": -3}, "seed"),
    ("maxent", {"base": "maxent"}, "base"),
    ("maxent", {"base": "nowhere"}, "nowhere"),
    ("queue", {"size": 3}, "size"),
])
def test_bad_model_parameters_are_named(name, params, argument):
    with pytest.raises(CurloptError, match=argument):
        build_model(name, **params)


def test_maxent_refuses_parameters_for_a_given_model():
    with pytest.raises(ModelError, match="base"):
        build_model("maxent", base=build_model("queue"), buffer=3)


# ----------------------------------------------------------------------------
# Gymnasium API
# ----------------------------------------------------------------------------


# The environment contract, for every registered model with its default parameters.


@pytest.mark.parametrize("name", registered_models())
def test_check_env_passes(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports problems as warnings
        check_env(gymnasium.make(ENV_IDS[name]).unwrapped)
        check_env(make(name), skip_render_check=True)  # no spec: render modes need gymnasium.make


@pytest.mark.parametrize("name", registered_models())
def test_gymnasium_make(name):
    env = gymnasium.make(ENV_IDS[name])
    model = env.unwrapped.model
    assert isinstance(model, CMDP) and env.spec.id == env_id(name)
    S, A = model.n_states, model.n_actions
    # the model behind the environment: a kernel whose rows are distributions, signals of the declared sizes
    kernel = np.asarray(model.kernel)
    assert kernel.shape == (S, A, S) and np.all(kernel >= 0)
    np.testing.assert_allclose(kernel.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    assert model.rewards.shape == (model.n_rewards, S, A) and model.costs.shape == (model.n_costs, S, A)
    assert env.observation_space == gymnasium.spaces.Discrete(S)
    assert env.action_space == gymnasium.spaces.Discrete(A)
    obs, info = env.reset(seed=3)
    assert info == {} and env.unwrapped.state == int(obs) and env.observation_space.contains(obs)
    for t in range(50):
        action, before = t % A, int(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        assert (terminated, truncated) == (False, False) and env.observation_space.contains(obs)
        assert info["rewards"].shape == (model.n_rewards,) and info["costs"].shape == (model.n_costs,)
        np.testing.assert_array_equal(info["rewards"], model.rewards[:, before, action])
        np.testing.assert_array_equal(info["costs"], model.costs[:, before, action])
        assert reward == info["rewards"][0] and kernel[before, action, int(obs)] > 0


def test_gymnasium_make_with_parameters_and_module_prefix():
    assert gymnasium.make("curlopt/Queue-v0", buffer=8).unwrapped.model.n_states == 9
    assert gymnasium.make("curlopt.envs:curlopt/Scheduler-v0", sla=None).unwrapped.model.n_constraints == 0
    curlopt.envs.register_envs()  # idempotent: no "overriding" warning, same spec
    assert gymnasium.spec("curlopt/Queue-v0").kwargs == {"name": "queue"}


def test_import_curlopt_does_not_import_gymnasium():
    code = (
        "import sys, curlopt, curlopt.models, curlopt.diagnostics\n"
        "curlopt.build_model('maxent'); curlopt.diagnose(curlopt.build_model('nonergodic'))\n"
        "assert 'gymnasium' not in sys.modules, 'gymnasium was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_step_reports_the_pair_before_the_transition():
    env = make("queue")
    model = env.unwrapped.model
    state, _ = env.reset(seed=1)
    for t in range(200):
        action = t % model.n_actions
        before = int(state)
        state, reward, terminated, truncated, info = env.step(action)
        assert type(reward) is float and reward == model.rewards[0, before, action]
        np.testing.assert_array_equal(info["rewards"], model.rewards[:, before, action])
        np.testing.assert_array_equal(info["costs"], model.costs[:, before, action])
        assert model.kernel[before, action, int(state)] > 0
        assert not (terminated or truncated)


def test_random_number_contract():
    """One uniform per reset and per step, inverse-CDF with side='right' (the agents' fast path relies on it)."""
    env = make("random", n_states=6, n_actions=3, seed=2)
    model = env.unwrapped.model
    actions = np.random.default_rng(9).integers(0, 3, size=500)
    obs, _ = env.reset(seed=42)
    trajectory = [int(obs)]
    for a in actions:
        obs, *_ = env.step(int(a))
        trajectory.append(int(obs))

    rng, _ = seeding.np_random(42)
    cum_initial = np.cumsum(model.initial)
    cum_kernel = np.cumsum(model.kernel, axis=2)
    s = min(int(np.searchsorted(cum_initial, rng.random(), side="right")), 5)
    expected = [s]
    for a in actions:
        s = min(int(np.searchsorted(cum_kernel[s, a], rng.random(), side="right")), 5)
        expected.append(s)
    assert trajectory == expected
    np.testing.assert_array_equal(env.unwrapped.cumulative_kernel, cum_kernel)


def test_reset_with_start_state_keeps_the_stream_aligned():
    env = make("scheduler")
    env.reset(seed=4)
    first = [int(env.step(0)[0]) for _ in range(20)]
    obs, _ = env.reset(seed=4, options={"state": 7})
    assert int(obs) == 7
    env.reset(seed=4)
    assert [int(env.step(0)[0]) for _ in range(20)] == first


def test_environment_errors():
    env = make("nonergodic")
    with pytest.raises(EnvError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    for bad in (2, -1, 1.0, True, "left", None):
        with pytest.raises(EnvError, match="action"):
            env.step(bad)
    env.step(np.int64(1))
    env.step(np.array(0))
    with pytest.raises(EnvError, match="options"):
        env.reset(options={"start": 0})
    with pytest.raises(EnvError, match="state"):
        env.reset(options={"state": 3})
    with pytest.raises(EnvError, match="render_mode"):
        make("queue", render_mode="human")
    unknown = CMDP(rewards=np.zeros((2, 2)), objective=Linear([1.0]))
    with pytest.raises(EnvError, match="kernel"):
        TabularCMDPEnv(unknown)
    with pytest.raises(EnvError, match="parameters"):
        make(build_model("queue"), buffer=3)
    with pytest.raises(ModelError, match="unknown model"):
        make("nowhere")


def test_render_ansi():
    env = make("nonergodic", render_mode="ansi")
    env.reset(seed=0, options={"state": 1})
    env.step(1)
    assert env.render() == "nonergodic: state right (from state middle after action right)"
    assert make("nonergodic").render() is None


# ----------------------------------------------------------------------------
# Empirical frequencies match the stationary occupancy
# ----------------------------------------------------------------------------


def pair_chain_statistics(kernel, policy):
    """Stationary law ρ of the state-action chain and the asymptotic variance of each indicator 1{(s,a) = k}.

    The pair chain moves (s,a) -> (s',a') with probability P(s'|s,a) π(a'|s'). For an irreducible chain with
    fundamental matrix Z = (I - Q + 1ρᵀ)⁻¹, the CLT variance of the average of f is
    σ²(f) = 2⟨f̄, Z f̄⟩_ρ - ⟨f̄, f̄⟩_ρ with f̄ = f - ρ(f) (Kemeny & Snell; Brémaud, Markov Chains, §6.4).
    """
    S, A = policy.shape
    Q = (kernel.reshape(S * A, S)[:, :, None] * policy[None, :, :]).reshape(S * A, S * A)
    n = S * A
    system = Q.T - np.eye(n)
    system[-1] = 1.0  # replace one balance row by the normalisation
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    rho = np.linalg.solve(system, rhs)
    Z = np.linalg.inv(np.eye(n) - Q + np.outer(np.ones(n), rho))
    centred = np.eye(n) - rho[None, :]  # column k: 1{· = k} - ρ_k
    variance = 2 * np.einsum("i,ik,ik->k", rho, centred, Z @ centred) - np.einsum("i,ik->k", rho, centred**2)
    return rho.reshape(S, A), variance.reshape(S, A)


@pytest.mark.parametrize("name, params", [
    ("queue", {}), ("scheduler", {}), ("nonergodic", {}), ("random", {"n_states": 6, "n_actions": 3, "seed": 1}),
])
def test_empirical_frequencies_match_stationary_occupancy(name, params):
    steps = 200_000
    env = make(name, **params)
    model = env.unwrapped.model
    S, A = model.n_states, model.n_actions
    policy = np.random.default_rng(3).dirichlet(np.full(A, 2.0), size=S)  # fixed, randomised, full support
    rho, variance = pair_chain_statistics(np.asarray(model.kernel), policy)
    np.testing.assert_allclose(stationary_occupancy(model.kernel, policy), rho, atol=1e-10)

    cum_policy = np.cumsum(policy, axis=1)
    uniforms = np.random.default_rng(4).random(steps)
    counts = np.zeros(S * A)
    state = int(env.reset(seed=5)[0])
    for u in uniforms:
        action = min(int(np.searchsorted(cum_policy[state], u, side="right")), A - 1)
        counts[state * A + action] += 1
        state = int(env.step(action)[0])
    frequency = counts.reshape(S, A) / steps

    # CLT for Markov chains: each frequency is ≈ N(ρ, σ²/n). Bonferroni over the S·A cells keeps the
    # family-wise false-alarm probability at 1e-4; the start-state bias is O(1/n), far below the tolerance.
    z = norm.isf(1e-4 / (2 * S * A))
    tolerance = z * np.sqrt(variance / steps)
    assert np.all(variance > 0)
    assert np.all(np.abs(frequency - rho) <= tolerance), np.max(np.abs(frequency - rho) / tolerance)


# ----------------------------------------------------------------------------
# `curlopt optimum ENV` for every environment
# ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli():
    from typer.testing import CliRunner

    import curlopt.cli

    curlopt.cli._register()
    runner = CliRunner()
    return lambda *args: runner.invoke(curlopt.cli.app, list(args))


def cvxpy_or_skip():
    from curlopt.backends import installed_backends

    if "cvxpy" not in installed_backends():
        pytest.skip("the cvxpy backend is not installed")


# The scheduler's and the log-objective's utilities are not LP-representable: they need a conic backend.
@pytest.mark.parametrize("args", [
    ["queue"], ["queue", "--param", "buffer=8"], ["scheduler", "-b", "cvxpy"], ["scheduler", "-p", "sla=None", "-b", "cvxpy"],
    ["nonergodic"], ["random", "--param", "seed=3"], ["random", "-p", "n_costs=0", "-p", "objective='log'", "-b", "cvxpy"],
])
def test_cli_optimum(cli, args):
    if "cvxpy" in args:
        cvxpy_or_skip()
    result = cli("optimum", *args)
    assert result.exit_code == 0, result.output
    assert "f(λ*)" in result.stdout and "status       optimal" in result.stdout
    if "buffer=8" in args:
        assert "S=9" in result.stdout
    if args[0] == "nonergodic":
        assert "not ergodic" in result.stderr
    else:
        assert "not ergodic" not in result.stderr


def test_cli_optimum_maxent(cli):
    cvxpy_or_skip()
    result = cli("optimum", "maxent", "-b", "cvxpy", "--json")
    assert result.exit_code == 0, result.output
    assert '"status": "optimal"' in result.stdout
    # the default (auto) picks a backend that can express the entropy
    automatic = cli("optimum", "maxent", "--json")
    assert automatic.exit_code == 0, automatic.output
    assert '"status": "optimal"' in automatic.stdout
    # highs cannot express the entropy: a clear error naming a backend that can
    refused = cli("optimum", "maxent", "-b", "highs")
    assert refused.exit_code != 0 and "cvxpy" in str(refused.exception)


def test_make_has_a_spec_and_passes_check_env_with_its_render_modes():
    env = make("queue")
    assert isinstance(env, TabularCMDPEnv) and env.spec is not None and env.spec.id == ENV_IDS["queue"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "not able to test alternative render modes" would be an error here
        check_env(env)
        check_env(make(build_model("nonergodic")))
    again = make("queue", buffer=3).spec.make(render_mode="ansi")
    assert again.unwrapped.model.n_states == 4 and again.unwrapped.render_mode == "ansi"
    assert gymnasium.make(ENV_IDS["queue"]).unwrapped.spec.kwargs == {"name": "queue"}


def test_max_episode_steps_truncates():
    env = make("queue", max_episode_steps=5)
    assert env.spec.max_episode_steps == 5
    env.reset(seed=0)
    ends = [env.step(env.action_space.sample())[2:4] for _ in range(5)]
    assert ends == [(False, False)] * 4 + [(False, True)]
    env.reset(seed=1)
    assert env.step(0)[3] is False  # a new episode counts from 0 again
    for bad in (0, -1, 2.5, True):
        with pytest.raises(EnvError, match="max_episode_steps"):
            make("queue", max_episode_steps=bad)

"""UC-CURL, PS-CURL, the epoch triggers and the learning loop."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest
from conftest import FailingHighs, registered_agents

from curlopt import CMDP, Linear, LinearBound, build_model
from curlopt.agents import AGENTS, Agent, PlanSource, PrimalDual, PsCurl, UcCurl, make_agent
from curlopt.agents.triggers import DoublingTrigger, GlobalLinearTrigger, PerPairLinearTrigger
from curlopt.envs import make
from curlopt.errors import CurloptError
from curlopt.experiments import load_trace, run

# -- the agent contract, for every registered agent -------------------------------------------------------------------

CONTRACT_STEPS = 300


def contract_agent(name: str) -> Agent:
    """Agent ``name`` with its default options on a small linear model (3 states, 2 actions, one constraint),
    which every built-in agent takes (the baselines take only linear utilities)."""
    model = build_model("random", n_states=3, n_actions=2, n_rewards=1, n_costs=1, seed=0)
    return make_agent(name, model, **({"horizon": CONTRACT_STEPS} if AGENTS[name].needs_horizon else {}))


def contract_run(name: str, path: str):
    """A run of ``CONTRACT_STEPS`` steps through the library's loop, recording every plan the agent returns."""
    agent = contract_agent(name)
    plans = []
    begin = agent.begin_epoch

    def recording(time):
        plans.append(begin(time))
        return plans[-1]

    agent.begin_epoch = recording
    return agent, plans, run(agent, make(agent.model), CONTRACT_STEPS, seed=0, path=path, progress=False)


def timeless(trace) -> dict:
    data = trace.to_dict()
    for epoch in data["epochs"]:
        epoch.pop("solve_time")
    data["meta"].pop("path")
    data.pop("wall_time")
    return data


@pytest.mark.parametrize("name", registered_agents())
def test_registered_agent_meets_the_contract(name):
    cls = AGENTS[name]
    assert issubclass(cls, Agent) and cls.name == name  # traces and the command line name it by this
    agent, plans, trace = contract_run(name, "fast")
    S, A = agent.model.n_states, agent.model.n_actions
    assert plans and len(plans) == len(trace.epochs)
    for plan in plans:  # every policy the agent played is a policy
        assert plan.policy.shape == (S, A) and np.all(np.isfinite(plan.policy)) and np.all(plan.policy >= 0)
        np.testing.assert_allclose(plan.policy.sum(axis=1), 1.0, rtol=0, atol=1e-9)
        assert isinstance(plan.source, PlanSource)
    assert [e.source for e in trace.epochs] == [p.source for p in plans]
    assert trace.checkpoints["t"][-1] == CONTRACT_STEPS and sum(e.length for e in trace.epochs) == CONTRACT_STEPS
    np.testing.assert_array_equal(agent.visits.sum(), CONTRACT_STEPS)
    assert trace.meta["agent"] == name and json.loads(json.dumps(agent.describe())) == agent.describe()
    # the generic (Gymnasium) stepping path follows the same trajectory, and the same seed gives the same trace
    _, _, generic = contract_run(name, "generic")
    assert timeless(generic) == timeless(trace)


@pytest.mark.parametrize("name", registered_agents())
def test_registered_agent_lists_its_options(name):
    from curlopt.cli.agents import option_rows

    options = option_rows(name)
    parameters = inspect.signature(AGENTS[name].__init__).parameters
    named = [o for o in options if not o["name"].startswith("**")]
    assert [o["name"] for o in named] == [n for n in parameters if n not in ("self", "model")
                                          and parameters[n].kind is not inspect.Parameter.VAR_KEYWORD]
    for option in named:
        assert option["description"], f"{name}: option {option['name']!r} is not described in the docstring"
        assert option["default"] == parameters[option["name"]].default
    # the options it can be run with from the command line: none without a default but the horizon, passed by `run`
    required = {n for n, p in parameters.items() if n not in ("self", "model") and p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    assert required <= {"horizon"} and ("horizon" in parameters) == AGENTS[name].needs_horizon


def cycle_model():
    """Two states, one action, deterministic cycle 0 -> 1 -> 0 ..., starting in 0.

    The trajectory is 0, 1, 0, 1, ...: step t visits pair (0, 0) when t is odd and
    (1, 0) when t is even, whatever the agent does, so epoch boundaries can be
    traced by hand.
    """
    kernel = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])
    return CMDP(rewards=np.array([[[1.0], [0.0]]]), objective=Linear([1.0]), kernel=kernel, initial=[1.0, 0.0])


class Recording:
    """Wraps a trigger and records what the loop gave it at each epoch start."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        self.calls.append((epoch_start, visits_before[:, 0].tolist(), previous_epoch_visits[:, 0].tolist()))
        return self.inner.limits(visits_before, previous_epoch_visits, epoch_start)


# Hand trace, doubling (ν_e(s,a) >= max(1, N_e(s,a))), pairs written (N(0), N(1)):
#   e1 t=1  N=(0,0) thresholds (1,1): step 1 visits 0 -> ends (length 1)
#   e2 t=2  N=(1,0) thresholds (1,1): step 2 visits 1 -> ends
#   e3 t=3  N=(1,1) thresholds (1,1): step 3 visits 0 -> ends
#   e4 t=4  N=(2,1) thresholds (2,1): step 4 visits 1 (ν=1>=1) -> ends
#   e5 t=5  N=(2,2) thresholds (2,2): steps 5,6,7 -> ν(0)=2 at step 7 (length 3)
#   e6 t=8  N=(4,3) thresholds (4,3): steps 8..12 -> ν(1)=3 at step 12 (length 5)
#   e7 t=13 N=(6,6) thresholds (6,6): steps 13..23 -> ν(0)=6 at step 23 (length 11)
#   e8 t=24 N=(12,11): cut by the horizon T=30 (length 7)
DOUBLING = [(1, [0, 0], [0, 0]), (2, [1, 0], [1, 0]), (3, [1, 1], [0, 1]), (4, [2, 1], [1, 0]),
            (5, [2, 2], [0, 1]), (8, [4, 3], [2, 1]), (13, [6, 6], [2, 3]), (24, [12, 11], [6, 5])]
# Hand trace, linear-global (epoch e ends when some pair reaches e visits, see GlobalLinearTrigger; the paper's
# per-pair linear rule is traced in test_agent_options.py):
#   e1 t=1 threshold 1: step 1 -> ends;  e2 t=2 threshold 2: steps 2,3,4 -> ν(1)=2 at step 4
#   e3 t=5 threshold 3: steps 5..9 -> ν(0)=3 at 9;  e4 t=10 threshold 4: steps 10..16 -> ν(1)=4 at 16
#   e5 t=17 threshold 5: steps 17..25 -> ν(0)=5 at 25;  e6 t=26: cut by T=30
LINEAR = [(1, [0, 0], [0, 0]), (2, [1, 0], [1, 0]), (5, [2, 2], [1, 2]), (10, [5, 4], [3, 2]),
          (17, [8, 8], [3, 4]), (26, [13, 12], [5, 4])]
# Per-pair reading: thresholds max(1, ν_{e-1}(s,a)+1) = 1 for the pair not visited last epoch: every epoch is one step.
PER_PAIR = [(t, [(t - 1 + 1) // 2, (t - 1) // 2], [int(t > 1 and t % 2 == 0), int(t > 1 and t % 2 == 1)]) for t in range(1, 31)]


@pytest.mark.parametrize("trigger, expected", [(DoublingTrigger(), DOUBLING), (GlobalLinearTrigger(), LINEAR),
                                               (PerPairLinearTrigger(), PER_PAIR)],
                         ids=["doubling", "linear-global", "per-pair"])
@pytest.mark.parametrize("agent_class", [UcCurl, PsCurl])
@pytest.mark.parametrize("path", ["fast", "generic"])
def test_hand_traced_epochs(trigger, expected, agent_class, path):
    model = cycle_model()
    recording = Recording(trigger)
    agent = agent_class(model, trigger=recording)
    trace = run(agent, make(model), 30, seed=0, path=path, progress=False)
    assert recording.calls == expected
    starts = [e.start for e in trace.epochs]
    assert starts == [c[0] for c in expected]
    assert [e.length for e in trace.epochs] == list(np.diff(starts + [31]))
    # after the run N = (15, 15): fifteen visits each
    np.testing.assert_array_equal(agent.visits[:, 0], [15, 15])
    np.testing.assert_array_equal(agent.counts[:, 0, :], [[0, 15], [15, 0]])


@pytest.mark.parametrize("lower_bound", [None, 10.0])
def test_epsilon_follows_the_schedule(lower_bound):
    model = cycle_model()
    agent = PsCurl(model, trigger="doubling", tightness_constant=2.0, horizon_lower_bound=lower_bound)
    trace = run(agent, make(model), 30, seed=0, progress=False)
    for epoch in trace.epochs:
        tau = epoch.start if lower_bound is None else max(epoch.start, lower_bound)
        assert epoch.epsilon == pytest.approx(2.0 * math.sqrt(math.log(tau) / tau), rel=1e-12)
    assert trace.epochs[0].epsilon == (0.0 if lower_bound is None else pytest.approx(2 * math.sqrt(math.log(10) / 10)))


@pytest.mark.parametrize("name, options, steps, seed", [
    ("ps-curl", {"trigger": "linear"}, 4000, 11),
    ("uc-curl", {"trigger": "linear", "radius": "experiment"}, 3000, 4),   # the stateful per-pair trigger, many epochs
])
def test_fast_and_generic_paths_give_identical_traces(name, options, steps, seed):
    env_name = "queue"
    results = []
    for path in ("fast", "generic"):
        agent = make_agent(name, build_model(env_name), **options)
        trace = run(agent, make(env_name), steps, seed=seed, path=path, progress=False)
        data = trace.to_dict()
        for epoch in data["epochs"]:
            epoch.pop("solve_time")
        data["meta"].pop("path")
        data.pop("wall_time")
        results.append((data, agent.counts.copy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert len(results[0][0]["epochs"]) > 5


def uniform_visits_by_hand(model, steps, seed):
    """The visits of a run that plays the uniform policy, from the loop's documented use of the seed alone.

    ``SeedSequence(seed).spawn(3)`` gives the environment's seed (its first 32-bit word, Gymnasium's ``reset(seed=)``),
    the action stream and the agent's stream. The environment draws one uniform for the initial state and one per
    step (the first successor whose cumulative probability exceeds it); each step first draws its action uniform
    ``u`` (the first action whose cumulative policy probability exceeds ``u``).
    """
    env_seq, action_seq, _ = np.random.SeedSequence(seed).spawn(3)
    environment = np.random.default_rng(int(env_seq.generate_state(1)[0]))
    actions = np.random.default_rng(action_seq)
    S, A = model.n_states, model.n_actions
    cumulative_policy = np.cumsum(np.full(A, 1.0 / A))
    state = min(int(np.searchsorted(np.cumsum(model.initial), environment.random(), side="right")), S - 1)
    visits = np.zeros((S, A))
    for _ in range(steps):
        action = int(np.argmax(cumulative_policy > actions.random()))
        visits[state, action] += 1
        row = np.cumsum(model.kernel[state, action])
        state = min(int(np.searchsorted(row, environment.random(), side="right")), S - 1)
    return visits


@pytest.mark.parametrize("path", ["fast", "generic"])
def test_a_run_is_the_trajectory_its_seed_gives_by_hand(path):
    # primal-dual plays the uniform policy through its first episode, here the whole run: the trajectory is then the
    # seed's alone, recomputed above without the loop
    model, steps = build_model("queue"), 3000
    traces = {}
    for seed in (5, 6):
        agent = PrimalDual(model, horizon=steps, episode_length=steps)
        traces[seed] = run(agent, make("queue"), steps, seed=seed, path=path, progress=False)
        expected = uniform_visits_by_hand(model, steps, seed)
        np.testing.assert_array_equal(agent.visits, expected)
        assert traces[seed].checkpoints["rewards"][-1][0] == pytest.approx(
            (expected * model.rewards[0]).sum() / steps, rel=1e-12)
    assert not np.array_equal(traces[5].checkpoints["rewards"], traces[6].checkpoints["rewards"])


def test_highs_and_cvxpy_agents_follow_the_same_trajectory():
    pytest.importorskip("cvxpy")
    traces = []
    for backend in ("highs", "cvxpy"):
        agent = make_agent("ps-curl", build_model("queue"), backend=backend, trigger="doubling")
        traces.append((run(agent, make("queue"), 3000, seed=2, progress=False), agent.counts.copy()))
    (a, counts_a), (b, counts_b) = traces
    np.testing.assert_array_equal(counts_a, counts_b)
    assert [e.start for e in a.epochs] == [e.start for e in b.epochs]
    np.testing.assert_array_equal(a.checkpoints["rewards"], b.checkpoints["rewards"])
    # The policies agree to solver tolerance. π = ρ(s,·)/Σ_b ρ(s,b) amplifies the interior-point
    # solver's ~1e-9 errors in states of small mass (seen: differences up to 2e-6), hence 1e-5.
    for ea, eb in zip(a.epochs, b.epochs, strict=True):
        assert ea.source == eb.source
        assert ea.exact_objective == pytest.approx(eb.exact_objective, abs=1e-5)


def test_infeasible_tight_programs_are_recorded_as_fallback():
    # Queue: ζ_1 <= 4 for every policy, so ε_e > 4 makes the ε-tight program infeasible.
    # With K_ε = 10, ε_e = 10 sqrt(ln t / t) > 4 for every start t in [2, 20].
    agent = make_agent("ps-curl", build_model("queue"), tightness_constant=10.0, trigger="linear")
    trace = run(agent, make("queue"), 300, seed=0, progress=False)
    early = [e for e in trace.epochs if 2 <= e.start <= 20]
    assert early and all(e.source == PlanSource.FALLBACK for e in early)
    assert all("infeasible" in e.message for e in early)
    assert trace.summary()["fallback_epochs"] >= len(early)
    assert trace.epochs[0].source == PlanSource.TIGHT  # ε = 0 at t = 1


def test_solver_failure_keeps_the_previous_policy_and_is_recorded():
    model = build_model("queue")
    agent = PsCurl(model, backend=FailingHighs(fail_on={1, 3}), trigger="linear")
    trace = run(agent, make("queue"), 500, seed=0, progress=False)
    sources = [e.source for e in trace.epochs[:4]]
    assert sources[0] == PlanSource.UNIFORM and "no previous policy" in trace.epochs[0].message
    assert sources[2] == PlanSource.KEPT and "injected fault" in trace.epochs[2].message
    assert trace.epochs[2].exact_objective == trace.epochs[1].exact_objective  # same policy as epoch 2
    assert trace.summary()["failed_epochs"] == 2
    assert trace.checkpoints["t"][-1] == 500


def test_ps_curl_finds_the_optimal_policy_of_a_two_state_cmdp():
    # Action a moves to state a with probability 0.8 (to the other with 0.2), from either state.
    # Reward 1 in state 1. Always playing 1 keeps μ(1) = 0.8, always 0 gives μ(1) = 0.2 and mixing
    # lies in between, so "always 1" is the unique optimum (reward 0.8). The cost 1{s = 1} with
    # ζ <= 0.9 leaves it feasible with slack 0.1, more than ε at t = 20000 (0.022).
    kernel = np.zeros((2, 2, 2))
    for s in range(2):
        kernel[s, 0] = [0.8, 0.2]
        kernel[s, 1] = [0.2, 0.8]
    rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    costs = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 0.9)], kernel)
    for seed in (0, 1, 2):
        agent = make_agent("ps-curl", model, trigger="doubling")
        trace = run(agent, make(model), 20_000, seed=seed, progress=False)
        np.testing.assert_allclose(agent.policy, [[0.0, 1.0], [0.0, 1.0]], atol=1e-6)
        assert trace.epochs[-1].exact_objective == pytest.approx(0.8, abs=1e-9)
        assert trace.summary()["violation"] == 0.0


def test_trace_round_trips_through_a_file(tmp_path):
    agent = make_agent("uc-curl", build_model("queue"), trigger="linear")
    trace = run(agent, make("queue"), 2000, seed=3, progress=False)
    for name in ("trace.json", "trace.json.gz"):
        path = trace.save(tmp_path / name)
        loaded = load_trace(path)
        assert loaded.to_dict() == trace.to_dict()
        assert loaded.summary() == trace.summary()


def test_corrupt_trace_is_reported(tmp_path):
    agent = make_agent("ps-curl", build_model("queue"))
    path = run(agent, make("queue"), 500, seed=0, progress=False).save(tmp_path / "t.json")
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(CurloptError, match="corrupt or truncated"):
        load_trace(path)


def test_metrics_follow_spec_section_7():
    trace = run(make_agent("ps-curl", build_model("queue")), make("queue"), 3000, seed=1, progress=False)
    c = trace.checkpoints
    optimum = trace.optimum["objective"]
    np.testing.assert_allclose(c["objective"], c["rewards"][:, 0])  # f(λ) = λ for the queue
    np.testing.assert_allclose(c["regret"], optimum - c["objective"])
    np.testing.assert_allclose(c["constraints"], -c["costs"])  # g_i = -ζ_i
    np.testing.assert_allclose(c["violation"], np.maximum(0.0, c["constraints"].max(axis=1)))
    assert c["t"][0] == 1 and c["t"][-1] == 3000 and np.all(np.diff(c["t"]) > 0)


@pytest.mark.parametrize("bad, pattern", [(dict(steps=0), "steps must be an integer >= 1"),
                                          (dict(steps=10, seed=-1), "seed must be an integer >= 0"),
                                          (dict(steps=10, path="slow"), "path must be 'auto', 'fast' or 'generic'")])
def test_run_validates_its_arguments(bad, pattern):
    agent = make_agent("ps-curl", build_model("queue"))
    with pytest.raises(CurloptError, match=pattern):
        run(agent, make("queue"), **bad)


def test_agent_options_are_validated():
    model = build_model("queue")
    with pytest.raises(CurloptError, match="unknown agent 'ps'"):
        make_agent("ps", model)
    with pytest.raises(CurloptError, match="tightness_constant"):
        make_agent("uc-curl", model, tightness_constant=-1.0)
    with pytest.raises(CurloptError, match=r"Dirichlet prior must be a number in \(0, 1e\+06\]"):
        make_agent("ps-curl", model, prior=0.0)
    with pytest.raises(CurloptError, match="unknown epoch trigger"):
        make_agent("ps-curl", model, trigger="quadratic")

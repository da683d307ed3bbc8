"""Which backend ``auto`` takes: the registry's one rule, on both sides of each threshold, and every caller using it
(the optimum, each agent, ``curlopt run``'s reference optimum)."""

from __future__ import annotations

import importlib.util

import pytest

from curlopt.agents import make_agent
from curlopt.backends.registry import (
    COLUMNS_FROM_ENTRIES,
    COLUMNS_FROM_STATES,
    SHALLOW_DEPTH,
    auto_backend,
    choose_backend,
    kernel_entries,
    reach_depth,
)
from curlopt.experiments.simulation.loop import _optimum_backend
from curlopt.models import build_model
from curlopt.programs import (
    BoxOptimisticProgram,
    LeastViolationProgram,
    OccupancyProgram,
    OptimisticProgram,
    SafeProgram,
)

HAS_CVXPY = importlib.util.find_spec("cvxpy") is not None


def _choice(name, params, program):
    model = build_model(name, **params)
    return choose_backend((model.objective, *model.constraints), model, program)


#: (model, parameters, program, the backend auto takes)
CASES = [
    # the paper's sizes: the whole LP, as always
    ("queue", {}, OccupancyProgram, "highs"),
    ("queue", {}, OptimisticProgram, "highs"),                        # 576 kernel entries
    ("queue", {}, BoxOptimisticProgram, "highs"),
    ("random", {"n_states": 10, "n_actions": 3, "successors": 3}, SafeProgram, "highs"),
    # UC-CURL's and UCRL-CMDP's column generation from 1,000 kernel entries (S²·A stored dense, nonzeros stored sparse)
    ("random", {"n_states": 20, "n_actions": 3, "successors": 3}, OptimisticProgram, "highs-columns"),  # 1,200
    ("random", {"n_states": 20, "n_actions": 3, "successors": 3, "storage": "sparse"}, OptimisticProgram, "highs"),
    ("random", {"n_states": 20, "n_actions": 5}, BoxOptimisticProgram, "highs-box-columns"),
    ("queue", {"buffer": 1000}, OptimisticProgram, "highs-columns"),
    ("queue", {"buffer": 1000}, BoxOptimisticProgram, "highs-box-columns"),
    # a long queue is deep: value iteration would crawl along it, so its occupancy program stays on highs
    ("queue", {"buffer": 1000}, OccupancyProgram, "highs"),
    # large shallow chains: the occupancy programs by column generation with value iteration
    ("random", {"n_states": 3000, "n_actions": 4, "successors": 5}, OccupancyProgram, "mdp-columns"),
    ("random", {"n_states": 3000, "n_actions": 4, "successors": 5}, SafeProgram, "mdp-columns"),
    ("random", {"n_states": 3000, "n_actions": 4, "successors": 5}, LeastViolationProgram, "mdp-columns"),
    # ... but their optimistic programs stay whole on highs (sparse and shallow: column generation is slower there)
    ("random", {"n_states": 3000, "n_actions": 4, "successors": 5}, OptimisticProgram, "highs"),
    ("random", {"n_states": 1000, "n_actions": 4, "successors": 5}, BoxOptimisticProgram, "highs"),
    ("random", {"n_states": 60, "n_actions": 4}, OptimisticProgram, "highs-columns"),  # shallow, but small
    ("random", {"n_states": COLUMNS_FROM_STATES, "n_actions": 2, "successors": 4}, OccupancyProgram, "mdp-columns"),
    ("random", {"n_states": COLUMNS_FROM_STATES - 1, "n_actions": 2, "successors": 4}, OccupancyProgram, "highs"),
]

NONLINEAR_CASES = [
    ("scheduler", {}, OccupancyProgram, "cvxpy"),                     # the paper's scheduler: as always
    ("scheduler", {}, OptimisticProgram, "cvxpy"),                    # no LP backend takes a sum of logs
    ("random", {"n_states": 300, "n_actions": 4, "successors": 5, "objective": "log", "n_rewards": 2},
     OccupancyProgram, "mdp-columns"),
]


@pytest.mark.parametrize(("name", "params", "program", "expected"), CASES)
def test_the_auto_rule(name, params, program, expected):
    assert _choice(name, params, program) == expected


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
@pytest.mark.parametrize(("name", "params", "program", "expected"), NONLINEAR_CASES)
def test_the_auto_rule_for_utilities_no_lp_takes(name, params, program, expected):
    assert _choice(name, params, program) == expected


def test_without_a_model_only_the_utilities_decide():
    model = build_model("random", n_states=3000, n_actions=4, successors=5)
    assert choose_backend((model.objective, *model.constraints)) == "highs"


def test_the_models_structure_as_the_rule_reads_it():
    # a birth-death chain needs one step per state to reach the end of its buffer
    assert reach_depth(build_model("queue", buffer=40)) == 40
    # a dense kernel reaches every state in one step
    assert reach_depth(build_model("random", n_states=30, n_actions=2)) == 1
    assert reach_depth(build_model("random", n_states=3000, n_actions=4, successors=5)) <= SHALLOW_DEPTH
    queue = build_model("queue")
    assert kernel_entries(queue) == queue.n_states ** 2 * queue.n_actions < COLUMNS_FROM_ENTRIES
    sparse = build_model("queue", buffer=1000)
    assert sparse.sparse and kernel_entries(sparse) == sparse.n_actions * (3 * sparse.n_states - 2)


def test_a_named_backend_is_never_replaced():
    model = build_model("random", n_states=3000, n_actions=4, successors=5)
    assert auto_backend("highs", model, OccupancyProgram) == "highs"
    assert auto_backend("auto", model, OccupancyProgram) == "mdp-columns"


@pytest.mark.parametrize(("agent", "params", "options", "expected"), [
    ("uc-curl", {"n_states": 20, "n_actions": 5}, {}, "highs-columns"),
    ("uc-curl", {"n_states": 10, "n_actions": 3}, {}, "highs"),
    ("ps-curl", {"n_states": 300, "n_actions": 2, "successors": 4}, {}, "mdp-columns"),
    ("ps-curl", {"n_states": 10, "n_actions": 3}, {}, "highs"),
    ("safe-curl", {"n_states": 300, "n_actions": 2, "successors": 4}, {}, "mdp-columns"),
    ("ucrl-cmdp", {"n_states": 10, "n_actions": 3}, {"horizon": 100, "backend": "auto"}, "highs"),
    ("ucrl-cmdp", {"n_states": 10, "n_actions": 3}, {"horizon": 100}, "highs-box-columns"),  # its own default
])
def test_every_agent_resolves_auto_by_the_rule(agent, params, options, expected):
    assert make_agent(agent, build_model("random", **params), **options).backend.name == expected


def test_the_reference_optimum_takes_the_given_backend_else_the_agents_else_the_rule():
    queue = build_model("queue", buffer=1000)  # deep: the agent's backend, as always
    assert _optimum_backend(queue, make_agent("uc-curl", queue)) == "highs-columns"
    assert _optimum_backend(queue, make_agent("uc-curl", queue), "auto") == "highs"
    small = build_model("scheduler")
    assert _optimum_backend(small, make_agent("ps-curl", small, backend="pyomo")) == "pyomo"
    large = build_model("random", n_states=300, n_actions=2, successors=4)  # large and shallow: the rule's backend
    agent = make_agent("ps-curl", large, backend="highs")
    assert _optimum_backend(large, agent) == "mdp-columns"
    assert _optimum_backend(large, agent, "scipy") == "scipy"
    assert _optimum_backend(large, object()) == "mdp-columns"  # an agent without a backend


def test_curlopt_run_names_the_backend_of_the_reference_optimum(capsys, tmp_path):
    from cli_helpers import invoke

    from curlopt.experiments import load_trace

    out = tmp_path / "run.json"
    code, _, err = invoke(["run", "queue", "--steps", "50", "--optimum-backend", "scipy", "--out", str(out)], capsys)
    assert code == 0, err
    trace = load_trace(out)
    assert trace.optimum["backend"] == "scipy" and trace.meta["backend"] == "highs"
    code, _, err = invoke(["run", "queue", "--steps", "50", "--optimum-backend", "no-such-backend"], capsys)
    assert code != 0 and "no-such-backend" in err


def test_curlopt_backends_says_where_auto_takes_each(capsys):
    from cli_helpers import invoke

    code, out, err = invoke(["backends"], capsys)
    assert code == 0, err
    auto = {line.split()[0]: line.split("; auto: ")[1] for line in out.splitlines()}
    assert auto["scipy"] == "never (used only when named)"
    assert auto["mdp-columns"].startswith("the occupancy program") and f"S >= {COLUMNS_FROM_STATES}" in auto["mdp-columns"]
    assert f"{COLUMNS_FROM_ENTRIES:,} kernel entries" in auto["highs-columns"]

"""Episodic corners: sparse per-step kernels under the learning agents, agents without a backend, the per-step
signals' messages, and the mdp-columns residual check on long horizons."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import invoke

from curlopt.agents import AGENTS, agent_options, make_agent
from curlopt.agents.episodic import EPISODIC_AGENTS, make_episodic_agent
from curlopt.errors import AgentError, ModelError
from curlopt.experiments.simulation.episodes import run_episodes
from curlopt.models import build_model
from curlopt.models.episodic import EpisodicCMDP
from curlopt.models.files import save_model
from curlopt.utilities.library import Linear, LinearBound

S, A, H = 4, 2, 4


def sparse_kernels(seed: int = 0) -> np.ndarray:
    """H − 1 kernels where every pair reaches two successors, a different pair of them at every step (so the
    union of the steps' patterns is wider than any one step's)."""
    rng = np.random.default_rng(seed)
    kernels = np.zeros((H - 1, S, A, S))
    for h in range(H - 1):
        for s in range(S):
            for a in range(A):
                kernels[h, s, a, rng.choice(S, 2, replace=False)] = rng.dirichlet(np.ones(2))
    return kernels


def per_step_model(storage: str) -> EpisodicCMDP:
    kernels = sparse_kernels()
    given = [sp.csr_array(k.reshape(S * A, S)) for k in kernels] if storage == "sparse" else kernels
    rng = np.random.default_rng(1)
    rewards, costs = rng.random((1, S, A)), rng.random((1, S, A))
    costs[:, :, 0] = 0.0                                   # action 0 costs nothing: the safe policy
    safe = np.tile([1.0, 0.0], (S, 1))
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 0.5 * H)], given, horizon=H,
                        safe_policy=safe, storage=storage)


def test_the_two_storages_hold_the_same_model():
    dense, sparse = per_step_model("dense"), per_step_model("sparse")
    assert sp.issparse(sparse.step_kernel(0)) and not sp.issparse(dense.step_kernel(0))
    for h in range(H - 1):
        assert np.array_equal(sparse.step_kernel_dense(h), dense.step_kernel_dense(h))
        # every step's pattern leaves out successors the union of the steps lets in
        assert np.count_nonzero(dense.step_kernel_dense(h)) == S * A * 2


@pytest.mark.parametrize("name", sorted(EPISODIC_AGENTS))
def test_every_agent_runs_on_sparse_per_step_kernels_as_on_dense_ones(name):
    traces = []
    for storage in ("dense", "sparse"):
        model = per_step_model(storage)
        agent = make_episodic_agent(name, model, episodes=50, seed=3)
        traces.append(run_episodes(model, agent, episodes=50, seed=3))
    dense, sparse = traces
    assert dense.columns.keys() == sparse.columns.keys()
    timings = {column for column in dense.columns if column.endswith("_time")}   # wall-clock, never equal
    for column in dense.columns.keys() - timings:
        assert np.array_equal(dense.columns[column], sparse.columns[column], equal_nan=True), column
    assert dense.sources == sparse.sources and dense.statuses == sparse.statuses


# -- an agent that solves no program is given a backend ---------------------------------------------------------------
NO_BACKEND = sorted(name for name, cls in EPISODIC_AGENTS.items()
                    if "backend" not in inspect.signature(cls.__init__).parameters)


def test_some_episodic_agents_take_no_backend():
    assert {"triple-q", "moma"} <= set(NO_BACKEND)


@pytest.mark.parametrize("name", NO_BACKEND)
def test_an_episodic_agent_without_a_program_refuses_a_backend_by_name(name):
    with pytest.raises(AgentError, match=rf"^{name} solves no program: it takes no backend"):
        make_episodic_agent(name, per_step_model("dense"), backend="highs")


def test_an_episodic_agent_refuses_an_unknown_option_naming_what_it_takes():
    with pytest.raises(AgentError, match=r"^triple-q does not take 'warmth'; its options are .*frame_exponent"):
        make_episodic_agent("triple-q", per_step_model("dense"), warmth=1)


@pytest.mark.parametrize("name", sorted(name for name in AGENTS if "backend" not in agent_options(name)))
def test_an_infinite_horizon_agent_without_a_program_refuses_a_backend_by_name(name):
    with pytest.raises(AgentError, match=rf"^{name} does not take 'backend': it solves no optimisation program"):
        make_agent(name, build_model("queue"), horizon=100, backend="highs")


def test_curlopt_run_says_an_episodic_agent_takes_no_backend(tmp_path, capsys):
    path = save_model(per_step_model("sparse"), tmp_path / "model.json")
    code, out, err = invoke(["run", str(path), "--agent", "triple-q", "--backend", "highs", "-T", "5"], capsys)
    assert code != 0
    assert "triple-q solves no program: it takes no backend" in out + err
    assert "unexpected keyword" not in out + err


# -- per-step signals of the wrong size name the array that is wrong ------------------------------------------------
def signal_model(rewards, costs, kernel_storage="dense"):
    kernels = sparse_kernels()
    given = [sp.csr_array(k.reshape(S * A, S)) for k in kernels] if kernel_storage == "sparse" else kernels
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 1.0)], given, horizon=H)


@pytest.mark.parametrize("kernel_storage", ["dense", "sparse"])
def test_per_step_rewards_with_a_wrong_state_count_are_named(kernel_storage):
    with pytest.raises(ModelError, match=r"^rewards has shape \(4, 1, 5, 2\), but the kernel has S=4 states and A=2"):
        signal_model(np.ones((H, 1, S + 1, A)), np.ones((1, S, A)), kernel_storage)
    with pytest.raises(ModelError, match=r"^rewards has shape \(4, 1, 4, 3\)"):
        signal_model(np.ones((H, 1, S, A + 1)), np.ones((H, 1, S, A)), kernel_storage)
    with pytest.raises(ModelError, match=r"^costs has shape \(4, 1, 5, 2\)"):
        signal_model(np.ones((1, S, A)), np.ones((H, 1, S + 1, A)), kernel_storage)
    with pytest.raises(ModelError, match=r"^the kernel has S=4 states and A=2 actions, but the rewards and the costs"):
        signal_model(np.ones((H, 1, S + 1, A)), np.ones((H, 1, S + 1, A)), kernel_storage)
    assert signal_model(np.ones((H, 1, S, A)), np.ones((H, 1, S, A)), kernel_storage).n_states == S


# -- the residual check on totals of long episodes --------------------------------------------------------------------
def occupancy_point(model, program, shift=0.0):
    """The program's variables at the uniform policy (occupancy by a forward recursion written here), with the cost
    total moved by ``shift``; and the totals' exact values."""
    H_, S_, A_ = model.horizon, model.n_states, model.n_actions
    kernel = np.asarray(model.kernel)
    q = np.empty((H_, S_, A_))
    d = np.asarray(model.initial, dtype=float)
    for h in range(H_):
        q[h] = d[:, None] / A_
        d = np.einsum("sa,sat->t", q[h], kernel)
    x = np.zeros(program.n_vars)
    x[program.blocks["occupancy"].slice] = q.ravel()
    rewards = np.einsum("ksa,hsa->k", np.asarray(model.rewards), q)
    costs = np.einsum("dsa,hsa->d", np.asarray(model.costs), q)
    x[program.blocks["reward_totals"].slice] = rewards
    x[program.blocks["cost_totals"].slice] = costs + shift
    return x, costs


def long_model(horizon: int, bound: float) -> EpisodicCMDP:
    kernel = sparse_kernels()[0]
    rewards, costs = np.full((1, S, A), 0.5), np.full((1, S, A), 0.5)
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], bound)], kernel, horizon=horizon)


def test_a_long_episodes_totals_are_checked_relative_to_their_size():
    from curlopt.programs import EpisodicOccupancyProgram

    model = long_model(4000, 0.5 * 4000)          # totals 2,000
    program = EpisodicOccupancyProgram(model)
    x, costs = occupancy_point(model, program, shift=2e-6)
    assert costs[0] == pytest.approx(2000.0)
    residuals = program.residuals(x)
    # 2e-6 absolute on totals of 2,000 is 1e-9 relative: far inside the solvers' accuracy, not a failed point
    assert residuals["cost_totals"] == pytest.approx(2e-6 / 2000.0, rel=1e-6)
    assert residuals["constraints"] == pytest.approx(2e-6 / 2000.0, rel=1e-3)
    assert residuals["flow"] < 1e-12 and residuals["initial"] < 1e-12


def test_a_small_models_totals_keep_the_absolute_check():
    from curlopt.programs import EpisodicOccupancyProgram, OccupancyProgram

    model = long_model(1, 0.5)                    # one step: totals 0.5
    program = EpisodicOccupancyProgram(model)
    x, _ = occupancy_point(model, program, shift=2e-6)
    residuals = program.residuals(x)
    assert residuals["cost_totals"] == pytest.approx(2e-6, rel=1e-6)
    assert residuals["constraints"] == pytest.approx(2e-6, rel=1e-6)
    # and an infinite-horizon program keeps every row absolute, whatever the size of its totals
    average = OccupancyProgram(build_model("queue"))
    assert average.SCALED_GROUPS == frozenset()
    occupancy = average.blocks["occupancy"]
    y = np.zeros(average.n_vars)
    y[occupancy.slice] = 1000.0 / occupancy.size              # the row Σ ρ = 1 then misses by 999
    assert average.residuals(y)["mass"] == pytest.approx(999.0)

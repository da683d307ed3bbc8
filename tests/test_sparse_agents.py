"""Learning agents on models stored sparse: counts, estimates and programs on the agent's support.

What is checked, and against what:

* counts — an epoch's transitions handed over as the learning loop hands them (``transition_counts`` then
  ``end_epoch``) give, on a sparse support, the counts of a dense array built here with ``np.add.at``, the
  visits ``N(s,a)`` and the previous epoch's visits; an agent on the full support of the same model gets the
  same numbers (Hypothesis over random sparse models and trajectories on their support);
* estimates — the plug-in kernel, the posterior width and the support radius on a sparse support equal
  formulas written here; UC-CURL's program gets the same ``P̂`` and ``β`` from a sparse-support and a
  full-support agent holding the same counts;
* posterior draws — a draw on a sparse support has its mass on the support only, rows summing to 1, and the
  mean of many draws is the Dirichlet mean ``(α0 + n) / (k α0 + N)`` within 5 standard errors (from the
  Dirichlet variance, written here);
* runs — PS-CURL, UC-CURL, safe mode, UCRL-CMDP and primal-dual on a sparse-stored queue with
  ``support="full"`` follow the dense model's run exactly (the same steps, epochs and counts), as the
  math says they must: the same algorithm on the same numbers;
* refusals — ``support="full"`` above the limit, an unknown support, a transition outside the support (also
  from a run whose environment does not follow the agent's model), primal-dual on a large sparse model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curlopt import CMDP, build_model
from curlopt.agents import PsCurl, UcCurl, make_agent
from curlopt.agents.estimates import (
    FULL_SUPPORT_LIMIT,
    plug_in_estimate,
    posterior_width,
    support_radius,
)
from curlopt.agents.safe_sizing import bias_spans, mixing_factor
from curlopt.envs import TabularCMDPEnv
from curlopt.errors import AgentError, UnsupportedModelError
from curlopt.experiments.simulation.loop import run
from curlopt.models.random import random_model

ESTIMATES = settings(suppress_health_check=[HealthCheck.too_slow])


@st.composite
def sparse_problems(draw):
    """A random sparse-stored model (k successors a row) and a few epochs of transitions on its support."""
    S = draw(st.integers(3, 6))
    A = draw(st.integers(1, 3))
    k = draw(st.integers(2, 3))
    model = random_model(S, A, seed=draw(st.integers(0, 10_000)), successors=k, storage="sparse")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = model.transitions
    epochs = []
    for _ in range(draw(st.integers(1, 3))):
        pairs = rng.integers(0, S * A, size=int(rng.integers(0, 40)))
        nexts = np.array([rng.choice(rows.indices[rows.indptr[p]:rows.indptr[p + 1]]) for p in pairs], dtype=np.int64)
        epochs.append((pairs, nexts))
    return model, epochs


def hand_counts(model: CMDP, epochs) -> np.ndarray:
    """``n(s,a,s')`` as a dense (S, A, S) array, one transition at a time."""
    S, A = model.n_states, model.n_actions
    counts = np.zeros((S * A, S))
    for pairs, nexts in epochs:
        np.add.at(counts, (pairs, nexts), 1.0)
    return counts.reshape(S, A, S)


def learn(agent, epochs) -> None:
    """Hand ``epochs`` to ``agent`` as the learning loop does."""
    for pairs, nexts in epochs:
        agent.end_epoch(agent.transition_counts(pairs, nexts), np.zeros(1), np.zeros(1), len(pairs))


def dense(matrix) -> np.ndarray:
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


@ESTIMATES
@given(sparse_problems())
def test_counts_on_the_support_are_the_transitions_counted(problem):
    model, epochs = problem
    S, A = model.n_states, model.n_actions
    sparse_agent, full_agent = PsCurl(model, support="model"), PsCurl(model, support="full")
    assert not sparse_agent.support.is_dense and full_agent.support.is_dense
    learn(sparse_agent, epochs)
    learn(full_agent, epochs)
    expected = hand_counts(model, epochs)
    np.testing.assert_array_equal(dense(sparse_agent.counts).reshape(S, A, S), expected)
    np.testing.assert_array_equal(full_agent.counts, expected)
    np.testing.assert_array_equal(sparse_agent.visits, expected.sum(axis=2))
    np.testing.assert_array_equal(full_agent.visits, expected.sum(axis=2))
    last = hand_counts(model, epochs[-1:]).sum(axis=2)
    np.testing.assert_array_equal(sparse_agent.previous_epoch_visits, last)
    np.testing.assert_array_equal(full_agent.previous_epoch_visits, last)
    assert sparse_agent.entry_counts.shape == (model.nnz,)


@ESTIMATES
@given(sparse_problems(), st.integers(1, 10**6))
def test_estimates_on_the_support_follow_their_formulas(problem, time):
    model, epochs = problem
    S, A = model.n_states, model.n_actions
    agent = PsCurl(model, support="model")
    learn(agent, epochs)
    n = hand_counts(model, epochs).reshape(S * A, S)
    N = n.sum(axis=1)
    allowed = dense(model.transitions) > 0
    k = allowed.sum(axis=1)
    counts = agent.entry_counts
    # P^ = n/N on a visited pair, uniform over its declared successors on an unvisited one, 0 off the support
    expected = np.where(N[:, None] > 0, n / np.maximum(N, 1)[:, None], allowed / k[:, None]) * allowed
    np.testing.assert_allclose(dense(plug_in_estimate(agent.support, counts)), expected, rtol=0, atol=1e-15)
    # the posterior width Σ_{s'} sqrt(m(1 - m)/(α + 1)) over the declared successors, with α = Σ (α0 + n)
    prior = 0.5
    width = np.empty(S * A)
    for row in range(S * A):
        alpha = prior + n[row, allowed[row]]
        mean = alpha / alpha.sum()
        width[row] = min(2.0, float(np.sqrt(mean * (1 - mean) / (alpha.sum() + 1)).sum()))
    np.testing.assert_allclose(posterior_width(agent.support, counts, prior).ravel(), width, rtol=1e-12)
    # the L1 radius with k(s,a) successors in place of S
    radius = np.sqrt(14.0 * k * math.log(2.0 * A * time) / np.maximum(1.0, N))
    np.testing.assert_allclose(support_radius(agent.support, N.reshape(S, A), time, "analysis").ravel(), radius,
                               rtol=1e-12)


@ESTIMATES
@given(sparse_problems(), st.integers(1, 10**6))
def test_uc_curl_gets_the_same_estimates_on_the_sparse_and_the_dense_path(problem, time):
    model, epochs = problem
    S, A = model.n_states, model.n_actions
    programs = []
    for support in ("model", "full"):
        agent = UcCurl(model, support=support, radius="experiment")
        learn(agent, epochs)
        agent.program.update(counts=agent.counts, time=time)
        programs.append(agent.program)
    sparse_program, full_program = programs
    assert sparse_program.support.nnz == model.nnz and full_program.support.nnz == S * A * S
    np.testing.assert_array_equal(dense(sparse_program.empirical_kernel).reshape(S, A, S),
                                  dense(full_program.empirical_kernel).reshape(S, A, S))
    np.testing.assert_array_equal(sparse_program.radius, full_program.radius)
    np.testing.assert_array_equal(dense(sparse_program.counts).reshape(S, A, S), hand_counts(model, epochs))


def test_a_posterior_draw_on_a_sparse_support_has_the_dirichlet_mean():
    model = random_model(4, 2, seed=3, successors=3, storage="sparse")
    agent = PsCurl(model, prior=0.7, seed=5, support="model")
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(11)
    pairs = rng.integers(0, S * A, size=60)
    rows = model.transitions
    nexts = np.array([rng.choice(rows.indices[rows.indptr[p]:rows.indptr[p + 1]]) for p in pairs])
    learn(agent, [(pairs, nexts)])
    pattern = agent.support.pattern()
    draws = 4000
    total = np.zeros(agent.support.nnz)
    for _ in range(draws):
        kernel = agent.sample_kernel()
        assert sp.issparse(kernel)
        # every stored entry is on the support, and each row is a distribution
        assert (dense(kernel) * (1 - dense(pattern)) == 0).all()
        np.testing.assert_allclose(dense(kernel).sum(axis=1), 1.0, rtol=0, atol=1e-12)
        total += agent.support.gather(kernel, "draw")
    n = agent.entry_counts
    alpha = agent.prior + n
    alpha_row = np.add.reduceat(alpha, agent.support.indptr[:-1])[agent.support.pairs]
    mean = alpha / alpha_row
    # the standard error of the average of `draws` independent draws: sqrt(Var / draws), Var = m(1-m)/(α + 1);
    # 5 standard errors: a correct sampler fails one of the 24 entries with probability below 1e-5 (seeded here)
    standard_error = np.sqrt(mean * (1 - mean) / (alpha_row + 1) / draws)
    assert np.all(np.abs(total / draws - mean) <= 5 * standard_error)


@pytest.mark.parametrize("seed", [0, 4])
def test_sensitivities_on_a_sparse_kernel_equal_the_dense_ones(seed):
    model = random_model(7, 3, seed=seed, successors=3, storage="sparse")
    S, A = model.n_states, model.n_actions
    policy = np.random.default_rng(seed).dirichlet(np.ones(A), size=S)
    signals = np.concatenate([model.rewards, model.costs])
    dense_kernel = dense(model.transitions).reshape(S, A, S)
    np.testing.assert_allclose(bias_spans(model.transitions, policy, signals), bias_spans(dense_kernel, policy, signals),
                               rtol=1e-10)
    assert mixing_factor(model.transitions) == pytest.approx(mixing_factor(dense_kernel), rel=1e-10)


# -- runs ---------------------------------------------------------------------------------------------------------------

RUNS = [("ps-curl", {}), ("uc-curl", {"radius": "experiment", "trigger": "linear"}), ("safe-curl", {}),
        ("ucrl-cmdp", {"horizon": 2000}), ("primal-dual", {"horizon": 2000, "episode_length": 300})]


@pytest.mark.parametrize("name, options", RUNS, ids=[name for name, _ in RUNS])
def test_the_full_support_of_a_sparse_model_plays_as_the_dense_model(name, options):
    """The same algorithm on the same numbers: the sparse-stored queue with support='full' steps, plans and counts
    exactly as the dense queue (the per-epoch exact values are computed by a sparse LU on one and a dense solve
    on the other, so they agree to rounding)."""
    traces = []
    for model, extra in ((build_model("queue"), {}), (build_model("queue", storage="sparse"), {"support": "full"})):
        if name == "primal-dual":
            extra = {}   # primal-dual keeps the full support on every model
        agent = make_agent(name, model, **options, **extra)
        trace = run(agent, TabularCMDPEnv(model), 2000, seed=3, progress=False)
        traces.append((trace, agent.counts.copy()))
    (dense_trace, dense_counts), (sparse_trace, sparse_counts) = traces
    assert sparse_trace.meta["support"] == "full" and "support" not in dense_trace.meta
    np.testing.assert_array_equal(sparse_counts, dense_counts)
    assert len(dense_trace.epochs) > 3
    for a, b in zip(dense_trace.epochs, sparse_trace.epochs, strict=True):
        assert (a.start, a.length, a.source, a.epsilon, a.status, a.unreached) == \
               (b.start, b.length, b.source, b.epsilon, b.status, b.unreached)
        np.testing.assert_allclose(a.exact_rewards, b.exact_rewards, rtol=1e-9, atol=1e-12)
    for column in ("t", "rewards", "costs", "constraints"):
        np.testing.assert_array_equal(dense_trace.checkpoints[column], sparse_trace.checkpoints[column])


@pytest.mark.parametrize("name", ["ps-curl", "uc-curl", "safe-curl"])
def test_a_sparse_support_agent_learns_on_the_declared_transitions(name):
    model = build_model("queue", storage="sparse")
    agent = make_agent(name, model, support="model")
    trace = run(agent, TabularCMDPEnv(model), 1500, seed=1, progress=False)
    assert trace.meta["support"] == "model" and not agent.support.is_dense
    assert agent.entry_counts.shape == (model.nnz,) and agent.entry_counts.sum() == 1500
    assert agent.program.support.nnz == model.nnz
    assert all(e.status == "optimal" for e in trace.epochs)


# -- refusals -----------------------------------------------------------------------------------------------------------


def test_the_full_support_is_refused_above_its_limit():
    model = build_model("queue", buffer=1000)      # sparse: S·A·S = 16 M entries
    assert model.sparse and model.n_states ** 2 * model.n_actions > FULL_SUPPORT_LIMIT
    with pytest.raises(AgentError, match=r"support='full'.*16,032,016 entries.*use support='model'"):
        PsCurl(model, support="full")
    with pytest.raises(UnsupportedModelError, match="primal-dual.*dense kernel"):
        make_agent("primal-dual", model, horizon=100)


def test_an_unknown_support_is_refused():
    with pytest.raises(AgentError, match=r"support must be one of 'auto', 'model', 'full'"):
        UcCurl(build_model("queue"), support="sparse")


def test_a_transition_outside_the_support_is_refused_naming_it():
    model = random_model(4, 2, seed=1, successors=2, storage="sparse")
    agent = PsCurl(model, support="model")
    allowed = dense(model.transitions) > 0
    row, successor = (int(i) for i in np.argwhere(~allowed)[0])
    epoch = sp.csr_array(([1.0], ([row], [successor])), shape=allowed.shape)
    s, a = divmod(row, model.n_actions)
    with pytest.raises(AgentError, match=rf"\(s, a\) = \({s}, {a}\) -> {successor}, outside"):
        agent.end_epoch(epoch, np.zeros(1), np.zeros(1), 1)


def test_a_run_whose_environment_leaves_the_declared_support_says_so():
    declared = random_model(4, 2, seed=1, successors=2, storage="sparse")
    S, A = declared.n_states, declared.n_actions
    # the same signals, but every transition possible
    other = CMDP(declared.rewards, declared.costs, declared.objective, declared.constraints,
                 kernel=np.full((S, A, S), 1.0 / S), initial=declared.initial)
    with pytest.raises(AgentError, match="outside the agent's support"):
        run(PsCurl(declared, support="model"), TabularCMDPEnv(other), 200, seed=0, progress=False, model=other)

"""PS-CURL's and safe mode's per-epoch path (posterior draws from kept arrays, programs written without checks)
gives, bit for bit, what the general functions give.

What is checked, and against what:

* draws — :class:`~curlopt.agents.estimates.PosteriorSampler` (the same sampler reused over epochs of changing
  counts) returns exactly the kernel of normalised Gamma draws written here (``rng.standard_gamma(prior +
  counts)``, row sums, all-zero rows made uniform, division), on dense and sparse supports, including priors so
  small that whole rows of draws are 0, and leaves the generator in the same state (its next numbers agree);
* widths — the sampler's posterior width equals ``Σ_{s'} std`` of the Dirichlet, written here from its formula;
* programs — ``update_unchecked`` of the occupancy program and of the safe program leaves the same parameter
  values, kernel, weights and ε as ``update`` with the same data, bit for bit, on random models and kernels;
* agents — an epoch of PS-CURL (both margins) and of safe mode writes the same program data as the general path
  (:func:`~curlopt.agents.estimates.posterior_kernel`, :func:`~curlopt.agents.estimates.posterior_width` and the
  checked ``update``) from the same generator state; safe mode's range sensitivities are the formula's.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt.agents import PsCurl, SafeCurl
from curlopt.agents.estimates import PosteriorSampler, posterior_kernel, posterior_width
from curlopt.models import random_model
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.safe import SafeProgram
from curlopt.programs.support import Support


def reference_draw(rng: np.random.Generator, support: Support, counts: np.ndarray, prior: float) -> np.ndarray:
    """A posterior draw as normalised Gamma variables, entry by entry in the support's order; values (S, A, S) on
    the dense support, else one per support entry."""
    draws = rng.standard_gamma(prior + counts)
    if support.is_dense:
        totals = draws.sum(axis=2, keepdims=True)
        empty = totals[..., 0] <= 0
        if np.any(empty):
            draws[empty] = 1.0
            totals = draws.sum(axis=2, keepdims=True)
        return draws / totals
    starts = support.indptr[:-1]
    totals = np.add.reduceat(draws, starts)
    if np.any(totals <= 0):
        draws[(totals <= 0)[support.pairs]] = 1.0
        totals = np.add.reduceat(draws, starts)
    return draws / totals[support.pairs]


def reference_width(support: Support, counts: np.ndarray, prior: float) -> np.ndarray:
    """``min(2, Σ_{s'} sqrt(m (1 - m) / (α_0 + 1)))`` with ``m = α / α_0`` over each pair's support entries (sums
    over the last axis of the (S, A, S) array on the dense support, entry by entry in CSR order on a sparse one)."""
    alpha = prior + counts
    if support.is_dense:
        total = alpha.sum(axis=2, keepdims=True)
        mean = alpha / total
        return np.minimum(2.0, np.sqrt(mean * (1.0 - mean) / (total + 1.0)).sum(axis=2))
    starts = support.indptr[:-1]
    total = np.add.reduceat(alpha, starts)[support.pairs]
    mean = alpha / total
    std = np.sqrt(mean * (1.0 - mean) / (total + 1.0))
    return np.minimum(2.0, np.add.reduceat(std, starts)).reshape(support.n_states, support.n_actions)


def supports(S: int, A: int, seed: int) -> list[Support]:
    """The dense support and a random sparse one (2 or 3 successors a pair)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(S * A):
        chosen = np.sort(rng.choice(S, size=int(rng.integers(2, 4)), replace=False))
        rows.append(chosen)
    indptr = np.concatenate([[0], np.cumsum([r.size for r in rows])])
    pattern = sp.csr_array((np.ones(indptr[-1]), np.concatenate(rows), indptr), shape=(S * A, S))
    return [Support.dense(S, A), Support.from_pattern(pattern, S, A)]


@pytest.mark.parametrize("prior", [1.0, 0.37, 1e-300])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_kept_sampler_draws_what_normalised_gamma_draws_give(seed, prior):
    S, A = 5, 3
    for support in supports(S, A, seed):
        sampler = PosteriorSampler(support, prior)
        kept, fresh = np.random.default_rng(seed), np.random.default_rng(seed)
        counts_rng = np.random.default_rng(100 + seed)
        counts = np.zeros(support.shape)
        for _epoch in range(4):  # the sampler's arrays are reused: earlier draws must leave nothing behind
            counts = counts + counts_rng.integers(0, 50, size=support.shape)
            drawn = sampler.draw(kept, counts)
            expected = reference_draw(fresh, support, counts, prior)
            if support.is_dense:
                assert drawn.shape == (S, A, S)
                np.testing.assert_array_equal(drawn, expected)
            else:
                assert sp.issparse(drawn) and drawn.shape == (S * A, S)
                np.testing.assert_array_equal(drawn.indptr, support.indptr)
                np.testing.assert_array_equal(drawn.indices, support.successors)
                np.testing.assert_array_equal(drawn.data, expected)
            np.testing.assert_array_equal(sampler.width(), reference_width(support, counts, prior))
            np.testing.assert_array_equal(posterior_width(support, counts, prior), reference_width(support, counts,
                                                                                                    prior))
        assert kept.random() == fresh.random()  # the same numbers were taken from the generator
        if prior == 1e-300:  # every Gamma draw underflows: the guard's uniform rows
            dense = drawn if support.is_dense else drawn.toarray()
            assert np.all(np.abs(dense.reshape(S * A, S).sum(axis=1) - 1.0) < 1e-12)


def test_a_draw_is_a_new_array_every_time():
    """A program keeps the draw it is given (the columns backend tells a new kernel by the object)."""
    sampler = PosteriorSampler(Support.dense(3, 2), 1.0)
    rng = np.random.default_rng(0)
    counts = np.ones((3, 2, 3))
    first, second = sampler.draw(rng, counts), sampler.draw(rng, counts)
    assert first is not second and not np.shares_memory(first, second)
    assert not np.array_equal(first, second)


def random_kernel(rng: np.random.Generator, support: Support):
    """A random kernel on ``support``: dense (S, A, S) on the dense support, else CSR (S·A, S)."""
    S, A = support.n_states, support.n_actions
    values = rng.random(support.nnz)
    values[rng.random(support.nnz) < 0.2] = 0.0   # stored zeros, which the program drops
    values[support.indptr[:-1]] += 0.1             # no empty row
    values /= np.add.reduceat(values, support.indptr[:-1])[support.pairs]
    return values.reshape(S, A, S) if support.is_dense else support.matrix(values)


def same_program_data(checked, unchecked) -> None:
    np.testing.assert_array_equal(unchecked.linear.param_values, checked.linear.param_values)
    assert np.signbit(unchecked.linear.param_values).tolist() == np.signbit(checked.linear.param_values).tolist()
    assert unchecked.epsilon == checked.epsilon and unchecked.version == checked.version
    for name in ("kernel", "bonus", "penalty"):
        if not hasattr(checked, name):
            continue
        a, b = getattr(checked, name), getattr(unchecked, name)
        if sp.issparse(a):
            assert sp.issparse(b)
            a, b = a.toarray(), b.toarray()
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_update_unchecked_writes_what_update_writes(seed):
    rng = np.random.default_rng(seed)
    model = random_model(5, 3, seed=seed, n_costs=2)
    S, A, M = model.n_states, model.n_actions, model.n_constraints
    for support in supports(S, A, seed):
        pattern = None if support.is_dense else support.pattern()
        start = random_kernel(rng, support)
        checked = OccupancyProgram(model, kernel=start, support=pattern)
        unchecked = OccupancyProgram(model, kernel=start, support=pattern)
        safe_checked, safe_unchecked = SafeProgram(model, support=pattern), SafeProgram(model, support=pattern)
        for _epoch in range(3):
            kernel = random_kernel(rng, support)
            epsilon = float(rng.random())
            checked.update(kernel=kernel, epsilon=epsilon)
            unchecked.update_unchecked(kernel.copy(), epsilon)
            same_program_data(checked, unchecked)
            bonus, penalty = rng.random((S, A)), rng.random((M, S, A))
            penalty[0, 0, 0] = 0.0
            safe_checked.update(kernel=kernel, bonus=bonus, penalty=penalty, epsilon=epsilon)
            safe_unchecked.update_unchecked(kernel.copy(), bonus.copy(), penalty.copy(), epsilon)
            same_program_data(safe_checked, safe_unchecked)
            # and the rows say what the program states: z_bonus - Σ b ρ = 0, z_m - Σ q_m ρ = 0, and on the dense
            # support flow row s' holds δ(s', s) - Q(s'|s,a) at ρ(s,a)
            values, groups = safe_unchecked.linear.param_values, safe_unchecked.linear.param_groups
            np.testing.assert_array_equal(values[groups["bonus"]], -bonus.ravel())
            for m in range(M):
                np.testing.assert_array_equal(values[groups[f"penalty_{m}"]], -penalty[m].ravel())
            if support.is_dense:
                delta = (np.arange(S)[:, None] == np.repeat(np.arange(S), A)[None, :]).astype(float)
                expected = delta - kernel.reshape(S * A, S).T
                np.testing.assert_array_equal(values[groups["flow"]], expected[: S - 1].ravel())
                np.testing.assert_array_equal(unchecked.linear.param_values, expected[: S - 1].ravel())
            penalty = rng.random((M, S, A))
            safe_checked.update(kernel=kernel, penalty=penalty, epsilon=0.0)
            safe_unchecked.update_unchecked(kernel.copy(), None, penalty.copy(), 0.0)  # the bonus unchanged
            same_program_data(safe_checked, safe_unchecked)


def queue_like(seed: int):
    return random_model(6, 4, seed=seed, n_costs=2)


@pytest.mark.parametrize("margin", ["absolute", "range"])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_ps_curl_epoch_writes_what_the_checked_path_writes(seed, margin):
    model = queue_like(seed)
    flat = PsCurl(model, backend="highs", seed=seed, margin=margin, prior=0.5)
    general = PsCurl(model, backend="highs", seed=seed, margin=margin, prior=0.5)
    counts = np.random.default_rng(seed).integers(0, 30, size=flat.support.shape).astype(float)
    flat._counts, general._counts = counts.copy(), counts.copy()
    S, A = model.n_states, model.n_actions
    for time, epsilon in ((10, 0.3), (500, 0.05)):
        flat._update_program(time, epsilon)
        kernel = posterior_kernel(general.rng, general.support, counts, 0.5)
        if margin == "absolute":
            general.program.update(kernel=kernel, epsilon=epsilon)
        else:
            scales = general.margin_scales
            margins = np.broadcast_to((epsilon * scales)[:, None, None], (len(scales), S, A))
            general.program.update(kernel=kernel, penalty=margins, epsilon=0.0)
        same_program_data(general.program, flat.program)
    assert flat.rng.random() == general.rng.random()


@pytest.mark.parametrize("margin", ["range", "absolute"])
@pytest.mark.parametrize("penalty", [None, 0.2])
def test_a_safe_mode_epoch_writes_what_the_checked_path_writes(margin, penalty):
    model = queue_like(4)
    flat = SafeCurl(model, backend="highs", seed=7, margin=margin, penalty=penalty)
    general = SafeCurl(model, backend="highs", seed=7, margin=margin, penalty=penalty)
    counts = np.random.default_rng(1).integers(0, 30, size=flat.support.shape).astype(float)
    flat._counts, general._counts = counts.copy(), counts.copy()
    for time, epsilon in ((10, 0.3), (800, 0.02)):
        flat._update_program(time, epsilon)
        kernel = posterior_kernel(general.rng, general.support, counts, general.prior)
        u = posterior_width(general.support, counts, general.prior)
        reward_sensitivity, cost_sensitivity = general.sensitivities(kernel)
        bonus = general.bonus * reward_sensitivity * u
        weights = general.penalty * cost_sensitivity[:, None, None] * u[None]
        if margin == "absolute":
            general.program.update(kernel=kernel, bonus=bonus, penalty=weights, epsilon=epsilon)
        else:
            margins = (epsilon * general.constraint_scales)[:, None, None]
            general.program.update(kernel=kernel, bonus=bonus, penalty=weights + margins, epsilon=0.0)
        same_program_data(general.program, flat.program)
        np.testing.assert_array_equal(flat.weights[0], bonus)
        np.testing.assert_array_equal(flat.weights[1], weights)


def test_safe_modes_range_sensitivities_are_the_formulas():
    """``S_f = Σ_k |∂f/∂λ_k| range(r_k)`` and ``S_m = Σ_i L_{m,i} range(c_i)``, every epoch the same numbers."""
    model = queue_like(2)
    agent = SafeCurl(model, backend="highs", seed=0)
    ranges = lambda signals: np.array([np.ptp(signal) for signal in signals])  # noqa: E731
    slope = np.abs(np.asarray(model.objective.gradient(
        np.array([(r.min() + r.max()) / 2.0 for r in model.rewards])), dtype=float))
    reward, cost = agent.sensitivities(np.full((6, 4, 6), 1 / 6))
    assert reward == pytest.approx(float(slope @ ranges(model.rewards)), rel=1e-12)
    np.testing.assert_allclose(cost, agent.lipschitz @ ranges(model.costs), rtol=1e-12)
    again = agent.sensitivities(np.full((6, 4, 6), 1 / 6))
    assert again[0] == reward and np.array_equal(again[1], cost)

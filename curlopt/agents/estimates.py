"""What a learning agent estimates from its transition counts, on its support.

An agent keeps its counts ``n(s,a,s')`` on a *support* (:class:`curlopt.programs.support.Support`): the
successors it considers possible for each pair. On the dense support (every successor: the algorithms as the
paper writes them) the counts are an (S, A, S) array; on a sparse support they are one number per support
entry, shape (nnz,), in the support's CSR order, so memory grows with the kernel's nonzeros, not with S²A.

Which support an agent uses is a modelling choice (docs/math.md §3, §6), chosen with the agents' option
``support``; it is decided by a rule on the model (its size and its kernel's nonzero pattern), never by how the
kernel is stored (``storage="dense"`` or ``"sparse"`` give the same agent):

``"auto"`` (the default)
    ``"full"`` for a model of at most :data:`~curlopt.models.cmdp.AUTO_DENSE_ENTRIES` entries S·A·S (the size
    below which the built-in models are stored dense: every model of the paper's sizes, as the paper's algorithms
    are written), ``"model"`` above it (memory then grows with the kernel's nonzeros, not with S²A).
``"model"``
    the successors the model's kernel gives positive probability (its nonzero pattern, whatever the storage):
    the agent knows *which* transitions are possible, never their probabilities. A posterior draw and the
    plug-in estimate then put mass only on those successors, the prior spreads over them alone, and the
    optimistic programs' L1 ball or box contains only kernels on them.
``"full"``
    every successor of every pair, whatever the model's kernel: the paper's algorithms exactly. It needs dense
    (S, A, S) arrays and is refused above :data:`FULL_SUPPORT_LIMIT` entries.

The functions below take the support and the counts in the agent's form and return the kernel estimates in
the form the programs take: a dense (S, A, S) array on the dense support (computed exactly as before sparse
supports existed, so dense runs are unchanged bit for bit), else a CSR (S·A, S) matrix on the support.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import AgentError
from ..models.cmdp import AUTO_DENSE_ENTRIES, CMDP, DENSE_VIEW_LIMIT
from ..programs.optimistic import l1_radius
from ..programs.support import Support
from .safe_sizing import UNCERTAINTY_CAP, dirichlet_width, plug_in_kernel, radius_uncertainty

__all__ = ["SUPPORTS", "FULL_SUPPORT_LIMIT", "agent_support", "resolved_support", "kernel_pattern", "program_support", "row_sums", "sample_posterior_kernel",
           "PosteriorSampler", "posterior_kernel", "plug_in_estimate", "posterior_width", "radius_width", "support_radius"]

#: the agents' ``support`` choices (see the module docstring)
SUPPORTS = ("auto", "model", "full")
#: the most entries S·A·S the full support takes on a model stored sparse (the dense view limit of
#: :mod:`curlopt.models.cmdp`: 2^22 entries, 32 MiB per array)
FULL_SUPPORT_LIMIT = DENSE_VIEW_LIMIT


def resolved_support(model: CMDP, support: str) -> str:
    """``"model"`` or ``"full"``: the support choice ``support`` decides for ``model`` (``"auto"`` by its size)."""
    if support != "auto":
        return support
    S, A = model.n_states, model.n_actions
    return "full" if S * A * S <= AUTO_DENSE_ENTRIES else "model"


def kernel_pattern(model: CMDP) -> sp.csr_array:
    """The nonzero pattern of ``model``'s kernel as an (S·A, S) matrix (stored zeros dropped), whatever its storage."""
    if model.sparse:
        matrix = sp.csr_array(model.transitions, copy=True)
    else:
        kernel = model.kernel
        if kernel is None:
            raise AgentError(f"model {model.name!r} has no kernel: its support cannot be read from it; use"
                             " support='full'.")
        S, A = model.n_states, model.n_actions
        matrix = sp.csr_array(np.asarray(kernel).reshape(S * A, S))
    matrix.eliminate_zeros()
    return matrix


def agent_support(model: CMDP, support: Any, agent: str) -> Support:
    """The support an agent named ``agent`` keeps its counts on, for the choice ``support`` (:data:`SUPPORTS`).

    The same for a model whatever its storage: ``"model"`` is the kernel's nonzero pattern, ``"full"`` every
    successor, ``"auto"`` one of them by the model's size (:func:`resolved_support`).

    Raises
    ------
    AgentError
        For another value, or ``"full"`` (chosen or decided) on a sparse-stored model of more than
        :data:`FULL_SUPPORT_LIMIT` entries S·A·S.
    """
    if not isinstance(support, str) or support not in SUPPORTS:
        raise AgentError(f"{agent}: support must be one of {', '.join(map(repr, SUPPORTS))}, got {support!r}.")
    S, A = model.n_states, model.n_actions
    if resolved_support(model, support) == "model":
        if not model.sparse and model.kernel is None:  # a model without a kernel: nothing to read a pattern from
            return Support.dense(S, A)
        return Support.from_pattern(kernel_pattern(model), S, A)
    entries = S * A * S
    if model.sparse and entries > FULL_SUPPORT_LIMIT:
        raise AgentError(
            f"{agent}: support='full' keeps dense (S, A, S) counts and estimates, {entries:,} entries for model"
            f" {model.name!r} (S={S}, A={A}), more than the limit of {FULL_SUPPORT_LIMIT:,}: use support='model',"
            f" which keeps them on the model's {model.nnz:,} declared transitions."
        )
    return Support.dense(S, A)


def program_support(model: CMDP, support: Support) -> Any:
    """The ``support=`` argument that builds a program on ``support`` for ``model``.

    None (the program's default: the dense program, unchanged) for the dense support of a dense-stored model;
    a pattern matrix otherwise, with every successor when the agent asked for the full support of a sparse-stored
    model (the program's default would be the model's pattern).
    """
    if not support.is_dense:
        return support.pattern()
    if not model.sparse:
        return None
    S, A = model.n_states, model.n_actions
    return sp.csr_array(np.ones((S * A, S)))


def row_sums(support: Support, counts: np.ndarray) -> np.ndarray:
    """``N(s,a) = Σ_{s'} n(s,a,s')``, shape (S, A), from counts in the agent's form."""
    if support.is_dense:
        return counts.sum(axis=2)
    return support.row_sums(counts).reshape(support.n_states, support.n_actions)


# -- posterior draws ------------------------------------------------------------------------------


def _normalised(draws: np.ndarray, totals: np.ndarray | None = None) -> np.ndarray:
    """``draws`` (S, A, S) divided by their sums over the last axis: a new array (``draws`` may be changed).

    ``totals`` is an (S, A, 1) array the sums may be written into (an agent keeps one between epochs), else
    they are a new array; the sums are those of ``draws.sum(axis=2, keepdims=True)`` either way.
    """
    totals = np.add.reduce(draws, axis=2, keepdims=True, out=totals)
    # A row of all-zero Gamma draws has probability ~0 for prior >= 1e-3; guard anyway. The sums are >= 0 (or
    # NaN or inf, never guarded), so "some sum is 0" is "not all are nonzero": one call.
    if not totals.all():
        draws[totals[..., 0] <= 0] = 1.0
        totals = draws.sum(axis=2, keepdims=True)
    return np.divide(draws, totals)


def sample_posterior_kernel(rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
    """One draw ``P~(·|s,a) ~ Dirichlet(concentration[s,a,·])`` for every pair (normalised Gamma draws).

    Parameters
    ----------
    rng : numpy.random.Generator
    concentration : ndarray, shape (S, A, S)
        The posterior's parameters, ``prior + n(s,a,s')`` (all > 0).
    """
    return _normalised(rng.standard_gamma(concentration))


class PosteriorSampler:
    """The draws ``P~(·|s,a) ~ Dirichlet(prior + n(s,a,·))`` an agent makes every epoch on one support.

    The same draws as :func:`posterior_kernel` (the same Gamma variables from the generator, in the same order,
    normalised the same way: bit for bit), with the arrays every draw needs (the concentration, the Gamma
    draws, the row sums) allocated once: an epoch's draw is a handful of numpy calls. The kernel returned is a
    new array (or matrix) every time, so a program may keep it.

    Parameters
    ----------
    support : Support
        The support the counts are kept on (:mod:`curlopt.agents.estimates`).
    prior : float
        The Dirichlet prior ``α0 > 0`` of every allowed successor.
    """

    def __init__(self, support: Support, prior: float):
        self.support = support
        self.prior = prior
        self._concentration = np.empty(support.shape)
        self._draws = np.empty(support.shape)
        self._totals = np.empty((support.n_states, support.n_actions, 1)) if support.is_dense else None

    def draw(self, rng: np.random.Generator, counts: np.ndarray) -> Any:
        """One draw on the support for the counts ``counts`` (in the agent's form, shape ``support.shape``).

        Returns an (S, A, S) array on the dense support, else a CSR (S·A, S) matrix on the support's pattern.
        :meth:`width` then gives the width of the same posterior.
        """
        concentration = np.add(self.prior, counts, out=self._concentration)
        draws = rng.standard_gamma(concentration, out=self._draws)
        support = self.support
        if support.is_dense:
            return _normalised(draws, self._totals)
        totals = support.row_sums(draws)
        empty = totals <= 0
        if np.any(empty):   # as for the dense draw: probability ~0, guarded with uniform rows
            draws[empty[support.pairs]] = 1.0
            totals = support.row_sums(draws)
        return support.matrix(draws / totals[support.pairs])

    def width(self) -> np.ndarray:
        """``Σ_{s'} std P̃(s'|s,a)`` of the posterior of the last :meth:`draw`, capped at 2, shape (S, A): what
        :func:`posterior_width` gives for the same counts and prior."""
        return _concentration_width(self.support, self._concentration)


def posterior_kernel(rng: np.random.Generator, support: Support, counts: np.ndarray, prior: float) -> Any:
    """One draw ``P~(·|s,a) ~ Dirichlet(prior + n(s,a,·))`` over each pair's successors on ``support``.

    On a sparse support the Dirichlet is over the pair's allowed successors only (a row with k successors
    draws k Gammas): the prior spreads over them, and a successor outside the support gets no mass. The
    draws are normalised Gamma variables, one per support entry in CSR order, so a pair's draw has the
    marginal means ``(prior + n(s,a,s')) / (k prior + N(s,a))``.

    Returns
    -------
    ndarray (S, A, S) on the dense support (:func:`sample_posterior_kernel`), else a CSR (S·A, S) matrix.
    """
    return PosteriorSampler(support, prior).draw(rng, counts)


# -- plug-in estimate and uncertainty ------------------------------------------------------------


def plug_in_estimate(support: Support, counts: np.ndarray) -> Any:
    """``P̂(s'|s,a) = n(s,a,s') / N(s,a)``; an unvisited pair gets the uniform row over its allowed successors.

    Returns a dense (S, A, S) array on the dense support
    (:func:`curlopt.agents.safe_sizing.plug_in_kernel`), else a CSR (S·A, S) matrix.
    """
    if support.is_dense:
        return plug_in_kernel(counts)
    visits = support.row_sums(counts)
    sizes = support.row_counts
    per_entry = visits[support.pairs]
    values = np.where(per_entry > 0, counts / np.where(per_entry > 0, per_entry, 1.0), 1.0 / sizes[support.pairs])
    return support.matrix(values)


def posterior_width(support: Support, counts: np.ndarray, prior: float) -> np.ndarray:
    """``Σ_{s'} std P̃(s'|s,a)`` of ``Dirichlet(prior + n(s,a,·))`` over each pair's allowed successors, capped
    at 2, shape (S, A) (on the dense support :func:`curlopt.agents.safe_sizing.posterior_uncertainty`)."""
    return _concentration_width(support, prior + counts)


def _concentration_width(support: Support, alpha: np.ndarray) -> np.ndarray:
    """:func:`posterior_width` of the Dirichlet parameters ``alpha`` (in the agent's form, shape ``support.shape``)."""
    if support.is_dense:
        return dirichlet_width(alpha)
    total = support.row_sums(alpha)[support.pairs]
    mean = alpha / total
    std = np.sqrt(mean * (1.0 - mean) / (total + 1.0))
    width = support.row_sums(std).reshape(support.n_states, support.n_actions)
    return np.minimum(UNCERTAINTY_CAP, width)


def support_radius(support: Support, visits: np.ndarray, time: float, kind: str) -> np.ndarray:
    """The L1 radius ``β(s,a)`` with the number of possible successors of each pair in place of S.

    The L1 concentration bound behind β (Weissman et al. 2003: ``P(‖P̂ - P‖₁ >= x) <= (2^k - 2) exp(-N x²/2)``
    for a distribution over k outcomes) counts the outcomes a pair can have; UCRL2's radius takes k = S. When
    the agent's support declares the possible successors, k(s,a) is the pair's row size on it, and the
    radius is :func:`curlopt.programs.optimistic.l1_radius` with ``n_states = k(s,a)``. On the dense support
    k = S and this is ``l1_radius`` itself.
    """
    S, A = support.n_states, support.n_actions
    if support.is_dense:
        return l1_radius(visits, time, S, A, kind)
    return l1_radius(visits, time, support.row_counts.reshape(S, A).astype(float), A, kind)


def radius_width(support: Support, counts: np.ndarray, time: float, kind: str, scale: float) -> np.ndarray:
    """``min(2, scale · β(s,a))`` with β the named L1 radius, on the support (:func:`support_radius`)."""
    if support.is_dense:
        return radius_uncertainty(counts, time, kind, scale)
    return np.minimum(UNCERTAINTY_CAP, scale * support_radius(support, row_sums(support, counts), time, kind))

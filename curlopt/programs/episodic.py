"""The episodic (finite-horizon) programs over per-step occupancies ``q_h(s,a)`` (docs/math.md §10).

:class:`EpisodicOccupancyProgram` is the known-model (or sampled-kernel) program::

    maximise     f(λ),    λ_k = Σ_h Σ_{s,a} r_{k,h}(s,a) q_h(s,a)
    subject to   q_h(s,a) >= 0
                 Σ_a q_1(s,a) = μ(s)
                 Σ_a q_{h+1}(s',a) = Σ_{s,a} P_h(s'|s,a) q_h(s,a)            h = 1..H−1
                 g_m(ζ) <= −ε,   ζ_i = Σ_h Σ_{s,a} c_{i,h}(s,a) q_h(s,a)

:class:`EpisodicExtendedProgram` is the extended optimistic program over ``z_h(s,a,s') >= 0`` with
``q_h(s,a) = Σ_{s'} z_h(s,a,s')``, its kernel free inside a confidence set around an estimate ``P^`` — per entry
``|z_h(s,a,s') − P^(s'|s,a) q_h(s,a)| <= β(s,a,s') q_h(s,a)`` or in L1 ``Σ_{s'} |z_h − P^ q_h| <= β(s,a) q_h(s,a)``.

Both are ordinary :class:`~curlopt.programs.blocks.Program` data, so every backend compiles them through the same
paths as the infinite-horizon programs. Two choices make that hold:

* **λ and ζ are variables.** The per-episode totals are the blocks ``reward_totals`` (K,) and ``cost_totals`` (d,),
  each defined by a linear row ``t_k − Σ_{h,s,a} r_{k,h}(s,a) q_h(s,a) = 0`` whose signal coefficients are
  *parameter entries*. Backends read the reward and cost maps once, at compile time; here those maps only select the
  totals, and new signals (learned estimates, bonuses, penalties) reach every backend by ``update(rewards=...,
  costs=...)`` like a new kernel does, without recompiling. (The same device as safe mode's bonus and penalties.)
* **The program says how to read and start it**: :meth:`interpret` reads a solution into per-step occupancy and
  policy arrays (H, S, A); :meth:`starting_point` gives an interior-point solver a cold start.

All rows are kept (none is dropped as redundant): the rows of step ``h + 1`` each own the variables ``q_{h+1}(s',·)``,
so they are linearly independent.

Arrays are 0-based in steps: ``q[0]`` is the first step; the kernel of step ``h`` (``h = 0..H−2``) moves step ``h`` to
step ``h + 1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from ..models.cmdp import CMDP, KERNEL_TOLERANCE
from ..models.episodic import EpisodicCMDP
from .blocks import Program, check_kernel, check_program_size
from .policy import policy_from_occupancy
from .support import Support, check_counts

__all__ = ["EpisodicOccupancyProgram", "EpisodicExtendedProgram", "CONFIDENCE_SETS", "episodic_support",
           "InfeasibilityBound", "INFEASIBILITY_MARGIN"]

#: the confidence sets of :class:`EpisodicExtendedProgram`: per entry (OptCMDP, DOPE) or an L1 ball per pair (UC-CURL)
CONFIDENCE_SETS = ("entry", "l1")


# ----------------------------------------------------------------------------
# Reading per-step data
# ----------------------------------------------------------------------------


def _require_episodic(model: Any, kind: str) -> EpisodicCMDP:
    if not isinstance(model, EpisodicCMDP):
        what = "a CMDP without a horizon" if isinstance(model, CMDP) else type(model).__name__
        raise ProgramError(f"the {kind} program needs an EpisodicCMDP (a model with a horizon H), got {what}.")
    return model


def _per_step(value: Any, horizon: int, shapes: Sequence[tuple[int, ...]], name: str,
              what: str) -> tuple[list[Any], bool]:
    """``(items, time_homogeneous)``: one item for every transition (``items`` holds it once), or H − 1 items.

    One item is a scipy sparse matrix or an array of one of ``shapes``; H − 1 items are a list or tuple of those, or
    an array with a leading axis of length H − 1 (an array of one of ``shapes`` itself is always one item).
    """
    n = horizon - 1
    if sp.issparse(value):
        return [value], True
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ProgramError(f"{name} must be {what}, or H − 1 of them ({exc}).") from None
        if array.shape in shapes:
            return [array], True
        if array.ndim < 1 or array.shape[1:] not in shapes:
            raise ProgramError(f"{name} must be {what}, or H − 1 = {n} of them (an array with a leading axis of"
                               f" length H − 1), got an array of shape {array.shape}.")
        items = [array[h] for h in range(array.shape[0])]
    if len(items) != n:
        raise ProgramError(
            f"{name} given per step must hold H − 1 = {n} items (the transition of step h moves step h to step"
            f" h + 1 inside an episode of H = {horizon} steps), got {len(items)}.")
    return items, False


def _checked_steps(items: list[Any], homogeneous: bool, check: Any, horizon: int) -> list[Any]:
    """``check`` applied to every item, naming the step of a refused one; one result per transition (a
    time-homogeneous item is checked once, even for H = 1, and its result repeated)."""
    if homogeneous:
        return [check(items[0])] * (horizon - 1)
    out = []
    for h, item in enumerate(items):
        try:
            out.append(check(item))
        except ProgramError as exc:
            raise ProgramError(f"step {h} (the transition to step {h + 1}): {exc}") from None
    return out


def episodic_support(model: EpisodicCMDP, support: Any = None) -> Support:
    """The successors an episodic program's kernel entries (or joint variables) exist for, one for every step.

    ``support`` (a scipy sparse (S·A, S) pattern, or a :class:`~curlopt.programs.support.Support` of the model's
    S and A, taken as it is) when given; else the model's own: the kernel's pattern when the model stores one sparse
    kernel, the union of its per-step kernels' patterns when it stores them all sparse, and every successor
    otherwise. Every kernel given to a program on it must be zero outside it.
    """
    S, A = model.n_states, model.n_actions
    if isinstance(support, Support):
        if (support.n_states, support.n_actions) != (S, A):
            raise ProgramError(f"support is for (S, A) = ({support.n_states}, {support.n_actions}), the model has"
                               f" ({S}, {A}).")
        return support
    if support is not None or model.time_homogeneous:
        return Support.of_model(model, support)
    kernels = [model.step_kernel(h) for h in range(model.horizon - 1)]
    if kernels and all(sp.issparse(k) for k in kernels):
        union = kernels[0].astype(bool).astype(float)
        for k in kernels[1:]:
            union = union + k.astype(bool).astype(float)
        return Support.from_pattern(sp.csr_array(union), S, A)
    return Support.dense(S, A)


def _model_kernels(model: EpisodicCMDP) -> Any:
    """The model's kernels as a program takes them: its one kernel (time-homogeneous), or the list of H − 1; None
    for H = 1 (no transition)."""
    if model.horizon > 1 and not model.has_kernel:
        raise ProgramError(f"model {model.name!r} has no kernel: pass kernels=... (one (S, A, S) array or sparse"
                           " (S·A, S) matrix, or H − 1 of them).")
    if model.horizon == 1:
        return None
    if model.time_homogeneous:
        return model.step_kernel(0)
    return [model.step_kernel(h) for h in range(model.horizon - 1)]


def _signals(value: Any, model: EpisodicCMDP, count: int, name: str) -> np.ndarray:
    """Per-step signals (H, count, S, A) from ``(count, S, A)`` (the same every step), ``(H, count, S, A)``, or
    ``(S, A)`` when ``count == 1``; finite (any sign: a penalised cost ``ĉ − b`` may be negative). Read-only."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ProgramError(f"{name} must be an array of numbers ({exc}).") from None
    if array.shape == (S, A) and count == 1:
        array = array[None]
    if array.shape == (count, S, A):
        array = np.broadcast_to(array, (H, count, S, A))
    if array.shape != (H, count, S, A):
        raise ProgramError(f"{name} must have shape (count, S, A) = ({count}, {S}, {A}) or, per step,"
                           f" (H, count, S, A) = ({H}, {count}, {S}, {A}), got {np.shape(value)}.")
    if not np.all(np.isfinite(array)):
        raise ProgramError(f"{name} contains NaN or infinite entries.")
    array = np.array(array)  # an own copy (a broadcast view is not writable and may alias the caller's array)
    array.setflags(write=False)
    return array


def _forward(initial: np.ndarray, policy: np.ndarray, kernels: list[Any]) -> np.ndarray:
    """``q_h = d_h π_h``, ``d_{h+1}(s') = Σ P_h(s'|s,a) q_h(s,a)`` for (H, S, A) ``policy`` on the given kernels."""
    H = policy.shape[0]
    q = np.empty(policy.shape)
    d = np.asarray(initial, dtype=float)
    for h in range(H):
        q[h] = d[:, None] * policy[h]
        if h < H - 1:
            kernel = kernels[h]
            d = (np.asarray(kernel.T @ q[h].ravel()).ravel() if sp.issparse(kernel)
                 else np.einsum("sat,sa->t", kernel, q[h]))
    return q


# ----------------------------------------------------------------------------
# What both episodic programs share
# ----------------------------------------------------------------------------


class _EpisodicProgram(Program):
    """Blocks ``occupancy`` (H, S, A), the subclass's own, ``reward_totals`` (K,) and ``cost_totals`` (d,); the rows
    ``initial`` (``Σ_a q_0(s,a) = μ(s)``) and the totals' defining rows with the signals as parameter entries.

    A subclass declares its blocks and rows between :meth:`_start_rows` and :meth:`_finish_rows`.
    """

    model: EpisodicCMDP
    _rewards: np.ndarray
    _costs: np.ndarray
    #: the totals are sums over the H steps of an episode, of order H (the residual check measures their rows and
    #: the constraints on them relative to that size; the masses' rows stay absolute)
    SCALED_GROUPS = frozenset({"reward_totals", "cost_totals", "constraints"})

    def __init__(self, model: EpisodicCMDP, blocks: list[tuple[str, tuple[int, ...]]]):
        K, d = model.n_rewards, model.n_costs
        super().__init__(model, [("occupancy", (model.horizon, model.n_states, model.n_actions)), *blocks,
                                 ("reward_totals", (K,)), ("cost_totals", (d,))])
        for name in ("reward_totals", "cost_totals"):  # totals of signals of any sign
            self.blocks[name] = replace(self.blocks[name], lower=-math.inf)
        # the maps were built by _signal_maps before the bounds changed; they only select columns, which did not move

    @property
    def _kernel_shape(self) -> tuple[int, int, int]:
        return (self.model.n_states, self.model.n_actions, self.model.n_states)

    @property
    def horizon(self) -> int:
        """``H``, the number of steps of an episode."""
        return self.model.horizon

    def _signal_maps(self) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """The reward and cost maps select the totals' columns (the signals live in the rows, as parameters)."""
        maps = []
        for name in ("reward_totals", "cost_totals"):
            block = self.blocks[name]
            maps.append(sp.csr_matrix((np.ones(block.size), (np.arange(block.size), block.indices())),
                                      shape=(block.size, self.n_vars)))
        return maps[0], maps[1]

    @staticmethod
    def _totals_nonzeros(model: EpisodicCMDP) -> int:
        return (model.n_rewards + model.n_costs) * (model.horizon * model.n_states * model.n_actions + 1)

    def _start_rows(self) -> np.ndarray:
        """Add the ``initial`` rows; return the occupancy columns (H, S, A)."""
        model = self.model
        S, A = model.n_states, model.n_actions
        q = self.blocks["occupancy"].indices()
        self.linear.add("initial", S, np.repeat(np.arange(S), A), q[0].ravel(), 1.0,
                        np.asarray(model.initial, dtype=float), np.asarray(model.initial, dtype=float))
        return q

    def _finish_rows(self) -> None:
        """Add the totals' defining rows and freeze the pattern."""
        lin = self.linear
        q = self.blocks["occupancy"].indices().ravel()
        for name in ("reward_totals", "cost_totals"):
            block = self.blocks[name]
            count = block.size
            first = lin.add(name, count, np.arange(count), block.indices(), 1.0, 0.0, 0.0)
            lin.add_parameters(name, first, np.repeat(np.arange(count), q.size), np.tile(q, count))
        lin.finish()

    def _read_signals(self, rewards: Any, costs: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
        """New reward and/or cost signals, checked (None where not given); nothing is written yet."""
        model = self.model
        return (None if rewards is None else _signals(rewards, model, model.n_rewards, "rewards"),
                None if costs is None else _signals(costs, model, model.n_costs, "costs"))

    def _write_signals(self, rewards: np.ndarray | None, costs: np.ndarray | None) -> None:
        """Push checked signals (from :meth:`_read_signals`) into the totals' rows."""
        values, groups = self.linear.writable_values(), self.linear.param_groups
        if rewards is not None:
            self._rewards = rewards
            values[groups["reward_totals"]] = -rewards.transpose(1, 0, 2, 3).ravel()
        if costs is not None:
            self._costs = costs
            values[groups["cost_totals"]] = -costs.transpose(1, 0, 2, 3).ravel()

    def _check_epsilon(self, epsilon: Any) -> None:
        """Refuse a bad ε before anything is written (``_set_epsilon`` sets it afterwards)."""
        if epsilon is not None:
            saved = self.epsilon
            self._set_epsilon(epsilon)
            self.epsilon = saved

    @property
    def rewards(self) -> np.ndarray:
        """The program's reward signals ``r_{k,h}(s,a)``, shape (H, K, S, A), read-only."""
        return self._rewards

    @property
    def costs(self) -> np.ndarray:
        """The program's cost signals ``c_{i,h}(s,a)``, shape (H, d, S, A), read-only."""
        return self._costs

    def totals(self, occupancy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-episode totals ``(λ (K,), ζ (d,))`` of a per-step occupancy (H, S, A) under the program's signals."""
        q = np.asarray(occupancy, dtype=float)
        return np.einsum("hksa,hsa->k", self._rewards, q), np.einsum("hksa,hsa->k", self._costs, q)

    def interpret(self, x: np.ndarray) -> dict[str, Any]:
        """What a solution vector means: per-step ``occupancy`` q (H, S, A) clipped at 0, ``joint`` (None here),
        ``policy`` (H, S, A) with ``π_h(a|s) = q_h(s,a) / Σ_b q_h(s,b)`` (uniform where the step's state is not
        reached), and ``rewards`` λ, ``costs`` ζ: per-episode totals of the program's own signals at that q."""
        q = np.clip(self.occupancy(x), 0.0, None)
        rewards, costs = self.totals(q)
        return {
            "occupancy": q,
            "joint": None,
            # one call over the H·S rows (row-wise, so the same numbers as step by step)
            "policy": policy_from_occupancy(q.reshape(-1, q.shape[-1])).reshape(q.shape),
            "rewards": rewards,
            "costs": costs,
        }

    def _point(self, q: np.ndarray) -> np.ndarray:
        """A solution vector holding ``q`` (H, S, A) and its totals (other blocks zero)."""
        x = np.zeros(self.n_vars)
        x[self.blocks["occupancy"].slice] = q.ravel()
        rewards, costs = self.totals(q)
        x[self.blocks["reward_totals"].slice] = rewards
        x[self.blocks["cost_totals"].slice] = costs
        return x


# ----------------------------------------------------------------------------
# The occupancy program
# ----------------------------------------------------------------------------


class EpisodicOccupancyProgram(_EpisodicProgram):
    """The episodic occupancy program for given per-step kernels and tightness ε (module docstring).

    Parameters
    ----------
    model : EpisodicCMDP
        Gives ``H``, ``μ``, the utilities f and g (on per-episode totals) and, by default, the kernels and signals.
    kernels : optional
        The kernels ``P_h`` (a sampled or estimated model, or the model's own by default): one dense (S, A, S) array
        or scipy sparse (S·A, S) matrix used at every step, or H − 1 of them (a list, or an array (H − 1, S, A, S)),
        the one of index h moving step h to step h + 1. Each must be a transition kernel.
    epsilon : float, default 0
        Tightness ε >= 0: the constraint rows read ``g_m(ζ) <= −ε``.
    rewards : array_like, optional
        Reward signals, (K, S, A) for every step or (H, K, S, A) per step; default the model's (its ``step_rewards``).
    costs : array_like, optional
        Cost signals, (d, S, A) or (H, d, S, A); default the model's.
    support : scipy sparse matrix (S·A, S) or Support, optional
        The successors the flow rows can give a kernel entry, at every step (see :func:`episodic_support` for the
        default). Every kernel given (here or to :meth:`update`) must be zero outside it; a sparse support keeps
        the program sparse for large S.

    Raises
    ------
    ProgramError
        For a model without a horizon, kernels of the wrong number or shape or not transition kernels (naming the
        step and the row), a nonzero outside the support, signals of the wrong shape or not finite, or a program too
        large to build.

    Notes
    -----
    Kernels, signals and ε are parameters: :meth:`update` changes them and a compiled backend re-solves without
    recompiling. ``μ`` sits in row bounds and is fixed at construction.
    """

    kind = "episodic-occupancy"
    support: Support

    def __init__(self, model: EpisodicCMDP, kernels: Any = None, epsilon: float = 0.0, rewards: Any = None,
                 costs: Any = None, support: Any = None):
        model = _require_episodic(model, self.kind)
        H, S, A = model.horizon, model.n_states, model.n_actions
        if kernels is None:
            _model_kernels(model)  # refuse a model without one before building anything
        self.support = episodic_support(model, support)
        entries = self.support.nnz
        check_program_size(self.kind, model, H * S * A + model.n_rewards + model.n_costs,
                           H * S * A + (H - 1) * entries + self._totals_nonzeros(model))
        super().__init__(model, [])
        q = self._start_rows()
        lin = self.linear
        # flow of transition h, row s': Σ_a q_{h+1}(s',a) − Σ_{s,a} P_h(s'|s,a) q_h(s,a) = 0;
        # the −P_h entries are parameters at the support's entries (pair, successor), in the support's order
        steps = np.arange(H - 1)
        first = lin.add("flow", (H - 1) * S, np.repeat(np.arange((H - 1) * S), A), q[1:].ravel(), 1.0, 0.0, 0.0)
        pairs, successors = self.support.pairs, self.support.successors
        lin.add_parameters("flow", first, (steps[:, None] * S + successors[None, :]).ravel(),
                           q[:-1].reshape(H - 1, S * A)[:, pairs].ravel())
        self._finish_rows()
        self.kernels: list[Any] = []
        self.time_homogeneous = True
        self.update(kernels=_model_kernels(model) if kernels is None else kernels,
                    epsilon=epsilon,
                    rewards=model.step_rewards if rewards is None else rewards,
                    costs=model.step_costs if costs is None else costs)

    def update(self, kernels: Any = None, epsilon: Any = None, rewards: Any = None, costs: Any = None) -> None:
        """Set new kernels, tightness and/or signals; the structure is unchanged (None keeps a value).

        ``kernels`` as in the constructor (one for every step, or H − 1). :attr:`kernels` keeps them, one per
        transition: dense (S, A, S) arrays on the dense support, else CSR (S·A, S) matrices (a time-homogeneous
        kernel is one object repeated).

        Raises
        ------
        ProgramError
            As the constructor, for the data given.
        """
        H = self.horizon
        signals = self._read_signals(rewards, costs)
        self._check_epsilon(epsilon)
        if kernels is not None:
            items, homogeneous = _per_step(kernels, H, [self._kernel_shape], "kernels",
                                           "a kernel (S, A, S) or sparse (S·A, S)")
            checked = _checked_steps(items, homogeneous, lambda k: check_kernel(self.model, k), H)
            support = self.support
            if homogeneous and checked:
                values = support.gather(checked[0], "kernel")
                stored = [self._stored(checked[0], values)] * (H - 1)
                block = np.tile(-values, H - 1)
            else:
                gathered, stored = [], []
                for h, kernel in enumerate(checked):
                    try:
                        values = support.gather(kernel, "kernel")
                    except ProgramError as exc:
                        raise ProgramError(f"step {h} (the transition to step {h + 1}): {exc}") from None
                    gathered.append(-values)
                    stored.append(self._stored(kernel, values))
                block = np.concatenate(gathered) if gathered else np.zeros(0)
            # every input is checked: write
            self.kernels, self.time_homogeneous = stored, homogeneous
            self.linear.writable_values()[self.linear.param_groups["flow"]] = block
        self._write_signals(*signals)
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def _stored(self, kernel: Any, values: np.ndarray) -> Any:
        """The kernel as the program keeps it: dense (S, A, S) on the dense support, else CSR on the support."""
        S, A = self.model.n_states, self.model.n_actions
        if self.support.is_dense:
            return values.reshape(S, A, S).copy()
        stored = self.support.matrix(values)
        stored.eliminate_zeros()
        return stored

    def starting_point(self) -> np.ndarray:
        """A cold start for an interior-point solver: the occupancy of the uniform policy on the program's kernels
        (it satisfies every row), and its totals."""
        H, S, A = self.horizon, self.model.n_states, self.model.n_actions
        q = _forward(self.model.initial, np.full((H, S, A), 1.0 / A), self.kernels)
        return self._point(q)


# ----------------------------------------------------------------------------
# The extended optimistic program
# ----------------------------------------------------------------------------


def check_estimate(model: CMDP, kernel: Any, name: str = "kernel") -> Any:
    """An estimated kernel ``P^``: as :func:`~curlopt.programs.support.check_kernel`, except that a row may also be
    all zeros (a pair never visited). Returns a float (S, A, S) array or a canonical CSR (S·A, S) array.

    Raises
    ------
    ProgramError
        For a wrong shape, NaN, entries outside [0, 1] or a row summing to neither 0 nor 1 (naming the row).
    """
    checked = check_counts(model, kernel, name)
    S, A = model.n_states, model.n_actions
    values = checked.data if sp.issparse(checked) else checked.reshape(-1)
    if values.size and float(values.max()) > 1.0:
        raise ProgramError(f"{name} has an entry above 1 ({float(values.max())!r}): an estimated kernel holds"
                           " probabilities.")
    sums = (np.asarray(checked.sum(axis=1)).ravel() if sp.issparse(checked)
            else checked.reshape(S * A, S).sum(axis=1))
    bad = (np.abs(sums - 1.0) > KERNEL_TOLERANCE) & (sums != 0.0)
    if np.any(bad):
        row = int(np.argmax(bad))
        raise ProgramError(f"{name} must have rows summing to 1 (or 0 for a pair never visited); the row of (s, a) ="
                           f" {divmod(row, A)} sums to {float(sums[row]):.12g}.")
    return checked


class EpisodicExtendedProgram(_EpisodicProgram):
    """The extended optimistic episodic program (module docstring): OptCMDP's, DOPE's and episodic UC-CURL's.

    Variables ``q`` (H, S, A), ``z`` — the joint ``z_h(s,a,s')`` of the H − 1 transitions, shape (H − 1, S, A, S) on
    the dense support, else (H − 1, nnz) in the support's entry order — and, for the L1 set, a ``deviation``
    ``α_h(s,a,s') >= |z_h − P^ q_h|`` of the same shape; all >= 0. Rows::

        initial     Σ_a q_0(s,a) = μ(s)
        link        q_h(s,a) = Σ_{s'} z_h(s,a,s')                           h = 0..H−2
        flow        Σ_a q_{h+1}(s',a) = Σ_{s,a} z_h(s,a,s')                 h = 0..H−2
        entry sets  −β q_h <= z_h − P^ q_h <= β q_h          (β = β(s,a,s'); two rows per entry)
        or L1 sets  |z_h − P^ q_h| <= α_h,  Σ_{s'} α_h(s,a,s') <= β(s,a) q_h(s,a)
        g_m(ζ) <= −ε

    The last step has no joint: its successor lies beyond the episode, so nothing of the program depends on it
    (the program with a joint at the last step too is the same whenever every confidence set holds a
    distribution, e.g. when ``P^``'s row is one).

    Parameters
    ----------
    model : EpisodicCMDP
        Gives ``H``, ``μ``, f and g (on per-episode totals).
    kernel : optional
        The estimate ``P^`` (one for every step, or H − 1 of them, as :class:`EpisodicOccupancyProgram`'s
        ``kernels``); its rows sum to 1, or to 0 for a pair never visited. Default: the model's own kernels.
    radius : optional
        ``β``, finite and >= 0, default 0. Entry sets: (S, A, S) (or (S, A), the same for every successor, or a
        scipy sparse (S·A, S) on the support); L1 sets: (S, A). Per step: a list of H − 1 of those, or an array with
        one more leading axis of length H − 1. The caller computes it (Bernstein, Hoeffding, UC-CURL's radius).
    confidence : {"entry", "l1"}, default "entry"
    rewards, costs : array_like, optional
        The program's signals per (h, s, a): (K, S, A) or (H, K, S, A), and (d, S, A) or (H, d, S, A); e.g. an
        optimistic reward ``r^ + b_r`` and a cost ``c^ − b_c`` (OptCMDP) or ``c^ + b_c`` (OptPess-LP, DOPE).
        Default: the model's.
    epsilon : float, default 0
        Tightness ε >= 0.
    support : scipy sparse matrix (S·A, S) or Support, optional
        The successors ``z`` (and α) exist for, at every step — a modelling choice (see
        :class:`~curlopt.programs.optimistic.JointProgram`); default as :func:`episodic_support`.

    Raises
    ------
    ProgramError
        For a model without a horizon, an unknown ``confidence``, an estimate, radius or signals of the wrong
        number or shape or with invalid entries, or a program too large to build.

    Notes
    -----
    ``P^``, ``β``, the signals and ε are parameters (:meth:`update`); the structure is fixed.
    """

    kind = "episodic-extended"
    support: Support

    def __init__(self, model: EpisodicCMDP, kernel: Any = None, radius: Any = None, confidence: str = "entry",
                 rewards: Any = None, costs: Any = None, epsilon: float = 0.0, support: Any = None):
        model = _require_episodic(model, self.kind)
        if not isinstance(confidence, str) or confidence not in CONFIDENCE_SETS:
            raise ProgramError(f"confidence must be one of {', '.join(map(repr, CONFIDENCE_SETS))}, got {confidence!r}.")
        self.confidence = confidence
        H, S, A = model.horizon, model.n_states, model.n_actions
        if kernel is None:
            _model_kernels(model)
        self.support = episodic_support(model, support)
        allowed = self.support
        nnz, n_pairs, T = allowed.nnz, S * A, H - 1
        entry_shape = (T, *allowed.shape)
        extra = [("deviation", entry_shape)] if confidence == "l1" else []
        per_entry = 6 * nnz if confidence == "entry" else 7 * nnz + n_pairs
        check_program_size(self.kind, model, H * n_pairs + nnz * T * (1 + len(extra)) + model.n_rewards + model.n_costs,
                           n_pairs + T * (n_pairs + nnz + n_pairs + nnz + per_entry) + self._totals_nonzeros(model))
        super().__init__(model, [("joint", entry_shape), *extra])
        q = self._start_rows()
        lin = self.linear
        z = self.blocks["joint"].indices().reshape(T, nnz)
        pairs, successors = allowed.pairs, allowed.successors
        q_of_entry = q[:-1].reshape(T, n_pairs)[:, pairs]                 # (T, nnz): the column of q_h(s,a)
        step_entry = np.repeat(np.arange(T), nnz)
        link_rows = np.concatenate([np.arange(T * n_pairs), step_entry * n_pairs + np.tile(pairs, T)])
        lin.add("link", T * n_pairs, link_rows, np.concatenate([q[:-1].ravel(), z.ravel()]),
                np.concatenate([np.ones(T * n_pairs), -np.ones(T * nnz)]), 0.0, 0.0)
        flow_rows = np.concatenate([np.repeat(np.arange(T * S), A), step_entry * S + np.tile(successors, T)])
        lin.add("flow", T * S, flow_rows, np.concatenate([q[1:].ravel(), z.ravel()]),
                np.concatenate([np.ones(T * n_pairs), -np.ones(T * nnz)]), 0.0, 0.0)
        entries = np.arange(T * nnz)
        if confidence == "entry":
            # z − (P^ + β) q <= 0   and   −z + (P^ − β) q <= 0; the q coefficients are parameters
            for name, sign in (("confidence_upper", 1.0), ("confidence_lower", -1.0)):
                first = lin.add(name, T * nnz, entries, z.ravel(), sign, -np.inf, 0.0)
                lin.add_parameters(name, first, entries, q_of_entry.ravel())
        else:
            alpha = self.blocks["deviation"].indices().reshape(T, nnz)
            # z − α − P^ q <= 0   and   −z − α + P^ q <= 0
            for name, sign in (("deviation_upper", 1.0), ("deviation_lower", -1.0)):
                first = lin.add(name, T * nnz, np.concatenate([entries, entries]),
                                np.concatenate([z.ravel(), alpha.ravel()]),
                                np.concatenate([np.full(T * nnz, sign), -np.ones(T * nnz)]), -np.inf, 0.0)
                lin.add_parameters(name, first, entries, q_of_entry.ravel())
            # Σ_{s'} α_h(s,a,s') − β(s,a) q_h(s,a) <= 0
            first = lin.add("radius", T * n_pairs, step_entry * n_pairs + np.tile(pairs, T), alpha.ravel(), 1.0,
                            -np.inf, 0.0)
            lin.add_parameters("radius", first, np.arange(T * n_pairs), q[:-1].ravel())
        self._finish_rows()
        self._estimate = np.zeros((T, nnz))
        self._radius = np.zeros((T, nnz if confidence == "entry" else n_pairs))
        self.update(kernel=_model_kernels(model) if kernel is None else kernel,
                    radius=0.0 if radius is None else radius, epsilon=epsilon,
                    rewards=model.step_rewards if rewards is None else rewards,
                    costs=model.step_costs if costs is None else costs)

    # -- data ---------------------------------------------------------------------------------------------------------
    def _read_radius(self, radius: Any) -> np.ndarray:
        """β at every transition, shape (H − 1, nnz) for entry sets or (H − 1, S·A) for L1 sets."""
        model, support = self.model, self.support
        S, A = model.n_states, model.n_actions
        if np.ndim(radius) == 0 and not sp.issparse(radius) and not isinstance(radius, (list, tuple)):
            try:
                value = float(radius)
            except (TypeError, ValueError):
                value = math.nan
            if not (math.isfinite(value) and value >= 0):
                raise ProgramError(f"radius must be finite and >= 0, got {radius!r}.")
            return np.full(self._radius.shape, value)
        entry = self.confidence == "entry"
        shapes = [(S, A, S), (S, A)] if entry else [(S, A)]
        what = (f"an array (S, A, S) = {(S, A, S)}, (S, A) = {(S, A)} or sparse (S·A, S)" if entry
                else f"an array (S, A) = {(S, A)} (one radius per pair)")
        items, homogeneous = _per_step(radius, self.horizon, shapes, "radius", what)

        def one(item: Any) -> np.ndarray:
            if sp.issparse(item) and not entry:
                raise ProgramError("an L1 radius is one number per pair: an array (S, A), not a sparse matrix.")
            if sp.issparse(item):
                values = support.gather(check_counts(model, item, "radius"), "radius")
            else:
                array = np.asarray(item, dtype=float)
                if array.shape not in shapes:
                    raise ProgramError(f"radius must be {what}, got an array of shape {array.shape}.")
                if array.shape == (S, A):
                    values = array.reshape(-1)[support.pairs] if entry else array.reshape(-1)
                else:
                    values = support.gather(check_counts(model, array, "radius"), "radius")
            if not np.all(np.isfinite(values)) or np.any(values < 0):
                raise ProgramError("radius must be finite and >= 0.")
            return np.array(values, dtype=float)

        checked = _checked_steps(items, homogeneous, one, self.horizon)
        return np.stack(checked) if checked else np.zeros(self._radius.shape)

    def update(self, kernel: Any = None, radius: Any = None, epsilon: Any = None, rewards: Any = None,
               costs: Any = None) -> None:
        """Set a new estimate ``P^``, radius ``β``, tightness and/or signals (None keeps a value); the structure is
        unchanged.

        Raises
        ------
        ProgramError
            As the constructor, for the data given.
        """
        H = self.horizon
        signals = self._read_signals(rewards, costs)
        self._check_epsilon(epsilon)
        estimate = None
        if kernel is not None:
            items, homogeneous = _per_step(kernel, H, [self._kernel_shape], "kernel",
                                           "an estimated kernel (S, A, S) or sparse (S·A, S)")
            checked = _checked_steps(items, homogeneous, lambda k: check_estimate(self.model, k), H)
            estimate = np.zeros(self._estimate.shape)
            for h, item in enumerate(checked):
                if homogeneous and h > 0:
                    estimate[h] = estimate[0]
                    continue
                try:
                    estimate[h] = self.support.gather(item, "kernel")
                except ProgramError as exc:
                    raise ProgramError(f"step {h} (the transition to step {h + 1}): {exc}") from None
        radius_values = None if radius is None else self._read_radius(radius)
        # every input is checked: write
        if estimate is not None:
            self._estimate = estimate
        if radius_values is not None:
            self._radius = radius_values
        if kernel is not None or radius is not None:
            self._set_confidence()
        self._write_signals(*signals)
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def _set_confidence(self) -> None:
        values, groups = self.linear.writable_values(), self.linear.param_groups
        p_hat = self._estimate
        if self.confidence == "entry":
            values[groups["confidence_upper"]] = -(p_hat + self._radius).ravel()
            values[groups["confidence_lower"]] = (p_hat - self._radius).ravel()
        else:
            values[groups["deviation_upper"]] = -p_hat.ravel()
            values[groups["deviation_lower"]] = p_hat.ravel()
            values[groups["radius"]] = -self._radius.ravel()

    @property
    def estimate(self) -> np.ndarray:
        """``P^`` at every transition and support entry, shape (H − 1, nnz) (entry order: pair, then successor)."""
        view = self._estimate.view()
        view.flags.writeable = False
        return view

    @property
    def radius(self) -> np.ndarray:
        """``β`` at every transition: (H − 1, nnz) at the support's entries for entry sets, (H − 1, S·A) for L1."""
        view = self._radius.view()
        view.flags.writeable = False
        return view

    # -- reading a solution -------------------------------------------------------------------------------------------
    def interpret(self, x: np.ndarray) -> dict[str, Any]:
        """As :meth:`EpisodicOccupancyProgram.interpret`, with ``joint`` the clipped ``z``: (H − 1, S, A, S) on the
        dense support, else (H − 1, nnz)."""
        parts = super().interpret(x)
        joint = self.joint(x)
        parts["joint"] = None if joint is None else np.clip(joint, 0.0, None)
        return parts

    def implied_kernels(self, x: np.ndarray) -> list[Any]:
        """The kernel each transition's ``z`` implies, ``P~_h(s'|s,a) = z_h(s,a,s') / q_h(s,a)`` (``P^`` where
        ``q_h(s,a) = 0``, or uniform over the support for a pair never visited), one per transition, in the
        support's form (dense (S, A, S) or CSR (S·A, S))."""
        support = self.support
        S, A = self.model.n_states, self.model.n_actions
        z = np.clip(np.asarray(x)[self.blocks["joint"].slice], 0.0, None).reshape(self.horizon - 1, -1)
        uniform = 1.0 / support.row_counts[support.pairs]
        out = []
        for h in range(self.horizon - 1):
            mass = support.row_sums(z[h])
            fallback = np.where(support.row_sums(self._estimate[h])[support.pairs] > 0, self._estimate[h], uniform)
            with np.errstate(invalid="ignore", divide="ignore"):
                values = np.where((mass > 0)[support.pairs], z[h] / mass[support.pairs], fallback)
            out.append(values.reshape(S, A, S) if support.is_dense else support.matrix(values))
        return out

    def starting_point(self) -> np.ndarray:
        """A cold start: the uniform policy's occupancy on ``P^`` (uniform rows for pairs never visited), its joint,
        and deviations with room under the L1 radius."""
        support = self.support
        H, S, A, T = self.horizon, self.model.n_states, self.model.n_actions, self.horizon - 1
        uniform = 1.0 / support.row_counts[support.pairs]
        kernels = []
        for h in range(T):
            visited = support.row_sums(self._estimate[h])[support.pairs] > 0
            values = np.where(visited, self._estimate[h], uniform)
            kernels.append(values.reshape(S, A, S) if support.is_dense else support.matrix(values))
        q = _forward(self.model.initial, np.full((H, S, A), 1.0 / A), kernels)
        x = self._point(q)
        if T:
            q_entry = q[:-1].reshape(T, S * A)[:, support.pairs]
            kernel_entries = np.stack([k.reshape(-1) if support.is_dense else k.data for k in kernels])
            z = q_entry * kernel_entries
            x[self.blocks["joint"].slice] = z.ravel()
            if self.confidence == "l1":
                deviation = np.abs(z - self._estimate * q_entry)
                used = np.stack([support.row_sums(deviation[h]) for h in range(T)])
                room = np.maximum(self._radius * q[:-1].reshape(T, S * A) - used, 0.0)
                share = room[:, support.pairs] / support.row_counts[support.pairs]
                x[self.blocks["deviation"].slice] = (deviation + 0.5 * share).ravel()
        return x

    # -- deciding feasibility without a solver ------------------------------------------------------------------------
    def least_total(self, signal: np.ndarray) -> float:
        """The least per-episode total ``Σ_h Σ_{s,a} x_h(s,a) q_h(s,a)`` of a per-step signal ``x`` (H, S, A) over
        the program's occupancies: every policy, with every step's kernel anywhere in its confidence set.

        Extended backward induction: ``V_H = 0``, ``Q_h(s,a) = x_h(s,a) + min_{P ∈ set_h(s,a)} Σ_{s'} P(s') V_{h+1}(s')``,
        ``V_h = min_a Q_h``, returned ``μ·V_0``. The sets are rectangular (one per step and pair, as the rows state
        them), so this is the exact minimum of the linear function over the program's feasible occupancies. Each
        inner minimum is solved by sorting the successors by ``V_{h+1}``: per entry, the lower ends ``max(0, P^ − β)``
        and then the rest of the mass to the cheapest successors up to ``P^ + β``; in L1, ``min(β/2, 1 − P^(s*))``
        moved to the cheapest successor ``s*`` from the dearest ones. A pair whose set holds no distribution is
        unusable (``Q = +inf``); ``+inf`` is returned when no occupancy exists at all.
        """
        H, S, A, T = self.horizon, self.model.n_states, self.model.n_actions, self.horizon - 1
        x = np.asarray(signal, dtype=float)
        if x.shape != (H, S, A):
            raise ProgramError(f"signal must have shape (H, S, A) = {(H, S, A)}, got {x.shape}.")
        support = self.support
        present = np.zeros((S * A, S), dtype=bool)
        present[support.pairs, support.successors] = True
        values = np.zeros(S)
        for h in range(H - 1, -1, -1):
            q = x[h].copy()
            if h < T:
                estimate = np.zeros((S * A, S))
                estimate[support.pairs, support.successors] = self._estimate[h]
                if self.confidence == "entry":
                    radius = np.zeros((S * A, S))
                    radius[support.pairs, support.successors] = self._radius[h]
                    inner = _least_in_boxes(np.maximum(estimate - radius, 0.0) * present,
                                            (estimate + radius) * present, values)
                else:
                    inner = _least_in_l1_balls(estimate, self._radius[h], present, values)
                q = q + inner.reshape(S, A)
            values = q.min(axis=1)
        initial = np.asarray(self.model.initial, dtype=float)
        reached = initial > 0
        return float(initial[reached] @ values[reached]) if np.all(np.isfinite(values[reached])) else math.inf

    def infeasibility_bound(self, margin: float | None = None) -> InfeasibilityBound | None:
        """A proof that the program, as its data stand, has no feasible point, or None when none is found.

        For every constraint ``g_m`` that is piecewise affine (``max_j W_j·ζ + c_j``, its ``affine_pieces``), each
        piece's least value over the program's occupancies (:meth:`least_total` of the cost signals weighted by
        ``W_j``) is a lower bound on ``g_m``: when one exceeds ``−ε`` by more than ``margin``
        (:data:`INFEASIBILITY_MARGIN` by default, far above a solver's feasibility tolerance, so that no program an
        LP solver would call feasible is called infeasible here), no occupancy meets ``g_m(ζ) <= −ε``. With one
        affine constraint the test is exact up to that margin; with several it decides only when one of them alone
        cannot be met (None otherwise: solve the program).
        """
        margin = INFEASIBILITY_MARGIN if margin is None else float(margin)
        for m, g in enumerate(self.constraints):
            pieces = g.affine_pieces()
            if pieces is None:
                continue
            weights, intercepts = (np.atleast_2d(np.asarray(pieces[0], dtype=float)),
                                   np.atleast_1d(np.asarray(pieces[1], dtype=float)))
            for j in range(weights.shape[0]):
                signal = np.einsum("i,hisa->hsa", weights[j], self._costs)
                least = self.least_total(signal) + float(intercepts[j])
                if least > -self.epsilon + margin:
                    return InfeasibilityBound(m, least, -self.epsilon)
        return None


#: how far above ``−ε`` the least value of a constraint must be for :meth:`EpisodicExtendedProgram.infeasibility_bound`
#: to call the program infeasible: 1e-7, a hundred times the HiGHS backend's feasibility tolerance (1e-9) times the
#: totals' size (an episode's costs are sums of H per-step costs), so that the bound never contradicts a solver
INFEASIBILITY_MARGIN = 1e-7


@dataclass(frozen=True)
class InfeasibilityBound:
    """Why a program has no feasible point: constraint ``constraint``'s least value over the program's occupancies,
    ``least``, is above the largest it may take, ``limit`` (``−ε``)."""

    constraint: int
    least: float
    limit: float

    def describe(self) -> str:
        return (f"constraint {self.constraint} is at least {self.least:.6g} over every occupancy of the confidence"
                f" sets (extended backward induction), above −ε = {self.limit:.6g}")


def _least_in_boxes(lower: np.ndarray, upper: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, ``min P·values`` over distributions ``lower <= P <= upper`` (rows (n, S)): the lower ends, then the
    rest of the mass to the successors of least value first; ``+inf`` for a row whose box holds no distribution."""
    order = np.argsort(values, kind="stable")
    lo, up, v = lower[:, order], upper[:, order], values[order]
    rest = 1.0 - lo.sum(axis=1)
    room = up - lo
    before = np.cumsum(room, axis=1) - room
    added = np.clip(rest[:, None] - before, 0.0, room)
    mass = lo + added
    with np.errstate(invalid="ignore"):
        total = np.where(mass > 0, mass * v, 0.0).sum(axis=1)
    empty = (rest < -_MASS_TOLERANCE) | (up.sum(axis=1) < 1.0 - _MASS_TOLERANCE)
    return np.where(empty, math.inf, total)


def _least_in_l1_balls(estimate: np.ndarray, radius: np.ndarray, present: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, ``min P·values`` over distributions on the row's ``present`` successors with ``‖P − P^‖_1 <= β``:
    ``min(β/2, 1 − P^(s*))`` moved to the cheapest present successor ``s*`` from the dearest ones (a row of ``P^``
    summing to 1), or all the mass on ``s*`` when ``P^``'s row is 0 and ``β >= 1``; ``+inf`` when the ball holds no
    distribution."""
    n, S = estimate.shape
    masked = np.where(present, values[None, :], math.inf)
    best = np.argmin(masked, axis=1)
    rows = np.arange(n)
    best_value = masked[rows, best]
    sums = estimate.sum(axis=1)
    visited = sums > 0.5
    moved = np.where(visited, np.minimum(radius / 2.0, 1.0 - estimate[rows, best]), 0.0)
    order = np.argsort(-values, kind="stable")
    giving = estimate.copy()
    giving[rows, best] = 0.0
    giving = giving[:, order]
    before = np.cumsum(giving, axis=1) - giving
    removed = np.clip(moved[:, None] - before, 0.0, giving)
    with np.errstate(invalid="ignore"):
        base = np.where(estimate > 0, estimate * values[None, :], 0.0).sum(axis=1)
        taken = np.where(removed > 0, removed * values[order][None, :], 0.0).sum(axis=1)
        total = np.where(visited, base + np.where(moved > 0, moved * best_value, 0.0) - taken, best_value)
    usable = visited | (radius >= 1.0 - _MASS_TOLERANCE)
    return np.where(usable, total, math.inf)


#: how far a box's mass may miss 1 and still hold a distribution (round-off of P^ ± β)
_MASS_TOLERANCE = 1e-12

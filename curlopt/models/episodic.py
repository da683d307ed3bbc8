"""Episodic (finite-horizon) constrained MDPs: a horizon H on a tabular model (docs/math.md, the episodic setting).

Every episode starts from ``s_1 ~ μ`` (:attr:`CMDP.initial`) and lasts ``H`` steps. The kernel is time-homogeneous
(one ``P``, as in :class:`~curlopt.models.cmdp.CMDP`) or given per transition inside an episode (``H − 1`` kernels
``P_1 … P_{H−1}``: ``P_h`` moves step ``h`` to step ``h + 1``); rewards and costs are the same at every step or given
per step (``H`` arrays). A policy is ``π = (π_1, …, π_H)``, an array of shape (H, S, A).

The criterion's values are **per-episode totals**: ``λ_k = Σ_h Σ_{s,a} r_{k,h}(s,a) q_h(s,a)`` and likewise ``ζ_i``,
with ``q_h(s,a) = Pr(s_h = s, a_h = a)`` the occupancy of step ``h`` (steps are 0-based in arrays: ``q[0]`` is the
first step). A budget ``τ_i`` per episode is a constraint ``ζ_i − τ_i <= 0`` on those totals.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Utility
from .cmdp import CMDP, _finite_array, _stored_kernel, check_distribution

__all__ = ["EpisodicCMDP", "check_horizon", "check_episode_policy", "episode_occupancy", "episode_values",
           "MAX_HORIZON"]

#: The largest horizon accepted (an episode's arrays grow linearly in H; this bounds mistakes such as H = 10**9).
MAX_HORIZON = 100_000


def check_horizon(horizon: Any) -> int:
    """``horizon`` as an int ``H >= 1``; raise :class:`ModelError` for anything else (bools, floats, H <= 0)."""
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral):
        raise ModelError(f"horizon must be an integer >= 1 (the number of steps of an episode), got {horizon!r}.")
    value = int(horizon)
    if value < 1:
        raise ModelError(f"horizon must be an integer >= 1 (the number of steps of an episode), got {value}.")
    if value > MAX_HORIZON:
        raise ModelError(f"horizon must be at most {MAX_HORIZON:,}, got {value:,}.")
    return value


def _per_step_signals(value: Any, name: str, horizon: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(signals for the base model (K, S, A), per-step signals (H, K, S, A) or None)`` from a 2-, 3- or 4-D array.

    A 4-D array holds one (K, S, A) array per step; the base model gets their mean over steps (the average per-step
    signal, so that λ of an occupancy summed over steps is the same)."""
    if value is None:
        return None, None  # type: ignore[return-value]  # the caller passes None through to CMDP
    array = _finite_array(value, name)
    if array.ndim != 4:
        return array, None
    if array.shape[0] != horizon:
        raise ModelError(
            f"{name} given per step must have shape (H, count, S, A) with H = {horizon} (one array per step of an"
            f" episode), got shape {array.shape}."
        )
    return array.mean(axis=0), array


def _per_step_kernels(kernel: Any, horizon: int, storage: str, n_states: int, n_actions: int) -> list[Any]:
    """Check ``H − 1`` kernels, each dense (S, A, S) or sparse (S·A, S); return them stored as the model stores one."""
    items = list(kernel) if not isinstance(kernel, np.ndarray) else [kernel[h] for h in range(kernel.shape[0])]
    if len(items) != horizon - 1:
        raise ModelError(
            f"a per-step kernel must hold H − 1 = {horizon - 1} kernels (P_h moves step h to step h + 1 inside an"
            f" episode of H = {horizon} steps), got {len(items)}."
        )
    stored = []
    for h, item in enumerate(items):
        try:
            dense, transitions = _stored_kernel(item, storage, n_states, n_actions)
        except ModelError as exc:
            raise ModelError(f"the kernel of step {h + 1}: {exc}") from None
        stored.append(transitions if dense is None else dense)
        for array in (dense,):
            if array is not None:
                array.setflags(write=False)
    return stored


def _kernel_size(kernel: Any, per_step: bool) -> tuple[int, int] | None:
    """``(S, A)`` as the kernel states them (a kernel fixes S twice: its rows' states and its successors), or None
    when they cannot be read from its shape (the kernel's own checks then say what is wrong with it)."""
    first = kernel[0] if per_step and len(kernel) > 0 else kernel
    if sp.issparse(first):
        rows, S = first.shape
        return (S, rows // S) if S > 0 and rows % S == 0 else None
    try:
        shape = np.shape(first)
    except ValueError:   # a ragged nested list
        return None
    return (shape[0], shape[1]) if len(shape) == 3 and shape[0] == shape[2] else None


def _check_signal_sizes(rewards: np.ndarray, costs: np.ndarray | None, kernel: Any, per_step: bool) -> None:
    """Name the array whose states or actions disagree with the others.

    Without this, the base model reads S and A from the rewards and blames whichever array is checked next (the
    costs, or the kernel) when the rewards are the odd one. A kernel states S twice (its rows and its successors),
    so when it is given its (S, A) is the reference; without one the rewards are, as in the base model.
    """
    # an array of another number of axes is refused by the base model's checks, with its own message
    signals = [(name, array) for name, array in (("rewards", rewards), ("costs", costs))
               if array is not None and array.ndim in (2, 3, 4)]
    sizes = {name: tuple(array.shape[-2:]) for name, array in signals}
    given = None if kernel is None else _kernel_size(kernel, per_step)
    if given is None or all(size == given for size in sizes.values()):
        return
    if len(sizes) == 2 and len(set(sizes.values())) == 1:
        S, A = sizes["rewards"]
        raise ModelError(
            f"the kernel has S={given[0]} states and A={given[1]} actions, but the rewards and the costs have S={S}"
            f" and A={A}.")
    for name, array in signals:
        if sizes[name] != given:
            expected = (*array.shape[:-2], *given)
            raise ModelError(
                f"{name} has shape {array.shape}, but the kernel has S={given[0]} states and A={given[1]} actions:"
                f" expected {expected}.")


class EpisodicCMDP(CMDP):
    """A constrained MDP played in episodes of ``horizon`` steps.

    Parameters
    ----------
    rewards : array_like, shape (K, S, A) or (S, A), or (H, K, S, A) per step
        Reward signals per step.
    costs : array_like, shape (d, S, A) or (S, A), or (H, d, S, A) per step, optional
        Cost signals per step.
    objective, constraints
        As for :class:`~curlopt.models.cmdp.CMDP`, applied to the **per-episode totals** λ and ζ.
    kernel : array_like (S, A, S) or scipy sparse (S·A, S); or a sequence of H − 1 such kernels, or an array
        (H − 1, S, A, S)
        Time-homogeneous ``P``, or ``P_1 … P_{H−1}`` (``P_h`` moves step h to step h + 1). A 4-D array is read as
        per-step kernels.
    initial : array_like, shape (S,), optional
        ``μ``, the distribution of the first state of every episode; default uniform.
    horizon : int
        ``H >= 1``.
    safe_policy : array_like, shape (H, S, A) or (S, A), optional
        A policy known to satisfy the constraints strictly (declared by whoever builds the model); the algorithms that
        need one (OptPess-LP, DOPE) take it from here and refuse without it. Checked to be a policy, not to be safe.
    name, labels, storage
        As for :class:`~curlopt.models.cmdp.CMDP`.

    Raises
    ------
    ModelError
        For a horizon that is not an integer >= 1, per-step arrays of the wrong length, or anything
        :class:`~curlopt.models.cmdp.CMDP` refuses.
    """

    criterion = "episodic"

    def __init__(
        self,
        rewards: Any,
        costs: Any = None,
        objective: Utility | None = None,
        constraints: Sequence[Utility] = (),
        kernel: Any = None,
        initial: Any = None,
        horizon: Any = None,
        safe_policy: Any = None,
        name: str = "episodic",
        labels: dict | None = None,
        storage: str = "auto",
    ):
        H = check_horizon(horizon)
        base_rewards, step_rewards = _per_step_signals(rewards, "rewards", H)
        base_costs, step_costs = _per_step_signals(costs, "costs", H)
        per_step_kernel = kernel is not None and not sp.issparse(kernel) and (
            (isinstance(kernel, np.ndarray) and kernel.ndim == 4)
            or (isinstance(kernel, (list, tuple)) and (len(kernel) == 0 or sp.issparse(kernel[0])
                                                       or np.ndim(kernel[0]) == 3)))
        _check_signal_sizes(step_rewards if step_rewards is not None else base_rewards,
                            step_costs if step_costs is not None else base_costs, kernel, per_step_kernel)
        super().__init__(base_rewards, base_costs, objective, constraints, None if per_step_kernel else kernel,
                         initial, name=name, labels=labels, storage=storage)
        self.horizon: int = H
        S, A = self.n_states, self.n_actions
        self._step_kernels: list[Any] | None = (
            _per_step_kernels(kernel, H, storage, S, A) if per_step_kernel else None)
        self._step_rewards = step_rewards
        self._step_costs = step_costs
        for array in (step_rewards, step_costs):
            if array is not None:
                array.setflags(write=False)
        self.safe_policy: np.ndarray | None = (
            None if safe_policy is None else check_episode_policy(safe_policy, H, S, A, "safe_policy"))

    # -- the model per step -----------------------------------------------------------------------------------------
    @property
    def time_homogeneous(self) -> bool:
        """True when one kernel serves every step (no per-step kernels were given)."""
        return self._step_kernels is None

    @property
    def has_kernel(self) -> bool:
        return self._step_kernels is not None or super().has_kernel

    def step_kernel(self, h: int) -> Any:
        """The kernel moving step ``h`` to step ``h + 1`` (0-based, ``0 <= h < H − 1``): a dense (S, A, S) array or a
        CSR (S·A, S) matrix, as the model stores it."""
        if not 0 <= int(h) < self.horizon - 1:
            raise ModelError(f"step {h} has no kernel: an episode of H = {self.horizon} steps has kernels 0..{self.horizon - 2}.")
        if self._step_kernels is not None:
            return self._step_kernels[int(h)]
        return self.transitions if self.sparse else self.kernel

    def step_kernel_dense(self, h: int) -> np.ndarray:
        """:meth:`step_kernel` as a dense (S, A, S) array."""
        kernel = self.step_kernel(h)
        if sp.issparse(kernel):
            return self._densify(kernel, self.n_states, self.n_actions, self.name)
        return kernel

    @property
    def step_rewards(self) -> np.ndarray:
        """Rewards per step, shape (H, K, S, A) (a read-only broadcast view when the same at every step)."""
        if self._step_rewards is not None:
            return self._step_rewards
        return np.broadcast_to(self.rewards, (self.horizon, *self.rewards.shape))

    @property
    def step_costs(self) -> np.ndarray:
        """Costs per step, shape (H, d, S, A) (a read-only broadcast view when the same at every step)."""
        if self._step_costs is not None:
            return self._step_costs
        return np.broadcast_to(self.costs, (self.horizon, *self.costs.shape))

    @property
    def signals_per_step(self) -> bool:
        """True when rewards or costs were given per step."""
        return self._step_rewards is not None or self._step_costs is not None

    def _kernel_text(self) -> str:
        if self._step_kernels is not None:
            return f"per step ({len(self._step_kernels)} kernels)"
        return super()._kernel_text()

    def __repr__(self) -> str:
        base = super().__repr__()
        return base[:-1] + f", H={self.horizon})" if base.endswith(")") else base


def check_episode_policy(policy: Any, horizon: int, n_states: int, n_actions: int, name: str = "policy") -> np.ndarray:
    """A policy as an (H, S, A) array of distributions; an (S, A) policy is used at every step.

    Raises
    ------
    ModelError
        For the wrong shape, NaN, or rows that are not distributions.
    """
    array = _finite_array(policy, name)
    if array.shape == (n_states, n_actions):
        array = np.broadcast_to(array, (horizon, n_states, n_actions)).copy()
    if array.shape != (horizon, n_states, n_actions):
        raise ModelError(
            f"{name} must have shape (H, S, A) = ({horizon}, {n_states}, {n_actions}) or (S, A), got {array.shape}.")
    check_distribution(array, name)
    array.setflags(write=False)
    return array


def episode_occupancy(model: EpisodicCMDP, policy: Any) -> np.ndarray:
    """The occupancy ``q_h(s,a) = Pr(s_h = s, a_h = a)`` of ``policy`` on ``model``, shape (H, S, A), by the forward
    recursion ``d_1 = μ``, ``q_h = d_h π_h``, ``d_{h+1}(s') = Σ_{s,a} P_h(s'|s,a) q_h(s,a)``."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    pi = check_episode_policy(policy, H, S, A)
    q = np.empty((H, S, A))
    d = np.asarray(model.initial, dtype=float)
    for h in range(H):
        q[h] = d[:, None] * pi[h]
        if h < H - 1:
            kernel = model.step_kernel(h)
            if sp.issparse(kernel):
                d = np.asarray(kernel.T @ q[h].ravel()).ravel()
            else:
                d = np.einsum("sat,sa->t", kernel, q[h])
    return q


def episode_values(model: EpisodicCMDP, policy: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode totals ``(λ (K,), ζ (d,))`` of ``policy`` on ``model`` (exact, from :func:`episode_occupancy`)."""
    q = episode_occupancy(model, policy)
    return (np.einsum("hksa,hsa->k", model.step_rewards, q), np.einsum("hksa,hsa->k", model.step_costs, q))

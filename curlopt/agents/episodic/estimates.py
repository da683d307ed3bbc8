"""What an episodic agent estimates from its transition counts: ``P̂`` and the confidence widths of the papers.

Every episodic agent counts its transitions ``n(s,a,s')``; the kernel is learned, the rewards and costs are known
(the assumption of the papers the agents come from). The counts are **pooled over the steps of an episode** when
the model's kernel is time-homogeneous (one ``P`` at every step, as in the public implementations of OptCMDP,
OptPess-LP and DOPE by the DOPE authors), and kept **per step** (``n_h(s,a,s')``, h = 1..H−1) when the model gives
one kernel per step, so the estimate of ``P_h`` only uses transitions made at step h (the papers' ``n_{h,k}``).

The widths (docs/math.md, "The episodic setting"):

``bernstein``
    per entry, ``β(s,a,s') = min(1, 2 sqrt(L P̂(1 − P̂) / max(1, N)) + 14 L / (3 max(1, N)))`` and ``β = 1`` for a
    pair never tried (the empirical Bernstein width of OptCMDP and DOPE);
``hoeffding``
    per pair, ``β(s,a) = sqrt(L / max(1, N))`` (OptPess-LP's ``β̄``);
``l1``
    per pair, UC-CURL's L1 radius ``sqrt(14 S ln(2 A t) / max(1, N))``.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import AgentError

__all__ = ["EpisodeCounts", "empirical_kernel", "bernstein_width", "hoeffding_width", "l1_width", "log_term"]


class EpisodeCounts:
    """Transition counts of an episodic agent.

    Parameters
    ----------
    n_states, n_actions, horizon : int
    pooled : bool
        True: one (S, A, S) array for every step (a time-homogeneous kernel); False: one per transition step,
        shape (H − 1, S, A, S).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, pooled: bool):
        self.n_states, self.n_actions, self.horizon, self.pooled = n_states, n_actions, horizon, pooled
        layers = 1 if pooled else max(horizon - 1, 1)
        self.transitions = np.zeros((layers, n_states, n_actions, n_states))

    def add_episode(self, states: np.ndarray, actions: np.ndarray) -> None:
        """Count the transitions ``(s_h, a_h) -> s_{h+1}``, h = 1..H−1, of one episode (states and actions of
        length H)."""
        states, actions = np.asarray(states, dtype=np.int64), np.asarray(actions, dtype=np.int64)
        H = self.horizon
        if states.shape != (H,) or actions.shape != (H,):
            raise AgentError(f"an episode has H = {H} states and actions, got {states.shape} and {actions.shape}.")
        if H < 2:
            return
        s, a, nxt = states[:-1], actions[:-1], states[1:]
        if self.pooled:
            np.add.at(self.transitions[0], (s, a, nxt), 1.0)
        else:
            np.add.at(self.transitions, (np.arange(H - 1), s, a, nxt), 1.0)

    @property
    def visits(self) -> np.ndarray:
        """``N(s,a)``: shape (1, S, A) pooled, else (H − 1, S, A)."""
        return self.transitions.sum(axis=-1)

    @property
    def total(self) -> float:
        return float(self.transitions.sum())


def empirical_kernel(counts: np.ndarray) -> np.ndarray:
    """``P̂(s'|s,a) = n(s,a,s') / N(s,a)``, uniform over successors for a pair never tried (the DOPE authors'
    choice). Works on any leading axes."""
    visits = counts.sum(axis=-1, keepdims=True)
    S = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        kernel = np.where(visits > 0, counts / np.where(visits > 0, visits, 1.0), 1.0 / S)
    return kernel


def log_term(constant: float, states: int, actions: int, horizon: int, episodes: int, delta: float,
             states_power: int = 1) -> float:
    """``L = ln(constant · S^states_power · A · H · K / δ)``, the logarithm of the papers' confidence widths."""
    if not 0 < delta < 1:
        raise AgentError(f"delta (the confidence level's failure probability) must be in (0, 1), got {delta!r}.")
    return math.log(constant * states ** states_power * actions * horizon * episodes / delta)


def bernstein_width(counts: np.ndarray, L: float) -> np.ndarray:
    """Per-entry empirical Bernstein widths ``min(1, 2 sqrt(L P̂(1−P̂)/max(1,N)) + 14 L / (3 max(1,N)))``, 1 where
    ``N = 0``; same shape as ``counts``."""
    visits = counts.sum(axis=-1, keepdims=True)
    n = np.maximum(visits, 1.0)
    p = empirical_kernel(counts)
    width = np.minimum(1.0, 2.0 * np.sqrt(L * p * (1.0 - p) / n) + 14.0 * L / (3.0 * n))
    return np.where(visits > 0, width, 1.0)


def hoeffding_width(visits: np.ndarray, L: float) -> np.ndarray:
    """Per-pair widths ``sqrt(L / max(1, N(s,a)))``."""
    return np.sqrt(L / np.maximum(visits, 1.0))


def l1_width(visits: np.ndarray, n_states: int, n_actions: int, steps: float) -> np.ndarray:
    """UC-CURL's L1 radius ``sqrt(14 S ln(2 A t) / max(1, N(s,a)))`` after ``t >= 1`` steps."""
    t = max(float(steps), 1.0)
    return np.sqrt(14.0 * n_states * math.log(2.0 * n_actions * t) / np.maximum(visits, 1.0))



def policy_totals(initial: np.ndarray, kernel: np.ndarray, policy: np.ndarray, step_signals: np.ndarray) -> np.ndarray:
    """Per-episode totals ``Σ_h Σ_{s,a} signal_h(s,a) q_h(s,a)`` of ``policy`` (H, S, A) on ``kernel`` — one
    (S, A, S) array for every step or (H − 1, S, A, S) per step — for ``step_signals`` of shape (H, n, S, A).

    The forward recursion of :func:`curlopt.models.episodic.episode_occupancy`, on a kernel the agent estimated.
    """
    H = policy.shape[0]
    d = np.asarray(initial, dtype=float)
    total = np.zeros(step_signals.shape[1])
    for h in range(H):
        q = d[:, None] * policy[h]
        total += np.einsum("nsa,sa->n", step_signals[h], q)
        if h < H - 1:
            P = kernel if kernel.ndim == 3 else kernel[h]
            d = np.einsum("sat,sa->t", P, q)
    return total

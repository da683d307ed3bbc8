"""A Gymnasium environment for any tabular CMDP with a known kernel.

Random-number contract (the agents' fast stepping path relies on it to
reproduce this environment's trajectory exactly):

* ``reset(seed=...)`` calls ``super().reset(seed=seed)``, then draws exactly one
  ``u = self.np_random.random()`` and starts in
  ``min(searchsorted(cumulative_initial, u, side="right"), S - 1)``;
* ``step(action)`` draws exactly one ``u = self.np_random.random()`` and moves to
  ``min(searchsorted(cumulative_kernel[s, a], u, side="right"), S - 1)``.

``cumulative_initial = cumsum(model.initial)`` and
``cumulative_kernel = cumsum(model.kernel, axis=2)``. Nothing else draws from
``np_random``.

A model stored sparse (:attr:`curlopt.CMDP.sparse`) is stepped from its CSR rows instead:
``cumulative_transitions`` holds, row ``s·A + a``, the cumulative sums over the row's stored successors, and
``step`` moves to the successor at ``min(searchsorted(row, u, side="right"), len(row) − 1)``. Those sums are the
dense table's values at the stored successors (:mod:`curlopt.models.sampling`), so the same model stored sparse
or dense gives the same trajectory for the same seed; the memory is linear in the kernel's nonzeros.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..errors import CurloptError, EnvError
from ..models.cmdp import CMDP
from ..models.sampling import cumulative_transitions
from ..models.signals import check_noise, noisy_signals, signal_bounds

__all__ = ["TabularCMDPEnv"]


def _index(value: Any, size: int, name: str) -> int:
    """``value`` as an int in ``[0, size)``, or an EnvError naming ``name``."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise EnvError(f"{name} must be an integer in [0, {size - 1}], got {value!r} ({type(value).__name__}).")
    if not 0 <= value < size:
        raise EnvError(f"{name} must be an integer in [0, {size - 1}], got {int(value)}.")
    return int(value)


class TabularCMDPEnv(gymnasium.Env):
    """A continuing (never-terminating) Gymnasium environment simulating a :class:`curlopt.CMDP`.

    Observations are state indices (``Discrete(S)``), actions are action indices
    (``Discrete(A)``). ``step`` returns ``(next_state, reward, False, False, info)``
    where ``reward = rewards[0, s, a]`` (the first reward signal) and ``info``
    holds the vectors ``"rewards"`` (K,) and ``"costs"`` (d,) of the state and
    action *before* the transition. Episodes never end: add a
    ``gymnasium.wrappers.TimeLimit`` if you want them to.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel.
    render_mode : {None, "ansi"}, default None
        ``"ansi"``: :meth:`render` returns a one-line text description of the state.
    signals : {"mean", "bernoulli", "gaussian"}, default "mean"
        The signals :meth:`step` returns: the model's means, or draws around them
        (:mod:`curlopt.models.signals`) from a generator of their own, seeded by ``signal_seed``, so the
        transitions are the same whatever the signals.
    signal_seed : optional
        The seed of the noisy signals' generator.

    Attributes
    ----------
    model : CMDP
        The model behind the environment.
    cumulative_kernel : ndarray, shape (S, A, S), or None
        ``cumsum(model.kernel, axis=2)`` (read-only); None for a model stored sparse.
    cumulative_transitions : scipy.sparse.csr_array, shape (S·A, S), or None
        For a model stored sparse: its rows' cumulative sums over their stored successors (read-only); else None.
    cumulative_initial : ndarray, shape (S,)
        ``cumsum(model.initial)`` (read-only).
    state : int or None
        The current state; ``None`` before the first reset.

    Raises
    ------
    EnvError
        If ``model`` is not a CMDP, has no kernel, or ``render_mode`` is unknown.
    """

    # render_fps only matters to human-facing render modes; declared so checkers do not warn.
    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, model: CMDP, render_mode: str | None = None, signals: str = "mean", signal_seed: Any = None):
        if not isinstance(model, CMDP):
            raise EnvError(f"model must be a curlopt CMDP, got {type(model).__name__}.")
        if not model.sparse and model.kernel is None:
            raise EnvError(f"model {model.name!r} has no kernel; an environment needs one to simulate transitions.")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}.")
        self.model = model
        self.render_mode = render_mode
        self.observation_space = spaces.Discrete(model.n_states)
        self.action_space = spaces.Discrete(model.n_actions)
        self.cumulative_kernel: np.ndarray | None = None
        self.cumulative_transitions: Any = None
        if model.sparse:
            self.cumulative_transitions = cumulative_transitions(model.transitions)
        else:
            self.cumulative_kernel = np.cumsum(np.asarray(model.kernel), axis=2)
            self.cumulative_kernel.setflags(write=False)
        self.cumulative_initial = np.cumsum(model.initial)
        self.cumulative_initial.setflags(write=False)
        self.state: int | None = None
        self._last: tuple[int, int] | None = None
        try:
            self.signals = check_noise(signals)
        except CurloptError as exc:
            raise EnvError(str(exc)) from None
        table = np.concatenate([model.rewards, model.costs])
        self._signal_table = table.reshape(table.shape[0], -1)
        self._signal_low, self._signal_high = signal_bounds(table)
        # the noise has its own generator, so the transitions drawn from np_random are the same whatever the signals
        self._signal_random = np.random.default_rng(signal_seed)

    def _draw(self, cumulative: np.ndarray) -> int:
        # One uniform per draw, inverse-CDF: the contract in the module docstring.
        u = self.np_random.random()
        return min(int(np.searchsorted(cumulative, u, side="right")), self.model.n_states - 1)

    def _draw_successor(self, row: int) -> int:
        # The same single uniform, inverse-CDF over the row's stored successors only.
        table = self.cumulative_transitions
        start, end = int(table.indptr[row]), int(table.indptr[row + 1])
        u = self.np_random.random()
        position = min(int(np.searchsorted(np.asarray(table.data[start:end]), u, side="right")), end - start - 1)
        return int(table.indices[start + position])

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.int64, dict[str, Any]]:
        """Start a new trajectory from the model's initial distribution.

        Parameters
        ----------
        seed : int, optional
            Reseeds ``np_random`` (Gymnasium semantics).
        options : dict, optional
            ``{"state": s}`` starts in state ``s`` instead; the uniform for the
            initial draw is still consumed, so the stream stays aligned.

        Returns
        -------
        observation : numpy.int64
        info : dict
            Empty.
        """
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            # Gymnasium's own error for it is not a curlopt error: refused here, in one line, like the other arguments
            raise EnvError(f"seed must be None or an integer >= 0, got {seed!r}.")
        super().reset(seed=seed)
        options = {} if options is None else options
        if not isinstance(options, dict) or set(options) - {"state"}:
            raise EnvError(f"options may only hold the key 'state', got {options!r}.")
        state = self._draw(self.cumulative_initial)
        if "state" in options:
            state = _index(options["state"], self.model.n_states, "options['state']")
        self.state = state
        self._last = None
        return np.int64(state), {}

    def step(self, action: Any) -> tuple[np.int64, float, bool, bool, dict[str, Any]]:
        """Play ``action`` in the current state.

        Returns
        -------
        observation : numpy.int64
            The next state.
        reward : float
            ``rewards[0, s, a]``.
        terminated, truncated : bool
            Always False (a continuing task).
        info : dict
            ``"rewards"``: ndarray (K,), ``"costs"``: ndarray (d,), both at (s, a).

        Raises
        ------
        EnvError
            Before the first reset, or for an action that is not an integer in [0, A).
        """
        if self.state is None:
            raise EnvError("call reset() before step().")
        a = _index(action, self.model.n_actions, "action")
        s = self.state
        if self.cumulative_kernel is not None:
            self.state = self._draw(self.cumulative_kernel[s, a])
        else:
            self.state = self._draw_successor(s * self.model.n_actions + a)
        self._last = (s, a)
        if self.signals == "mean":
            info = {"rewards": self.model.rewards[:, s, a].copy(), "costs": self.model.costs[:, s, a].copy()}
            return np.int64(self.state), float(self.model.rewards[0, s, a]), False, False, info
        pair = s * self.model.n_actions + a
        drawn = noisy_signals(self._signal_table[:, [pair]], self._signal_low, self._signal_high, self.signals,
                              self._signal_random)[:, 0]
        K = self.model.n_rewards
        info = {"rewards": drawn[:K].copy(), "costs": drawn[K:].copy()}
        return np.int64(self.state), float(drawn[0]), False, False, info

    def render(self) -> str | None:
        """With ``render_mode="ansi"``, a line naming the state (and the last state and action)."""
        if self.render_mode != "ansi":
            return None
        states = self.model.labels.get("states")
        actions = self.model.labels.get("actions")

        def name(labels: list[str] | None, index: int) -> str:
            return f"{labels[index]}" if labels and index < len(labels) else str(index)

        if self.state is None:
            return f"{self.model.name}: not reset"
        text = f"{self.model.name}: state {name(states, self.state)}"
        if self._last is not None:
            s, a = self._last
            text += f" (from state {name(states, s)} after action {name(actions, a)})"
        return text

    def __repr__(self) -> str:
        return f"TabularCMDPEnv({self.model!r})"

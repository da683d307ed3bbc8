"""A Gymnasium environment for an episodic model: every episode is truncated after H steps.

Random-number contract (as :class:`~curlopt.envs.tabular.TabularCMDPEnv`'s, per step of the episode):

* ``reset(seed=...)`` draws one uniform and starts from ``μ``, at step 0;
* steps ``0 … H − 2`` each draw one uniform and move by that step's kernel ``P_h`` (inverse CDF over the dense row,
  or over a sparse row's stored successors);
* step ``H − 1``, the last, draws nothing: the episode ends there (no kernel follows it), the observation is the
  state the last action was taken in, and ``truncated`` is True. Stepping again before a reset is an error.

Rewards and costs are the step's own (``model.step_rewards[h]``, ``model.step_costs[h]``); ``info["step"]`` is the
0-based step the action was taken at.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import EnvError
from ..models.episodic import EpisodicCMDP
from ..models.sampling import cumulative_transitions
from .tabular import TabularCMDPEnv, _index

__all__ = ["EpisodicCMDPEnv"]


class EpisodicCMDPEnv(TabularCMDPEnv):
    """An episodic model as a Gymnasium environment: ``truncated=True`` after ``model.horizon`` steps.

    Parameters
    ----------
    model : EpisodicCMDP
        A model with its kernel (time-homogeneous or per step).
    render_mode : {None, "ansi"}, default None

    Attributes
    ----------
    step_index : int or None
        The 0-based step of the episode the next action is taken at (None before the first reset).

    Raises
    ------
    EnvError
        For a model that is not episodic or has no kernel, or a bad render mode.
    """

    def __init__(self, model: EpisodicCMDP, render_mode: str | None = None):
        if not isinstance(model, EpisodicCMDP):
            raise EnvError(f"model must be a curlopt EpisodicCMDP, got {type(model).__name__}.")
        if not model.has_kernel:
            raise EnvError(f"model {model.name!r} has no kernel; an environment needs one to simulate transitions.")
        if model.time_homogeneous:
            super().__init__(model, render_mode=render_mode)
            self._tables: list[Any] = []
        else:
            super().__init__(_first_step_view(model), render_mode=render_mode)
            self.model = model
            self._tables = [_table(model.step_kernel(h)) for h in range(model.horizon - 1)]
        self.step_index: int | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.int64, dict[str, Any]]:
        """Start an episode from ``μ`` at step 0 (see :meth:`TabularCMDPEnv.reset`)."""
        observation, info = super().reset(seed=seed, options=options)
        self.step_index = 0
        return observation, info

    def step(self, action: Any) -> tuple[np.int64, float, bool, bool, dict[str, Any]]:
        """Play ``action`` at the current step; ``truncated`` is True at the episode's last step (module docstring).

        Raises
        ------
        EnvError
            Before the first reset, after the episode's last step (reset first), or for a bad action.
        """
        if self.state is None or self.step_index is None:
            raise EnvError("call reset() before step().")
        model = self.model
        assert isinstance(model, EpisodicCMDP)
        h = self.step_index
        if h >= model.horizon:
            raise EnvError(f"the episode ended after H = {model.horizon} steps: call reset() to start the next one.")
        a = _index(action, model.n_actions, "action")
        s = self.state
        last = h == model.horizon - 1
        if not last:
            self.state = self._successor(h, s, a)
        self._last = (s, a)
        self.step_index = h + 1
        rewards, costs = model.step_rewards[h, :, s, a].copy(), model.step_costs[h, :, s, a].copy()
        info = {"rewards": rewards, "costs": costs, "step": h}
        return np.int64(self.state), float(rewards[0]), False, last, info

    def _successor(self, h: int, s: int, a: int) -> int:
        if not self._tables:  # time-homogeneous: the base environment's tables
            if self.cumulative_kernel is not None:
                return self._draw(self.cumulative_kernel[s, a])
            return self._draw_successor(s * self.model.n_actions + a)
        table = self._tables[h]
        if isinstance(table, np.ndarray):
            return self._draw(table[s, a])
        row = s * self.model.n_actions + a
        start, end = int(table.indptr[row]), int(table.indptr[row + 1])
        u = self.np_random.random()
        position = min(int(np.searchsorted(np.asarray(table.data[start:end]), u, side="right")), end - start - 1)
        return int(table.indices[start + position])

    def __repr__(self) -> str:
        return f"EpisodicCMDPEnv({self.model!r})"


def _table(kernel: Any) -> Any:
    """The inverse-CDF table of one step's kernel: a dense (S, A, S) cumulative array or a sparse CSR one."""
    if isinstance(kernel, np.ndarray):
        table = np.cumsum(kernel, axis=2)
        table.setflags(write=False)
        return table
    return cumulative_transitions(kernel)


def _first_step_view(model: EpisodicCMDP) -> EpisodicCMDP:
    """The model with its first step's kernel as a time-homogeneous one: only the base environment's checks and
    spaces use it (steps are drawn from the per-step tables)."""
    S, A = model.n_states, model.n_actions
    kernel = model.step_kernel(0) if model.horizon > 1 else np.tile(np.eye(S)[:, None, :], (1, A, 1))
    return EpisodicCMDP(model.rewards, model.costs if model.n_costs else None, model.objective, model.constraints,
                        kernel, initial=model.initial, horizon=model.horizon, name=model.name,
                        labels=model.labels)

"""PS-CURL per episode: the ε-tight episodic occupancy program on a kernel drawn from the Dirichlet posterior."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from ...programs.tightness import TIGHTNESS_CONSTANT_MAX
from .base import ProgramEpisodicAgent, _check_scale, learner_support
from .optimistic import episode_tightness

__all__ = ["EpisodicPsCurl", "MAX_PRIOR"]

#: the largest Dirichlet prior α0 taken (as for the infinite-horizon PS-CURL)
MAX_PRIOR = 1e6


class EpisodicPsCurl(ProgramEpisodicAgent):
    """PS-CURL per episode.

    Each episode k: ``P̃(·|s,a) ~ Dirichlet(α0 + n(s,a,·))`` independently for every pair (and every step, for
    per-step counts), then the episodic occupancy program on ``P̃`` with ``g_m(ζ) <= −ε_k``, ε_k as UC-CURL's
    (:func:`~curlopt.agents.episodic.optimistic.episode_tightness`); ``K_ε = 0`` is CMDP-PSRL's posterior sampling
    without tightening. When the ε-tight program is infeasible the backend's fallback is played (``fallback``).

    Parameters
    ----------
    model : EpisodicCMDP
    backend, seed, episodes, replan
        As for :class:`~curlopt.agents.episodic.optimistic.OptCmdp`; ``seed`` drives the posterior draws.
    tightness_constant : float, default 1
        K_ε.
    episodes_lower_bound : float, optional
        K_l.
    prior : float, default 1
        α0 in (0, 1e6].
    """

    name = "ps-curl"

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 tightness_constant: float = 1.0, episodes_lower_bound: float | None = None, prior: float = 1.0,
                 replan: str = "every-episode", **backend_options: Any):
        value = _check_scale(tightness_constant, "tightness_constant (K_ε)")
        if value > TIGHTNESS_CONSTANT_MAX:
            raise AgentError(f"tightness_constant (K_ε) must be at most {TIGHTNESS_CONSTANT_MAX:.0f}, got {value!r}.")
        if episodes_lower_bound is not None and (isinstance(episodes_lower_bound, bool) or not isinstance(
                episodes_lower_bound, (int, float)) or not math.isfinite(episodes_lower_bound) or episodes_lower_bound < 1):
            raise AgentError(f"episodes_lower_bound (K_l) must be a number >= 1 or None, got {episodes_lower_bound!r}.")
        if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not 0 < prior <= MAX_PRIOR:
            raise AgentError(f"the Dirichlet prior must be a number in (0, {MAX_PRIOR:g}], got {prior!r}.")
        self.tightness_constant = value
        self.episodes_lower_bound = episodes_lower_bound
        self.prior = float(prior)
        super().__init__(model, backend, seed, episodes, replan, **backend_options)

    def _build_program(self) -> Any:
        from ...programs import EpisodicOccupancyProgram

        S, A = self.model.n_states, self.model.n_actions
        # a uniform placeholder kernel, replaced before every solve (the agent never reads the model's kernel)
        return EpisodicOccupancyProgram(self.model, kernels=np.full((S, A, S), 1.0 / S),
                                        support=learner_support(self.model))

    def sample_kernel(self) -> np.ndarray:
        """One posterior draw: (S, A, S) for pooled counts, (H − 1, S, A, S) per step (Gamma draws normalised,
        the Dirichlet's definition)."""
        alpha = self.counts.transitions + self.prior
        draws = self.rng.standard_gamma(alpha)
        kernel = draws / draws.sum(axis=-1, keepdims=True)
        return kernel[0] if self.counts.pooled else kernel

    def planning_kernel(self) -> np.ndarray | None:
        """The posterior draw the last solve planned on (None before the first)."""
        return getattr(self, "_drawn", None)

    def epsilon(self, k: int) -> float:
        return episode_tightness(k, self.tightness_constant, self.horizon, self.episodes_lower_bound)

    def _update_program(self, k: int) -> float:
        eps = self.epsilon(k)
        self._drawn = self.sample_kernel()
        self.program.update(kernels=self._drawn, rewards=self.step_rewards,
                            costs=self.step_costs, epsilon=eps)
        return eps

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tightness": self.tightness_constant,
                "episodes_lower_bound": self.episodes_lower_bound, "prior": self.prior}

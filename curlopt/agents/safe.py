"""Safe mode: optimistic in the objective, pessimistic in the constraints (docs/safe-mode.md).

Each epoch the agent solves :class:`curlopt.programs.safe.SafeProgram` on an estimated
kernel (the plug-in estimate, or a posterior sample), with

* an exploration bonus ``b(s,a) = bonus · S_f · u(s,a)`` in the objective;
* a penalty ``q_m(s,a) = penalty · S_m · u(s,a)`` in each constraint row;

where ``u(s,a)`` bounds the pair's kernel error in L1 (the confidence radius, or the
posterior width) and the sensitivities ``S_f``, ``S_m`` come from the model and the data
(:mod:`curlopt.agents.safe_sizing`): a Lipschitz bound of the utility times half the bias span
of each signal under the last policy on the estimated kernel. When the program is
infeasible it plays the least-violation policy instead of dropping the constraints.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..backends import Backend
from ..errors import AgentError
from ..programs.blocks import Program
from ..programs.optimistic import check_radius
from ..backends.results import Status
from ..programs.safe import LeastViolationProgram, SafeProgram
from .safe_sizing import (bias_spans, lipschitz_bounds, mixing_factor, plug_in_kernel, posterior_uncertainty,
    radius_uncertainty)
from .base import EpochPlan, PlanSource, ProgramAgent
from .curl import MAX_PRIOR, sample_posterior_kernel
from .triggers import EpochTrigger

__all__ = ["SafeCurl", "KERNELS", "FALLBACKS", "SIZINGS", "DEFAULT_PENALTY"]

#: where the program's kernel comes from
KERNELS = ("posterior", "plug-in")
#: what an infeasible safe program is replaced by
FALLBACKS = ("least-violation", "drop")
#: how the sensitivities of f and g_m are sized
SIZINGS = ("mixing", "bias-span", "range")
#: the penalty multiplier by kernel: the posterior width has no logarithmic factor and is small on peaked rows,
#: about a tenth of the L1 radius on the queue and the random models of docs/safe-mode.md
DEFAULT_PENALTY = {"plug-in": 0.03, "posterior": 0.3}
#: the largest bonus or penalty multiplier taken (far beyond any useful value; keeps coefficients finite)
MAX_MULTIPLIER = 1e6


def _multiplier(value: Any, name: str) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    number = float(value) if ok else math.nan
    if not (math.isfinite(number) and 0 <= number <= MAX_MULTIPLIER):
        raise AgentError(f"{name} must be a finite number in [0, {MAX_MULTIPLIER:g}], got {value!r}.")
    return number


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise AgentError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}.")
    return value


class SafeCurl(ProgramAgent):
    """Safe mode: the optimistic-pessimistic program on an estimated kernel, with a least-violation fallback.

    Parameters
    ----------
    model : CMDP
        Rewards, costs and utilities (the kernel is not used).
    backend, trigger, tightness_constant, horizon_lower_bound
        As for :class:`~curlopt.agents.UcCurl` (default trigger ``linear``, K_ε = 1).
    seed : optional
        The agent's own seed: it drives the posterior samples (``kernel="posterior"``).
    kernel : {"posterior", "plug-in"}, default "posterior"
        ``posterior``: a Dirichlet posterior sample, as PS-CURL draws, with ``u`` the posterior
        width (:func:`curlopt.agents.safe_sizing.posterior_uncertainty`); ``plug-in``: the empirical
        kernel (uniform rows for unvisited pairs) with ``u`` the L1 radius.
    radius : {"analysis", "experiment"}, default "experiment"
        The L1 radius for ``kernel="plug-in"``; ``radius_scale`` multiplies it. ``u`` is capped at 2.
    prior : float, default 1
        The Dirichlet prior for ``kernel="posterior"``.
    bonus : float, default 0.5
        Multiplier of the exploration bonus (0 switches it off).
    penalty : float, optional
        Multiplier of the constraint penalty (0 switches it off; then only ε protects the constraints);
        default 0.3 with the posterior kernel, 0.03 with the plug-in kernel (:data:`DEFAULT_PENALTY`).
        The defaults were chosen on the queue and on random models (docs/safe-mode.md shows the
        measurements and where they fall short).
    sizing : {"mixing", "bias-span", "range"}, default "mixing"
        How far a signal's average can move per unit of kernel error. ``mixing``: the signal's
        range times half the mixing factor τ of the estimated kernel under the uniform policy
        (:func:`curlopt.agents.safe_sizing.mixing_factor`); ``bias-span``: half the span of the
        signal's (discounted) bias under the last policy on the estimated kernel, which swings
        with that policy; ``range``: the signal's range alone.
    cost_lipschitz : float or sequence of float, optional
        A bound of ``|∂g_m/∂ζ_i|`` (one number, or one per constraint) for constraints whose
        bound the toolkit cannot compute (user utilities); default computed.
    fallback : {"least-violation", "drop"}, default "least-violation"
        When the safe program is infeasible: play the policy minimising the largest penalised
        constraint value (``least-violation``), or the program without constraint rows (``drop``,
        as UC-CURL and PS-CURL do).
    unreached : {"uniform", "safe"}, default "safe"
        The policy in states the plan does not reach (see :func:`curlopt.programs.policy.extract_policy`).

    Raises
    ------
    AgentError
        For an option outside its range, named in the message.
    """

    name = "safe-curl"

    def __init__(self, model, backend: str | Backend = "auto", trigger: str | EpochTrigger = "linear",
                 tightness_constant: float = 1.0, horizon_lower_bound: float | None = None, seed: Any = None,
                 kernel: str = "posterior", radius: str = "experiment", radius_scale: float = 1.0,
                 prior: float = 1.0, bonus: float = 0.5, penalty: float | None = None, sizing: str = "mixing",
                 cost_lipschitz: Any = None, fallback: str = "least-violation", unreached: str = "safe",
                 **backend_options: Any):
        self.kernel_source = _choice(kernel, "kernel", KERNELS)
        self.radius, self.radius_scale = check_radius(radius, radius_scale, AgentError)
        if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not 0 < prior <= MAX_PRIOR:
            raise AgentError(f"prior must be a number in (0, {MAX_PRIOR:g}], got {prior!r}.")
        self.prior = float(prior)
        self.bonus = _multiplier(bonus, "bonus")
        self.penalty = _multiplier(DEFAULT_PENALTY[self.kernel_source] if penalty is None else penalty, "penalty")
        self.sizing = _choice(sizing, "sizing", SIZINGS)
        self.fallback = _choice(fallback, "fallback", FALLBACKS)
        self.cost_lipschitz = cost_lipschitz
        # Raises now, naming cost_lipschitz, for a constraint the toolkit cannot bound.
        self.lipschitz = lipschitz_bounds(model.constraints, model.costs, cost_lipschitz)
        self._model_constants(model)
        super().__init__(model, backend, trigger, tightness_constant, horizon_lower_bound, seed, unreached,
                         **backend_options)
        self.least_violation = LeastViolationProgram(model) if model.constraints else None
        self.compiled_least_violation = (None if self.least_violation is None
                                         else self.backend.compile(self.least_violation))

    # -- the program ------------------------------------------------------------
    def _build_program(self) -> Program:
        return SafeProgram(self.model)

    def estimated_kernel(self) -> np.ndarray:
        """The epoch's kernel: the plug-in estimate or a posterior draw."""
        if self.kernel_source == "plug-in":
            return plug_in_kernel(self.counts)
        return sample_posterior_kernel(self.rng, self.prior + self.counts)

    def uncertainty(self, time: int) -> np.ndarray:
        """``u(s,a)``: the L1 radius (plug-in) or the posterior width (posterior), capped at 2."""
        if self.kernel_source == "plug-in":
            return radius_uncertainty(self.counts, time, self.radius, self.radius_scale)
        return posterior_uncertainty(self.counts, self.prior)

    def sensitivities(self, kernel: np.ndarray) -> tuple[float, np.ndarray]:
        """``(S_f, S_m)``: how much f and each g_m can move per unit of ``Σ ρ u``.

        A signal's reach is its range times half the mixing factor of ``kernel`` (``sizing="mixing"``),
        half its discounted bias span under the last policy on ``kernel`` (``"bias-span"``) or its range
        (``"range"``); ``S_m = Σ_i L_{m,i} reach(c_i)`` and ``S_f = Σ_k |∂f/∂λ_k| reach(r_k)``, with the slope
        of f at the middle of the reward box.
        """
        if self.sizing == "mixing":
            reach = self._spread * mixing_factor(kernel) / 2.0
        elif self.sizing == "bias-span":
            S, A = self.model.n_states, self.model.n_actions
            policy = self.policy if self.policy is not None else np.full((S, A), 1.0 / A)
            reach = bias_spans(kernel, policy, self._signals) / 2.0
        else:
            reach = self._spread
        K = self.model.n_rewards
        return float(self.objective_slope @ reach[:K]), self.lipschitz @ reach[K:]

    def _model_constants(self, model) -> None:
        """What sizing needs of the model alone, computed once: the signals, their ranges and f's slope.

        The slope of f is taken at the middle of the reward box, not at the last plan's rewards: a concave f
        such as a log is steep near 0, and a plan that almost never serves one signal would make the bonus
        explode (measured on the scheduler: 10^9). Where f has no finite slope there, it counts as 0.
        """
        self._signals = np.concatenate([model.rewards, model.costs])             # (K + d, S, A)
        flat = self._signals.reshape(self._signals.shape[0], -1)
        self._spread = flat.max(axis=1) - flat.min(axis=1)
        rewards = flat[: model.n_rewards]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.abs(np.asarray(model.objective.gradient((rewards.min(axis=1) + rewards.max(axis=1)) / 2.0),
                                      dtype=float))
        #: ``|∂f/∂λ_k|`` at the middle of the reward box
        self.objective_slope = np.nan_to_num(slope, nan=0.0, posinf=0.0)

    def _update_program(self, time: int, epsilon: float) -> None:
        kernel = self.estimated_kernel()
        u = self.uncertainty(time)
        reward_sensitivity, cost_sensitivity = self.sensitivities(kernel)
        self.weights = (self.bonus * reward_sensitivity * u,
                        self.penalty * cost_sensitivity[:, None, None] * u[None])
        self.program.update(kernel=kernel, bonus=self.weights[0], penalty=self.weights[1], epsilon=epsilon)

    # -- an epoch ---------------------------------------------------------------
    def _plan(self, time: int) -> EpochPlan:
        if self.fallback == "drop" or self.least_violation is None:
            return super()._plan(time)
        eps = self.epsilon(time)
        self._update_program(time, eps)
        result = self.compiled.solve(fallback=False)
        if result.status is not Status.INFEASIBLE:
            return self._plan_from(result, eps)
        self.least_violation.update(kernel=self.program.kernel, penalty=self.weights[1])
        lv = self.compiled_least_violation.solve()
        plan = self._plan_from(lv, eps)
        if not lv.ok:
            return plan  # a failed solve: kept / uniform, as for any agent
        message = (f"the safe program (ε={eps:.6g}) is infeasible; played the least-violation policy"
                   f" (largest penalised constraint value {self.least_violation.level(lv.x):.6g})")
        return replace(plan, source=PlanSource.LEAST_VIOLATION, message=message,
                       solve_time=result.solve_time + lv.solve_time,
                       iterations=(result.iterations or 0) + (lv.iterations or 0))

    def describe(self):
        out = {**super().describe(), "kernel": self.kernel_source, "bonus": self.bonus, "penalty": self.penalty,
               "sizing": self.sizing, "fallback": self.fallback}
        if self.kernel_source == "plug-in":
            out.update(radius=self.radius, radius_scale=self.radius_scale)
        else:
            out["prior"] = self.prior
        if self.cost_lipschitz is not None:
            out["cost_lipschitz"] = self.cost_lipschitz
        return out

"""Safe mode: optimistic in the objective, with margins in the constraints' own units (docs/safe-mode.md).

Each epoch the agent solves :class:`curlopt.programs.safe.SafeProgram` on an estimated
kernel Q (a posterior sample by default, or the plug-in estimate), with

* an exploration bonus ``b(s,a) = bonus · S_f · u(s,a)`` in the objective;
* the margin ``ε s_m`` in each constraint row, ``s_m`` the constraint's unit (``margin="range"``);
* optionally (``penalty > 0``; the default for the plug-in kernel) a penalty ``q_m(s,a) = penalty · S_m · u(s,a)``
  in each constraint row;

where ``u(s,a)`` bounds the pair's kernel error in L1 (the posterior width, or the
confidence radius) and the sensitivities ``S_f``, ``S_m`` come from the model and the data
(:mod:`curlopt.agents.safe_sizing`): a bound of the utility's slope times the reach of each
signal. By default (``sizing="range"``) a signal's reach is its range; ``sizing="mixing"``
multiplies it by half the mixing factor τ of Q under the uniform policy
(:func:`~curlopt.agents.safe_sizing.mixing_factor`, recomputed each epoch on the epoch's Q),
and ``sizing="bias-span"`` takes half the span of the signal's discounted value under the last
policy on Q instead. When the program is infeasible it plays the least-violation policy instead
of dropping the constraints. Every default is scaled by the model's ranges, so the agent plays
the same policies whatever the units of the costs (and of the rewards, for a linear f).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar, cast

import numpy as np

from ..backends import Backend, auto_backend
from ..backends.results import Status
from ..models.cmdp import CMDP
from ..programs.blocks import Program
from ..programs.safe import LeastViolationProgram, SafeProgram
from .base import EpochPlan, PlanSource, ProgramAgent
from .estimates import PosteriorSampler, plug_in_estimate, posterior_width, radius_width
from .options import (
    BACKEND,
    HORIZON_LOWER_BOUND,
    MIN_EPOCH_LENGTH,
    PRIOR,
    RADIUS,
    RADIUS_SCALE,
    REWARDS,
    SEED,
    SUPPORT,
    TIGHTNESS_CONSTANT,
    TRIGGER,
    UNREACHED,
    AgentOption,
    check_value,
    choice,
    number,
    with_doc,
)
from .safe_sizing import bias_spans, constraint_scales, lipschitz_bounds, mixing_factor
from .triggers import EpochTrigger

__all__ = ["SafeCurl", "KERNELS", "FALLBACKS", "SIZINGS", "MARGINS", "DEFAULT_PENALTY", "DEFAULT_BONUS"]

#: where the program's kernel comes from
KERNELS = ("posterior", "plug-in")
#: what an infeasible safe program is replaced by
FALLBACKS = ("least-violation", "drop")
#: how the sensitivities of f and g_m are sized
SIZINGS = ("range", "mixing", "bias-span")
#: how the tightness ε becomes each constraint's margin: in the constraint's own units, or as it is
MARGINS = ("range", "absolute")
#: the penalty multiplier by kernel. With the posterior kernel none: once the margin is in each constraint's
#: units, a penalty cost regret on every family of docs/safe-mode.md and no family needed it to keep C(T) = 0.
#: The plug-in kernel keeps its multiplier, not measured again since the margin and the sizing changed.
DEFAULT_PENALTY = {"plug-in": 0.03, "posterior": 0.0}
#: the bonus multiplier: of 0.1, 0.25 and 0.5 (each with and without a penalty, with both sizings) the one candidate
#: that kept C(T) = 0 and stayed within 1.2 times the best safe alternative on every design family of docs/safe-mode.md
DEFAULT_BONUS = 0.1
#: the largest bonus or penalty multiplier taken (far beyond any useful value; keeps coefficients finite)
MAX_MULTIPLIER = 1e6




def _lipschitz_problem(value: Any) -> str | None:
    """A bound given by the user: None, or finite numbers >= 0 (their count is checked against the model's
    constraints by :func:`~curlopt.agents.safe_sizing.lipschitz_bounds`)."""
    if value is None:
        return None
    try:
        bounds = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        bounds = np.array([math.nan])
    if bounds.ndim > 1 or not (np.all(np.isfinite(bounds)) and np.all(bounds >= 0)):
        return "must be a finite number >= 0, one per constraint, or None"
    return None


#: safe mode's own options (the others are shared with UC-CURL and PS-CURL)
KERNEL = choice("kernel", KERNELS,
                "Where the program's kernel comes from: a Dirichlet posterior sample (posterior) or the empirical"
                " kernel (plug-in).")
BONUS = number("bonus", "Multiplier of the exploration bonus (0 switches it off).", high=MAX_MULTIPLIER)
PENALTY = number("penalty",
                 "Multiplier of the constraint penalty (0 switches it off); None: 0 with the posterior kernel, 0.03"
                 " with the plug-in kernel.", high=MAX_MULTIPLIER, none=True)
SIZING = choice("sizing", SIZINGS,
                "How far a signal's average can move per unit of kernel error: its range (range), times half the"
                " mixing factor of the epoch's kernel (mixing), or half its discounted bias span (bias-span).")
COST_LIPSCHITZ = AgentOption(
    "cost_lipschitz", (object,), None,
    "A bound of |∂g_m/∂ζ_i| (one number, or one per constraint) for constraints whose bound the toolkit cannot"
    " compute (user utilities); None: computed.",
    "a finite number >= 0, one per constraint, or None", _lipschitz_problem,
)
FALLBACK = choice("fallback", FALLBACKS,
                  "When the safe program is infeasible: play the policy minimising the largest penalised constraint"
                  " value (least-violation), or drop the constraint rows (drop).")
MARGIN = choice("margin", MARGINS,
                "The tightness ε enters row m as ε s_m, in the constraint's own unit s_m (range), or as the number ε"
                " (absolute, as the paper's agents).")


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
    bonus : float, default 0.1
        Multiplier of the exploration bonus (0 switches it off; :data:`DEFAULT_BONUS`).
    penalty : float, optional
        Multiplier of the constraint penalty (0 switches it off; then the margin ``ε s_m`` alone
        protects the constraints); default 0 with the posterior kernel, 0.03 with the plug-in kernel
        (:data:`DEFAULT_PENALTY`). The defaults were chosen on design families and checked on others
        (docs/safe-mode.md shows the measurements and where they fall short).
    sizing : {"range", "mixing", "bias-span"}, default "range"
        How far a signal's average can move per unit of kernel error. ``range``: the signal's range
        alone. ``mixing``: the signal's
        range times half the mixing factor τ of the epoch's kernel (the posterior draw, or the
        plug-in estimate) under the uniform policy (:func:`curlopt.agents.safe_sizing.mixing_factor`:
        discount 1 - 1/100 on an unnormalised sum); ``bias-span``: half the span of the signal's
        discounted value (the same discount) under the last policy on that kernel, which swings
        with that policy. Both grow with how slowly the chain mixes, which on slowly mixing
        models made the bonus explore far more than it gained (docs/safe-mode.md).
    cost_lipschitz : float or sequence of float, optional
        A bound of ``|∂g_m/∂ζ_i|`` (one number, or one per constraint) for constraints whose
        bound the toolkit cannot compute (user utilities); default computed.
    fallback : {"least-violation", "drop"}, default "least-violation"
        When the safe program is infeasible: play the policy minimising the largest penalised
        constraint value (``least-violation``), or the program without constraint rows (``drop``,
        as UC-CURL and PS-CURL do).
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "safe"
        The policy in states the plan does not reach (see :func:`curlopt.programs.policy.extract_policy`);
        ``reach`` returns to the plan's support in the fewest expected steps, by per-step feasible actions
        (``g_m(c(s,a)) <= 0`` for every m, wherever a state has one that can), on the epoch's kernel ``Q``
        (the posterior sample or the plug-in estimate the program, or its least-violation replacement, planned on);
        ``reach-any`` by any actions, whatever they cost.
    margin : {"range", "absolute"}, default "range"
        The tightness ε enters row m as ``ε s_m``, with ``s_m = Σ_i L_{m,i} range(c_i)`` the constraint's
        own unit (``range``: with the bonus and penalty, which scale with the signals' ranges too, the
        agent plays the same policies whatever the units of the costs and, for a linear f, of the
        rewards), or as the number ε itself (``absolute``, as the paper's agents; what safe mode did
        before this option existed).
    support : {"auto", "model", "full"}, default "auto"
        The successors the estimated kernel and ``u`` range over (:mod:`curlopt.agents.estimates`):
        those the model's kernel gives positive probability (``model``, whatever its storage), every
        successor (``full``), or ``auto`` (``full`` up to 2^20 entries S·A·S, ``model`` above); every successor (refused above
        :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S for a sparse-stored model). On
        a sparse support the posterior draw and its width are over each pair's declared successors, the
        plug-in kernel's unvisited rows are uniform over them, and the plug-in radius counts them in
        place of S (:func:`curlopt.agents.estimates.support_radius`).
    min_epoch_length : int, default 1
        The fewest steps of an epoch, as for :class:`~curlopt.agents.UcCurl`.
    rewards : {"known", "learned"}, default "known"
        ``learned``: plan on the optimistic reward ``r^ + b`` and the pessimistic cost ``c^ + b`` of the observed
        signals (:mod:`curlopt.agents.signals`); the bonus, penalty and margin keep the ranges of the model's tables.

    Raises
    ------
    AgentError
        For an option outside its range, named in the message.
    """

    name = "safe-curl"
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        BACKEND, TRIGGER, TIGHTNESS_CONSTANT, HORIZON_LOWER_BOUND,
        with_doc(SEED, "The agent's own seed: it drives the posterior samples (kernel=posterior)."), KERNEL,
        with_doc(RADIUS, "The L1 radius of the plug-in kernel (kernel=plug-in): analysis or experiment, as for"
                         " uc-curl."),
        RADIUS_SCALE, PRIOR, BONUS, PENALTY, SIZING, COST_LIPSCHITZ, FALLBACK, UNREACHED, MARGIN, SUPPORT,
        MIN_EPOCH_LENGTH, REWARDS,
    )

    def __init__(self, model: CMDP, backend: str | Backend = "auto", trigger: str | EpochTrigger = "linear",
                 tightness_constant: float = 1.0, horizon_lower_bound: float | None = None, seed: Any = None,
                 kernel: str = "posterior", radius: str = "experiment", radius_scale: float = 1.0,
                 prior: float = 1.0, bonus: float = DEFAULT_BONUS, penalty: float | None = None, sizing: str = "range",
                 cost_lipschitz: Any = None, fallback: str = "least-violation", unreached: str = "safe",
                 margin: str = "range", support: str = "auto", min_epoch_length: int = 1,
                 rewards: str = "known", **backend_options: Any):
        self.kernel_source: str = check_value(KERNEL, kernel)
        self.radius: str = check_value(RADIUS, radius)
        self.radius_scale: float = check_value(RADIUS_SCALE, radius_scale)
        self.prior: float = check_value(PRIOR, prior)
        self.bonus: float = check_value(BONUS, bonus)
        chosen_penalty = check_value(PENALTY, penalty)
        self.penalty: float = DEFAULT_PENALTY[self.kernel_source] if chosen_penalty is None else chosen_penalty
        self.sizing: str = check_value(SIZING, sizing)
        self.fallback: str = check_value(FALLBACK, fallback)
        self.margin: str = check_value(MARGIN, margin)
        self.cost_lipschitz = check_value(COST_LIPSCHITZ, cost_lipschitz)
        # Raises now, naming cost_lipschitz, for a constraint the toolkit cannot bound.
        self.lipschitz = lipschitz_bounds(model.constraints, model.costs, cost_lipschitz)
        #: the unit of each constraint, ``s_m = Σ_i L_{m,i} range(c_i)`` (the margin is ``ε s_m`` with ``margin="range"``)
        self.constraint_scales = constraint_scales(self.lipschitz, model.costs)
        self._model_constants(model)
        super().__init__(model, auto_backend(backend, model, SafeProgram), trigger, tightness_constant,
                         horizon_lower_bound, seed, unreached, support=support, min_epoch_length=min_epoch_length,
                         rewards=rewards, **backend_options)
        #: draws the epochs' posterior samples (kernel="posterior"; the arrays they need allocated once)
        self.sampler = PosteriorSampler(self.support, self.prior)
        self.least_violation = (LeastViolationProgram(model, support=self.program_support) if model.constraints
                                else None)
        self.compiled_least_violation = (None if self.least_violation is None
                                         else self.backend.compile(self.least_violation))

    # -- the program ------------------------------------------------------------
    def _build_program(self) -> Program:
        return SafeProgram(self.planning, support=self.program_support)

    def _use_planning_model(self, planning: CMDP) -> None:
        super()._use_planning_model(planning)
        if self.least_violation is not None:  # its cost rows are the planning model's too
            self.least_violation = LeastViolationProgram(planning, support=self.program_support)
            self.compiled_least_violation = self.backend.compile(self.least_violation)

    def estimated_kernel(self) -> Any:
        """The epoch's kernel on the agent's support: the plug-in estimate or a posterior draw (an (S, A, S)
        array on the dense support, else a CSR (S·A, S) matrix)."""
        counts = self.entry_counts.reshape(self.support.shape)
        if self.kernel_source == "plug-in":
            return plug_in_estimate(self.support, counts)
        return self.sampler.draw(self.rng, counts)

    def planning_kernel(self) -> Any:
        """The epoch's kernel ``Q`` (the program keeps it; the least-violation program plans on it too), for
        ``reach`` and ``reach-any``."""
        return self.program.kernel  # type: ignore[attr-defined]  # SafeProgram keeps its kernel

    def uncertainty(self, time: int) -> np.ndarray:
        """``u(s,a)``: the L1 radius (plug-in) or the posterior width (posterior), capped at 2."""
        counts = self.entry_counts.reshape(self.support.shape)
        if self.kernel_source == "plug-in":
            return radius_width(self.support, counts, time, self.radius, self.radius_scale)
        return posterior_width(self.support, counts, self.prior)

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
            return self._range_sensitivities
        return self._sensitivities_of(reach)

    def _sensitivities_of(self, reach: np.ndarray) -> tuple[float, np.ndarray]:
        """``(S_f, S_m)`` for the signals' reaches ``reach`` (K + d,)."""
        K = self._n_rewards
        return float(self.objective_slope @ reach[:K]), self.lipschitz @ reach[K:]

    def _model_constants(self, model: CMDP) -> None:
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
        self._n_rewards = model.n_rewards
        # sizing="range" reaches are the model's ranges: its sensitivities are the same every epoch
        self._range_sensitivities = self._sensitivities_of(self._spread)
        self._range_sensitivities[1].flags.writeable = False

    def _update_program(self, time: int, epsilon: float) -> None:
        kernel = self.estimated_kernel()
        # the posterior's width from the parameters the draw just used (what uncertainty(time) computes again)
        u = self.sampler.width() if self.kernel_source == "posterior" else self.uncertainty(time)
        reward_sensitivity, cost_sensitivity = self.sensitivities(kernel)
        self.weights = (self.bonus * reward_sensitivity * u,
                        self.penalty * cost_sensitivity[:, None, None] * u[None])
        # The kernel is the agent's own estimate or draw and the weights are finite and >= 0 by construction,
        # all new arrays: the program takes them without checks or copies (update()'s data, bit for bit).
        program = cast(SafeProgram, self.program)
        if self.margin == "absolute":
            program.update_unchecked(kernel, self.weights[0], self.weights[1], epsilon)
            return
        # The margin ε s_m in the constraint's own units, carried as a constant penalty weight (Σ ρ = 1 adds it
        # to row m exactly); the program's scalar ε, the same number for every row, stays 0.
        margins = (epsilon * self.constraint_scales)[:, None, None]
        program.update_unchecked(kernel, self.weights[0], self.weights[1] + margins, 0.0)

    # -- an epoch ---------------------------------------------------------------
    def _plan(self, time: int) -> EpochPlan:
        if self.fallback == "drop" or self.least_violation is None:
            return super()._plan(time)
        eps = self.epsilon(time)
        self._update_program(time, eps)
        result = self.compiled.solve(fallback=False)
        if result.status is not Status.INFEASIBLE:
            return self._plan_from(result, eps)
        self.least_violation.update(kernel=self.program.kernel, penalty=self.weights[1])  # type: ignore[attr-defined]  # the safe program has a kernel; Program does not declare one
        assert self.compiled_least_violation is not None  # built with least_violation
        lv = self.compiled_least_violation.solve()
        plan = self._plan_from(lv, eps)
        if not lv.ok:
            return plan  # a failed solve: kept / uniform, as for any agent
        message = (f"the safe program (ε={eps:.6g}) is infeasible; played the least-violation policy"
                   f" (largest penalised constraint value {self.least_violation.level(lv.x) if lv.x is not None else math.nan:.6g})")
        return replace(plan, source=PlanSource.LEAST_VIOLATION, message=message,
                       solve_time=result.solve_time + lv.solve_time,
                       iterations=(result.iterations or 0) + (lv.iterations or 0))

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "kernel": self.kernel_source, "bonus": self.bonus, "penalty": self.penalty,
               "sizing": self.sizing, "fallback": self.fallback, "margin": self.margin}
        if self.kernel_source == "plug-in":
            out.update(radius=self.radius, radius_scale=self.radius_scale)
        else:
            out["prior"] = self.prior
        if self.cost_lipschitz is not None:
            out["cost_lipschitz"] = self.cost_lipschitz
        return out

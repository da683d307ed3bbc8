"""UC-CURL and PS-CURL (docs/math.md §6): one compiled program, re-solved every epoch."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np

from ..backends import Backend, auto_backend
from ..errors import AgentError
from ..models.cmdp import CMDP
from ..programs.blocks import Program
from ..programs.occupancy import OccupancyProgram
from ..programs.optimistic import OptimisticProgram
from ..programs.safe import SafeProgram
from .base import ProgramAgent
from .estimates import PosteriorSampler, sample_posterior_kernel
from .options import (
    BACKEND,
    HORIZON_LOWER_BOUND,
    MAX_PRIOR,
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
    refuse_keywords,
    with_doc,
)
from .safe_sizing import constraint_scales, lipschitz_bounds
from .triggers import EpochTrigger

__all__ = ["UcCurl", "PsCurl", "CmdpPsrl", "MAX_PRIOR", "MARGINS", "sample_posterior_kernel"]

#: how PS-CURL's tightness ε becomes each constraint's margin: as it is, or in the constraint's own units
MARGINS = ("absolute", "range")
#: PS-CURL's margin option
MARGIN = choice(
    "margin", MARGINS,
    "How the tightness ε enters each constraint: absolute (the paper's: g_m <= -ε, in the costs' units) or range"
    " (g_m <= -ε s_m, in the constraint's own unit s_m, so invariant to the costs' units).",
)

class UcCurl(ProgramAgent):
    """UC-CURL: each epoch, the optimistic ε-tight program over L1 confidence sets (docs/math.md §3, §6).

    Parameters
    ----------
    model : CMDP
        Rewards, costs and utilities (the kernel is not used).
    backend : str or Backend, default "auto"
        Any backend that accepts the model's utilities; ``"auto"`` is the registry's rule for the
        optimistic program (:func:`curlopt.backends.registry.choose_backend`): highs for
        LP-representable utilities (``highs-columns``, the same optimal value by column generation,
        once the kernel has :data:`~curlopt.backends.registry.COLUMNS_FROM_ENTRIES` entries or more),
        else the first installed backend that accepts them.
    trigger : {"doubling", "linear", "linear-global", "linear-per-pair"} or EpochTrigger, default "doubling"
        The epoch rule (see :mod:`curlopt.agents.triggers`); ``linear`` is the paper's.
    tightness_constant : float, default 1
        ``K_ε`` of the schedule ``ε = K_ε sqrt(ln τ / τ)``.
    horizon_lower_bound : float, optional
        ``T_l``: with it, ``τ = max(t_e, T_l)``.
    seed : optional
        The agent's own seed (UC-CURL itself draws nothing).
    radius : {"analysis", "experiment"}, default "analysis"
        The L1 confidence radius β of the optimistic program
        (:func:`curlopt.programs.optimistic.l1_radius`). ``analysis``,
        ``sqrt(14 S ln(2 A t_e) / max(1, N(s,a)))``, is the radius of the paper's
        regret analysis, so the default is the analysed algorithm.
        ``experiment``, ``sqrt(S ln(A t_e) / max(1, N(s,a)))``, is the smaller
        radius the paper's simulations used: it trusts the data sooner, which
        lowers regret and gives the constraints less protection (compare both).
    radius_scale : float, default 1
        A finite factor >= 0 multiplying β.
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
        The policy in states the plan's occupancy does not reach
        (:func:`curlopt.programs.policy.extract_policy`): uniform over actions (``uniform``), uniform
        over the actions that least increase the constraints, linearised at the
        plan (``safe``; uniform for a model without constraints), or uniform over the per-step feasible
        actions (``g_m(c(s,a)) <= 0`` for every m, so the way back spends none of the constraints' budget) that
        return to the plan's support in the fewest expected steps (``reach``; ``reach-any``: over all
        actions, whatever they cost), on the posterior mean of the counts the epoch planned with. Not on the optimistic kernel the program chose with the occupancy:
        that kernel is ``p(s,a,s') / ρ(s,a)``, 0/0 in exactly these states
        (:meth:`~curlopt.agents.base.ProgramAgent.planning_kernel`).
    support : {"auto", "model", "full"}, default "auto"
        The successors the optimistic kernels may use (:mod:`curlopt.agents.estimates`). ``model``:
        those the model's kernel gives positive probability (whatever its storage), so the L1 ball holds
        only kernels on them. ``full``: every successor, the paper's ball (refused above
        :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S for a sparse-stored model).
        ``auto``: ``full`` up to 2^20 entries S·A·S, ``model`` above.
    min_epoch_length : int, default 1
        The fewest steps of an epoch unless the horizon ends it: the trigger's thresholds are checked
        only from that step of the epoch on (:mod:`curlopt.agents.triggers`), so a run of T steps solves
        at most ``T / min_epoch_length + 1`` programs. 1: the trigger alone decides. For models with
        thousands of pairs, where the rules end an epoch at almost every step of a run's start.
    rewards : {"known", "learned"}, default "known"
        ``learned``: plan on the optimistic reward ``r^ + b`` and the pessimistic cost ``c^ + b`` of the observed
        signals (:mod:`curlopt.agents.signals`; the paper assumes them known).
    **backend_options
        Passed to the backend when ``backend`` is a name.

    Raises
    ------
    AgentError
        For an unknown ``radius``, ``unreached`` or ``support``, or a ``radius_scale`` that is
        not a finite number >= 0 (the message names the option and what it takes).
    """

    name = "uc-curl"
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        BACKEND, TRIGGER, TIGHTNESS_CONSTANT, HORIZON_LOWER_BOUND,
        with_doc(SEED, "The agent's own seed (UC-CURL draws nothing)."), RADIUS, RADIUS_SCALE, UNREACHED, SUPPORT,
        MIN_EPOCH_LENGTH, REWARDS,
    )
    REFUSED: ClassVar[dict[str, str]] = {
        "prior": "it draws no posterior samples (prior is an option of ps-curl and safe-curl)",
        "margin": "its tightness enters every constraint as it is (margin is an option of ps-curl and safe-curl)",
    }

    def __init__(self, model: CMDP, backend: str | Backend = "auto", trigger: str | EpochTrigger = "doubling",
                 tightness_constant: float = 1.0, horizon_lower_bound: float | None = None, seed: Any = None,
                 radius: str = "analysis", radius_scale: float = 1.0, unreached: str = "uniform",
                 support: str = "auto", min_epoch_length: int = 1, rewards: str = "known", **backend_options: Any):
        # Checked before the base class builds the program, which reads them.
        self.radius: str = check_value(RADIUS, radius)
        self.radius_scale: float = check_value(RADIUS_SCALE, radius_scale)
        super().__init__(model, auto_backend(backend, model, OptimisticProgram), trigger, tightness_constant,
                         horizon_lower_bound, seed, unreached, support=support, min_epoch_length=min_epoch_length, rewards=rewards,
                         **backend_options)

    def _build_program(self) -> Program:
        return OptimisticProgram(self.planning, radius=self.radius, radius_scale=self.radius_scale,
                                 support=self.program_support)

    def _update_program(self, time: int, epsilon: float) -> None:
        # The agent's own counts, on the program's support in its entry order (the program is built on the
        # agent's support): the program takes them without re-checking (the same data as update(counts=...)).
        cast(OptimisticProgram, self.program).update_unchecked(self.entry_counts, time, epsilon)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "radius": self.radius, "radius_scale": self.radius_scale}


class PsCurl(ProgramAgent):
    """PS-CURL: each epoch, the ε-tight occupancy program on a posterior sample (docs/math.md §6).

    ``P~(·|s,a) ~ Dirichlet(prior + n(s,a,·))`` independently for every pair.

    Parameters
    ----------
    model, backend, trigger, tightness_constant, horizon_lower_bound, seed
        As for :class:`UcCurl`; ``seed`` drives the posterior samples.
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
        The policy in states the plan's occupancy does not reach, as for :class:`UcCurl`, but ``reach`` and
        ``reach-any`` run on the posterior sample the epoch planned on.
    prior : float, default 1
        The Dirichlet prior ``0 < α0 <= MAX_PRIOR`` (10^6; 1 is uniform over kernels). Larger
        priors would only pin the sample to the uniform kernel, and beyond ~1e300 the
        Gamma draws overflow.
    margin : {"absolute", "range"}, default "absolute"
        How the tightness ``ε = K_ε sqrt(ln τ / τ)`` enters each constraint row.
        ``absolute`` (the paper's): ``g_m(ζ) <= -ε``, a number in the costs' units, so the same
        problem with its costs and bounds multiplied by 100 gets a margin 100 times thinner.
        ``range``: ``g_m(ζ) <= -ε s_m`` with ``s_m = Σ_i L_{m,i} range(c_i)`` the constraint's own
        unit (:func:`curlopt.agents.safe_sizing.constraint_scales`; for a linear ``g_m = w·ζ - b``,
        ``Σ_i |w_i| range(c_i)``), which makes the agent invariant to the costs' units. It needs a
        slope bound of every ``g_m`` (affine pieces, norms, convex quadratics).
    support : {"auto", "model", "full"}, default "auto"
        The successors a posterior draw spreads over (:mod:`curlopt.agents.estimates`). ``model``: those
        the model's kernel gives positive probability (whatever its storage), so the prior α0 goes to each
        such successor and none to the others. ``full``: every successor, the paper's draw (refused above
        :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S for a sparse-stored model).
        ``auto``: ``full`` up to 2^20 entries S·A·S, ``model`` above.
    min_epoch_length : int, default 1
        The fewest steps of an epoch, as for :class:`UcCurl`.
    rewards : {"known", "learned"}, default "known"
        As for :class:`UcCurl`.

    PS-CURL has no confidence radius: ``radius`` and ``radius_scale`` are refused
    with an :class:`~curlopt.errors.AgentError`.
    """

    name = "ps-curl"
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        BACKEND, TRIGGER, TIGHTNESS_CONSTANT, HORIZON_LOWER_BOUND,
        with_doc(SEED, "The agent's own seed: it drives the posterior samples."), PRIOR, UNREACHED, MARGIN, SUPPORT,
        MIN_EPOCH_LENGTH, REWARDS,
    )
    REFUSED: ClassVar[dict[str, str]] = {
        key: "PS-CURL samples a posterior kernel and has no confidence radius (radius and radius_scale are options"
             " of uc-curl)" for key in ("radius", "radius_scale")
    }

    def __init__(self, model: CMDP, backend: str | Backend = "auto", trigger: str | EpochTrigger = "doubling",
                 tightness_constant: float = 1.0, horizon_lower_bound: float | None = None, seed: Any = None,
                 prior: float = 1.0, unreached: str = "uniform",
                 margin: str = "absolute", support: str = "auto", min_epoch_length: int = 1,
                 rewards: str = "known", **backend_options: Any):
        self.prior: float = check_value(PRIOR, prior)
        self.margin: str = check_value(MARGIN, margin)
        #: ``s_m`` of each constraint with ``margin="range"`` (None with the absolute margin)
        self.margin_scales = _margin_scales(model, self.margin)
        super().__init__(model, auto_backend(backend, model, OccupancyProgram), trigger, tightness_constant, horizon_lower_bound, seed, unreached,
                         support=support, min_epoch_length=min_epoch_length, rewards=rewards, **backend_options)
        #: draws the epochs' posterior samples (the arrays they need allocated once)
        self.sampler = PosteriorSampler(self.support, self.prior)

    def sample_kernel(self) -> Any:
        """One posterior draw of the whole kernel on the agent's support: an (S, A, S) array on the dense
        support, else a CSR (S·A, S) matrix (see :func:`curlopt.agents.estimates.posterior_kernel`)."""
        return self.sampler.draw(self.rng, self.entry_counts.reshape(self.support.shape))

    def planning_kernel(self) -> Any:
        """The posterior sample the epoch planned on (the program keeps it), for ``reach`` and ``reach-any``."""
        return self.program.kernel  # type: ignore[attr-defined]  # OccupancyProgram and SafeProgram keep their kernel

    def _build_program(self) -> Program:
        S, A = self.model.n_states, self.model.n_actions
        # uniform rows until the first draw (over each pair's allowed successors on a sparse support)
        uniform = np.full((S, A, S), 1.0 / S) if self.support.is_dense else self.support.uniform()
        if self.margin_scales is not None:
            # One margin per constraint: safe mode's program with no bonus and constant penalty weights ε s_m,
            # which add exactly ε s_m to row m (Σ ρ = 1); the program's own scalar ε stays 0.
            return SafeProgram(self.planning, kernel=uniform, support=self.program_support)
        return OccupancyProgram(self.planning, kernel=uniform, support=self.program_support)

    def _update_program(self, time: int, epsilon: float) -> None:
        # The draw is a kernel on the program's support by construction, and a new array each epoch: the
        # program takes it without checks or a copy (the same data as update(kernel=...), bit for bit).
        kernel = self.sample_kernel()
        program = self.program
        if self.margin_scales is None:
            cast(OccupancyProgram, program).update_unchecked(kernel, epsilon)
            return
        S, A = self.model.n_states, self.model.n_actions
        margins = np.broadcast_to((epsilon * self.margin_scales)[:, None, None], (len(self.margin_scales), S, A))
        cast(SafeProgram, program).update_unchecked(kernel, None, margins.copy(), 0.0)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "prior": self.prior, "margin": self.margin}


def _margin_scales(model: CMDP, margin: str) -> np.ndarray | None:
    """``s_m`` for ``margin="range"`` (None for ``absolute`` or a model without constraints)."""
    if margin == "absolute" or not model.constraints:
        return None
    try:
        slopes = lipschitz_bounds(model.constraints, model.costs)
    except AgentError:
        raise AgentError(
            "margin='range' needs a bound of each constraint's slope, and the toolkit cannot bound one of "
            f"{list(model.constraints)!r} (it knows affine pieces, norms and convex quadratics): use margin='absolute'."
        ) from None
    return constraint_scales(slopes, model.costs)


class CmdpPsrl(PsCurl):
    """CMDP-PSRL (Agarwal, Bai, Aggarwal, "Regret guarantees for model-based reinforcement learning with long-term average constraints", UAI 2022): posterior sampling with no tightening (docs/math.md §6).

    Each epoch draws ``P~(·|s,a) ~ Dirichlet(prior + n(s,a,·))`` for every pair, solves the occupancy program on
    the draw with the constraints as they are (``g_m(ζ) <= 0``: no tightening, ε = 0) and plays the extracted
    policy until the epoch ends. Its epoch rule is the doubling one: an epoch ends when some pair's visits within
    it reach ``max(1, N_e(s,a))``, its visits before the epoch. It is PS-CURL with K_ε = 0 and the doubling
    trigger, fixed: ``trigger``, ``tightness_constant``, ``horizon_lower_bound``, ``margin`` and
    ``min_epoch_length`` are refused. When the program on a draw is infeasible the program without the constraint
    rows is played and the epoch is recorded as ``fallback`` (the paper takes the draw to be feasible under its
    slackness assumption and says nothing of the other case).

    Parameters
    ----------
    model : CMDP
        Rewards, costs and utilities (the kernel is not used).
    backend : str or Backend, default "auto"
        As for :class:`PsCurl`.
    seed : optional
        The agent's own seed: it drives the posterior samples.
    prior : float, default 1
        The Dirichlet prior ``α0`` (1: uniform over kernels, the paper's).
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
        As for :class:`PsCurl`.
    support : {"model", "full"}, default "model"
        As for :class:`PsCurl`.
    rewards : {"known", "learned"}, default "known"
        As for :class:`PsCurl` (the paper takes the rewards and costs known).
    **backend_options
        Passed to the backend when ``backend`` is a name.
    """

    name = "cmdp-psrl"
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        BACKEND, with_doc(SEED, "The agent's own seed: it drives the posterior samples."),
        with_doc(PRIOR, "The Dirichlet prior α0 of the posterior draws (1, the paper's, is uniform over kernels)."),
        UNREACHED, SUPPORT, REWARDS,
    )
    REFUSED: ClassVar[dict[str, str]] = {
        **PsCurl.REFUSED,
        "trigger": "its epochs follow the paper's doubling rule (ps-curl takes other triggers)",
        "tightness_constant": "it does not tighten its constraints, ε = 0 (ps-curl tightens them)",
        "horizon_lower_bound": "it has no tightness schedule (an option of ps-curl)",
        "margin": "it does not tighten its constraints (margin is an option of ps-curl)",
        "min_epoch_length": "its epochs follow the paper's doubling rule alone (an option of ps-curl)",
    }

    def __init__(self, model: CMDP, backend: str | Backend = "auto", seed: Any = None, prior: float = 1.0,
                 unreached: str = "uniform", support: str = "auto", rewards: str = "known", **backend_options: Any):
        refuse_keywords(self.name, backend_options, self.REFUSED)
        super().__init__(model, backend, "doubling", 0.0, None, seed, prior, unreached, "absolute", support, 1,
                         rewards, **backend_options)

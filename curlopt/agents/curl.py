"""UC-CURL and PS-CURL (docs/math.md §6): one compiled program, re-solved every epoch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backends import Backend, resolve_backend
from ..errors import AgentError, BackendOptionError, CurloptError
from ..program import (EPSILON_MAX, TIGHTNESS_CONSTANT_MAX, OccupancyProgram, OptimisticProgram, Program,
                       check_radius, tightness)
from ..results import SolveResult, check_unreached, extract_policy
from .base import Agent, EpochPlan, PlanSource
from .triggers import EpochTrigger

__all__ = ["UcCurl", "PsCurl", "MAX_PRIOR", "sample_posterior_kernel"]

#: the largest Dirichlet prior α0 PS-CURL takes
MAX_PRIOR = 1e6


class _ProgramAgent(Agent):
    """Shared by the agents that solve a program per epoch: ε schedule, solve, fallback, failures.

    The policy is extracted from the solution's occupancy ρ by
    :func:`curlopt.results.extract_policy` with the agent's ``unreached`` rule for
    the states ρ gives no mass (``uniform`` or ``safe``), and each plan records how
    many states that rule filled (``EpochPlan.unreached``).
    """

    def __init__(
        self,
        model,
        backend: str | Backend = "auto",
        trigger: str | EpochTrigger = "doubling",
        tightness_constant: float = 1.0,
        horizon_lower_bound: float | None = None,
        seed: Any = None,
        unreached: str = "uniform",
        **backend_options: Any,
    ):
        self.unreached = check_unreached(unreached, AgentError)
        if (isinstance(tightness_constant, bool) or not isinstance(tightness_constant, (int, float))
                or not math.isfinite(tightness_constant) or tightness_constant < 0):
            raise AgentError(f"tightness_constant (K_ε) must be a finite number >= 0, got {tightness_constant!r}.")
        if tightness_constant > TIGHTNESS_CONSTANT_MAX:
            raise AgentError(
                f"tightness_constant (K_ε) must be at most {TIGHTNESS_CONSTANT_MAX:.0f}, got {tightness_constant!r}:"
                f" ε = K_ε sqrt(ln τ / τ) reaches K_ε / sqrt(e) at τ = e, and a program takes ε <= {EPSILON_MAX:g}."
            )
        if horizon_lower_bound is not None and (
            not isinstance(horizon_lower_bound, (int, float)) or not math.isfinite(horizon_lower_bound) or horizon_lower_bound < 1
        ):
            raise CurloptError(f"horizon_lower_bound (T_l) must be a number >= 1 or None, got {horizon_lower_bound!r}.")
        self.tightness_constant = float(tightness_constant)
        self.horizon_lower_bound = horizon_lower_bound
        super().__init__(model, trigger, seed)
        if backend_options and isinstance(backend, Backend):
            raise AgentError(
                f"{self.name} does not take option(s) {sorted(backend_options)} (extra options are passed to the"
                f" backend, and the backend was given as an instance, {backend!r}, which takes none)."
            )
        try:
            self.backend = resolve_backend(backend, (model.objective, *model.constraints), **backend_options)
        except BackendOptionError as exc:
            if not exc.unknown:  # a keyword the backend takes, with a value it refuses: the backend says which
                raise
            # Unknown keywords reach the backend's constructor; say whose options they were.
            raise AgentError(
                f"{self.name} does not take option(s) {exc.unknown} (extra options are passed to the"
                f" backend, which does not take them either: {exc})"
            ) from exc
        self.program = self._build_program()
        # Compiled once: every epoch only updates the program's data and re-solves.
        self.compiled = self.backend.compile(self.program)
        self.last_result: SolveResult | None = None

    def _build_program(self) -> Program:
        raise NotImplementedError

    def _update_program(self, time: int, epsilon: float) -> None:
        raise NotImplementedError

    def epsilon(self, time: int) -> float:
        """``ε_e`` for an epoch starting at ``time`` (docs/math.md §4)."""
        return tightness(time, self.tightness_constant, self.horizon_lower_bound)

    def _plan(self, time: int) -> EpochPlan:
        eps = self.epsilon(time)
        self._update_program(time, eps)
        result = self.compiled.solve()
        self.last_result = result
        return self._plan_from(result, eps)

    def _plan_from(self, result: SolveResult, eps: float) -> EpochPlan:
        """The epoch's plan from a solve result: its policy, or after a solver failure the previous
        epoch's policy (uniform in the first epoch), labelled."""
        common = dict(epsilon=eps, status=result.status.value, solve_time=result.solve_time,
                      iterations=result.iterations, message=result.message)
        if result.ok:
            if result.occupancy is None:  # a backend that reports only a policy: nothing to fill
                return EpochPlan(result.policy, result.program.value, **common)
            policy, mask = extract_policy(result.occupancy, self.model, self.unreached, costs=result.costs,
                                          uniform_policy=result.policy)
            return EpochPlan(policy, result.program.value, unreached=int(mask.sum()), **common)
        S, A = self.model.n_states, self.model.n_actions
        if self.policy is not None:
            why = f"solver failed ({result.status.value}); kept the previous epoch's policy"
            return EpochPlan(self.policy, PlanSource.KEPT, **{**common, "message": _join(why, result.message)})
        why = f"solver failed ({result.status.value}) in the first epoch, with no previous policy; playing uniform"
        return EpochPlan(np.full((S, A), 1.0 / A), PlanSource.UNIFORM, **{**common, "message": _join(why, result.message)})

    def describe(self):
        return {**super().describe(), "backend": self.backend.name, "tightness": self.tightness_constant,
                "horizon_lower_bound": self.horizon_lower_bound, "unreached": self.unreached}


def sample_posterior_kernel(rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
    """One draw ``P~(·|s,a) ~ Dirichlet(concentration[s,a,·])`` for every pair (normalised Gamma draws).

    Parameters
    ----------
    rng : numpy.random.Generator
    concentration : ndarray, shape (S, A, S)
        The posterior's parameters, ``prior + n(s,a,s')`` (all > 0).
    """
    draws = rng.standard_gamma(concentration)
    totals = draws.sum(axis=2, keepdims=True)
    # A row of all-zero Gamma draws has probability ~0 for prior >= 1e-3; guard anyway.
    empty = totals[..., 0] <= 0
    if np.any(empty):
        draws[empty] = 1.0
        totals = draws.sum(axis=2, keepdims=True)
    return draws / totals


def _join(first: str, second: str) -> str:
    return f"{first}: {second}" if second else first


class UcCurl(_ProgramAgent):
    """UC-CURL: each epoch, the optimistic ε-tight program over L1 confidence sets (docs/math.md §3, §6).

    Parameters
    ----------
    model : CMDP
        Rewards, costs and utilities (the kernel is not used).
    backend : str or Backend, default "auto"
        Any backend that accepts the model's utilities; ``"auto"`` takes highs for
        LP-representable utilities, else the first installed backend that accepts them.
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
        (:func:`curlopt.program.l1_radius`). ``analysis``,
        ``sqrt(14 S ln(2 A t_e) / max(1, N(s,a)))``, is the radius of the paper's
        regret analysis, so the default is the analysed algorithm.
        ``experiment``, ``sqrt(S ln(A t_e) / max(1, N(s,a)))``, is the smaller
        radius the paper's simulations used: it trusts the data sooner, which
        lowers regret and gives the constraints less protection (compare both).
    radius_scale : float, default 1
        A finite factor >= 0 multiplying β.
    unreached : {"uniform", "safe"}, default "uniform"
        The policy in states the plan's occupancy does not reach
        (:func:`curlopt.results.extract_policy`): uniform over actions, or uniform
        over the actions that least increase the constraints, linearised at the
        plan (uniform for a model without constraints).
    **backend_options
        Passed to the backend when ``backend`` is a name.

    Raises
    ------
    AgentError
        For an unknown ``radius`` or ``unreached``, or a ``radius_scale`` that is
        not a finite number >= 0 (the message names the option and what it takes).
    """

    name = "uc-curl"

    def __init__(self, model, backend: str | Backend = "auto", trigger: str | EpochTrigger = "doubling",
                 tightness_constant: float = 1.0, horizon_lower_bound: float | None = None, seed: Any = None,
                 radius: str = "analysis", radius_scale: float = 1.0, unreached: str = "uniform",
                 **backend_options: Any):
        # Checked before the base class builds the program, which reads them.
        self.radius, self.radius_scale = check_radius(radius, radius_scale, AgentError)
        super().__init__(model, backend, trigger, tightness_constant, horizon_lower_bound, seed, unreached,
                         **backend_options)

    def _build_program(self) -> Program:
        return OptimisticProgram(self.model, radius=self.radius, radius_scale=self.radius_scale)

    def _update_program(self, time, epsilon):
        self.program.update(counts=self.counts, time=time, epsilon=epsilon)

    def describe(self):
        return {**super().describe(), "radius": self.radius, "radius_scale": self.radius_scale}


class PsCurl(_ProgramAgent):
    """PS-CURL: each epoch, the ε-tight occupancy program on a posterior sample (docs/math.md §6).

    ``P~(·|s,a) ~ Dirichlet(prior + n(s,a,·))`` independently for every pair.

    Parameters
    ----------
    model, backend, trigger, tightness_constant, horizon_lower_bound, seed, unreached
        As for :class:`UcCurl`; ``seed`` drives the posterior samples.
    prior : float, default 1
        The Dirichlet prior ``0 < α0 <= MAX_PRIOR`` (10^6; 1 is uniform over kernels). Larger
        priors would only pin the sample to the uniform kernel, and beyond ~1e300 the
        Gamma draws overflow.

    PS-CURL has no confidence radius: ``radius`` and ``radius_scale`` are refused
    with an :class:`~curlopt.errors.AgentError`.
    """

    name = "ps-curl"

    def __init__(self, model, backend="auto", trigger="doubling", tightness_constant=1.0,
                 horizon_lower_bound=None, seed=None, prior: float = 1.0, unreached: str = "uniform",
                 **backend_options):
        for key in ("radius", "radius_scale"):
            if key in backend_options:
                raise AgentError(
                    f"{self.name} does not take {key!r}: PS-CURL samples a posterior kernel and has no confidence"
                    " radius (radius and radius_scale are options of uc-curl)."
                )
        if isinstance(prior, bool) or not isinstance(prior, (int, float)) or not 0 < prior <= MAX_PRIOR:
            raise CurloptError(f"the Dirichlet prior must be a number in (0, {MAX_PRIOR:g}], got {prior!r}.")
        self.prior = float(prior)
        super().__init__(model, backend, trigger, tightness_constant, horizon_lower_bound, seed, unreached,
                         **backend_options)

    def sample_kernel(self) -> np.ndarray:
        """One posterior draw of the whole kernel (see :func:`sample_posterior_kernel`)."""
        return sample_posterior_kernel(self.rng, self.prior + self.counts)

    def _build_program(self) -> Program:
        S, A = self.model.n_states, self.model.n_actions
        return OccupancyProgram(self.model, kernel=np.full((S, A, S), 1.0 / S))

    def _update_program(self, time, epsilon):
        self.program.update(kernel=self.sample_kernel(), epsilon=epsilon)

    def describe(self):
        return {**super().describe(), "prior": self.prior}

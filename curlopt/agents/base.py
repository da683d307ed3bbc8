"""The agent interface used by the learning loop, and the base class of the program-solving agents.

An agent plans once per epoch and learns from the epoch's transitions; the loop
(:mod:`curlopt.experiments.simulation.loop`) draws actions from the plan's policy, steps the
environment, and asks the agent's trigger when the epoch ends. Keeping actions
and stepping in the loop is what lets the fast tabular path and the generic
Gymnasium path produce the same trajectory for every agent.

Two base classes:

* :class:`Agent`: counts, trigger bookkeeping and the plan/learn cycle; a subclass
  implements ``_plan(time)``;
* :class:`ProgramAgent`: an agent that solves one compiled program per epoch
  (UC-CURL, PS-CURL, safe mode, UCRL-CMDP); a subclass says which program and how
  the epoch's data updates it, and inherits the ε schedule, the solve, the policy
  extraction and the handling of solver failures.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from ..backends import Backend, resolve_backend
from ..errors import AgentError, BackendOptionError, CurloptError
from ..models.cmdp import CMDP
from ..programs.tightness import EPSILON_MAX, TIGHTNESS_CONSTANT_MAX, tightness
from ..programs.blocks import Program
from ..backends.results import SolveResult
from ..programs.policy import check_unreached, extract_policy
from .triggers import EpochTrigger, make_trigger, trigger_rule

__all__ = ["Agent", "EpochPlan", "PlanSource", "ProgramAgent"]


class PlanSource(StrEnum):
    """Where an epoch's policy came from (recorded in the trace).

    A ``str`` enum: each member equals its value (``PlanSource.KEPT == "kept-previous"``),
    hashes like it, and is written to a trace file as that plain string, so traces
    read back from disk (plain strings) compare equal to the members.
    """

    TIGHT = "tight"                #: the ε-tight program
    FALLBACK = "fallback"          #: the program without g rows, because the ε-tight one was infeasible
    LEAST_VIOLATION = "least-violation"  #: safe mode: the least-violation program, because the safe one was infeasible
    KEPT = "kept-previous"         #: the solver failed; the previous epoch's policy is kept
    UNIFORM = "uniform-initial"    #: the solver failed in the first epoch; no previous policy exists
    RULE = "update-rule"           #: an agent that solves no program (primal-dual)


@dataclass
class EpochPlan:
    """An epoch's policy and how it was obtained.

    ``unreached`` is the number of states to which the plan's occupancy gives
    (numerically) zero mass, whose policy rows were filled by the agent's
    ``unreached`` rule; None when the policy did not come from an occupancy
    (an update rule, or a kept or initial uniform policy after a solver failure).
    """

    policy: np.ndarray
    #: a :class:`PlanSource`, written to the trace as its string value
    source: PlanSource
    epsilon: float | None = None
    status: str = ""
    solve_time: float = 0.0
    iterations: int | None = None
    message: str = ""
    unreached: int | None = None


class Agent(ABC):
    """Base class: counts, trigger bookkeeping and the plan/learn cycle.

    Parameters
    ----------
    model : CMDP
        The model the agent knows: rewards, costs and utilities. Its kernel, if
        any, is never read by a learning agent.
    trigger : str or EpochTrigger
        ``"doubling"``, ``"linear"`` (the paper's per-pair rule), ``"linear-global"``,
        ``"linear-per-pair"`` or a user trigger (see :mod:`curlopt.agents.triggers`).
        A trigger with a ``reset()`` method is reset with the agent.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the agent's own randomness (posterior samples); the learning loop
        reseeds it from the run's seed.
    """

    name: ClassVar[str] = "agent"
    #: baselines that must know the horizon T up front set this
    needs_horizon: ClassVar[bool] = False

    def __init__(self, model: CMDP, trigger: str | EpochTrigger = "doubling", seed: Any = None):
        if not isinstance(model, CMDP):
            raise CurloptError(f"an agent needs a curlopt CMDP model, got {type(model).__name__}.")
        self.model = model
        self.trigger = make_trigger(trigger)
        self._seed = seed
        self.reset(seed)

    @property
    def trigger_name(self) -> str:
        return getattr(self.trigger, "name", type(self.trigger).__name__)

    def reset(self, seed: Any = None) -> None:
        """Forget all data and reseed (the loop calls this at the start of a run)."""
        S, A = self.model.n_states, self.model.n_actions
        self.counts = np.zeros((S, A, S))
        self.previous_epoch_visits = np.zeros((S, A))
        self.policy: np.ndarray | None = None
        self.epoch = 0
        chosen = self._seed if seed is None else seed
        if isinstance(chosen, bool) or (isinstance(chosen, (int, np.integer)) and chosen < 0):
            raise CurloptError(f"seed must be None, an integer >= 0 or a numpy SeedSequence, got {chosen!r}.")
        try:
            self.rng = np.random.default_rng(chosen)
        except (TypeError, ValueError) as exc:
            raise CurloptError(f"seed must be None, an integer >= 0 or a numpy SeedSequence, got {chosen!r} ({exc}).") from None
        # A stateful trigger (e.g. the linear one's per-pair thresholds) starts afresh; a user trigger
        # without reset() is taken to be stateless.
        reset_trigger = getattr(self.trigger, "reset", None)
        if callable(reset_trigger):
            reset_trigger()

    @property
    def visits(self) -> np.ndarray:
        """``N(s,a)``: visits before the current epoch."""
        return self.counts.sum(axis=2)

    def begin_epoch(self, time: int) -> EpochPlan:
        """Plan the epoch starting at step ``time`` (``t_e``, counted from 1)."""
        plan = self._plan(time)
        self.policy = plan.policy
        return plan

    def limits(self, time: int) -> tuple[np.ndarray, float]:
        """The trigger's per-pair thresholds and maximum length for the epoch starting at ``time``."""
        return self.trigger.limits(self.visits, self.previous_epoch_visits, time)

    def end_epoch(self, transitions: np.ndarray, reward_sum: np.ndarray, cost_sum: np.ndarray, steps: int) -> None:
        """Learn from the epoch: its transition counts (S, A, S) and summed signals."""
        self.counts += transitions
        self.previous_epoch_visits = transitions.sum(axis=2)
        self.epoch += 1

    @abstractmethod
    def _plan(self, time: int) -> EpochPlan:
        """Compute the epoch's policy."""

    def describe(self) -> dict[str, Any]:
        """Options that identify the agent in a trace."""
        return {"agent": self.name, "trigger": self.trigger_name, "trigger_rule": trigger_rule(self.trigger)}


class ProgramAgent(Agent):
    """An agent that solves one compiled program per epoch: ε schedule, solve, fallback, failures.

    UC-CURL, PS-CURL, safe mode and UCRL-CMDP are written on it. The program is
    built and compiled once, in the constructor; every epoch only pushes new data
    into it and re-solves (docs/math.md §4, §6).

    Writing an agent on it takes two methods:

    * ``_build_program(self) -> Program``: the program, built from ``self.model``
      (called once, after the base class has set ``self.counts`` and ``self.rng``);
    * ``_update_program(self, time, epsilon)``: push the data of the epoch starting at
      step ``time`` into ``self.program`` with ``self.program.update(...)`` (e.g. a
      kernel estimated from ``self.counts``, and the tightness ``epsilon``).

    and optionally ``epsilon(time)`` (a schedule other than
    ``K_ε sqrt(ln τ / τ)``) and ``describe()`` (options recorded in the trace; call
    ``super().describe()``). Options the subclass reads in ``_build_program`` must be
    set before ``super().__init__``. The base class then plans each epoch: it updates
    and solves the program, extracts the policy from the solution's occupancy ρ with
    :func:`curlopt.programs.policy.extract_policy` and the agent's ``unreached`` rule
    (``uniform`` or ``safe``) for the states ρ gives no mass, records how many states
    that rule filled (``EpochPlan.unreached``), labels an infeasible ε-tight program's
    replacement as :attr:`PlanSource.FALLBACK`, and after a solver failure keeps the
    previous epoch's policy (:attr:`PlanSource.KEPT`; uniform, :attr:`PlanSource.UNIFORM`,
    in the first epoch). docs/extending.md has a worked example.

    Parameters
    ----------
    model : CMDP
        Rewards, costs and utilities (the kernel is not used).
    backend : str or Backend, default "auto"
        Any backend that accepts the model's utilities (a registry name or an instance).
    trigger : str or EpochTrigger, default "doubling"
        The epoch rule (see :mod:`curlopt.agents.triggers`).
    tightness_constant : float, default 1
        ``K_ε`` of the schedule ``ε = K_ε sqrt(ln τ / τ)``.
    horizon_lower_bound : float, optional
        ``T_l``: with it, ``τ = max(t_e, T_l)``.
    seed : optional
        The agent's own seed.
    unreached : {"uniform", "safe"}, default "uniform"
        The policy in states the plan's occupancy does not reach.
    **backend_options
        Passed to the backend when ``backend`` is a name.

    Attributes
    ----------
    backend : Backend
    program : Program
        The program ``_build_program`` returned.
    compiled : CompiledProgram
        The program compiled by the backend; ``compiled.solve()`` solves it with its current data.
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

    @abstractmethod
    def _build_program(self) -> Program:
        """The agent's program, built once from ``self.model``."""

    @abstractmethod
    def _update_program(self, time: int, epsilon: float) -> None:
        """Push the data of the epoch starting at ``time``, and its tightness ``epsilon``, into ``self.program``."""

    def epsilon(self, time: int) -> float:
        """``ε_e`` for an epoch starting at ``time`` (docs/math.md §4)."""
        return tightness(time, self.tightness_constant, self.horizon_lower_bound)

    def _plan(self, time: int) -> EpochPlan:
        eps = self.epsilon(time)
        self._update_program(time, eps)
        return self._plan_from(self.compiled.solve(), eps)

    def _plan_from(self, result: SolveResult, eps: float) -> EpochPlan:
        """The epoch's plan from a solve result: its policy, or after a solver failure the previous
        epoch's policy (uniform in the first epoch), labelled."""
        common = dict(epsilon=eps, status=result.status.value, solve_time=result.solve_time,
                      iterations=result.iterations, message=result.message)
        if result.ok:
            # ProgramVariant and PlanSource share the values "tight" and "fallback".
            source = PlanSource(result.program.value)
            if result.occupancy is None:  # a backend that reports only a policy: nothing to fill
                return EpochPlan(result.policy, source, **common)
            policy, mask = extract_policy(result.occupancy, self.model, self.unreached, costs=result.costs,
                                          uniform_policy=result.policy)
            return EpochPlan(policy, source, unreached=int(mask.sum()), **common)
        S, A = self.model.n_states, self.model.n_actions
        if self.policy is not None:
            why = f"solver failed ({result.status.value}); kept the previous epoch's policy"
            return EpochPlan(self.policy, PlanSource.KEPT, **{**common, "message": _join(why, result.message)})
        why = f"solver failed ({result.status.value}) in the first epoch, with no previous policy; playing uniform"
        return EpochPlan(np.full((S, A), 1.0 / A), PlanSource.UNIFORM, **{**common, "message": _join(why, result.message)})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": self.backend.name, "tightness": self.tightness_constant,
                "horizon_lower_bound": self.horizon_lower_bound, "unreached": self.unreached}


def _join(first: str, second: str) -> str:
    return f"{first}: {second}" if second else first

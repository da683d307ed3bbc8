"""The agent interface used by the learning loop.

An agent plans once per epoch and learns from the epoch's transitions; the loop
(:mod:`curlopt.experiments.loop`) draws actions from the plan's policy, steps the
environment, and asks the agent's trigger when the epoch ends. Keeping actions
and stepping in the loop is what lets the fast tabular path and the generic
Gymnasium path produce the same trajectory for every agent.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..model import CMDP
from ..errors import CurloptError
from .triggers import EpochTrigger, make_trigger, trigger_rule

__all__ = ["Agent", "EpochPlan", "PlanSource"]


class PlanSource:
    """Where an epoch's policy came from (recorded in the trace)."""

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
    source: str
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

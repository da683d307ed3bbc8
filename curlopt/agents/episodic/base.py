"""The base class of the episodic learning agents: counts, the plan/learn cycle per episode, the safe policy.

An episodic agent plans once per episode (``begin_episode(k)`` returns an :class:`EpisodePlan` with a policy of
shape (H, S, A)) and learns from the episode's trajectory (``end_episode(states, actions)``); the episode loop
(:mod:`curlopt.experiments.simulation.episodes`) draws the actions and the transitions. Rewards and costs are known
(the papers' assumption); only the kernel is learned, by the counts of :mod:`.estimates`.

A subclass that solves a program writes ``_build_program`` and ``_update_program(k)`` and inherits the solve, the
policy read from the result (``result.policy``, shape (H, S, A), as the episodic programs' ``interpret`` gives it)
and what is played when the program has no solution: the model's declared safe policy for the algorithms that
have one (:attr:`EpisodicAgent.uses_safe_policy`), else the backend's fallback program (the program without its
constraint rows) labelled :attr:`EpisodeSource.FALLBACK`, and after a solver failure the previous episode's policy
(uniform in the first episode), labelled.
"""

from __future__ import annotations

import math
import time as clock
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np

from ...backends import Backend, resolve_backend
from ...errors import AgentError, BackendOptionError, CurloptError
from ...models.episodic import EpisodicCMDP, episode_values
from ..options import SIGNAL_KNOWLEDGE
from ..signals import PESSIMISTIC, SignalEstimates
from .estimates import EpisodeCounts, empirical_kernel

__all__ = ["EpisodeSource", "EpisodePlan", "EpisodicAgent", "ProgramEpisodicAgent", "REPLAN_RULES", "SafePolicy",
           "require_safe_policy", "learner_support"]

#: when an agent solves its program: every episode (the papers' rule), or only when the visits of some pair have
#: doubled since the last solve (an option, to cut the per-episode cost; never the default)
REPLAN_RULES = ("every-episode", "doubling")


class EpisodeSource(StrEnum):
    """Where an episode's policy came from (recorded per episode)."""

    PROGRAM = "program"              #: the agent's program, solved this episode
    FALLBACK = "fallback"            #: the program without constraint rows, because the agent's was infeasible
    SAFE = "safe-policy"             #: the declared safe policy, because the agent's program was infeasible
    #: the declared safe policy, because the program was proved infeasible without a solve (DOPE's bound: the least
    #: pessimistic cost over the confidence sets, by extended backward induction, is above the budget)
    SAFE_BOUND = "safe-policy-bound"
    WARM_UP = "warm-up"              #: the declared safe policy, in the agent's warm-up episodes
    SAFE_RULE = "safe-rule"          #: the declared safe policy, chosen by the agent's rule (OptPess-LP's test)
    REUSED = "reused"                #: the previous episode's policy, kept by the ``doubling`` re-planning rule
    KEPT = "kept-previous"           #: the solver failed; the previous episode's policy is kept
    UNIFORM = "uniform-initial"      #: the solver failed in the first episode; uniform policy
    RULE = "update-rule"             #: an agent that solves no program (the model-free Triple-Q)


@dataclass
class EpisodePlan:
    """An episode's policy (H, S, A) and how it was obtained."""

    policy: np.ndarray
    source: EpisodeSource
    status: str = ""
    message: str = ""
    epsilon: float = 0.0
    solve_time: float = 0.0
    #: the program's own optimal value (its objective with bonuses, on its kernel), NaN without a solve
    planned_value: float = math.nan


@dataclass(frozen=True)
class SafePolicy:
    """A declared strictly safe policy and what the algorithms that need one know of it.

    ``costs`` are its per-episode totals ζ on the true model and ``slack`` is ``−max_m g_m(ζ) > 0`` (for one budget
    constraint, ``τ − C_b``): the papers assume both known along with the policy.
    """

    policy: np.ndarray
    costs: np.ndarray
    slack: float


def require_safe_policy(model: EpisodicCMDP, agent: str) -> SafePolicy:
    """The model's declared safe policy, its costs and its slack; a clear :class:`AgentError` without one.

    Raises
    ------
    AgentError
        When the model declares no safe policy, has no constraint, or its safe policy is not strictly safe.
    """
    if model.safe_policy is None:
        raise AgentError(
            f"{agent} needs a known strictly safe policy, and model {model.name!r} declares none: build the model"
            " with EpisodicCMDP(..., safe_policy=pi) (an (H, S, A) or (S, A) array of distributions whose"
            " per-episode costs satisfy every constraint strictly), or use an agent without one (opt-cmdp, uc-curl)."
        )
    if not model.constraints:
        raise AgentError(f"{agent} plays a safe policy against constraints, and model {model.name!r} has none.")
    _, costs = episode_values(model, model.safe_policy)
    values = model.constraint_values(costs)
    slack = float(-np.max(values))
    if not slack > 0:
        raise AgentError(
            f"{agent}: the safe policy model {model.name!r} declares is not strictly safe: max_m g_m(ζ) ="
            f" {-slack:.6g} >= 0 for its per-episode costs ζ = {np.round(costs, 6).tolist()}.")
    return SafePolicy(model.safe_policy, costs, slack)


def learner_support(model: EpisodicCMDP) -> Any:
    """The support an episodic agent's program is built on: every successor of every pair.

    A learner does not know which successors the kernel can reach: its estimate ``P̂`` (uniform over all S
    successors for a pair never tried) and its confidence sets put mass anywhere. A program left to the model's
    default support would take the sparsity pattern of a sparse-stored model (the union of its per-step kernels'
    patterns), refuse such an estimate, and make the agent's run depend on how the model is stored; on the dense
    support a model stored sparse or dense gives the same programs and the same run.
    """
    from ...programs import Support

    return Support.dense(model.n_states, model.n_actions)


def _check_count(value: Any, name: str, lower: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lower:
        raise AgentError(f"{name} must be an integer >= {lower} or None, got {value!r}.")
    return int(value)


def _check_probability(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise AgentError(f"{name} must be a number in (0, 1), got {value!r}.")
    return float(value)


def _check_scale(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise AgentError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


class EpisodicAgent(ABC):
    """Base class: counts, the plan/learn cycle per episode.

    Parameters
    ----------
    model : EpisodicCMDP
        Rewards, costs, utilities, horizon, initial distribution (and the declared safe policy for the agents that
        use one); the kernel is never read, except by the agents that need the safe policy's costs.
    seed : int or numpy.random.SeedSequence, optional
        The agent's own randomness (posterior samples); the episode loop reseeds it from the run's seed.
    episodes : int, optional
        ``K``, the number of episodes, which the papers' confidence widths take (``ln(… K / δ)``); the episode loop
        sets it to the run's length when not given.
    """

    name: ClassVar[str] = "episodic-agent"
    #: True for the algorithms that take the model's declared safe policy
    uses_safe_policy: ClassVar[bool] = False

    #: the cost rule of ``rewards="learned"`` (:mod:`curlopt.agents.signals`): pessimistic unless the paper's is not
    LEARNED_COSTS: ClassVar[str] = PESSIMISTIC

    def __init__(self, model: EpisodicCMDP, seed: Any = None, episodes: int | None = None, rewards: str = "known"):
        if not isinstance(model, EpisodicCMDP):
            raise CurloptError(f"{self.name} needs an episodic model (curlopt.models.episodic.EpisodicCMDP), got"
                               f" {type(model).__name__}; the infinite-horizon agents are in curlopt.agents.AGENTS.")
        self.model = model
        self.horizon = model.horizon
        if not isinstance(rewards, str) or rewards not in SIGNAL_KNOWLEDGE:
            raise AgentError(f"rewards must be one of {', '.join(map(repr, SIGNAL_KNOWLEDGE))}, got {rewards!r}.")
        self.rewards = rewards
        #: K as given to the constructor (None: the loop's K at every reset)
        self.given_episodes = _check_count(episodes, "episodes (K)")
        self.episodes = self.given_episodes
        self._seed = seed
        self.reset(seed)

    def reset(self, seed: Any = None, episodes: int | None = None) -> None:
        """Forget all data and reseed; ``episodes`` sets K when the agent was built without it."""
        S, A, H = self.model.n_states, self.model.n_actions, self.horizon
        if self.given_episodes is None:
            self.episodes = _check_count(episodes, "episodes (K)")
        self.counts = EpisodeCounts(S, A, H, pooled=self.model.time_homogeneous)
        self.policy: np.ndarray | None = None
        self.episode = 0
        #: the running means of the observed signals per step, state and action (``rewards="learned"``), else None
        self.signal_estimates = _step_estimates(self.model) if self.rewards == "learned" else None
        self._planning_tables: tuple[np.ndarray, np.ndarray] | None = None
        chosen = self._seed if seed is None else seed
        if isinstance(chosen, bool) or (isinstance(chosen, (int, np.integer)) and chosen < 0):
            raise CurloptError(f"seed must be None, an integer >= 0 or a numpy SeedSequence, got {chosen!r}.")
        self.rng = np.random.default_rng(chosen)

    @property
    def planned_episodes(self) -> int:
        """K, as given or set by the loop (1 before either)."""
        return self.episodes if self.episodes is not None else 1

    def kernel_estimate(self) -> np.ndarray:
        """``P̂``: (S, A, S) for pooled counts, (H − 1, S, A, S) per step."""
        kernel = empirical_kernel(self.counts.transitions)
        return kernel[0] if self.counts.pooled else kernel

    @property
    def step_rewards(self) -> np.ndarray:
        """The per-step rewards (H, K, S, A) the agent plans on: the model's, or the learned optimistic ones."""
        return self.model.step_rewards if self._planning_tables is None else self._planning_tables[0]

    @property
    def step_costs(self) -> np.ndarray:
        """The per-step costs (H, d, S, A) the agent plans on: the model's, or the learned ones
        (:attr:`LEARNED_COSTS`)."""
        return self.model.step_costs if self._planning_tables is None else self._planning_tables[1]

    def observe_signals(self, states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, costs: np.ndarray) -> None:
        """Learn from an episode's observed signals: ``rewards`` (H, K) and ``costs`` (H, d) at its steps' states and
        actions. The episode loop calls it before :meth:`end_episode`; an agent told the rewards ignores it."""
        if self.signal_estimates is None:
            return
        S, A, H = self.model.n_states, self.model.n_actions, self.horizon
        visits = np.zeros(H * S * A)
        cells = (np.arange(H) * S + np.asarray(states, dtype=np.int64)) * A + np.asarray(actions, dtype=np.int64)
        visits[cells] = 1.0   # one visit per step: the cells of an episode differ in their step
        reward_means = np.zeros((self.model.n_rewards, H * S * A))
        cost_means = np.zeros((self.model.n_costs, H * S * A))
        reward_means[:, cells] = np.asarray(rewards, dtype=float).T
        cost_means[:, cells] = np.asarray(costs, dtype=float).T
        self.signal_estimates.add(visits, reward_means, cost_means)

    def begin_episode(self, k: int) -> EpisodePlan:
        """Plan episode ``k`` (counted from 1)."""
        if self.signal_estimates is not None:
            H, S, A = self.horizon, self.model.n_states, self.model.n_actions
            rewards, costs = self.signal_estimates.planning_tables(max(1, self.episode * H), self.LEARNED_COSTS)
            self._planning_tables = (rewards.reshape(-1, H, S, A).transpose(1, 0, 2, 3),
                                     costs.reshape(-1, H, S, A).transpose(1, 0, 2, 3))
        plan = self._plan(k)
        self.policy = plan.policy
        return plan

    def end_episode(self, states: np.ndarray, actions: np.ndarray) -> None:
        """Learn from the episode's states ``s_1..s_H`` and actions ``a_1..a_H``."""
        self.counts.add_episode(states, actions)
        self.episode += 1

    @abstractmethod
    def _plan(self, k: int) -> EpisodePlan:
        """The policy of episode ``k``."""

    def describe(self) -> dict[str, Any]:
        """The options that identify the agent in a trace."""
        out = {"agent": self.name, "episodes": self.episodes, "counts": "pooled" if self.counts.pooled else "per-step"}
        if self.rewards != "known":  # only when set: the records of known signals are unchanged
            out["rewards"] = self.rewards
        return out


class ProgramEpisodicAgent(EpisodicAgent):
    """An episodic agent that solves one compiled program per episode.

    Subclasses write ``_build_program()`` (called once) and ``_update_program(k)`` (push the episode's data into
    ``self.program``), and optionally ``_before_solve(k)`` (return a plan to play without solving, e.g. a warm-up).

    Parameters
    ----------
    model, seed, episodes
        As for :class:`EpisodicAgent`.
    backend : str or Backend, default "auto"
        Any backend that takes the agent's program; ``auto`` is chosen from the utilities
        (:func:`~curlopt.backends.registry.choose_backend` without the model: HiGHS for LP-representable ones).
    rewards : {"known", "learned"}, default "known"
        ``learned``: plan on the running means of the observed signals per step, state and action, moved by
        Hoeffding's width (optimistic rewards; costs by :attr:`LEARNED_COSTS`; :mod:`curlopt.agents.signals`).
    replan : {"every-episode", "doubling"}, default "every-episode"
        ``every-episode`` (the papers'): solve in every episode. ``doubling``: solve only when the visits of some
        pair (at some step, for per-step counts) have doubled since the last solve (and in the first episode);
        otherwise play the last policy again (:attr:`EpisodeSource.REUSED`). An option to cut the per-episode cost.
    **backend_options
        Passed to the backend when ``backend`` is a name.
    """

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 replan: str = "every-episode", rewards: str = "known", **backend_options: Any):
        if not isinstance(replan, str) or replan not in REPLAN_RULES:
            raise AgentError(f"replan must be one of {', '.join(map(repr, REPLAN_RULES))}, got {replan!r}.")
        self.replan = replan
        super().__init__(model, seed, episodes, rewards)
        if backend_options and isinstance(backend, Backend):
            raise AgentError(f"{self.name} does not take option(s) {sorted(backend_options)} (extra options go to"
                             f" the backend, given as an instance, {backend!r}, which takes none).")
        self.program = self._build_program()
        try:
            # ``auto`` decides from the utilities only, not from the model: the rule's episodic threshold (mdp-columns
            # from 2,000 kernel entries) was measured on one cold compile and solve, and an agent re-solves its
            # program every episode, where HiGHS starts from the previous basis. Measured on the (10, 4, 10)
            # benchmark model, 10^4 episodes (benchmarks/results-episodic-agents-speed-2026-11-27.txt): PS-CURL
            # 1.68 ms CPU an episode on highs, 2.92 on mdp-columns, the rule's choice given the model
            self.backend = resolve_backend(backend, (model.objective, *model.constraints), **backend_options)
        except BackendOptionError as exc:
            if not exc.unknown:
                raise
            raise AgentError(f"{self.name} does not take option(s) {exc.unknown} (extra options are passed to the"
                             f" backend, which does not take them either: {exc})") from exc
        self.compiled = self.backend.compile(self.program)

    def reset(self, seed: Any = None, episodes: int | None = None) -> None:
        super().reset(seed, episodes)
        self._solved_visits: np.ndarray | None = None
        #: the last solve's result (None before the first solve)
        self.last_result: Any = None

    @abstractmethod
    def _build_program(self) -> Any:
        """The agent's program, built once."""

    @abstractmethod
    def _update_program(self, k: int) -> float:
        """Push episode ``k``'s data into ``self.program``; return the tightness ε used (0 for none)."""

    def _before_solve(self, k: int) -> EpisodePlan | None:
        """A plan to play without solving (a warm-up, a safety rule), or None to solve."""
        return None

    def _on_infeasible(self, result: Any, epsilon: float) -> EpisodePlan | None:
        """The plan when the program is infeasible; None to play the backend's fallback result."""
        return None

    def _decided_without_solve(self, epsilon: float) -> EpisodePlan | None:
        """After the update, a plan when the program's outcome is known without a solve (a proof that it is
        infeasible, for an agent that then plays its safe policy), or None to solve."""
        return None

    def _due(self) -> bool:
        """Whether the ``doubling`` rule asks for a solve now."""
        if self.replan == "every-episode" or self._solved_visits is None or self.policy is None:
            return True
        now = self.counts.visits
        before = self._solved_visits
        return bool(np.any((now > before) & (now >= 2 * before)))

    def _plan(self, k: int) -> EpisodePlan:
        early = self._before_solve(k)
        if early is not None:
            return early
        if not self._due():
            assert self.policy is not None
            return EpisodePlan(self.policy, EpisodeSource.REUSED, message="doubling rule: no pair's visits doubled")
        start = clock.perf_counter()
        epsilon = self._update_program(k)
        decided = self._decided_without_solve(epsilon)
        if decided is not None:
            decided.solve_time = clock.perf_counter() - start
            self._solved_visits = self.counts.visits.copy()
            return decided
        # an agent with a safe policy plays it when its program is infeasible: no fallback solve for it
        result = self.compiled.solve(fallback=not self.uses_safe_policy)
        self.last_result = result
        elapsed = clock.perf_counter() - start
        self._solved_visits = self.counts.visits.copy()
        return self._plan_from(result, epsilon, elapsed)

    def _plan_from(self, result: Any, epsilon: float, elapsed: float) -> EpisodePlan:
        S, A, H = self.model.n_states, self.model.n_actions, self.horizon
        status = result.status.value
        if result.ok and not result.fell_back:
            return EpisodePlan(self._policy_of(result), EpisodeSource.PROGRAM, status, result.message, epsilon,
                               elapsed, float(result.objective))
        if result.ok or result.tight_status.value == "infeasible":
            replacement = self._on_infeasible(result, epsilon)
            if replacement is not None:
                replacement.solve_time = elapsed
                return replacement
            if result.ok:
                return EpisodePlan(self._policy_of(result), EpisodeSource.FALLBACK, status,
                                   _join("the agent's program was infeasible; played the program without its"
                                         " constraint rows", result.message), epsilon, elapsed, float(result.objective))
        if self.policy is not None:
            return EpisodePlan(self.policy, EpisodeSource.KEPT, status,
                               _join(f"solver failed ({status}); kept the previous episode's policy", result.message),
                               epsilon, elapsed)
        return EpisodePlan(np.full((H, S, A), 1.0 / A), EpisodeSource.UNIFORM, status,
                           _join(f"solver failed ({status}) in the first episode; playing uniform", result.message),
                           epsilon, elapsed)

    def _policy_of(self, result: Any) -> np.ndarray:
        """The (H, S, A) policy of a solved program (the result's ``policy``, which the program's ``interpret``
        extracts from the occupancy, uniform where a step's state has no mass)."""
        policy = np.asarray(result.policy, dtype=float)
        H, S, A = self.horizon, self.model.n_states, self.model.n_actions
        if policy.shape != (H, S, A):
            raise AgentError(f"{self.name}: the program's policy has shape {policy.shape}, expected (H, S, A) ="
                             f" ({H}, {S}, {A}).")
        return policy

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": self.backend.name, "replan": self.replan}


def _step_estimates(model: EpisodicCMDP) -> SignalEstimates:
    """Running means over the cells (step, state, action): the per-step tables seen as (K, H·S, A)."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    view = SimpleNamespace(
        rewards=np.asarray(model.step_rewards).transpose(1, 0, 2, 3).reshape(model.n_rewards, H * S, A),
        costs=np.asarray(model.step_costs).transpose(1, 0, 2, 3).reshape(model.n_costs, H * S, A),
        n_rewards=model.n_rewards, n_costs=model.n_costs, n_states=H * S, n_actions=A,
        objective=model.objective, constraints=model.constraints)
    return SignalEstimates(view)


def _join(first: str, second: str) -> str:
    return f"{first}: {second}" if second else first

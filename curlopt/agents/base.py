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

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar, Protocol

import numpy as np
import scipy.sparse as sp

from ..backends import Backend, resolve_backend
from ..backends.results import ProgramVariant, SolveResult
from ..errors import AgentError, BackendOptionError, CurloptError
from ..models.cmdp import CMDP
from ..programs.blocks import Program
from ..programs.policy import extract_policy, per_step_feasible
from ..programs.support import Support
from ..programs.tightness import tightness
from .estimates import agent_support, program_support, row_sums
from .options import (
    BACKEND,
    HORIZON_LOWER_BOUND,
    MIN_EPOCH_LENGTH,
    REQUIRED,
    REWARDS,
    SEED,
    SUPPORT,
    TIGHTNESS_CONSTANT,
    TRIGGER,
    UNREACHED,
    AgentOption,
    check_value,
    refuse_keywords,
)
from .signals import PESSIMISTIC, SignalEstimates
from .triggers import EpochTrigger, make_trigger, reads_visits, trigger_rule

__all__ = ["Agent", "EpochPlan", "PlanSource", "ProgramAgent", "StepLearner", "PLANNING_PRIOR"]

#: the Dirichlet prior of the posterior mean the optimistic agents' ``reach`` fill runs on
#: (:meth:`ProgramAgent.planning_kernel`)
PLANNING_PRIOR = 1.0


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


class StepLearner(Protocol):
    """What the learning loop asks of an agent that learns at every step (``learns_per_step``): it plays a run of
    steps itself from their uniforms (the fast path), or chooses and learns one step at a time (the generic path),
    with the same trajectory either way."""

    model: CMDP

    def play_steps(self, state: int, action_uniforms: list[float], transition_uniforms: list[float],
                   kernel_rows: list[list[float]], successors: list[list[int]] | None) -> tuple[list[int], int]:
        """Play one step per pair of uniforms from ``state``; return the visited pairs ``s·A + a`` and the last
        state."""
        ...

    def act(self, s: int, u: float) -> int:
        """The action at ``s`` given the step's action uniform ``u``."""
        ...

    def observe(self, s: int, a: int, nxt: int) -> None:
        """Learn from the step ``(s, a) -> nxt``."""
        ...


def _keywords(cls: type[Agent]) -> list[inspect.Parameter]:
    """The keyword parameters of ``cls``'s constructor but ``model`` (its options)."""
    return [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.name != "model" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _with_defaults(cls: type[Agent]) -> tuple[AgentOption, ...]:
    """``cls.OPTIONS`` with the defaults of ``cls``'s constructor (:data:`~curlopt.agents.options.REQUIRED` where it
    has none).

    Raises
    ------
    TypeError
        When ``OPTIONS`` does not name exactly the constructor's keyword parameters, in its order (a mistake in the
        class, said when it is defined).
    """
    parameters = _keywords(cls)
    declared = [option.name for option in cls.OPTIONS]
    if declared != [p.name for p in parameters]:
        raise TypeError(f"{cls.__name__}.OPTIONS declares {declared}, but its constructor takes"
                        f" {[p.name for p in parameters]} (the same names, in the same order).")
    return tuple(replace(option, default=REQUIRED if p.default is p.empty else p.default)
                 for option, p in zip(cls.OPTIONS, parameters, strict=True))



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
    support : {"auto", "model", "full"}, default "auto"
        The successors the agent considers possible, on which it keeps its counts and estimates
        (:mod:`curlopt.agents.estimates`), decided by the model, never by its kernel's storage: the ones its
        kernel gives positive probability (``model``), every successor (``full``; refused for a sparse-stored
        model above :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S), or ``auto``: ``full``
        up to :data:`~curlopt.models.cmdp.AUTO_DENSE_ENTRIES` entries S·A·S, ``model`` above.
    min_epoch_length : int, default 1
        The fewest steps of an epoch unless the horizon ends it: the learning loop checks the trigger's
        thresholds only from this step of the epoch on (:mod:`curlopt.agents.triggers`). 1: the trigger
        alone decides.
    rewards : {"known", "learned"}, default "known"
        ``known``: the agent is told the model's reward and cost tables. ``learned``: it keeps the running means of
        the signals it observes (:meth:`observe_signals`, :mod:`curlopt.agents.signals`) and plans on them with
        its confidence bonuses.

    Attributes
    ----------
    support : Support
        The support the counts live on (:class:`curlopt.programs.support.Support`).
    counts
        ``n(s,a,s')``: an (S, A, S) array on the dense support, else a CSR (S·A, S) matrix (:attr:`entry_counts`
        holds the numbers).

    Notes
    -----
    A class declares the keyword options of its constructor in ``OPTIONS`` (:mod:`curlopt.agents.options`), in
    the constructor's order and without ``model``; the defaults are taken from the constructor's signature when
    the class is created, and a class whose ``OPTIONS`` names other keywords than its constructor is refused
    then. A class that declares none takes, for each of its keywords, the declaration of the same name it
    inherits (else one that accepts any value, without a description). A class that passes the keywords it does not take on to its backend sets ``PASSES_ON``; ``REFUSED``
    says why it has no use for the options of other agents. The checks of the constructors, ``curlopt agents``,
    the guide's tables and the check of a study's options all read this declaration.
    """

    name: ClassVar[str] = "agent"
    #: baselines that must know the horizon T up front set this
    needs_horizon: ClassVar[bool] = False
    #: the keyword options of the constructor, in its order (defaults filled in from its signature)
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (TRIGGER, SEED, SUPPORT, MIN_EPOCH_LENGTH, REWARDS)
    #: keywords of other agents this one refuses, with the reason it has no use for them
    REFUSED: ClassVar[dict[str, str]] = {}
    #: the keywords the constructor does not name go to the backend (``**backend_options``)
    PASSES_ON: ClassVar[bool] = False
    #: an agent whose policy changes at every step (model-free) steps the chain itself: the loop hands it each
    #: epoch's uniforms (``play_steps``, or ``act`` and ``observe`` per step on the generic path)
    learns_per_step: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "OPTIONS" not in vars(cls):
            # Not declared (a user's agent): its keywords take the declarations it inherits of the same names, and
            # the others a declaration that accepts any value and says nothing (curlopt agents shows the gap).
            inherited = {option.name: option for option in cls.OPTIONS}
            cls.OPTIONS = tuple(inherited.get(p.name, AgentOption(p.name, (object,), None, "", "any value"))
                                for p in _keywords(cls))
        cls.OPTIONS = _with_defaults(cls)

    @classmethod
    def declared_options(cls) -> dict[str, AgentOption]:
        """``{name: option}`` of every keyword the agent takes, in the constructor's order, with its default."""
        return {option.name: option for option in cls.OPTIONS}

    #: the cost rule of ``rewards="learned"`` (:mod:`curlopt.agents.signals`): pessimistic ``c^ + b`` unless the
    #: agent's paper says otherwise
    LEARNED_COSTS: ClassVar[str] = PESSIMISTIC

    def __init__(self, model: CMDP, trigger: str | EpochTrigger = "doubling", seed: Any = None,
                 support: str = "auto", min_epoch_length: int = 1, rewards: str = "known"):
        if not isinstance(model, CMDP):
            raise CurloptError(f"an agent needs a curlopt CMDP model, got {type(model).__name__}.")
        if model.criterion != "average":  # the long-run agents would solve the wrong problem without a word
            raise AgentError(
                f"the {self.name} agent learns the long-run average criterion, but model {model.name!r} is"
                f" {model.criterion}: "
                + ("use an episodic agent (curlopt.agents.episodic, e.g. opt-cmdp, dope, uc-curl)."
                   if model.criterion == "episodic" else "a discounted model has its known-model optimum only"
                   " (curlopt optimum MODEL --discount γ); build the model without a discount to learn it."))
        self.model = model
        self.rewards: str = check_value(REWARDS, rewards)
        check_value(TRIGGER, trigger)
        self.min_epoch_length: int = check_value(MIN_EPOCH_LENGTH, min_epoch_length)
        self.support_choice: str = check_value(SUPPORT, support)
        self.support: Support = agent_support(model, support, self.name)
        # The support's entries as sorted keys pair·S + successor, to place an epoch's transitions (a sparse
        # support only: the dense one places them by reshaping).
        self._entry_keys: np.ndarray = (np.zeros(0, dtype=np.int64) if self.support.is_dense
                                        else self.support.pairs * model.n_states + self.support.successors)
        self.trigger = make_trigger(trigger)
        self._seed = seed
        self.reset(seed)

    @property
    def trigger_name(self) -> str:
        return getattr(self.trigger, "name", type(self.trigger).__name__)

    def reset(self, seed: Any = None) -> None:
        """Forget all data and reseed (the loop calls this at the start of a run)."""
        S, A = self.model.n_states, self.model.n_actions
        self._counts = np.zeros((S, A, S)) if self.support.is_dense else np.zeros(self.support.nnz)
        self.previous_epoch_visits = np.zeros((S, A))
        self.policy: np.ndarray | None = None
        self.epoch = 0
        #: the running means of the observed signals (``rewards="learned"``), else None
        self.signal_estimates: SignalEstimates | None = (SignalEstimates(self.model) if self.rewards == "learned"
                                                         else None)
        # The run reseeds the agent with its own seed: checked here, where every seed arrives.
        self.rng = np.random.default_rng(check_value(SEED, self._seed if seed is None else seed))
        # A stateful trigger (e.g. the linear one's per-pair thresholds) starts afresh; a user trigger
        # without reset() is taken to be stateless.
        reset_trigger = getattr(self.trigger, "reset", None)
        if callable(reset_trigger):
            reset_trigger()

    @property
    def counts(self) -> Any:
        """``n(s,a,s')`` before the current epoch: the (S, A, S) array itself on the dense support, else a CSR
        (S·A, S) matrix built from :attr:`entry_counts` (zeros dropped)."""
        if self.support.is_dense:
            return self._counts
        matrix = self.support.matrix(self._counts)
        matrix.eliminate_zeros()
        return matrix

    @counts.setter
    def counts(self, value: Any) -> None:
        self._counts = self._on_support(value, "counts")

    @property
    def entry_counts(self) -> np.ndarray:
        """``n(s,a,s')`` at each support entry, shape (nnz,) in the support's CSR order (a flat view of the
        (S, A, S) array on the dense support)."""
        return self._counts.reshape(-1)

    @property
    def visits(self) -> np.ndarray:
        """``N(s,a)``: visits before the current epoch."""
        if self.support.is_dense:  # row_sums' sum over the successors, without the method's wrapper (every epoch)
            return np.add.reduce(self._counts, axis=2)
        return row_sums(self.support, self._counts)

    @property
    def program_support(self) -> Any:
        """The ``support=`` argument for the agent's programs (:func:`curlopt.agents.estimates.program_support`)."""
        return program_support(self.model, self.support)

    def begin_epoch(self, time: int) -> EpochPlan:
        """Plan the epoch starting at step ``time`` (``t_e``, counted from 1)."""
        plan = self._plan(time)
        self.policy = plan.policy
        return plan

    def limits(self, time: int) -> tuple[np.ndarray, float]:
        """The trigger's per-pair thresholds and maximum length for the epoch starting at ``time``."""
        trigger = self.trigger
        # summed only for a rule that reads them (a rule with reads_visits = False is given None)
        visits: Any = self.visits if reads_visits(trigger) else None
        return trigger.limits(visits, self.previous_epoch_visits, time)

    def transition_counts(self, pairs: np.ndarray, next_states: np.ndarray) -> Any:
        """An epoch's transitions, the visited pairs ``s·A + a`` and their next states, counted in the form
        :meth:`end_epoch` takes best: an (S, A, S) float array on the dense support, else a CSR (S·A, S)
        matrix of the transitions seen (the learning loop hands each epoch over this way)."""
        S, A = self.model.n_states, self.model.n_actions
        pairs, next_states = np.asarray(pairs, dtype=np.int64), np.asarray(next_states, dtype=np.int64)
        if self.support.is_dense:
            return np.bincount(pairs * S + next_states, minlength=S * A * S).reshape(S, A, S).astype(float)
        # duplicates are summed when the matrix is built: counts of integers, exact
        return sp.csr_array((np.ones(pairs.size), (pairs, next_states)), shape=(S * A, S))

    def end_epoch(self, transitions: Any, reward_sum: np.ndarray, cost_sum: np.ndarray, steps: int) -> None:
        """Learn from the epoch: its transition counts and summed signals.

        ``transitions`` is an (S, A, S) array or a scipy sparse (S·A, S) matrix (row ``s·A + a``), e.g. from
        :meth:`transition_counts`; on a sparse support it must be zero outside the support.

        Raises
        ------
        AgentError
            For a transition outside the agent's support (naming the pair and the successor).
        """
        if self.support.is_dense and (type(transitions) is np.ndarray or not sp.issparse(transitions)):
            self._counts += transitions
            self.previous_epoch_visits = np.add.reduce(transitions, axis=2)  # transitions.sum(axis=2), one call
        else:
            epoch = self._on_support(transitions, "an epoch's transitions")
            self._counts += epoch
            self.previous_epoch_visits = row_sums(self.support, epoch)
        self.epoch += 1

    def _on_support(self, data: Any, name: str) -> np.ndarray:
        """``data`` (an (S, A, S) array or a sparse (S·A, S) matrix) in the agent's form: an (S, A, S) float array
        on the dense support, else its values at the support's entries, shape (nnz,)."""
        S, A = self.model.n_states, self.model.n_actions
        if self.support.is_dense:
            dense = data.toarray() if sp.issparse(data) else np.array(data, dtype=float)
            if dense.size != S * A * S:
                raise AgentError(f"{self.name}: {name} must have shape (S, A, S) = ({S}, {A}, {S}) or, sparse,"
                                 f" (S·A, S) = ({S * A}, {S}), got {np.shape(data)}.")
            return dense.reshape(S, A, S).astype(float)
        if sp.issparse(data):
            matrix = sp.csr_array(data, dtype=float)
            if matrix.shape != (S * A, S):
                raise AgentError(f"{self.name}: {name} must be a sparse (S·A, S) = ({S * A}, {S}) matrix, got"
                                 f" {matrix.shape}.")
            matrix.sum_duplicates()
            rows = np.repeat(np.arange(S * A, dtype=np.int64), np.diff(matrix.indptr))
            columns, values = matrix.indices.astype(np.int64), matrix.data
        else:
            dense = np.asarray(data, dtype=float).reshape(S * A, S)
            rows, columns = np.nonzero(dense)
            values = dense[rows, columns]
        keys = rows * S + columns
        at = np.minimum(np.searchsorted(self._entry_keys, keys), self.support.nnz - 1)
        outside = (self._entry_keys[at] != keys) & (values != 0)
        if np.any(outside):
            first = int(np.argmax(outside))
            s, a = divmod(int(rows[first]), A)
            raise AgentError(
                f"{self.name}: {name} has the transition (s, a) = ({s}, {a}) -> {int(columns[first])}, outside the"
                f" agent's support ({self.support_choice!r}: the transitions model {self.model.name!r} declares);"
                " the environment does not follow the model the agent was given, or its support is too narrow:"
                " use support='full'."
            )
        entries = np.zeros(self.support.nnz)
        np.add.at(entries, at, values)
        return entries

    def observe_signals(self, visits: np.ndarray, reward_means: np.ndarray, cost_means: np.ndarray) -> None:
        """Learn from an epoch's observed signals: each pair's visits (S·A,) and the mean of the rewards (K, S·A)
        and costs (d, S·A) observed there (read only where the pair was visited). The learning loop calls it
        before :meth:`end_epoch`; an agent told the rewards (``rewards="known"``) ignores it."""
        if self.signal_estimates is not None:
            self.signal_estimates.add(visits, reward_means, cost_means)

    def planning_model(self, time: int) -> CMDP:
        """The model an epoch starting at ``time`` plans on: the model itself when the rewards are known, else the
        model with the learned tables (optimistic rewards, and costs by :attr:`LEARNED_COSTS`)."""
        if self.signal_estimates is None:
            return self.model
        return self.signal_estimates.planning_model(self.model, time, self.LEARNED_COSTS)

    @abstractmethod
    def _plan(self, time: int) -> EpochPlan:
        """Compute the epoch's policy."""

    def describe(self) -> dict[str, Any]:
        """Options that identify the agent in a trace (``support`` for a model stored sparse or a support that is
        not every successor, where it matters, and ``min_epoch_length`` when it is set)."""
        out: dict[str, Any] = {"agent": self.name, "trigger": self.trigger_name,
                               "trigger_rule": trigger_rule(self.trigger)}
        if self.min_epoch_length > 1:
            out["min_epoch_length"] = self.min_epoch_length
        if self.rewards != "known":  # recorded only when set, so that the traces of known signals are unchanged
            out["rewards"] = self.rewards
        if self.model.sparse or not self.support.is_dense:
            out["support"] = self.support_choice
        return out


class ProgramAgent(Agent):
    """An agent that solves one compiled program per epoch: ε schedule, solve, fallback, failures.

    UC-CURL, PS-CURL, safe mode and UCRL-CMDP are written on it. The program is
    built and compiled once, in the constructor; every epoch only pushes new data
    into it and re-solves (docs/math.md §4, §6).

    Writing an agent on it takes two methods:

    * ``_build_program(self) -> Program``: the program, built from ``self.model`` on the
      agent's support (``support=self.program_support``; called once, after the base class
      has set ``self.support``, ``self.counts`` and ``self.rng``);
    * ``_update_program(self, time, epsilon)``: push the data of the epoch starting at
      step ``time`` into ``self.program`` with ``self.program.update(...)`` (e.g. a
      kernel estimated from ``self.counts``, and the tightness ``epsilon``).

    and optionally ``epsilon(time)`` (a schedule other than
    ``K_ε sqrt(ln τ / τ)``) and ``describe()`` (options recorded in the trace; call
    ``super().describe()``). Options the subclass reads in ``_build_program`` must be
    set before ``super().__init__``. The base class then plans each epoch: it updates
    and solves the program, extracts the policy from the solution's occupancy ρ with
    :func:`curlopt.programs.policy.extract_policy` and the agent's ``unreached`` rule
    (``uniform``, ``safe``, ``reach`` or ``reach-any``, the last two on :meth:`planning_kernel`) for the states ρ
    gives no mass, records how many states that rule filled (``EpochPlan.unreached``; where
    ``reach`` could not keep to per-step feasible actions, or could not fill at all, the plan's
    message says how many states), labels an infeasible ε-tight program's
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
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
        The policy in states the plan's occupancy does not reach (``reach``: the fewest expected steps back to
        the plan's support on :meth:`planning_kernel`, by per-step feasible actions; ``reach-any``: by any
        actions, whatever they cost).
    support : {"auto", "model", "full"}, default "auto"
        The successors the agent's counts, estimates and programs allow (see :class:`Agent`); build the
        program on :attr:`program_support`.
    min_epoch_length : int, default 1
        The fewest steps of an epoch (see :class:`Agent`), which bounds the number of solves.
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

    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (BACKEND, TRIGGER, TIGHTNESS_CONSTANT, HORIZON_LOWER_BOUND, SEED,
                                                   UNREACHED, SUPPORT, MIN_EPOCH_LENGTH, REWARDS)
    PASSES_ON: ClassVar[bool] = True

    def __init__(
        self,
        model: CMDP,
        backend: str | Backend = "auto",
        trigger: str | EpochTrigger = "doubling",
        tightness_constant: float = 1.0,
        horizon_lower_bound: float | None = None,
        seed: Any = None,
        unreached: str = "uniform",
        support: str = "auto",
        min_epoch_length: int = 1,
        rewards: str = "known",
        **backend_options: Any,
    ):
        # Keywords of other agents this one has no use for are refused before they reach the backend.
        refuse_keywords(self.name, backend_options, self.REFUSED)
        self.unreached: str = check_value(UNREACHED, unreached)
        self._feasible: np.ndarray | None = None   # the per-step feasible pairs, for ``reach``, when first needed
        self.tightness_constant: float = check_value(TIGHTNESS_CONSTANT, tightness_constant)
        self.horizon_lower_bound: float | None = check_value(HORIZON_LOWER_BOUND, horizon_lower_bound)
        check_value(BACKEND, backend)
        super().__init__(model, trigger, seed, support, min_epoch_length, rewards)
        #: the model the program is built on: the model itself, or with learned rewards the epoch's planning model
        self.planning: CMDP = model
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

    def begin_epoch(self, time: int) -> EpochPlan:
        if self.signal_estimates is not None:
            # Learned signals: the program's reward and cost maps change every epoch, so it is built and compiled
            # afresh on the epoch's planning model (the known-signal agents compile once).
            self._use_planning_model(self.planning_model(time))
        return super().begin_epoch(time)

    def _use_planning_model(self, planning: CMDP) -> None:
        """Build and compile the program on ``planning`` (a subclass with more programs rebuilds them too)."""
        self.planning = planning
        self._feasible = None
        self.program = self._build_program()
        self.compiled = self.backend.compile(self.program)

    def _plan(self, time: int) -> EpochPlan:
        eps = self.epsilon(time)
        self._update_program(time, eps)
        return self._plan_from(self.compiled.solve(), eps)

    def _plan_from(self, result: SolveResult, eps: float) -> EpochPlan:
        """The epoch's plan from a solve result: its policy, or after a solver failure the previous
        epoch's policy (uniform in the first epoch), labelled."""
        def plan(policy: np.ndarray, source: PlanSource, message: str = result.message,
                 unreached: int | None = None) -> EpochPlan:
            return EpochPlan(policy, source, epsilon=eps, status=result.status.value, solve_time=result.solve_time,
                             iterations=result.iterations, message=message, unreached=unreached)

        if result.ok:
            # ProgramVariant and PlanSource share the values "tight" and "fallback" (looked up once per value).
            source = _SOURCES.get(result.program) or PlanSource(result.program.value)
            if result.occupancy is None:  # a backend that reports only a policy: nothing to fill
                if result.policy is None:
                    raise AgentError(f"the backend reported {result.status.value} without an occupancy or a policy.")
                return plan(result.policy, source)
            kernel, feasible = None, None
            if self.unreached in ("reach", "reach-any"):
                kernel = self.planning_kernel()
            if self.unreached == "reach":
                if self._feasible is None:   # the planning model's costs do not change within an epoch
                    self._feasible = per_step_feasible(self.planning)
                feasible = self._feasible
            policy, mask, fill = extract_policy(result.occupancy, self.planning, self.unreached, costs=result.costs,
                                                uniform_policy=result.policy, kernel=kernel, full_output=True,
                                                feasible=feasible, unreached_mask=result.unreached)
            unreached = int(np.count_nonzero(mask))  # mask.sum() of a boolean mask, in one C call
            note = _reach_note(fill, unreached)
            message = "; ".join(part for part in (result.message, note) if part)
            return plan(policy, source, message, unreached=unreached)
        S, A = self.model.n_states, self.model.n_actions
        if self.policy is not None:
            why = f"solver failed ({result.status.value}); kept the previous epoch's policy"
            return plan(self.policy, PlanSource.KEPT, _join(why, result.message))
        why = f"solver failed ({result.status.value}) in the first epoch, with no previous policy; playing uniform"
        return plan(np.full((S, A), 1.0 / A), PlanSource.UNIFORM, _join(why, result.message))

    def planning_kernel(self) -> Any:
        """The kernel the ``reach`` and ``reach-any`` fills run on.

        Agents that plan on one kernel (PS-CURL's posterior sample, safe mode's estimate) return it. Here, for the
        optimistic agents (UC-CURL, UCRL-CMDP), whose programs choose a kernel inside a confidence set jointly
        with the occupancy: that optimistic kernel ``p(s,a,s') / ρ(s,a)`` is 0/0 exactly in the states the fill
        is for, so the fill uses the posterior mean of the counts the epoch planned with,
        ``(n(s,a,s') + 1) / (N(s,a) + k(s,a))`` over the pair's ``k(s,a)`` allowed successors (a Dirichlet
        prior of :data:`PLANNING_PRIOR`, PS-CURL's default). Not the centre of the set, ``n / N``: its zeros
        read "never seen" as "impossible", so a feasible action tried twice without moving down looks as if it
        could never leave its state (on the small queue, seed 4, such estimates made the fill give up the
        per-step feasible actions of whole states for good). A dense (S, A, S) array on the dense support,
        else a CSR (S·A, S) matrix.
        """
        alpha = self.entry_counts.reshape(self.support.shape) + PLANNING_PRIOR
        if self.support.is_dense:
            return alpha / alpha.sum(axis=2, keepdims=True)
        return self.support.matrix(alpha / self.support.row_sums(alpha)[self.support.pairs])

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": self.backend.name, "tightness": self.tightness_constant,
                "horizon_lower_bound": self.horizon_lower_bound, "unreached": self.unreached}


#: the plan source of each program variant (the same value), for :meth:`ProgramAgent._plan_from`
_SOURCES = {variant: PlanSource(variant.value) for variant in ProgramVariant}


def _join(first: str, second: str) -> str:
    return f"{first}: {second}" if second else first


def _reach_note(fill: Any, unreached: int) -> str:
    """What the ``reach`` fill could not do this epoch, for the plan's message ("" when it did everything)."""
    if fill is None:
        return ""
    notes = []
    if fill.no_feasible.any():
        notes.append(f"reach fill: {int(fill.no_feasible.sum())} of the {unreached} unreached states have no per-step"
                     " feasible action (g_m(c(s,a)) <= 0 for every m); all their actions were candidates")
    if fill.widened.any():
        notes.append(f"reach fill: {int(fill.widened.sum())} of the {unreached} unreached states need an action that"
                     " is not per-step feasible on the way back to the plan's support; all their actions were candidates")
    if fill.stranded.any():
        notes.append(f"reach fill: {int(fill.stranded.sum())} of the {unreached} unreached states cannot reach the"
                     " plan's support with certainty by any action under the planned kernel; played uniform there")
    if not fill.converged:
        notes.append(f"reach fill: policy iteration stopped after {fill.iterations} solves without converging"
                     " (hitting times overflowed or the iteration cap); played its last policy, which reaches the support")
    return "; ".join(notes)


# The base class's own declaration, with its constructor's defaults (a subclass gets its own when it is created).
Agent.OPTIONS = _with_defaults(Agent)  # type: ignore[type-abstract]  # reads the signature only

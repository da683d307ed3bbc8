"""The baselines of docs/math.md §9: UCRL-CMDP and primal-dual optimistic policy optimisation.

Both need the horizon ``T`` up front (``needs_horizon = True``: ``curlopt run``
passes ``horizon=steps``) and handle only linear rewards and linear constraints;
they refuse other models with :class:`UnsupportedModelError`, which points to
``uc-curl`` and ``ps-curl``.

The papers leave several constants to the implementer (docs/math.md §9). The defaults
here are **ours**, exposed as parameters, and each docstring lists them.
"""

from __future__ import annotations

import math
import time as clock
from typing import Any, ClassVar

import numpy as np

from ..backends import Backend, auto_backend
from ..errors import AgentError, UnsupportedModelError
from ..models.cmdp import CMDP
from ..programs.blocks import Program
from ..programs.optimistic import BoxOptimisticProgram
from .base import Agent, EpochPlan, PlanSource, ProgramAgent
from .estimates import FULL_SUPPORT_LIMIT
from .options import (
    BACKEND,
    HORIZON,
    REWARDS,
    SEED,
    SUPPORT,
    UNREACHED,
    AgentOption,
    boolean,
    check_value,
    integer,
    number,
    refuse_keywords,
    with_doc,
)
from .signals import OPTIMISTIC
from .triggers import FixedLengthTrigger

__all__ = ["UcrlCmdp", "PrimalDual", "UnsupportedModelError", "fixed_epoch_length", "relative_values"]

#: options of ``uc-curl``/``ps-curl`` (and of ``curlopt run``) that the baselines do not take, and why
_NOT_TAKEN = {
    "trigger": "its epochs have a fixed length (no --epochs)",
    "tightness_constant": "it solves its program with ε = 0, no tightening (no --tightness)",
    "horizon_lower_bound": "it is given the horizon T itself (no --horizon-lower-bound)",
    "prior": "it draws no posterior samples (no --prior)",
}
#: uc-curl's L1 radius options, which neither baseline has
_NO_RADIUS = {
    "radius": "it has no L1 confidence radius (radius is an option of uc-curl)",
    "radius_scale": "it has no L1 confidence radius (radius_scale is an option of uc-curl)",
}


# -- shared checks ---------------------------------------------------------------


def _horizon(value: Any, agent: str) -> float:
    """The horizon T, which the baselines cannot do without (None: not given)."""
    if value is None:
        raise AgentError(
            f"{agent} needs the horizon T up front (docs/math.md §9): pass horizon=... (curlopt run passes --steps)."
        )
    horizon: float = check_value(HORIZON, value)
    return horizon


def _linear_pieces(model: CMDP, agent: str) -> tuple[np.ndarray, list[tuple[np.ndarray, float]]]:
    """The objective's weights ``w`` (f = w·λ + const) and each constraint's ``(w_m, c_m)`` (g_m = w_m·ζ + c_m).

    Raises
    ------
    UnsupportedModelError
        For a non-linear objective or constraint.
    """
    if not isinstance(model, CMDP):
        raise AgentError(f"an agent needs a curlopt CMDP model, got {type(model).__name__}.")
    hint = "use uc-curl or ps-curl, which take concave objectives and convex constraints"
    if not model.objective.is_linear:
        raise UnsupportedModelError(
            f"{agent} handles only a linear objective f(λ) = w·λ (docs/math.md §9), but model {model.name!r} has"
            f" {model.objective!r}; {hint}."
        )
    constraints = []
    for m, g in enumerate(model.constraints):
        if not g.is_linear:
            raise UnsupportedModelError(
                f"{agent} handles only linear constraints g(ζ) = w·ζ - b (docs/math.md §9), but constraint {m} of model"
                f" {model.name!r} is {g!r}; {hint}."
            )
        pieces = g.affine_pieces()
        assert pieces is not None  # a linear utility has its affine pieces (checked above)
        w, c = pieces
        constraints.append((np.asarray(w[0], dtype=float), float(c[0])))
    objective_pieces = model.objective.affine_pieces()
    assert objective_pieces is not None  # a linear objective has its affine pieces (checked by the caller)
    w_obj, _ = objective_pieces
    return np.asarray(w_obj[0], dtype=float), constraints


def fixed_epoch_length(horizon: float, exponent: float) -> int:
    """``ceil(T^exponent)``; a root within 1e-9 (relative) of an integer counts as that integer.

    The tolerance keeps floating-point roots honest: ``1000 ** (1/3)`` evaluates to
    ``9.999999999999998`` and some perfect powers land just above their root.
    """
    root = float(horizon) ** float(exponent)
    nearest = round(root)
    if abs(root - nearest) <= 1e-9 * max(1.0, root):
        return max(1, int(nearest))
    return max(1, math.ceil(root))


# -- UCRL-CMDP ---------------------------------------------------------------------

#: UCRL-CMDP's epoch exponent: epochs of ceil(T^epoch_exponent) steps
EPOCH_EXPONENT = number("epoch_exponent", "The epoch length is ceil(T^epoch_exponent); in [0, 1].", high=1.0,
                        too_high="must lie in [0, 1]")

#: UCRL-CMDP's backend unless one is given: its box program by column generation (the same optimal value as the
#: whole LP on ``highs``, faster; see the ``backend`` parameter)
DEFAULT_BACKEND = "highs-box-columns"


class UcrlCmdp(ProgramAgent):
    """UCRL-CMDP (Singh, Gupta, Shroff 2020) as stated in docs/math.md §9.

    Epochs of fixed length ``τ = ceil(T^exponent)``. At each epoch start it solves
    the optimistic program over per-entry confidence boxes
    ``|P~(s'|s,a) - P^(s'|s,a)| <= b(s,a)``,
    ``b(s,a) = min(1, sqrt(ln(2 S² A T²) / (2 max(1, N(s,a)))))``
    (:class:`curlopt.programs.optimistic.BoxOptimisticProgram`) with ε = 0, and plays the
    extracted policy until the epoch ends. When the program with the constraint rows
    is infeasible, the backend solves it without them and the epoch is recorded
    as ``fallback``; when the solver fails, the previous policy is kept
    (``kept-previous``; uniform in the first epoch), as for UC-CURL.

    Constants that are ours, not the paper's (docs/math.md §9): the epoch exponent 1/3,
    the radius' log term ``ln(2 S² A T²)`` and the cap of ``b`` at 1.

    Parameters
    ----------
    model : CMDP
        A linear objective (any number of reward signals, ``f = w·λ + const``) and
        linear constraints ``g_m(ζ) = w_m·ζ - b_m``; others are refused.
    horizon : float
        The horizon ``T >= 1``, required (``curlopt run`` passes ``--steps``).
    backend : str or Backend, default "highs-box-columns"
        Any backend that takes linear programs. The default solves the box program by column generation with
        the box's closed-form inner step (:mod:`curlopt.backends.highs.box_columns`): the same optimal value as
        ``highs`` on the whole LP, about twice as fast per run on the queue (benchmarks/bench_box.py), but where
        the optimum ties it may pick another optimal vertex, so its trajectories differ from ``highs``'s.
        ``highs``, ``cvxpy`` and ``pyomo`` solve the whole LP; ``"auto"`` is the registry's rule for the box
        program (:func:`curlopt.backends.registry.choose_backend`).
    epoch_exponent : float, default 1/3
        The epoch length is ``ceil(T^epoch_exponent)``; in [0, 1].
    seed : optional
        The agent's own seed (UCRL-CMDP draws nothing).
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
        The policy in states the plan's occupancy does not reach, as for
        :class:`~curlopt.agents.UcCurl` (:func:`curlopt.programs.policy.extract_policy`; ``reach`` on the
        posterior mean of the counts, as UC-CURL).
    rewards : {"known", "learned"}, default "known"
        ``learned``: the optimistic reward ``r^ + b`` and the optimistic cost ``c^ - b`` of the observed signals
        (:mod:`curlopt.agents.signals`).
    support : {"auto", "model", "full"}, default "auto"
        The successors the boxes allow (:mod:`curlopt.agents.estimates`): those the model's kernel gives positive
        probability (``model``, whatever its storage), every successor (``full``), or ``auto`` (``full`` up to
        2^20 entries S·A·S, ``model`` above); every successor (refused above :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S for a
        sparse-stored model).
    **backend_options
        Passed to the backend when ``backend`` is a name.

    Raises
    ------
    UnsupportedModelError
        For a non-linear objective or constraint.
    AgentError
        For an invalid option, or an option of UC-CURL/PS-CURL it has no use for.
    """

    name = "ucrl-cmdp"
    needs_horizon = True
    #: learned signals: optimism in the costs as in the kernel (the program picks the most favourable member)
    LEARNED_COSTS = OPTIMISTIC
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        HORIZON,
        with_doc(BACKEND, "Any backend that takes linear programs: a registry name (curlopt backends) or a Backend"
                          " instance."),
        EPOCH_EXPONENT, with_doc(SEED, "The agent's own seed (UCRL-CMDP draws nothing)."), UNREACHED, SUPPORT,
        with_doc(REWARDS, "known: told the reward and cost tables; learned: plans on the optimistic reward and"
                          " the optimistic cost of the observed signals, moved by Hoeffding's width (its plausible set holds them too)."),
    )
    REFUSED: ClassVar[dict[str, str]] = {
        **_NOT_TAKEN, **_NO_RADIUS,
        "radius": "its confidence sets are per-entry boxes, not an L1 ball (radius is an option of uc-curl)",
    }

    def __init__(self, model: CMDP, horizon: float | None = None, backend: str | Backend = DEFAULT_BACKEND,
                 epoch_exponent: float = 1 / 3, seed: Any = None, unreached: str = "uniform",
                 support: str = "auto", rewards: str = "known", **backend_options: Any):
        # Before anything else: the refused keywords include some this constructor passes to the base class itself.
        refuse_keywords(self.name, backend_options, self.REFUSED)
        _linear_pieces(model, self.name)
        self.horizon = _horizon(horizon, self.name)
        self.epoch_exponent: float = check_value(EPOCH_EXPONENT, epoch_exponent)
        self.epoch_length = fixed_epoch_length(self.horizon, self.epoch_exponent)
        super().__init__(model, auto_backend(backend, model, BoxOptimisticProgram),
                         FixedLengthTrigger(self.epoch_length), 0.0, None, seed, unreached, support=support,
                         rewards=rewards, **backend_options)

    def _build_program(self) -> Program:
        return BoxOptimisticProgram(self.planning, self.horizon, support=self.program_support)

    def _update_program(self, time: int, epsilon: float) -> None:
        self.program.update(counts=self.counts, time=time, epsilon=epsilon)

    def epsilon(self, time: int) -> float:
        """Always 0: UCRL-CMDP does not tighten its constraints."""
        return 0.0

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "horizon": self.horizon, "epoch_exponent": self.epoch_exponent,
                "epoch_length": self.epoch_length}


# -- primal-dual -------------------------------------------------------------------


def relative_values(kernel: np.ndarray, policy: np.ndarray, signals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average-reward relative action values of ``policy`` on ``kernel`` for each signal.

    For a signal ``r`` (S, A), with ``P_π(s,s') = Σ_a π(a|s) P(s'|s,a)`` and
    ``r_π(s) = Σ_a π(a|s) r(s,a)``, solve the Poisson equation
    ``h = r_π - g·1 + P_π h`` with ``h(0) = 0`` for the gain ``g`` and bias ``h``,
    and return ``Q(s,a) = r(s,a) - g + Σ_{s'} P(s'|s,a) h(s')``.

    The system is non-singular exactly when the chain under ``policy`` has a single
    recurrent class; otherwise the least-squares solution is used. The
    normalisation ``h(0) = 0`` shifts every ``Q(s,·)`` by one constant, which the
    exponential-weights update cancels, so it does not change the policy.

    Parameters
    ----------
    kernel : ndarray, shape (S, A, S)
    policy : ndarray, shape (S, A)
    signals : ndarray, shape (n, S, A)

    Returns
    -------
    q : ndarray, shape (n, S, A)
    gain : ndarray, shape (n,)
    """
    S = kernel.shape[0]
    chain = np.einsum("sa,sat->st", policy, kernel)
    system = np.zeros((S + 1, S + 1))
    system[:S, :S] = np.eye(S) - chain
    system[:S, S] = 1.0          # + g
    system[S, 0] = 1.0           # h(0) = 0
    rhs = np.zeros((S + 1, signals.shape[0]))
    rhs[:S] = np.einsum("sa,nsa->sn", policy, signals)
    try:
        solution = np.linalg.solve(system, rhs)
    except np.linalg.LinAlgError:
        solution = np.linalg.lstsq(system, rhs, rcond=None)[0]
    bias, gain = solution[:S].T, solution[S]                         # (n, S), (n,)
    q = signals - gain[:, None, None] + np.einsum("sat,nt->nsa", kernel, bias)
    return q, gain


class PrimalDual(Agent):
    """Primal-dual optimistic policy optimisation (Chen, Jain, Luo 2022, ergodic case), docs/math.md §9.

    Episodes of fixed length ``H``; the first plays the uniform policy. At the end
    of episode ``k`` (computed when episode ``k+1`` is planned):

    1. ``P^`` from all counts so far; the current policy ``π_k`` is evaluated on
       ``P^`` (:func:`relative_values`) for the reward ``w·r`` and each constraint's
       cost, giving ``Q_r + c_b/sqrt(max(1, N))`` and ``Q_c - c_b/sqrt(max(1, N))``;
    2. ``π_{k+1}(a|s) ∝ π_k(a|s) exp(θ (Q_r(s,a) - Σ_m λ_k,m Q_c,m(s,a)))``
       (computed in the log domain, the maximum subtracted before ``exp``);
    3. ``λ_{k+1} = clip(λ_k + η (ζ^_k - τ_c + ε_c), 0, Λ)`` with ``ζ^_k`` the
       episode's average cost.

    It solves no optimisation program: every epoch record has source
    ``update-rule``, ``epsilon`` None, ``solve_time`` the update's time, and its
    ``message`` gives the multiplier ``λ`` held during that episode. The history is
    also in :attr:`duals` (``duals[k]`` is ``λ_{k+1}``, held in episode ``k+1``).

    Choices that are ours (the paper leaves them to the implementer):

    * all defaults below (θ, η, ε_c, Λ, c_b, H) and ``λ_1 = 0``;
    * a pair never visited gets the uniform next-state distribution in ``P^``:
      with a full-support policy (exponential weights keep full support) the chain
      on ``P^`` then has a single recurrent class, so the Poisson equation has a
      unique solution (every state reaches the last visited state along the observed
      path or through an unvisited pair);
    * the bias is normalised by ``h(0) = 0`` (irrelevant to the update, see
      :func:`relative_values`);
    * ``P^`` is over every successor (the full support of :mod:`curlopt.agents.estimates`), dense
      (S, A, S), and the Poisson equation is solved dense: a model stored sparse is taken up to
      :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S and refused above;
    * constraints: the method is stated for one constraint ``ζ <= τ_c`` on one cost. A
      linear constraint ``g_m(ζ) = w_m·ζ - b_m`` is used as the cost
      ``c_m = (w_m/|w_m|_1)·c`` with threshold ``τ_m = b_m/|w_m|_1``; for one cost
      signal with ``w > 0`` this is exactly ``ζ <= b/w``. Several constraints get one
      multiplier each, ``λ ∈ [0, Λ]^M`` (an extension of the paper's single
      constraint, needed for the queue's two constraints).

    Scaling (``scale=True``, the default). The paper ran this baseline with rewards
    and costs scaled to [0, 1], affinely, from the model's known ranges, and
    scaling changes what the fixed steps θ, η and the bonus c_b mean. With it:

    * the per-step reward the agent uses, ``w·r(s,a)``, becomes
      ``(w·r - min w·r) / (max w·r - min w·r)`` (min and max over all pairs);
    * each cost signal becomes ``c_i' = (c_i - lo_i) / span_i`` with
      ``lo_i = min c_i`` and ``span_i = max c_i - min c_i``;
    * a constant signal (``max = min``) is left unscaled: no policy can change
      it, and dividing by its zero range is undefined;
    * each constraint is first rewritten, unchanged as a function, in the scaled
      costs: ``g_m = w_m·ζ - b_m = w_m'·ζ' - b_m'`` with ``w_m' = w_m ⊙ span`` and
      ``b_m' = b_m - w_m·lo``, and then normalised by ``|w_m'|_1`` as above:
      cost ``(w_m'/|w_m'|_1)·c'`` and threshold ``b_m'/|w_m'|_1``. For one cost with
      ``w > 0`` the threshold is ``(b/w - lo)/span``: the threshold transformed with
      the costs. The per-step constraint cost lies in [-1, 1] (in [0, 1] when
      ``w_m >= 0``).

    The relative values, bonuses, multipliers and the dual update are all in these
    scaled units (the episode's average cost, reported to the agent in original
    units, is mapped before the dual update), and the multipliers in the plan
    messages say so. Everything the loop records (λ^, ζ^, R(T), g_m, C(T), the
    exact per-epoch values) is computed from the model, in original units.
    ``scale=False`` uses the raw signals, exactly as before the option existed.

    Parameters
    ----------
    model : CMDP
        A linear objective ``f = w·λ + const`` and linear constraints; others are refused.
    horizon : float
        The horizon ``T >= 1``, required (``curlopt run`` passes ``--steps``).
    theta : float, default 0.05
        Policy step θ > 0.
    eta : float, default 0.05
        Dual step η > 0.
    slack : float, optional
        ε_c >= 0; default ``1/sqrt(T)``.
    dual_cap : float, default 100
        Λ > 0, the largest multiplier.
    bonus : float, default 1
        c_b >= 0, the optimism bonus constant.
    episode_length : int, default 5000
        H >= 1 steps per episode.
    scale : bool, default True
        Scale the reward and costs to [0, 1] from the model's ranges (see above);
        ``False`` keeps the raw signals.
    seed : optional
        The agent's own seed (it draws nothing itself).
    rewards : {"known", "learned"}, default "known"
        ``learned``: its Q-values use the optimistic reward ``r^ + b`` and the pessimistic cost ``c^ + b`` of the
        observed signals (:mod:`curlopt.agents.signals`), refreshed every episode.

    Raises
    ------
    UnsupportedModelError
        For a non-linear objective or constraint, a constraint that ignores every cost, or a model stored
        sparse above :data:`~curlopt.agents.estimates.FULL_SUPPORT_LIMIT` entries S·A·S.
    AgentError
        For an invalid option, or an option of the program-solving agents.
    """

    name = "primal-dual"
    needs_horizon = True
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        HORIZON,
        number("theta", "The policy step θ > 0.", strict=True, label="theta (θ)"),
        number("eta", "The dual step η > 0.", strict=True, label="eta (η)"),
        number("slack", "ε_c >= 0, added to the observed constraint excess in the dual step; None: 1/sqrt(T).",
               none=True, label="slack (ε_c)"),
        number("dual_cap", "Λ > 0, the largest multiplier.", strict=True, label="dual_cap (Λ)"),
        number("bonus", "c_b >= 0, the optimism bonus constant.", label="bonus (c_b)"),
        integer("episode_length", "H >= 1 steps per episode.", label="episode_length (H)"),
        with_doc(SEED, "The agent's own seed (primal-dual draws nothing)."),
        boolean("scale", "Scale the reward and the costs to [0, 1] from the model's ranges (false: the raw signals)."),
        with_doc(REWARDS, "known: told the reward and cost tables; learned: uses the optimistic reward and the"
                          " pessimistic cost of the observed signals (moved by Hoeffding's width) in its Q-values."),
    )
    REFUSED: ClassVar[dict[str, str]] = {
        **_NOT_TAKEN, **_NO_RADIUS, "backend": "it solves no optimisation program (no --backend)",
        "unreached": "it extracts no policy from an occupancy (its policy comes from exponential-weights updates)",
    }

    def __init__(self, model: CMDP, horizon: float | None = None, theta: float = 0.05, eta: float = 0.05,
                 slack: float | None = None, dual_cap: float = 100.0, bonus: float = 1.0,
                 episode_length: int = 5000, seed: Any = None, scale: bool = True, rewards: str = "known",
                 **options: Any):
        agent = self.name
        declared = self.declared_options()
        refuse_keywords(agent, options, self.REFUSED, declared=list(declared))
        self.scale: bool = check_value(declared["scale"], scale)
        reward_weights, constraints = _linear_pieces(model, agent)
        _dense_estimates(model, agent)
        self.horizon = _horizon(horizon, agent)
        self.theta: float = check_value(declared["theta"], theta)
        self.eta: float = check_value(declared["eta"], eta)
        chosen_slack = check_value(declared["slack"], slack)
        self.slack: float = 1.0 / math.sqrt(self.horizon) if chosen_slack is None else chosen_slack
        self.dual_cap: float = check_value(declared["dual_cap"], dual_cap)
        self.bonus: float = check_value(declared["bonus"], bonus)
        self.episode_length: int = check_value(declared["episode_length"], episode_length)

        S, A = model.n_states, model.n_actions
        reward = np.einsum("k,ksa->sa", reward_weights, model.rewards)
        cost_signals = np.asarray(model.costs, dtype=float)
        #: the affine maps to the agent's units: signal' = (signal - offset) / span (0 and 1 without scaling)
        self.reward_offset, self.reward_span = 0.0, 1.0
        self.cost_offset, self.cost_span = np.zeros(model.n_costs), np.ones(model.n_costs)
        if self.scale:
            self.reward_offset, self.reward_span = _range(reward)
            for i in range(model.n_costs):
                self.cost_offset[i], self.cost_span[i] = _range(cost_signals[i])
            reward = (reward - self.reward_offset) / self.reward_span
            cost_signals = (cost_signals - self.cost_offset[:, None, None]) / self.cost_span[:, None, None]
        #: per-step reward ``w·r(s,a)`` in the agent's units (scaled to [0, 1] when ``scale``), shape (S, A)
        self.reward = reward
        weights, thresholds = [], []
        for m, (w, c) in enumerate(constraints):
            if self.scale:
                # The same function of the scaled costs ζ' = (ζ - lo)/span: w·ζ + c = (w ⊙ span)·ζ' + (c + w·lo).
                w, c = w * self.cost_span, c + float(w @ self.cost_offset)
            norm = float(np.abs(w).sum())
            if norm == 0:
                raise UnsupportedModelError(
                    f"{agent}: constraint {m} of model {model.name!r} ({model.constraints[m]!r}) does not depend on any"
                    " cost, so no policy can change it; remove it from the model."
                )
            weights.append(w / norm)
            thresholds.append(-c / norm)
        M = len(constraints)
        #: normalised constraint weights ``w_m/|w_m|_1`` on the (scaled when ``scale``) costs, shape (M, d)
        self.cost_weights = np.array(weights, dtype=float).reshape(M, model.n_costs)
        #: per-step cost of each constraint ``(w_m/|w_m|_1)·c(s,a)`` in the agent's units, shape (M, S, A)
        self.costs = np.einsum("mi,isa->msa", self.cost_weights, cost_signals).reshape(M, S, A)
        #: thresholds ``τ_m = b_m/|w_m|_1`` in the agent's units, shape (M,)
        self.thresholds = np.array(thresholds, dtype=float)
        self._reward_weights = reward_weights
        super().__init__(model, FixedLengthTrigger(self.episode_length), seed, support="full", rewards=rewards)

    def _set_signals(self, rewards: np.ndarray, costs: np.ndarray) -> None:
        """Set :attr:`reward` and :attr:`costs` (the agent's units) from reward (K, S, A) and cost (d, S, A) tables."""
        S, A = self.model.n_states, self.model.n_actions
        reward = (np.einsum("k,ksa->sa", self._reward_weights, rewards) - self.reward_offset) / self.reward_span
        scaled = (np.asarray(costs, dtype=float) - self.cost_offset[:, None, None]) / self.cost_span[:, None, None]
        self.reward = reward
        self.costs = np.einsum("mi,isa->msa", self.cost_weights, scaled).reshape(len(self.cost_weights), S, A)

    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        S, A = self.model.n_states, self.model.n_actions
        self.dual = np.zeros(len(self.model.constraints))
        self.duals: list[np.ndarray] = []
        self._log_policy = np.full((S, A), -math.log(A))
        self.last_episode_cost: np.ndarray | None = None

    # -- the update rule ---------------------------------------------------------
    def estimated_kernel(self) -> np.ndarray:
        """``P^`` from all counts; uniform next-state distribution for a pair never visited."""
        S = self.model.n_states
        visits = self.visits
        kernel = self.counts / np.maximum(1.0, visits)[:, :, None]
        kernel[visits == 0] = 1.0 / S
        return kernel

    def optimistic_values(self) -> tuple[np.ndarray, np.ndarray]:
        """``Q_r + bonus`` (S, A) and ``Q_c - bonus`` (M, S, A) of the current policy on ``P^``."""
        bonus = self.bonus / np.sqrt(np.maximum(1.0, self.visits))
        signals = np.concatenate([self.reward[None], self.costs])
        assert self.policy is not None  # the first episode plays the uniform policy: there is always one
        q, _ = relative_values(self.estimated_kernel(), self.policy, signals)
        return q[0] + bonus, q[1:] - bonus

    def _update(self, time: int) -> np.ndarray:
        """π_{k+1} and λ_{k+1} from π_k, λ_k and episode k's data; returns λ_k (the multiplier used)."""
        if self.signal_estimates is not None:
            self._set_signals(*self.signal_estimates.planning_tables(time, self.LEARNED_COSTS))
        q_r, q_c = self.optimistic_values()
        used = self.dual.copy()
        step = self.theta * (q_r - np.einsum("m,msa->sa", used, q_c))
        logits = self._log_policy + step
        logits -= logits.max(axis=1, keepdims=True)
        self._log_policy = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        if self.last_episode_cost is not None:
            episode_cost = self.last_episode_cost  # original units
            if self.scale:
                episode_cost = (episode_cost - self.cost_offset) / self.cost_span
            excess = self.cost_weights @ episode_cost - self.thresholds
            self.dual = np.clip(used + self.eta * (excess + self.slack), 0.0, self.dual_cap)
        return used

    def _plan(self, time: int) -> EpochPlan:
        started = clock.perf_counter()
        if self.epoch == 0:
            message = "first episode: uniform policy"
        else:
            used = self._update(time)
            message = f"exponential-weights update with λ_{self.epoch}={_fmt(used)}"
        policy = np.exp(self._log_policy)
        policy /= policy.sum(axis=1, keepdims=True)
        self.duals.append(self.dual.copy())
        message += f"; dual λ_{self.epoch + 1}={_fmt(self.dual)}"
        if self.scale:
            message += " (multipliers of the constraints in rewards and costs scaled to [0, 1])"
        return EpochPlan(policy, PlanSource.RULE, epsilon=None, solve_time=clock.perf_counter() - started,
                         message=message)

    def end_epoch(self, transitions: np.ndarray, reward_sum: np.ndarray, cost_sum: np.ndarray, steps: int) -> None:
        super().end_epoch(transitions, reward_sum, cost_sum, steps)
        self.last_episode_cost = np.asarray(cost_sum, dtype=float) / steps if steps > 0 else None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "horizon": self.horizon, "theta": self.theta, "eta": self.eta,
                "slack": self.slack, "dual_cap": self.dual_cap, "bonus": self.bonus,
                "episode_length": self.episode_length, "scale": self.scale}


def _dense_estimates(model: CMDP, agent: str) -> None:
    """Refuse a sparse-stored model too large for dense (S, A, S) estimates (the full support)."""
    S, A = model.n_states, model.n_actions
    if model.sparse and S * A * S > FULL_SUPPORT_LIMIT:
        raise UnsupportedModelError(
            f"{agent} estimates a dense kernel (S, A, S) and solves dense Poisson equations, {S * A * S:,} entries"
            f" for model {model.name!r} (S={S}, A={A}), more than the limit of {FULL_SUPPORT_LIMIT:,}; use"
            " uc-curl, ps-curl or safe-curl, which keep their estimates on the model's declared transitions."
        )


def _fmt(vector: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in vector) + "]"


def _range(signal: np.ndarray) -> tuple[float, float]:
    """``(min, max - min)`` of a signal over all pairs; ``(0, 1)`` (no scaling) for a constant signal.

    A constant signal is the same under every policy, so leaving it unscaled changes
    nothing a policy can affect, and its zero range cannot be divided by.
    """
    low, high = float(np.min(signal)), float(np.max(signal))
    return (low, high - low) if high > low else (0.0, 1.0)

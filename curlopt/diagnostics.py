"""Model diagnostics: ergodicity, hitting and relaxation times, the Slater margin.

The toolkit's programs (docs/math.md §2, §3) describe what a policy achieves through its
*stationary* occupancy, which is right only when every policy's chain has one
recurrent class; the regret analysis of UC-CURL further assumes an ergodic MDP
with a finite mixing time and a strictly feasible constraint set. This module
checks those assumptions on a model with a known kernel.

Ergodicity (every deterministic stationary policy's chain is irreducible, i.e.
one recurrent class and no transient states) is decided **exactly**, for any
size, in polynomial time:

1. *Sufficient check* — the graph with an edge ``s -> s'`` iff ``P(s'|s,a) > 0``
   for **every** action is strongly connected. Every policy's chain contains
   that graph, so every chain is irreducible. Cheap, and true for most models.
2. *Exact closed-set search*, when (1) fails. A policy's chain is reducible iff
   some non-empty set ``C`` missing some state ``t`` is closed under it (every
   ``s`` in ``C`` plays an action whose successors all lie in ``C``). For each
   ``t``, the largest such set avoiding ``t`` is found by repeatedly deleting the
   states of ``S \\ {t}`` that have no action keeping them inside; the model is
   ergodic iff that set is empty for every ``t``. Worst-case cost ``O(S⁴·A)``
   (S targets × at most S deletion rounds × an S·A·S support test); milliseconds
   for a few hundred states. A non-empty set gives the counterexample policy.

(Deciding the weaker *unichain* property — one recurrent class, transient states
allowed — is NP-hard [Tsitsiklis 2007], which is one more reason to check the
stronger property.) A transition counts when its probability is ``> 0``.

Mixing is summarised by three numbers:

* the **hitting time** ``T_M = max_π max_{s≠t} E[τ_t | s_0 = s]`` — the mixing
  time of the UC-CURL analysis (longest expected time to reach any state, under
  the worst stationary policy), computed exactly by policy iteration on the
  stochastic-longest-path problem to each target (every policy reaches ``t`` in
  an ergodic model, so the iteration converges). Up to
  :data:`MAX_HITTING_TIME_STATES` states; ``inf`` for a non-ergodic model (and, with a
  note, when a transition probability below about 1e-16 puts it beyond double precision);
* the **diameter** ``D = max_{s≠t} min_π E[τ_t | s_0 = s]`` [Jaksch et al. 2010]
  — the same computation with the best policy instead of the worst;
* the **relaxation time** ``1 / (1 - |λ_2|)`` of the uniformly random policy's
  chain, with ``λ_2`` its second-largest eigenvalue in modulus.

The **Slater margin** ``δ = max_π ( -max_m g_m(ζ(π)) )`` is the optimum of an
auxiliary occupancy program (same kernel) whose reward signals are the model's
costs and whose concave objective is ``min_m (-g_m(ζ))`` — a
:class:`~curlopt.utilities.MinOfLinear` when every ``g_m`` is LP-representable,
otherwise a :class:`~curlopt.utilities.CustomUtility` whose form is that minimum
(:mod:`curlopt.utility_forms`) — solved through the backend registry
with :func:`curlopt.solve_optimum`. The constrained problem is feasible iff
``δ >= 0`` and strictly feasible (Slater's condition) iff ``δ > 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from .errors import ModelError, UnsupportedUtilityError
from .model import CMDP, policy_kernel
from . import utility_forms as forms
from .utilities import CustomUtility, MinOfLinear, Utility

__all__ = [
    "DiagnosticsReport",
    "ErgodicityCheck",
    "SlaterMargin",
    "check_ergodicity",
    "diagnose",
    "ergodicity_warning",
    "diameter",
    "max_hitting_time",
    "relaxation_time",
    "slater_margin",
    "MAX_HITTING_TIME_STATES",
    "FEASIBILITY_TOLERANCE",
]

#: The exact hitting time (policy iteration per target, O(S^3) per step) is computed up to this many states.
MAX_HITTING_TIME_STATES = 200
#: δ >= -tolerance counts as feasible and δ > tolerance as strictly feasible (solver round-off).
FEASIBILITY_TOLERANCE = 1e-9

SUFFICIENT_CHECK = "sufficient: the graph of transitions possible under every action is strongly connected"
EXACT_CHECK = "exact: closed-set search over all deterministic policies"


# ----------------------------------------------------------------------------
# Ergodicity
# ----------------------------------------------------------------------------


@dataclass
class ErgodicityCheck:
    """Outcome of :func:`check_ergodicity`.

    Attributes
    ----------
    ergodic : bool
        Every deterministic stationary policy's chain is irreducible.
    communicating : bool
        Some policy's chain is irreducible (the graph of transitions possible
        under some action is strongly connected).
    method : str
        Which check decided (:data:`SUFFICIENT_CHECK` or :data:`EXACT_CHECK`).
    policy : tuple of int or None
        When not ergodic: a deterministic policy (action per state) whose chain is reducible.
    recurrent_classes : list of list of int or None
        That policy's recurrent classes.
    transient_states : list of int or None
        That policy's transient states.
    """

    ergodic: bool
    communicating: bool
    method: str
    policy: tuple[int, ...] | None = None
    recurrent_classes: list[list[int]] | None = None
    transient_states: list[int] | None = None


def _reached(adjacency: np.ndarray, start: int) -> np.ndarray:
    """The states reachable from ``start`` along the edges of ``adjacency`` (S, S), breadth first."""
    seen = np.zeros(adjacency.shape[0], dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = adjacency[frontier].any(axis=0) & ~seen
        seen |= frontier
    return seen


def _strongly_connected(adjacency: np.ndarray) -> bool:
    """Every state reaches state 0 and is reached from it.

    Plain numpy rather than scipy's ``connected_components``: every run checks its model's
    ergodicity, and importing ``scipy.sparse.csgraph`` costs about 0.3 s per process.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    return bool(_reached(adjacency, 0).all() and _reached(adjacency.T, 0).all())


def chain_classes(adjacency: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """Recurrent classes and transient states of a chain given by its (S, S) support.

    A strongly connected component is a recurrent class iff no edge leaves it.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components  # imported here: a non-ergodic model is rare

    count, labels = connected_components(csr_matrix(adjacency), directed=True, connection="strong")
    sources, targets = np.nonzero(adjacency)
    leaving = np.zeros(count, dtype=bool)
    leaving[labels[sources][labels[sources] != labels[targets]]] = True
    recurrent = [np.flatnonzero(labels == c).tolist() for c in range(count) if not leaving[c]]
    recurrent.sort()
    transient = np.flatnonzero(leaving[labels]).tolist()
    return recurrent, transient


def _kernel(kernel: Any, name: str = "kernel") -> np.ndarray:
    array = np.asarray(kernel, dtype=float)
    if array.ndim != 3 or array.shape[0] != array.shape[2] or array.shape[0] < 1 or array.shape[1] < 1:
        raise ModelError(f"{name} must have shape (S, A, S), got {array.shape}.")
    return array


def check_ergodicity(kernel: Any) -> ErgodicityCheck:
    """Decide whether every deterministic stationary policy's chain is irreducible.

    Exact for every size (see the module docstring for the two checks used).

    Parameters
    ----------
    kernel : array_like, shape (S, A, S)
        Transition probabilities; an entry counts as a transition when ``> 0``.

    Returns
    -------
    ErgodicityCheck
        With a counterexample policy when the answer is no.
    """
    support = _kernel(kernel) > 0
    n_states, n_actions = support.shape[:2]
    communicating = _strongly_connected(support.any(axis=1))
    if _strongly_connected(support.all(axis=1)):
        return ErgodicityCheck(True, communicating, SUFFICIENT_CHECK)
    for target in range(n_states):
        inside = np.ones(n_states, dtype=bool)
        inside[target] = False
        while True:
            # stays[s, a]: every successor of (s, a) is inside the candidate closed set.
            stays = ~support[:, :, ~inside].any(axis=2)
            keep = inside & stays.any(axis=1)
            if np.array_equal(keep, inside):
                break
            inside = keep
        if inside.any():
            # Inside the closed set, play an action that stays inside; elsewhere, action 0.
            policy = np.where(inside, np.argmax(stays, axis=1), 0)
            chain = support[np.arange(n_states), policy]
            recurrent, transient = chain_classes(chain)
            return ErgodicityCheck(False, communicating, EXACT_CHECK, tuple(int(a) for a in policy), recurrent, transient)
    return ErgodicityCheck(True, communicating, EXACT_CHECK)


def _names(model: CMDP, key: str, count: int) -> list[str]:
    labels = model.labels.get(key)
    if labels is not None and len(labels) == count:
        return [str(label) for label in labels]
    return [str(i) for i in range(count)]


def _describe_policy(model: CMDP, policy: Sequence[int], limit: int = 12) -> str:
    states = _names(model, "states", model.n_states)
    actions = _names(model, "actions", model.n_actions)
    pairs = [f"{states[s]}→{actions[a]}" for s, a in enumerate(policy)]
    if len(pairs) > limit:
        pairs = pairs[:limit] + [f"… ({len(policy) - limit} more states)"]
    return "(" + ", ".join(pairs) + ")"


def _describe_states(model: CMDP, states: Sequence[int]) -> str:
    names = _names(model, "states", model.n_states)
    return "{" + ", ".join(names[s] for s in states) + "}"


def _warning_text(model: CMDP, check: ErgodicityCheck) -> str | None:
    if check.ergodic:
        return None
    classes = check.recurrent_classes or []
    text = (
        f"model {model.name!r} is not ergodic: under the deterministic policy {_describe_policy(model, check.policy)}"
        f" the chain has {len(classes)} recurrent class{'es' if len(classes) != 1 else ''}"
        f" {', '.join(_describe_states(model, c) for c in classes)}"
    )
    if check.transient_states:
        text += f" and transient states {_describe_states(model, check.transient_states)}"
    return text + (
        ". The occupancy programs assume every policy's chain is irreducible; on this model their optimum and"
        " policies can misstate what a policy achieves (long-run averages depend on the start state)."
    )


def ergodicity_warning(model: CMDP) -> str | None:
    """A warning naming a policy whose chain is reducible, or ``None`` for an ergodic model.

    ``None`` too when the model has no kernel (nothing to check). Cheap: no
    program is solved. Used by ``curlopt optimum`` and the agents.
    """
    if not isinstance(model, CMDP) or model.kernel is None:
        return None
    return _warning_text(model, check_ergodicity(model.kernel))


# ----------------------------------------------------------------------------
# Hitting and relaxation times
# ----------------------------------------------------------------------------


def _expected_hitting(kernel: np.ndarray, target: int, worst: bool, max_iterations: int) -> float:
    """``max_s max_π E_s[τ_t]`` (``worst``) or ``max_s min_π E_s[τ_t]`` by policy iteration.

    Every policy must reach ``target`` with probability 1 (an ergodic model), so
    the iteration is well defined and ends after finitely many improvements.
    """
    n_states = kernel.shape[0]
    if n_states == 1:
        return 0.0
    others = np.delete(np.arange(n_states), target)
    inner = kernel[others][:, :, others]  # transitions that have not hit the target yet
    rows = np.arange(others.size)
    policy = np.zeros(others.size, dtype=int)
    identity = np.eye(others.size)
    sign = 1.0 if worst else -1.0
    for _ in range(max_iterations):
        try:
            times = np.linalg.solve(identity - inner[rows, policy], np.ones(others.size))
        except np.linalg.LinAlgError:
            # Singular in floating point: some transition probability is below the precision of 1 - p
            # (about 1e-16), so the expected time (~1/p) is beyond what double precision resolves.
            return math.inf
        if not np.all(np.isfinite(times)) or np.any(times < 0):
            return math.inf  # the same, when the solve does not detect it
        values = sign * (1.0 + inner @ times)  # (S-1, A): play a once, then follow the policy
        best = values.max(axis=1)
        # Switch only on a clear improvement, so round-off cannot make the iteration cycle.
        improve = values[rows, policy] < best - 1e-10 * np.maximum(1.0, np.abs(best))
        if not improve.any():
            return float(times.max())
        policy = np.where(improve, values.argmax(axis=1), policy)
    raise ModelError(f"policy iteration for the hitting time to state {target} did not converge.")


def max_hitting_time(kernel: Any, max_iterations: int = 1000) -> float:
    """``T_M = max_π max_{s≠t} E[τ_t | s_0 = s]``, the worst expected hitting time.

    Parameters
    ----------
    kernel : array_like, shape (S, A, S)
    max_iterations : int, default 1000
        Cap on policy-iteration steps per target (it converges in a handful).

    Returns
    -------
    float
        ``inf`` when the model is not ergodic (some policy never reaches some state), or when the time
        exceeds what double precision resolves (a transition probability below about 1e-16).
    """
    array = _kernel(kernel)
    if not check_ergodicity(array).ergodic:
        return math.inf
    return max(_expected_hitting(array, t, True, max_iterations) for t in range(array.shape[0]))


def diameter(kernel: Any, max_iterations: int = 1000) -> float:
    """``D = max_{s≠t} min_π E[τ_t | s_0 = s]``: how long the best policy needs to reach any state.

    Computed for ergodic models only (by policy iteration from an arbitrary,
    necessarily proper, policy); ``inf`` only when it exceeds what double precision
    resolves (a transition probability below about 1e-16 makes some expected time ~1/p).

    Raises
    ------
    ModelError
        When the model is not ergodic (use :func:`check_ergodicity` first).
    """
    array = _kernel(kernel)
    if not check_ergodicity(array).ergodic:
        raise ModelError("the diameter is computed for ergodic models only; this kernel is not ergodic.")
    return max(_expected_hitting(array, t, False, max_iterations) for t in range(array.shape[0]))


def relaxation_time(kernel: Any, policy: Any = None) -> float:
    """``1 / (1 - |λ_2|)`` of a policy's chain (default: the uniformly random policy).

    ``λ_2`` is the eigenvalue of second-largest modulus; ``inf`` when it has
    modulus 1 (a reducible or periodic chain). For one state the time is 1.
    """
    array = _kernel(kernel)
    n_states, n_actions = array.shape[:2]
    if policy is None:
        policy = np.full((n_states, n_actions), 1.0 / n_actions)
    chain = policy_kernel(array, np.asarray(policy, dtype=float))
    moduli = np.sort(np.abs(np.linalg.eigvals(chain)))[::-1]
    second = float(moduli[1]) if n_states > 1 else 0.0
    if second >= 1.0 - 1e-12:
        return math.inf
    return 1.0 / (1.0 - second)


# ----------------------------------------------------------------------------
# Slater margin
# ----------------------------------------------------------------------------


@dataclass
class SlaterMargin:
    """Outcome of :func:`slater_margin`.

    Attributes
    ----------
    margin : float or None
        ``δ``; ``inf`` without constraints; ``None`` when the solve failed.
    feasible : bool or None
        ``δ >= -FEASIBILITY_TOLERANCE``; ``None`` when the solve failed.
    strictly_feasible : bool or None
        ``δ > FEASIBILITY_TOLERANCE`` (Slater's condition).
    costs : ndarray or None
        ``ζ`` of the occupancy attaining ``δ``.
    constraint_values : ndarray or None
        ``g_m(ζ)`` there.
    backend : str
        The backend that solved the auxiliary program ("" without constraints).
    status : str
    message : str
    """

    margin: float | None
    feasible: bool | None
    strictly_feasible: bool | None
    costs: np.ndarray | None = None
    constraint_values: np.ndarray | None = None
    backend: str = ""
    status: str = ""
    message: str = ""


def _worst_slack_utility(constraints: Sequence[Utility]) -> Utility:
    """The concave ``y -> min_m (-g_m(y))`` as a utility the backends can take."""
    pieces = [g.affine_pieces() for g in constraints]
    if all(p is not None for p in pieces):
        # -max_j(W_j y + c_j) = min_j(-W_j y - c_j): one MinOfLinear over every piece of every g.
        matrix = np.vstack([-w for w, _ in pieces])
        offset = np.concatenate([-c for _, c in pieces])
        return MinOfLinear(matrix, offset)
    single = constraints[0] if len(constraints) == 1 else None
    slacks = [forms.Negated(forms.Of(g)) for g in constraints]
    # With one constraint, -g is smooth when g is: give the derivative-based backends what they need.
    return CustomUtility(
        constraints[0].dim,
        "concave",
        value=lambda y: -max(g.value(y) for g in constraints),
        gradient=(lambda y: -single.gradient(y)) if single is not None else None,
        hessian=(lambda y: -single.hessian(y)) if single is not None else None,
        form=slacks[0] if single is not None else forms.Minimum(slacks),
        smooth=single is not None and bool(single.smooth),
        name="worst constraint slack",
    )


def _auxiliary_backend(utility: Utility) -> str:
    from .backends.registry import choose_backend

    return choose_backend([utility])


def slater_margin(model: CMDP, backend: Any = None) -> SlaterMargin:
    """``δ = max_π (-max_m g_m(ζ(π)))`` over stationary occupancies, by an auxiliary program.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel.
    backend : str or Backend, optional
        Default: ``"highs"`` when every constraint is LP-representable, else the
        first installed backend that can express them.

    Returns
    -------
    SlaterMargin

    Raises
    ------
    ModelError
        For a model without a kernel.
    UnsupportedUtilityError
        When the named backend cannot express the constraints.
    """
    from .optimum import solve_optimum

    _require_kernel(model)
    if not model.constraints:
        return SlaterMargin(math.inf, True, True, message="no constraints: every policy is feasible")
    utility = _worst_slack_utility(model.constraints)
    auxiliary = CMDP(
        rewards=model.costs, objective=utility, kernel=model.kernel, initial=model.initial,
        name=f"slater({model.name})", labels=model.labels,
    )
    chosen = _auxiliary_backend(utility) if backend is None else backend
    try:
        result = solve_optimum(auxiliary, chosen)
    except UnsupportedUtilityError as exc:
        raise UnsupportedUtilityError(
            f"the Slater margin of model {model.name!r} needs a backend that can express its constraints"
            f" {list(model.constraints)}: {exc}"
        ) from None
    if not result.ok:
        return SlaterMargin(None, None, None, backend=result.backend, status=result.status.value,
                            message=f"the auxiliary program was not solved: {result.message}")
    margin = float(result.objective)
    costs = np.asarray(result.rewards, dtype=float)
    return SlaterMargin(
        margin,
        margin >= -FEASIBILITY_TOLERANCE,
        margin > FEASIBILITY_TOLERANCE,
        costs=costs,
        constraint_values=model.constraint_values(costs),
        backend=result.backend,
        status=result.status.value,
        message=result.message,
    )


# ----------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------


def _require_kernel(model: Any) -> None:
    if not isinstance(model, CMDP):
        raise ModelError(f"model must be a curlopt CMDP, got {type(model).__name__}.")
    if model.kernel is None:
        raise ModelError(f"model {model.name!r} has no kernel; the diagnostics need the transition kernel.")


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _yes(flag: bool | None) -> str:
    return "unknown" if flag is None else ("yes" if flag else "no")


@dataclass
class DiagnosticsReport:
    """What :func:`diagnose` found; ``str(report)`` is a readable summary, ``to_dict()`` JSON-ready.

    Attributes
    ----------
    model : str
        The model's name.
    n_states, n_actions : int
    ergodicity : ErgodicityCheck
    warning : str or None
        The non-ergodicity warning (names a counterexample policy).
    hitting_time : float or None
        ``T_M`` (``inf`` when not ergodic; ``None`` above :data:`MAX_HITTING_TIME_STATES`).
    diameter : float or None
        ``D`` (``None`` when not ergodic or above :data:`MAX_HITTING_TIME_STATES`).
    relaxation_time : float
        Of the uniformly random policy.
    slater : SlaterMargin
    notes : list of str
    """

    model: str
    n_states: int
    n_actions: int
    ergodicity: ErgodicityCheck
    warning: str | None
    hitting_time: float | None
    diameter: float | None
    relaxation_time: float
    slater: SlaterMargin
    notes: list[str] = field(default_factory=list)

    @property
    def ergodic(self) -> bool:
        return self.ergodicity.ergodic

    @property
    def slater_margin(self) -> float | None:
        return self.slater.margin

    @property
    def feasible(self) -> bool | None:
        return self.slater.feasible

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (non-finite numbers become ``None``; ``notes`` say why)."""
        e, s = self.ergodicity, self.slater
        return {
            "model": self.model,
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "ergodic": e.ergodic,
            "communicating": e.communicating,
            "ergodicity_check": e.method,
            "counterexample_policy": _plain(e.policy),
            "recurrent_classes": _plain(e.recurrent_classes),
            "transient_states": _plain(e.transient_states),
            "warning": self.warning,
            "hitting_time": _plain(self.hitting_time),
            "diameter": _plain(self.diameter),
            "relaxation_time": _plain(self.relaxation_time),
            "slater_margin": _plain(s.margin),
            "feasible": s.feasible,
            "strictly_feasible": s.strictly_feasible,
            "slater_costs": _plain(s.costs),
            "slater_constraint_values": _plain(s.constraint_values),
            "slater_backend": s.backend,
            "slater_status": s.status,
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        e, s = self.ergodicity, self.slater
        lines = [
            f"model            {self.model} (S={self.n_states}, A={self.n_actions})",
            f"ergodic          {_yes(e.ergodic)}  [{e.method}]",
            f"communicating    {_yes(e.communicating)}",
        ]
        if self.hitting_time is None:
            lines.append("hitting time     not computed")
        else:
            lines.append(f"hitting time     T_M = {self.hitting_time:.6g} steps"
                         " (worst policy, worst pair of states: max expected time to reach a state)")
        if self.diameter is not None:
            lines.append(f"diameter         D = {self.diameter:.6g} steps (best policy, worst pair of states)")
        lines.append(f"relaxation time  {self.relaxation_time:.6g} steps (uniform policy, 1/(1-|λ_2|))")
        if s.margin is None:
            lines.append(f"Slater margin    unknown ({s.message})")
        elif math.isinf(s.margin):
            lines.append("Slater margin    inf (no constraints)")
        else:
            lines.append(f"Slater margin    δ = {s.margin:.6g}  (max over policies of -max_m g_m(ζ); {s.backend})")
        if s.margin is not None and not math.isinf(s.margin):
            strict = " (strictly: Slater's condition holds)" if s.strictly_feasible else (
                " (only on the boundary: Slater's condition fails)" if s.feasible else "")
            lines.append(f"feasible         {_yes(s.feasible)}{strict}")
        if self.warning:
            lines.append(f"warning: {self.warning}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def diagnose(model: CMDP, backend: Any = None) -> DiagnosticsReport:
    """Check the assumptions the toolkit's programs and guarantees rest on.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel.
    backend : str or Backend, optional
        Backend for the Slater-margin program (see :func:`slater_margin`).

    Returns
    -------
    DiagnosticsReport
        Ergodicity (exact, with a counterexample policy when it fails), the
        hitting time ``T_M``, the uniform policy's relaxation time, and the
        Slater margin with feasibility.

    Raises
    ------
    ModelError
        For a model without a kernel.
    """
    _require_kernel(model)
    kernel = np.asarray(model.kernel)
    check = check_ergodicity(kernel)
    notes: list[str] = []
    hitting: float | None = None
    best: float | None = None
    if not check.ergodic:
        hitting = math.inf
        notes.append("the hitting time is infinite: some policy never reaches some state")
    elif model.n_states > MAX_HITTING_TIME_STATES:
        notes.append(f"hitting time and diameter are computed up to {MAX_HITTING_TIME_STATES} states only")
    else:
        hitting, best = max_hitting_time(kernel), diameter(kernel)
        if math.isinf(hitting) or (best is not None and math.isinf(best)):
            notes.append("the hitting time (or diameter) is beyond double precision: some transition probability is"
                         " below about 1e-16, so some expected time is about its inverse; reported as inf")
    slater = slater_margin(model, backend)
    if slater.margin is not None and not math.isinf(slater.margin) and not check.ergodic:
        notes.append("the Slater margin is over stationary occupancies, which overstate what a policy achieves"
                     " from a given start state on a non-ergodic model")
    if slater.feasible is False:
        notes.append("the constrained problem is infeasible: no policy satisfies every constraint")
    return DiagnosticsReport(
        model=model.name,
        n_states=model.n_states,
        n_actions=model.n_actions,
        ergodicity=check,
        warning=_warning_text(model, check),
        hitting_time=hitting,
        diameter=best,
        relaxation_time=relaxation_time(kernel),
        slater=slater,
        notes=notes,
    )

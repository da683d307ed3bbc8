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
:class:`~curlopt.utilities.library.MinOfLinear` when every ``g_m`` is LP-representable,
otherwise a :class:`~curlopt.utilities.library.CustomUtility` whose form is that minimum
(:mod:`curlopt.utilities.forms`) — solved through the backend registry
with :func:`curlopt.solve_optimum`. The constrained problem is feasible iff
``δ >= 0`` and strictly feasible (Slater's condition) iff ``δ > 0``.

At scale (a sparse kernel, or thousands of states) every quantity is either computed on the kernel's nonzeros or
reported as not computed with a note saying why, never left out silently: ergodicity by sparse graph searches
(:mod:`curlopt.models.sparse_chains`; its exact search, rarely needed, has a round budget); hitting times and
diameter up to :data:`~curlopt.models.chains.MAX_HITTING_TIME_STATES` states; the relaxation time from the
symmetric form of a reversible chain at any size and from a dense eigensolver otherwise
(:mod:`curlopt.models.spectrum`); the Slater program on the sparse kernel, by default on the backend built for large
kernels above :data:`LARGE_KERNEL_NONZEROS` nonzeros.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ModelError, ProgramError, UnsupportedUtilityError
from .models.chains import (
    MAX_HITTING_TIME_STATES,
    ErgodicityCheck,
    check_ergodicity,
    diameter,
    ergodicity_warning_text,
    max_hitting_time,
    model_kernel,
    relaxation_time,
)
from .models.cmdp import CMDP
from .utilities import forms
from .utilities.library import CustomUtility, MinOfLinear, Utility

__all__ = ['DiagnosticsReport', 'SlaterMargin', 'diagnose', 'slater_margin', 'FEASIBILITY_TOLERANCE', 'LARGE_KERNEL_NONZEROS',
           'LARGE_KERNEL_BACKEND']


#: δ >= -tolerance counts as feasible and δ > tolerance as strictly feasible (solver round-off).
FEASIBILITY_TOLERANCE = 1e-9

#: Above this many kernel nonzeros the Slater program goes by default to :data:`LARGE_KERNEL_BACKEND` (column
#: generation with an MDP solver inside) when it is installed and can express the constraints: a generic LP pays
#: for every nonzero in each factorisation (the queue with buffer 10,000, 480,000 nonzeros: about 40 s on highs
#: against 1.5 s).
LARGE_KERNEL_NONZEROS = 20_000
LARGE_KERNEL_BACKEND = "mdp-columns"


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
    pieces = [p for g in constraints if (p := g.affine_pieces()) is not None]
    if len(pieces) == len(constraints):
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
        form=slacks[0] if single is not None else forms.Minimum(tuple(slacks)),
        smooth=single is not None and bool(single.smooth),
        name="worst constraint slack",
    )


def _auxiliary_backend(utility: Utility, model: CMDP) -> str:
    """The default backend of the Slater program: the large-kernel one for a large kernel, else the ``auto`` one."""
    from .backends.registry import backend_class, backend_names, choose_backend

    if _kernel_nonzeros(model) > LARGE_KERNEL_NONZEROS and LARGE_KERNEL_BACKEND in backend_names():
        large = backend_class(LARGE_KERNEL_BACKEND)
        if large.is_installed() and large.accepts(utility):
            return LARGE_KERNEL_BACKEND
    return choose_backend([utility])


def _kernel_nonzeros(model: CMDP) -> int:
    return model.nnz if model.sparse else int(np.count_nonzero(np.asarray(model.kernel)))


def slater_margin(model: CMDP, backend: Any = None) -> SlaterMargin:
    """``δ = max_π (-max_m g_m(ζ(π)))`` over stationary occupancies, by an auxiliary program.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel.
    backend : str or Backend, optional
        Default: for a kernel with more than :data:`LARGE_KERNEL_NONZEROS` nonzeros,
        :data:`LARGE_KERNEL_BACKEND` when it is installed and can express the
        constraints; otherwise ``"highs"`` when every constraint is LP-representable,
        else the first installed backend that can express them.

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
        rewards=model.costs, objective=utility, kernel=model_kernel(model), initial=model.initial,
        name=f"slater({model.name})", labels=model.labels,
    )
    chosen = _auxiliary_backend(utility, model) if backend is None else backend
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
    if not model.has_kernel:
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
        ``T_M`` (``inf`` when not ergodic; ``None`` above :data:`MAX_HITTING_TIME_STATES` or when ergodicity
        was not decided).
    diameter : float or None
        ``D`` (``None`` when not ergodic, not decided, or above :data:`MAX_HITTING_TIME_STATES`).
    relaxation_time : float or None
        Of the uniformly random policy; ``None`` when not computed (a note says why).
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
    relaxation_time: float | None
    slater: SlaterMargin
    notes: list[str] = field(default_factory=list)

    @property
    def ergodic(self) -> bool | None:
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
        if self.relaxation_time is None:
            lines.append("relaxation time  not computed")
        else:
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
        A model with a known kernel, dense or sparse.
    backend : str or Backend, optional
        Backend for the Slater-margin program (see :func:`slater_margin`).

    Returns
    -------
    DiagnosticsReport
        Ergodicity (exact, with a counterexample policy when it fails), the
        hitting time ``T_M``, the uniform policy's relaxation time, and the
        Slater margin with feasibility. Each quantity not computed at this size
        (hitting times above :data:`MAX_HITTING_TIME_STATES` states; ergodicity of a large sparse kernel whose
        exact search runs out of rounds; the relaxation time of a large chain that is not reversible; a Slater
        program that cannot be built) is ``None`` with a note saying why.

    Raises
    ------
    ModelError
        For a model without a kernel.
    """
    _require_kernel(model)
    kernel = model_kernel(model)
    check = check_ergodicity(kernel)
    notes: list[str] = []
    hitting, best = _hitting_times(model, check, notes)
    try:
        relaxation: float | None = relaxation_time(kernel)
    except ModelError as exc:
        relaxation = None
        notes.append(str(exc))
    slater = _slater_or_note(model, backend, notes)
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
        warning=ergodicity_warning_text(model, check),
        hitting_time=hitting,
        diameter=best,
        relaxation_time=relaxation,
        slater=slater,
        notes=notes,
    )


def _hitting_times(model: CMDP, check: ErgodicityCheck, notes: list[str]) -> tuple[float | None, float | None]:
    """``(T_M, D)`` of the model, or None for what is not computed (with a note in ``notes``)."""
    if check.ergodic is None:
        notes.append("hitting time and diameter are not computed: ergodicity was not decided")
        return None, None
    if not check.ergodic:
        notes.append("the hitting time is infinite: some policy never reaches some state")
        return math.inf, None
    if model.n_states > MAX_HITTING_TIME_STATES:
        notes.append(f"hitting time and diameter are computed up to {MAX_HITTING_TIME_STATES} states only"
                     " (policy iteration to each target state, a dense solve per step)")
        return None, None
    try:
        kernel = np.asarray(model.kernel)  # a sparse model of this size has a dense view
    except ModelError as exc:
        notes.append(f"hitting time and diameter are not computed: {exc}")
        return None, None
    hitting, best = max_hitting_time(kernel), diameter(kernel)
    if math.isinf(hitting) or math.isinf(best):
        notes.append("the hitting time (or diameter) is beyond double precision: some transition probability is"
                     " below about 1e-16, so some expected time is about its inverse; reported as inf")
    return hitting, best


def _slater_or_note(model: CMDP, backend: Any, notes: list[str]) -> SlaterMargin:
    """:func:`slater_margin`, or an unknown margin with the reason when its program cannot be built at this size."""
    try:
        return slater_margin(model, backend)
    except (ModelError, ProgramError) as exc:  # e.g. a program over the size limit, refused before it is built
        notes.append(f"the Slater margin is not computed: {exc}")
        return SlaterMargin(None, None, None, status="not computed", message=str(exc))

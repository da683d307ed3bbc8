"""The known-model optimum ``f(λ*)`` (docs/math.md §2 with Q = P and ε = 0)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .backends.base import Backend
from .backends.registry import resolve_backend
from .backends.results import ALMOST_OPTIMAL_TOLERANCE, SolutionStatus, SolveResult, Status
from .errors import ModelError, ProgramError
from .models.cmdp import CMDP, policy_kernel, stationary_occupancy
from .models.discounted import DiscountedCMDP
from .models.episodic import EpisodicCMDP
from .programs.blocks import Program
from .programs.discounted import DiscountedOccupancyProgram
from .programs.episodic import EpisodicOccupancyProgram
from .programs.multichain import MultichainOccupancyProgram
from .programs.occupancy import OccupancyProgram
from .programs.policy import extract_policy

__all__ = ["solve_optimum", "known_model_program", "LONG_RUN_TOLERANCE", "TINY_TRANSITION"]

#: A long-run optimum is evaluated exactly when its model has a transition probability at or below this. A solver
#: holds each flow row to ~1e-9, so mass ρ(s) leaving by a probability p is invisible to it once ρ(s)·p is that
#: small: a state of mass 1e-3 makes every p <= 1e-6 one the solver may ignore (two blocks joined by δ = 1e-10
#: are solved as if separate). Above it, a policy with one recurrent class has one law, the program's own.
TINY_TRANSITION = 1e-6

#: Largest gap, relative to ``1 + |f|``, between a long-run optimum's value and the exact long-run value of the
#: policy it returns (evaluated from the model's initial law), and largest excess of an exact constraint value over
#: its bound, at which the optimum stays ``optimal``. The programs' rows hold to 1e-9 and the policy's exact law moves
#: with them by the chain's condition; 1e-6 leaves that room on slowly mixing chains (the queue at buffer 3,000) and
#: is far below the first-digit errors of a nearly decomposable chain.
LONG_RUN_TOLERANCE = ALMOST_OPTIMAL_TOLERANCE


def solve_optimum(model: CMDP, backend: str | Backend = "auto", epsilon: float = 0.0, **options: Any) -> SolveResult:
    """Solve the occupancy program of the model's criterion on the model's own kernel.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel: of the long-run average criterion (the occupancy program), an
        :class:`~curlopt.models.episodic.EpisodicCMDP` (the episodic program over per-step occupancies; values are
        per-episode totals, the policy has shape (H, S, A)) or a :class:`~curlopt.models.discounted.DiscountedCMDP`
        (the discounted occupancy program; values are averages of the normalised discounted occupancy). A model that
        stores its kernel sparse gets the program on the kernel's nonzeros (its size grows with them, not with S²·A).
    backend : str or Backend, default "auto"
        A registry name (with ``options``), ``"auto"`` (the registry's rule for the model's program on this
        model, :func:`curlopt.backends.registry.choose_backend`: highs for LP-representable utilities, else the
        first installed backend that accepts them, and mdp-columns on large shallow chains) or an instance.
    epsilon : float, default 0
        Tightness; 0 gives the optimum used for regret.

    Returns
    -------
    SolveResult
        ``result.objective`` is ``f(λ*)``. If the constrained problem is
        infeasible, the result is the labelled fallback (``result.fell_back``).
    """
    if not isinstance(model, CMDP):
        raise ProgramError(f"solve_optimum needs a curlopt CMDP, got {type(model).__name__}.")
    if not model.has_kernel:
        raise ProgramError(f"model {model.name!r} has no kernel; the optimum needs the true transition kernel.")
    program = known_model_program(model, epsilon)
    result = _solve(model, program, backend, options)
    if type(program) is OccupancyProgram and result.ok:
        result = _long_run_checked(model, result, backend, epsilon, options)
    return result


def _solve(model: CMDP, program: Program, backend: str | Backend, options: dict[str, Any]) -> SolveResult:
    utilities = (model.objective, *model.constraints)
    return resolve_backend(backend, utilities, model, type(program), **options).compile(program).solve()


def _kernel(model: CMDP) -> Any:
    return model.transitions if model.sparse else model.kernel


def _every_policy_irreducible(model: CMDP) -> bool:
    """The cheap sufficient check: the transitions every action shares already connect every state (dense only)."""
    if model.sparse:
        return False
    from .models.chains import strongly_connected

    return strongly_connected((np.asarray(model.kernel) > 0).all(axis=1))


def _smallest_transition(model: CMDP) -> float:
    kernel = _kernel(model)
    values = kernel.data if sp.issparse(kernel) else np.asarray(kernel).ravel()
    positive = values[values > 0]
    return float(positive.min()) if positive.size else 1.0


def _recurrent_classes(model: CMDP, policy: np.ndarray) -> int:
    from .models.sparse_chains import chain_classes  # its graph module costs 0.3 s to import: only checks pay

    chain = sp.csr_array(policy_kernel(_kernel(model), policy))
    chain.eliminate_zeros()
    return len(chain_classes(chain)[0])


def _exact_gap(model: CMDP, result: SolveResult, epsilon: float, policy: np.ndarray) -> tuple[float, float, str]:
    """``(f_exact, gap, words)``: the exact long-run value of ``policy`` from the model's initial law, how far it
    (and its constraint values) fall from what the program said, and the comparison in words."""
    rho = stationary_occupancy(_kernel(model), policy, model.initial)
    rewards, costs = model.average_rewards(rho), model.average_costs(rho)
    exact = float(model.objective.value(rewards))
    gap = abs(exact - result.objective) / (1.0 + abs(result.objective))
    excess = max((float(g.value(costs)) + epsilon for g in model.constraints), default=0.0)
    words = f"f = {exact:.10g} (the program said {result.objective:.10g})"
    if excess > 0.0:
        words += f", its largest constraint value exceeds its bound by {excess:.3g}"
    return exact, max(gap, excess), words


def _conditioning(model: CMDP, policy: np.ndarray) -> str:
    """The numbers that say a policy's chain is nearly decomposable: its smallest positive transition probability
    and, for a dense chain, the ratio of the smallest to the largest singular value of its balance system."""
    chain = policy_kernel(_kernel(model), policy)
    values = chain.data if sp.issparse(chain) else np.asarray(chain).ravel()
    positive = values[values > 0]
    words = f"its smallest positive transition probability is {positive.min():.3g}"
    if not sp.issparse(chain) and chain.shape[0] <= 3000:
        n = chain.shape[0]
        singular = np.linalg.svd(np.vstack([chain.T - np.eye(n), np.ones((1, n))]), compute_uv=False)
        words += f" and its balance system's singular values span a ratio of {singular[-1] / singular[0]:.3g}"
    return words


def _inaccurate(result: SolveResult, message: str) -> SolveResult:
    result.status = Status.OPTIMAL_INACCURATE
    result.solution_status = SolutionStatus.FEASIBLE
    result.message = f"{message} {result.message}".strip()
    return result


def _long_run_checked(model: CMDP, result: SolveResult, backend: str | Backend, epsilon: float,
                      options: dict[str, Any]) -> SolveResult:
    """Evaluate the optimum's policy exactly from the model's initial law (docs/math.md §2.1).

    A policy whose chain has several recurrent classes shows the model multichain: the occupancy program answered
    for the best start, so the multichain program is solved instead. With one class, the plan's law is the chain's
    only one, and the solver resolves it unless a transition probability is below :data:`TINY_TRANSITION`; then
    the plan is evaluated exactly, and a value that differs from the program's is a solver that could not resolve
    the chain (nearly decomposable): ``optimal_inaccurate``, saying why. A chain too large for the exact route keeps
    the result, with a note. The checks cost a graph search (none where every action's graph is strongly connected)
    and, only with tiny probabilities, one exact evaluation.
    """
    assert result.policy is not None and result.occupancy is not None
    try:
        if not _every_policy_irreducible(model):
            classes = _recurrent_classes(model, result.policy)
            if classes > 1:
                return _multichain_optimum(model, result, classes, backend, epsilon, options)
        if _smallest_transition(model) > TINY_TRANSITION:
            return result
        # The program is indifferent to states its plan leaves unvisited, and a solution's rows hold only to the
        # solver's tolerance: states of mass ~1e-10 count as unvisited, and a uniform action there can drift away
        # (a long queue filling up) and change the value of a plan that is right. So the plan is checked with the
        # fastest way back to its states there (the reach-any fill), which is what the plan's value assumes.
        plan, _ = extract_policy(result.occupancy, model, "reach-any", uniform_policy=result.policy,
                              kernel=_kernel(model))
        exact, gap, words = _exact_gap(model, result, epsilon, plan)
    except ModelError as error:
        result.message = f"{result.message} The policy's long-run value was not checked exactly: {error}".strip()
        return result
    if gap <= LONG_RUN_TOLERANCE:
        return result
    return _inaccurate(result, (
        f"The optimal policy's exact long-run value differs from the program's: {words}. The chain is nearly"
        f" decomposable ({_conditioning(model, plan)}): the solver's tolerances cannot resolve its"
        f" balance, so its value is not the optimum's; the exact value is {exact:.10g}."
    ))


def _multichain_optimum(model: CMDP, unichain: SolveResult, classes: int, backend: str | Backend, epsilon: float,
                        options: dict[str, Any]) -> SolveResult:
    result = _solve(model, MultichainOccupancyProgram(model, epsilon=epsilon), backend, options)
    note = (f"The model is multichain (the occupancy program's policy has {classes} recurrent classes and its"
            f" answer f = {unichain.objective:.10g} is the best over start states, which the initial law may not"
            " reach): solved the multichain program, whose value is the optimum from the initial law.")
    result.message = f"{note} {result.message}".strip()
    if not result.ok:
        return result
    assert result.policy is not None
    exact, gap, words = _exact_gap(model, result, epsilon, result.policy)
    if gap <= LONG_RUN_TOLERANCE:
        return result
    return _inaccurate(result, (
        f"The stationary policy returned does not attain the multichain optimum from the initial law: {words}."
        " With constraints on a multichain model the optimum may need a policy that is not stationary; the value"
        " is the optimum's, the policy is Kallenberg's stationary one."
    ))


def known_model_program(model: CMDP, epsilon: float = 0.0) -> Program:
    """The known-model program of ``model``'s criterion: episodic, discounted, or the long-run average's."""
    if isinstance(model, EpisodicCMDP):
        return EpisodicOccupancyProgram(model, epsilon=epsilon)
    if isinstance(model, DiscountedCMDP):
        return DiscountedOccupancyProgram(model, epsilon=epsilon)
    return OccupancyProgram(model, epsilon=epsilon)

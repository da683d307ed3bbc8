"""The known-model optimum ``f(λ*)`` (docs/math.md §2 with Q = P and ε = 0)."""

from __future__ import annotations

from typing import Any

from .backends.base import Backend
from .backends.registry import resolve_backend
from .backends.results import SolveResult
from .errors import ProgramError
from .models.cmdp import CMDP
from .models.discounted import DiscountedCMDP
from .models.episodic import EpisodicCMDP
from .programs.blocks import Program
from .programs.discounted import DiscountedOccupancyProgram
from .programs.episodic import EpisodicOccupancyProgram
from .programs.occupancy import OccupancyProgram

__all__ = ["solve_optimum", "known_model_program"]


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
    utilities = (model.objective, *model.constraints)
    return resolve_backend(backend, utilities, model, type(program), **options).compile(program).solve()


def known_model_program(model: CMDP, epsilon: float = 0.0) -> Program:
    """The known-model program of ``model``'s criterion: episodic, discounted, or the long-run average's."""
    if isinstance(model, EpisodicCMDP):
        return EpisodicOccupancyProgram(model, epsilon=epsilon)
    if isinstance(model, DiscountedCMDP):
        return DiscountedOccupancyProgram(model, epsilon=epsilon)
    return OccupancyProgram(model, epsilon=epsilon)

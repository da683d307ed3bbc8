"""The tightness schedule ε_e = K_ε sqrt(ln t / t) (docs/math.md §4) and the bounds every program takes for ε."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ProgramError

__all__ = ['tightness', 'EPSILON_MAX', 'TIGHTNESS_CONSTANT_MAX']


#: The largest tightness ε a program takes. Every backend represents it exactly and far inside its solver's
#: finite range (HiGHS reads a bound beyond ±1e20 as infinite; Ipopt's default infinity is 1e19); at 1e9
#: Clarabel alone already called an ε-tight program that cannot hold "infeasible_inaccurate" where it says
#: "infeasible" at 1e6. With costs of order 1, any ε above a few units makes the ε-tight program infeasible.
EPSILON_MAX = 1e6


#: The largest tightness constant K_ε: ``max_{τ >= 1} sqrt(ln τ / τ) = 1/sqrt(e)`` (at τ = e), so
#: ``ε = K_ε sqrt(ln τ / τ) <= K_ε / sqrt(e)``; rounded down so that every ε of the schedule is <= EPSILON_MAX.
TIGHTNESS_CONSTANT_MAX = float(math.floor(EPSILON_MAX * math.sqrt(math.e)))  # 1,648,721


def _number(value: Any) -> float:
    """``float(value)`` for a real number (not a bool or a string), else NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return math.nan
    return float(value)


def finite_at_least(value: Any, name: str, lower: float) -> float:
    """``float(value)`` when it is a finite number >= ``lower``, else a ProgramError naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ProgramError(f"{name} must be a number >= {lower:g}, got {value!r}.") from None
    if not math.isfinite(number) or number < lower:
        raise ProgramError(f"{name} must be a finite number >= {lower:g}, got {value!r}.")
    return number


def tightness(time: float, constant: float = 1.0, horizon_lower_bound: float | None = None) -> float:
    """The tightness schedule ``ε = K_ε sqrt(ln τ / τ)``, ``τ = max(t, T_l)`` (docs/math.md §4).

    Parameters
    ----------
    time : float
        The epoch's start time ``t_e >= 1``.
    constant : float, default 1
        ``0 <= K_ε <= TIGHTNESS_CONSTANT_MAX`` (so that ``ε <= EPSILON_MAX``).
    horizon_lower_bound : float, optional
        A known lower bound ``T_l`` on the horizon.

    Raises
    ------
    ProgramError
        For a time that is not a finite number >= 1, or a constant outside ``[0, TIGHTNESS_CONSTANT_MAX]``.
    """
    if not math.isfinite(_number(time)) or time < 1:
        raise ProgramError(f"time must be a finite number >= 1, got {time!r}.")
    if not math.isfinite(_number(constant)) or constant < 0:
        raise ProgramError(f"the tightness constant must be a finite number >= 0 (K_ε), got {constant!r}.")
    if constant > TIGHTNESS_CONSTANT_MAX:
        raise ProgramError(
            f"the tightness constant must be at most {TIGHTNESS_CONSTANT_MAX:.0f} (K_ε; then ε <= {EPSILON_MAX:g},"
            f" the largest ε a program takes), got {constant!r}."
        )
    tau = float(time)
    if horizon_lower_bound is not None:
        if not math.isfinite(horizon_lower_bound) or horizon_lower_bound < 1:
            raise ProgramError(f"the horizon lower bound must be a finite number >= 1, got {horizon_lower_bound!r}.")
        tau = max(tau, float(horizon_lower_bound))
    return constant * math.sqrt(math.log(tau) / tau)

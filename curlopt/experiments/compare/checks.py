"""The comparison's options, checked before any work: the tolerance, the time limit, the backends' names."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...backends.registry import backend_names
from ...errors import CurloptError

__all__ = ["check_tolerance", "check_time_limit", "check_backends"]


def check_tolerance(tolerance: Any, name: str = "tolerance") -> float:
    """``tolerance`` as a float, or a CurloptError unless it is a finite number >= 0.

    Objectives disagree when ``high - low > tolerance * max(1, |high|)``; with NaN that test is never
    true, so a NaN tolerance would silently turn the check off.
    """
    ok = isinstance(tolerance, (int, float, np.integer, np.floating)) and not isinstance(tolerance, bool)
    value = float(tolerance) if ok else math.nan
    if not (math.isfinite(value) and value >= 0):
        raise CurloptError(f"{name} must be a finite number >= 0 (relative objective tolerance), got {tolerance!r}.")
    return value


def check_time_limit(time_limit: Any, name: str = "time_limit") -> float | None:
    """``time_limit`` as a float (None stays None), or a CurloptError unless it is a finite number of seconds > 0."""
    if time_limit is None:
        return None
    ok = isinstance(time_limit, (int, float, np.integer, np.floating)) and not isinstance(time_limit, bool)
    value = float(time_limit) if ok else math.nan
    if not (math.isfinite(value) and value > 0):
        raise CurloptError(f"{name} must be a finite number of seconds above 0 (per solve), got {time_limit!r}.")
    return value


def check_backends(backends: Any, name: str = "backends") -> list[str] | None:
    """The backend names asked for, checked against the registry (None: every installed backend).

    Raises
    ------
    CurloptError
        For an empty list, a name given twice, or a name the registry does not know (the message lists the
        known ones).
    """
    if backends is None:
        return None
    if isinstance(backends, str) or not all(isinstance(b, str) for b in backends):
        raise CurloptError(f"{name} must be a list of backend names, got {backends!r}.")
    names = list(backends)
    if not names:
        raise CurloptError(f"{name} names no backend; known backends: {', '.join(backend_names())}.")
    unknown = [b for b in names if b not in backend_names()]
    if unknown:
        raise CurloptError(f"unknown backend(s) {', '.join(map(repr, unknown))} in {name}; known backends:"
                           f" {', '.join(backend_names())}.")
    twice = sorted({b for b in names if names.count(b) > 1})
    if twice:
        raise CurloptError(f"{name} names {', '.join(map(repr, twice))} more than once.")
    return names

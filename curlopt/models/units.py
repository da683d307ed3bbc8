"""A model's signals in other units: the utilities that keep its problem when rewards or costs are multiplied.

Used by :mod:`curlopt.models.transforms` (a model in other units) and :mod:`curlopt.models.criteria` (a horizon on
a model: per-episode totals are H times the per-step averages).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import ConvexQuadratic, Linear, LinearBound, MaxOfLinear, MinOfLinear, Norm, Utility

__all__ = ["scale_constraint", "scale_objective", "positive_factor"]


def positive_factor(value: Any, name: str) -> float:
    """``value`` as a finite float > 0; a ModelError naming ``name`` (the signals multiplied) otherwise."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    number = float(value) if ok else math.nan
    if not (math.isfinite(number) and number > 0):
        raise ModelError(f"{name} must be a finite number > 0 (the factor the {name} are multiplied by), got {value!r}.")
    return number


def scale_constraint(constraint: Utility, factor: float) -> Utility:
    """``g'(y) = factor · g(y / factor)``: the constraint on costs multiplied by ``factor``.

    Known for the built-in convex constraints: :class:`~curlopt.utilities.library.LinearBound` and
    :class:`~curlopt.utilities.library.MaxOfLinear` (their bounds times the factor),
    :class:`~curlopt.utilities.library.Norm` (centre and radius times the factor) and
    :class:`~curlopt.utilities.library.ConvexQuadratic` (``Q / k``, ``q``, ``k c``).

    Raises
    ------
    ModelError
        For another type (the message names it) or a factor that is not a finite number > 0.
    """
    k = positive_factor(factor, "costs")
    if type(constraint) is LinearBound:
        return LinearBound(constraint.weights, k * constraint.bound)
    if type(constraint) is MaxOfLinear:
        return MaxOfLinear(constraint.matrix, -k * constraint.offset)
    if type(constraint) is Norm:
        return Norm(k * constraint.center, k * constraint.radius, constraint.ord)
    if type(constraint) is ConvexQuadratic:
        return ConvexQuadratic(constraint.matrix / k, constraint.linear, k * constraint.constant)
    raise ModelError(
        f"cannot scale the costs of constraint {constraint!r}: the toolkit knows how for LinearBound, MaxOfLinear,"
        " Norm and ConvexQuadratic (g'(y) = k g(y/k)); scale such a model by hand."
    )


def scale_objective(objective: Utility, factor: float) -> Utility:
    """``f'(x) = factor · f(x / factor)`` for a linear (:class:`Linear`) or piecewise-linear (:class:`MinOfLinear`) ``f``.

    Raises
    ------
    ModelError
        For another objective: scaling the rewards of a nonlinear ``f`` changes the problem (a log's slope,
        an entropy's shape), so it is refused rather than approximated.
    """
    k = positive_factor(factor, "rewards")
    if type(objective) is Linear:
        return Linear(objective.weights, k * float(objective.offset[0]))
    if type(objective) is MinOfLinear:
        return MinOfLinear(objective.matrix, k * objective.offset)
    raise ModelError(
        f"cannot scale the rewards of objective {objective!r}: only a linear or piecewise-linear f (Linear,"
        " MinOfLinear) keeps the same problem when its rewards change units."
    )

"""A model's signals in other units: the utilities that keep its problem when rewards or costs are multiplied.

Used by :mod:`curlopt.models.transforms` (a model in other units) and :mod:`curlopt.models.criteria` (a horizon on
a model: per-episode totals are H times the per-step averages).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities import forms
from ..utilities.library import ConvexQuadratic, Linear, LinearBound, MaxOfLinear, MinOfLinear, Norm, Utility

__all__ = ["scale_constraint", "scale_objective", "positive_factor", "PerEpisode", "lift_form",
           "per_episode_objective"]


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


class PerEpisode(Utility):
    """``H f(x / H)``: a utility ``f`` of per-step averages, acting on per-episode totals ``x`` (H times them).

    Same curvature and maximisers as ``f`` on the averages; its value is ``H`` times ``f``'s. Backends compile it from
    :meth:`describe`, the lift of ``f``'s form (:func:`lift_form`: affine pieces, logarithms, powers, entropies and
    their sums and minima lift exactly); a form it cannot lift gives None, and a backend then refuses the utility
    with its usual message. Not a registered type: a model file cannot hold it.

    Parameters
    ----------
    base : Utility
        ``f``.
    horizon : int
        ``H >= 1``.
    """

    def __init__(self, base: Utility, horizon: int):
        super().__init__(base.dim)
        self.base, self.horizon = base, int(horizon)
        self.curvature, self.smooth = base.curvature, base.smooth

    def domain_lower(self) -> np.ndarray:
        return self.horizon * self.base.domain_lower()

    def value(self, y: np.ndarray) -> float:
        return self.horizon * self.base.value(self.check_input(y) / self.horizon)

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return self.base.gradient(self.check_input(y) / self.horizon)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        return self.base.hessian(self.check_input(y) / self.horizon) / self.horizon

    def describe(self) -> forms.Form | None:
        form = self.base.describe()
        return None if form is None else lift_form(form, self.horizon)

    def __repr__(self) -> str:
        return f"PerEpisode({self.base!r}, H={self.horizon})"


def lift_form(form: forms.Form, horizon: int) -> forms.Form | None:
    """The form of ``H f(x / H)`` from the form of ``f``, exactly, or None for a form it does not know.

    * affine pieces ``W y + c``: ``W x + H c``;
    * ``Σ w ln(y + s)``: ``Σ (H w) ln(x + H s) − H ln(H) Σ w``;
    * ``Σ w (y + s)^p / p``: ``Σ (w H^{1−p}) (x + H s)^p / p``;
    * ``−Σ y ln(y + s)``: ``−Σ x ln(x + H s) + ln(H) Σ x``;
    * sums and minima (maxima) of those: the sum and minimum (maximum) of the lifts.
    """
    H = float(horizon)
    if isinstance(form, forms.AffinePieces):
        return forms.AffinePieces(form.matrix, H * form.offset, form.combine)
    if isinstance(form, forms.Logs):
        constant = forms.AffinePieces(np.zeros((1, form.dim)), np.array([-H * math.log(H) * float(np.sum(form.weights))]))
        return forms.Sum((forms.Logs(H * form.weights, H * form.shift), constant))
    if isinstance(form, forms.Powers):
        return forms.Powers(form.weights * H ** (1.0 - form.exponent), form.exponent, H * form.shift)
    if isinstance(form, forms.Entropy):
        linear = forms.AffinePieces(np.full((1, form.dim), math.log(H)), np.zeros(1))
        return forms.Sum((forms.Entropy(form.dim, H * form.shift), linear))
    if isinstance(form, (forms.Sum, forms.Minimum, forms.Maximum)):
        terms = [lift_form(term, horizon) for term in form.terms]
        return None if any(term is None for term in terms) else type(form)(tuple(terms))  # type: ignore[arg-type]
    return None


def per_episode_objective(objective: Utility, horizon: int) -> Utility:
    """``H f(x / H)`` for an objective of per-step averages: a registered :class:`Linear` or :class:`MinOfLinear`
    (:func:`scale_objective`, which a model file can hold) when ``f`` is one, else :class:`PerEpisode`.

    Raises
    ------
    ModelError
        For an objective whose form (:meth:`Utility.describe`) does not lift (:func:`lift_form`).
    """
    if type(objective) in (Linear, MinOfLinear):
        return scale_objective(objective, horizon)
    lifted = PerEpisode(objective, horizon)
    if lifted.describe() is None:
        raise ModelError(f"the objective {objective!r} has no form curlopt can lift to per-episode totals.")
    return lifted

"""A utility plus a linear term in extra variables: ``h(y, z) = u(y) + k·z``.

Safe mode (docs/safe-mode.md) adds an exploration bonus to the objective and an
uncertainty penalty to each constraint row. Both are linear in the occupancy, so
the safe programs carry them as a few extra scalar variables ``z`` (defined by
linear rows) and wrap each utility ``u`` of the model as ``u(y) + k·z``. Adding an
affine term keeps the curvature, the LP pieces and the smoothness of ``u``; the
wrapped utility's form is :class:`~curlopt.utilities.forms.HeadPlusLinear` of ``u``,
so every backend that takes ``u`` takes the wrapped utility too, with no backend
code of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UtilityError
from . import forms
from .library import Utility

__all__ = ["AugmentedUtility"]


class AugmentedUtility(Utility):
    """``h(y, z) = inner(y) + coefficients·z`` on the stacked vector ``(y, z)``.

    Parameters
    ----------
    inner : Utility
        The utility of the first ``inner.dim`` entries.
    coefficients : array_like, shape (n,)
        The constant coefficients of the ``n >= 1`` extra entries.
    name : str, optional
        How the utility shows in messages (default: the inner utility plus ``" + linear term"``).
    """

    def __init__(self, inner: Utility, coefficients: Any, name: str | None = None) -> None:
        if not isinstance(inner, Utility):
            raise UtilityError(f"AugmentedUtility wraps a curlopt Utility, got {type(inner).__name__}.")
        k = np.asarray(coefficients, dtype=float).reshape(-1)
        if k.size == 0 or not np.all(np.isfinite(k)):
            raise UtilityError(f"AugmentedUtility needs finite coefficients, got {coefficients!r}.")
        # an affine term keeps the inner utility's curvature and smoothness
        self.curvature, self.smooth = inner.curvature, bool(inner.smooth)
        super().__init__(inner.dim + k.size)
        self.inner = inner
        self.coefficients = k
        self._name = name

    # -- numerics -------------------------------------------------------------
    def _split(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        array = np.asarray(y, dtype=float).reshape(-1)
        return array[: self.inner.dim], array[self.inner.dim:]

    def value(self, y: np.ndarray) -> float:
        head, tail = self._split(y)
        return float(self.inner.value(head)) + float(self.coefficients @ tail)

    def gradient(self, y: np.ndarray) -> np.ndarray:
        head, _ = self._split(y)
        return np.concatenate([np.asarray(self.inner.gradient(head), dtype=float).reshape(-1), self.coefficients])

    def hessian(self, y: np.ndarray) -> np.ndarray:
        head, _ = self._split(y)
        out = np.zeros((self.dim, self.dim))
        out[: self.inner.dim, : self.inner.dim] = self.inner.hessian(head)
        return out

    def domain_lower(self) -> np.ndarray:
        return np.concatenate([self.inner.domain_lower(), np.full(self.coefficients.size, -np.inf)])

    # -- what backends need ---------------------------------------------------
    def describe(self) -> forms.HeadPlusLinear:
        """``inner(y[:n]) + k·y[n:]``, the inner utility compiled as it is on its own."""
        return forms.HeadPlusLinear(forms.Of(self.inner), self.coefficients)

    def __repr__(self) -> str:
        if self._name:
            return self._name
        return f"{self.inner!r} + linear term in {self.coefficients.size} extra variable(s)"

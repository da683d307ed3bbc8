"""Utilities: the concave objective ``f`` and the convex constraint functions ``g_m``.

A utility is a function of a low-dimensional aggregate: ``f`` acts on the average
rewards ``λ`` (length K), each ``g_m`` on the average costs ``ζ`` (length d). The
toolkit only ever evaluates a utility on such an aggregate, so derivatives are
cheap.

A utility tells the backends what it is, once:

* ``value``, ``gradient``, ``hessian`` (numpy) — for the Pyomo/Ipopt bridge and
  for metrics;
* ``describe()`` — a backend-neutral form (:mod:`curlopt.utilities.forms`: affine
  pieces, logarithms, powers, entropy, quadratics, norms and their sums, minima,
  ...). The ``cvxpy`` backend compiles it to a CVXPY expression, the ``pyomo``
  backend to a Pyomo expression, and the LP backends (``highs``, ``scipy``) read
  its affine pieces (:meth:`Utility.affine_pieces`);
* ``to_spec()`` / ``from_spec()`` — the JSON object of a model file, for the types
  in :data:`UTILITY_TYPES`.

None of the solver packages is imported by this module.

Plugging your own utility
-------------------------
Subclass :class:`Utility`, set ``curvature`` and implement ``value``,
``gradient`` and ``hessian``; return a form from ``describe()`` to use every
backend that can compile it. A function no form describes can still give the
backends *optional expressions* of its own: ``cvxpy_expr`` for the ``cvxpy``
backend, ``pyomo_expr`` for ``pyomo`` and ``affine_pieces`` for the LP backends
(a backend uses them before any form); :class:`CustomUtility` takes the same as
callables. A backend refuses a utility lacking what it needs, naming a backend
that can take it. :func:`register_utility` makes a type loadable from model
files. See docs/extending.md for worked examples.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import UtilityError
from . import forms

__all__ = [
    "Utility",
    "UTILITY_TYPES",
    "register_utility",
    "Linear",
    "SumOfLogs",
    "AlphaFairness",
    "MinOfLinear",
    "Entropy",
    "onto_domain",
    "LinearBound",
    "MaxOfLinear",
    "ConvexQuadratic",
    "Norm",
    "CustomUtility",
    "curvature_violation",
]

CURVATURES = ("affine", "concave", "convex")

#: the dtype of the float vectors the utilities take (compared with an input's, to skip converting it)
_FLOAT = np.dtype(float)


def _finite_number(value: Any) -> bool:
    """A real number (not a bool) with a finite float value; False for strings, None and huge integers."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        return False


def _vector(value: Any, name: str, length: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite 1-D float array, or raise a UtilityError naming ``name``."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UtilityError(f"{name} must be an array of numbers ({exc}).") from None
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1:
        raise UtilityError(f"{name} must be one-dimensional, got shape {array.shape}.")
    if array.size == 0:
        raise UtilityError(f"{name} must not be empty.")
    if length is not None and array.size != length:
        raise UtilityError(f"{name} must have length {length}, got {array.size}.")
    if not np.all(np.isfinite(array)):
        raise UtilityError(f"{name} contains NaN or infinite entries: {array}.")
    return array


def _matrix(value: Any, name: str, columns: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite 2-D float array (a 1-D input is one row)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UtilityError(f"{name} must be an array of numbers ({exc}).") from None
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.size == 0:
        raise UtilityError(f"{name} must be a non-empty 2-D array, got shape {array.shape}.")
    if columns is not None and array.shape[1] != columns:
        raise UtilityError(f"{name} must have {columns} columns, got {array.shape[1]}.")
    if not np.all(np.isfinite(array)):
        raise UtilityError(f"{name} contains NaN or infinite entries.")
    return array


def _dimension(dim: Any, weights: Any, name: str) -> tuple[int, np.ndarray]:
    """Resolve (dim, weights) for utilities that take either; weights default to ones."""
    if weights is None:
        if dim is None:
            raise UtilityError(f"{name} needs `dim` (the number of signals) or `weights`.")
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
            raise UtilityError(f"{name}: dim must be a positive integer, got {dim!r}.")
        return int(dim), np.ones(int(dim))
    w = _vector(weights, f"{name} weights")
    if dim is not None and dim != w.size:
        raise UtilityError(f"{name}: dim={dim} does not match {w.size} weights.")
    return w.size, w


#: registered utility types, by name: the ``"type"`` of a utility in a model file (see :func:`register_utility`)
UTILITY_TYPES: dict[str, type[Utility]] = {}


def register_utility(cls: type[Utility]) -> type[Utility]:
    """Register ``cls`` under its class name, so model files can hold it (a class decorator).

    The class must implement :meth:`Utility.to_spec` (and :meth:`Utility.from_spec` when its
    constructor does not take the spec's keys as they are).
    """
    if not (isinstance(cls, type) and issubclass(cls, Utility)):
        raise UtilityError(f"register_utility takes a Utility subclass, got {cls!r}.")
    UTILITY_TYPES[cls.__name__] = cls
    return cls


class Utility(ABC):
    """A function of an aggregate vector ``y`` (λ or ζ) of length ``dim``.

    Subclasses set the class attribute ``curvature`` to ``"affine"``,
    ``"concave"`` (objectives) or ``"convex"`` (constraints), implement
    :meth:`value`, :meth:`gradient` and :meth:`hessian`, and return their form
    from :meth:`describe` for the backends to compile. A utility without a form
    may give optional expressions instead: :meth:`affine_pieces`,
    :meth:`cvxpy_expr` and :meth:`pyomo_expr` enable the LP backends, ``cvxpy``
    and ``pyomo`` respectively.

    Parameters
    ----------
    dim : int
        Length of the input vector (K for an objective, d for a constraint).
    """

    # Class defaults, which an instance may set for itself (CustomUtility and AugmentedUtility take them as
    # arguments), so they are not ClassVars.
    curvature: str = "concave"
    #: False when the function has kinks (max/min of pieces): Ipopt needs smoothness.
    smooth: bool = True

    def __init__(self, dim: int) -> None:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
            raise UtilityError(f"{type(self).__name__}: dim must be a positive integer, got {dim!r}.")
        if self.curvature not in CURVATURES:
            raise UtilityError(
                f"{type(self).__name__}.curvature must be one of {CURVATURES}, got {self.curvature!r}."
            )
        self.dim = int(dim)

    # -- numerics -------------------------------------------------------------
    @abstractmethod
    def value(self, y: np.ndarray) -> float:
        """Value at ``y`` (``-inf`` for a concave function outside its domain)."""

    @abstractmethod
    def gradient(self, y: np.ndarray) -> np.ndarray:
        """Gradient (a subgradient at kinks) at ``y``, shape ``(dim,)``."""

    @abstractmethod
    def hessian(self, y: np.ndarray) -> np.ndarray:
        """Hessian at ``y``, shape ``(dim, dim)``."""

    def domain_lower(self) -> np.ndarray:
        """Componentwise lower bound of the open domain (``-inf`` where unbounded)."""
        return np.full(self.dim, -np.inf)

    # -- what backends need ---------------------------------------------------
    def describe(self) -> forms.Form | None:
        """The backend-neutral form of the function (:mod:`curlopt.utilities.forms`), or None."""
        return None

    def affine_pieces(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Affine pieces ``(W, c)`` (W of shape (J, dim)) or ``None`` if not LP-representable.

        A concave function equals ``min_j (W_j·y + c_j)``, a convex one
        ``max_j (W_j·y + c_j)``; a single piece means the function is affine.
        By default read from :meth:`describe`; override it to give pieces a form does not.
        """
        return forms.affine_pieces(self.describe())

    def cvxpy_expr(self, y: Any) -> Any:
        """Optional: a DCP CVXPY expression of the CVXPY expression ``y`` (shape ``(dim,)``).

        For a function :meth:`describe` cannot describe; the ``cvxpy`` backend uses it before any form.
        """
        raise NotImplementedError

    def pyomo_expr(self, y: Sequence[Any]) -> Any:
        """Optional: a Pyomo expression of the sequence ``y`` of ``dim`` Pyomo expressions.

        For a function :meth:`describe` cannot describe; the ``pyomo`` backend uses it before any form.
        """
        raise NotImplementedError

    # -- model files ----------------------------------------------------------
    def to_spec(self) -> dict[str, Any]:
        """The utility as a JSON object ``{"type": <name>, <constructor arguments>}`` (see :data:`UTILITY_TYPES`).

        Raises
        ------
        UtilityError
            For a utility of a type that is not registered (e.g. a :class:`CustomUtility`).
        """
        raise UtilityError(f"{self!r} is not of a registered utility type ({', '.join(sorted(UTILITY_TYPES))}).")

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Utility:
        """The utility of the JSON object ``spec`` (its ``"type"`` key is ignored): ``cls(**arguments)``."""
        return cls(**{key: value for key, value in spec.items() if key != "type"})

    def _spec(self, **arguments: Any) -> dict[str, Any]:
        """``{"type": <class name>, **arguments}``, for a registered class only (not a subclass of one)."""
        name = type(self).__name__
        if UTILITY_TYPES.get(name) is not type(self):
            return Utility.to_spec(self)
        return {"type": name, **arguments}

    # -- derived facts --------------------------------------------------------
    @property
    def is_linear(self) -> bool:
        """True when the function is affine (one affine piece)."""
        pieces = self.affine_pieces()
        return pieces is not None and pieces[0].shape[0] == 1

    @property
    def is_lp_representable(self) -> bool:
        """True when the function is a min (concave) or max (convex) of affine pieces."""
        return self.affine_pieces() is not None

    @property
    def has_cvxpy(self) -> bool:
        """True when the utility gives its own :meth:`cvxpy_expr` (an optional expression)."""
        return type(self).cvxpy_expr is not Utility.cvxpy_expr

    @property
    def has_pyomo(self) -> bool:
        """True when the utility gives its own :meth:`pyomo_expr` (an optional expression)."""
        return type(self).pyomo_expr is not Utility.pyomo_expr

    def check_input(self, y: Any) -> np.ndarray:
        """Return ``y`` as a float vector of length ``dim`` or raise UtilityError."""
        array = np.asarray(y, dtype=float).reshape(-1)
        if array.size != self.dim:
            raise UtilityError(f"{self!r} takes a vector of length {self.dim}, got {array.size}.")
        return array

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim})"


class _PiecewiseAffine(Utility):
    """min (concave) or max (convex) of affine pieces ``W y + c``."""

    smooth = False

    def __init__(self, matrix: np.ndarray, offset: np.ndarray):
        super().__init__(matrix.shape[1])
        self.matrix = matrix
        self.offset = offset

    def _pieces(self, y: np.ndarray) -> np.ndarray:
        # The programs' checks and the runs' evaluations call this several times an epoch, nearly always with a
        # float vector of the right length: that one is used as it is (check_input would return it unchanged).
        if not (type(y) is np.ndarray and y.dtype == _FLOAT and y.shape == (self.dim,)):
            y = self.check_input(y)
        return self.matrix @ y + self.offset

    def _active(self, y: np.ndarray) -> int:
        values = self._pieces(y)
        return int(np.argmin(values) if self.curvature == "concave" else np.argmax(values))

    def value(self, y: np.ndarray) -> float:
        if not (type(y) is np.ndarray and y.dtype == _FLOAT and y.shape == (self.dim,)):
            y = self.check_input(y)
        matrix, offset = self.matrix, self.offset
        if matrix.shape[0] == 1 and offset.shape == (1,) and matrix.dtype == _FLOAT:
            # One piece (a linear objective or bound, read several times an epoch): its value, the same float
            # addition as the pieces' array sum, without the array operations around it. A (1, n) @ (n,) product
            # is numpy's dot of the row and y (matmul hands a one-by-one output to the dtype's dot function, as
            # ndarray.dot does for two vectors): the same bits without the generalized ufunc's set-up.
            return float(matrix[0].dot(y) + offset[0])
        values = matrix @ y + offset
        # the reductions values.min() and values.max() call, without their Python wrappers
        return float(np.minimum.reduce(values) if self.curvature == "concave" else np.maximum.reduce(values))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return self.matrix[self._active(y)].copy()

    def hessian(self, y: np.ndarray) -> np.ndarray:
        return np.zeros((self.dim, self.dim))

    def describe(self) -> forms.Form | None:
        combine = {"affine": "affine", "concave": "min", "convex": "max"}[self.curvature]
        return forms.AffinePieces(self.matrix, self.offset, combine)


# ----------------------------------------------------------------------------
# Concave objectives
# ----------------------------------------------------------------------------


@register_utility
class Linear(_PiecewiseAffine):
    """Linear objective ``f(y) = w·y + offset``.

    Parameters
    ----------
    weights : array_like, shape (dim,)
        The weight of each signal; ``Linear([1.0])`` is the plain average reward.
    offset : float, default 0
        A constant added to the value.
    """

    curvature = "affine"
    smooth = True

    def __init__(self, weights: Any, offset: float = 0.0):
        w = _vector(weights, "Linear weights")
        super().__init__(w.reshape(1, -1), _vector(offset, "Linear offset", 1))
        self.weights = w

    def to_spec(self) -> dict[str, Any]:
        return self._spec(weights=self.weights.tolist(), offset=float(self.offset[0]))

    def __repr__(self) -> str:
        return f"Linear(weights={self.weights.tolist()}, offset={float(self.offset[0])})"


@register_utility
class SumOfLogs(Utility):
    """Proportional fairness ``f(y) = Σ_k w_k ln(y_k + shift)``.

    Parameters
    ----------
    dim : int, optional
        Number of signals (needed when ``weights`` is not given).
    weights : array_like, optional
        Non-negative weights, default all ones.
    shift : float, default 0
        Added inside the logarithm; a positive shift keeps the function finite at 0.
    """

    curvature = "concave"

    def __init__(self, dim: int | None = None, weights: Any = None, shift: float = 0.0):
        dim, w = _dimension(dim, weights, "SumOfLogs")
        if np.any(w < 0):
            raise UtilityError(f"SumOfLogs weights must be non-negative (concavity), got {w}.")
        if not _finite_number(shift) or shift < 0:
            raise UtilityError(f"SumOfLogs shift must be a finite number >= 0, got {shift!r}.")
        super().__init__(dim)
        self.weights, self.shift = w, float(shift)

    def domain_lower(self) -> np.ndarray:
        return np.full(self.dim, -self.shift)

    def value(self, y: np.ndarray) -> float:
        z = self.check_input(y) + self.shift
        if np.any(z <= 0):
            return -math.inf
        return float(self.weights @ np.log(z))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return self.weights / (self.check_input(y) + self.shift)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        z = self.check_input(y) + self.shift
        return np.diag(-self.weights / z**2)

    def describe(self) -> forms.Form | None:
        return forms.Logs(self.weights, self.shift)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(weights=self.weights.tolist(), shift=self.shift)

    def __repr__(self) -> str:
        return f"SumOfLogs(weights={self.weights.tolist()}, shift={self.shift})"


@register_utility
class AlphaFairness(Utility):
    """α-fairness ``f(y) = Σ_k w_k (y_k + shift)^(1-α) / (1-α)``; ``α = 1`` is the sum of logs.

    Parameters
    ----------
    alpha : float
        Fairness level, ``α > 0`` (0 would be linear; larger is fairer).
    dim, weights, shift
        As for :class:`SumOfLogs`.
    """

    curvature = "concave"

    def __init__(self, alpha: float, dim: int | None = None, weights: Any = None, shift: float = 0.0):
        dim, w = _dimension(dim, weights, "AlphaFairness")
        if not _finite_number(alpha) or alpha <= 0:
            raise UtilityError(f"AlphaFairness alpha must be a finite number > 0, got {alpha!r}.")
        if np.any(w < 0):
            raise UtilityError(f"AlphaFairness weights must be non-negative (concavity), got {w}.")
        if not _finite_number(shift) or shift < 0:
            raise UtilityError(f"AlphaFairness shift must be a finite number >= 0, got {shift!r}.")
        super().__init__(dim)
        self.alpha, self.weights, self.shift = float(alpha), w, float(shift)

    def domain_lower(self) -> np.ndarray:
        return np.full(self.dim, -self.shift)

    def value(self, y: np.ndarray) -> float:
        z = self.check_input(y) + self.shift
        if self.alpha == 1.0:
            return -math.inf if np.any(z <= 0) else float(self.weights @ np.log(z))
        if np.any(z < 0) or (self.alpha > 1 and np.any(z == 0)):
            return -math.inf
        return float(self.weights @ (z ** (1 - self.alpha)) / (1 - self.alpha))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        z = self.check_input(y) + self.shift
        return self.weights * z ** (-self.alpha)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        z = self.check_input(y) + self.shift
        return np.diag(-self.alpha * self.weights * z ** (-self.alpha - 1))

    def describe(self) -> forms.Form | None:
        if self.alpha == 1.0:
            return forms.Logs(self.weights, self.shift)
        return forms.Powers(self.weights, 1 - self.alpha, self.shift)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(alpha=self.alpha, weights=self.weights.tolist(), shift=self.shift)

    def __repr__(self) -> str:
        return f"AlphaFairness(alpha={self.alpha}, weights={self.weights.tolist()}, shift={self.shift})"


@register_utility
class MinOfLinear(_PiecewiseAffine):
    """Max-min objective ``f(y) = min_j (M_j·y + c_j)``; LP-representable, not smooth.

    ``MinOfLinear.max_min(K)`` is plain max-min fairness ``min_k y_k``.

    Parameters
    ----------
    matrix : array_like, shape (J, dim)
        One row per linear term.
    offset : array_like, shape (J,), optional
        Constant of each term, default zeros.
    """

    curvature = "concave"

    def __init__(self, matrix: Any, offset: Any = None):
        m = _matrix(matrix, "MinOfLinear matrix")
        c = np.zeros(m.shape[0]) if offset is None else _vector(offset, "MinOfLinear offset", m.shape[0])
        super().__init__(m, c)

    @classmethod
    def max_min(cls, dim: int) -> MinOfLinear:
        """Max-min fairness ``min_k y_k`` over ``dim`` signals."""
        return cls(np.eye(dim))

    def to_spec(self) -> dict[str, Any]:
        return self._spec(matrix=self.matrix.tolist(), offset=self.offset.tolist())

    def __repr__(self) -> str:
        return f"MinOfLinear(terms={self.matrix.shape[0]}, dim={self.dim})"


@register_utility
class Entropy(Utility):
    """Entropy objective ``f(y) = -Σ_k y_k ln(y_k + η)`` (maximum-entropy exploration).

    Parameters
    ----------
    dim : int
        Number of signals (``S·A`` for state-action indicators).
    shift : float, default 0
        The shift ``η >= 0``; a positive shift keeps the gradient finite at 0.
    """

    curvature = "concave"

    def __init__(self, dim: int, shift: float = 0.0):
        if not _finite_number(shift) or shift < 0:
            raise UtilityError(f"Entropy shift must be a finite number >= 0, got {shift!r}.")
        super().__init__(dim)
        self.shift = float(shift)

    def domain_lower(self) -> np.ndarray:
        return np.zeros(self.dim)

    def value(self, y: np.ndarray) -> float:
        y = self.check_input(y)
        if np.any(y < 0):
            return -math.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(y > 0, y * np.log(y + self.shift), 0.0)
        return float(-terms.sum())

    def gradient(self, y: np.ndarray) -> np.ndarray:
        y = self.check_input(y)
        z = y + self.shift
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.log(z) - np.where(z > 0, y / z, 0.0)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        z = self.check_input(y) + self.shift
        with np.errstate(divide="ignore"):
            return np.diag(-1.0 / z - self.shift / z**2)

    def describe(self) -> forms.Form | None:
        return forms.Entropy(self.dim, self.shift)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(dim=self.dim, shift=self.shift)

    def __repr__(self) -> str:
        return f"Entropy(dim={self.dim}, shift={self.shift})"


# ----------------------------------------------------------------------------
# Convex constraints (g(ζ) <= 0)
# ----------------------------------------------------------------------------


@register_utility
class LinearBound(_PiecewiseAffine):
    """Linear constraint ``g(y) = w·y - bound`` (feasible when ``w·y <= bound``).

    ``LinearBound([-1, 0], 0)`` says "the first average cost is at least 0".

    Parameters
    ----------
    weights : array_like, shape (dim,)
    bound : float
    """

    curvature = "affine"
    smooth = True

    def __init__(self, weights: Any, bound: float = 0.0):
        w = _vector(weights, "LinearBound weights")
        b = _vector(bound, "LinearBound bound", 1)
        super().__init__(w.reshape(1, -1), -b)
        self.weights, self.bound = w, float(b[0])

    def to_spec(self) -> dict[str, Any]:
        return self._spec(weights=self.weights.tolist(), bound=self.bound)

    def __repr__(self) -> str:
        return f"LinearBound(weights={self.weights.tolist()}, bound={self.bound})"


@register_utility
class MaxOfLinear(_PiecewiseAffine):
    """``g(y) = max_j (M_j·y - b_j)``: every ``M_j·y <= b_j``; LP-representable, not smooth.

    Parameters
    ----------
    matrix : array_like, shape (J, dim)
    bounds : array_like, shape (J,), optional
        Default zeros.
    """

    curvature = "convex"

    def __init__(self, matrix: Any, bounds: Any = None):
        m = _matrix(matrix, "MaxOfLinear matrix")
        b = np.zeros(m.shape[0]) if bounds is None else _vector(bounds, "MaxOfLinear bounds", m.shape[0])
        super().__init__(m, -b)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(matrix=self.matrix.tolist(), bounds=(-self.offset).tolist())

    def __repr__(self) -> str:
        return f"MaxOfLinear(terms={self.matrix.shape[0]}, dim={self.dim})"


@register_utility
class ConvexQuadratic(Utility):
    """Convex quadratic ``g(y) = yᵀQy + q·y + c`` with ``Q`` symmetric positive semidefinite.

    Parameters
    ----------
    matrix : array_like, shape (dim, dim)
        ``Q``; refused unless symmetric and positive semidefinite (to 1e-10).
    linear : array_like, shape (dim,), optional
        ``q``, default zeros.
    constant : float, default 0
        ``c``.
    """

    curvature = "convex"

    def __init__(self, matrix: Any, linear: Any = None, constant: float = 0.0):
        q_mat = _matrix(matrix, "ConvexQuadratic matrix")
        n = q_mat.shape[0]
        if q_mat.shape != (n, n):
            raise UtilityError(f"ConvexQuadratic matrix must be square, got shape {q_mat.shape}.")
        if not np.allclose(q_mat, q_mat.T, atol=1e-12):
            raise UtilityError("ConvexQuadratic matrix must be symmetric.")
        low = float(np.linalg.eigvalsh(q_mat).min())
        if low < -1e-10:
            raise UtilityError(
                f"ConvexQuadratic matrix is not positive semidefinite (smallest eigenvalue {low:.3g}):"
                " the constraint would not be convex."
            )
        super().__init__(n)
        self.matrix = q_mat
        self.linear = np.zeros(n) if linear is None else _vector(linear, "ConvexQuadratic linear", n)
        self.constant = float(_vector(constant, "ConvexQuadratic constant", 1)[0])

    def value(self, y: np.ndarray) -> float:
        y = self.check_input(y)
        return float(y @ self.matrix @ y + self.linear @ y + self.constant)

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return 2 * self.matrix @ self.check_input(y) + self.linear

    def hessian(self, y: np.ndarray) -> np.ndarray:
        return 2 * self.matrix.copy()

    def describe(self) -> forms.Form | None:
        return forms.Quadratic(self.matrix, self.linear, self.constant)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(matrix=self.matrix.tolist(), linear=self.linear.tolist(), constant=self.constant)

    def __repr__(self) -> str:
        return f"ConvexQuadratic(dim={self.dim})"


@register_utility
class Norm(Utility):
    """Norm ball ``g(y) = ||y - center||_ord - radius`` (ord 1, 2 or inf).

    ord 1 and inf are LP-representable (as a max of affine pieces); ord 2 is
    smooth away from the center and conic for CVXPY.

    Parameters
    ----------
    center : array_like, shape (dim,)
    radius : float
        Must be >= 0.
    ord : {1, 2, inf}, default 2
    """

    curvature = "convex"
    #: ord=1 enumerates 2**dim sign patterns; beyond this size it is not offered as an LP (read-only here: the
    #: limit is :data:`curlopt.utilities.forms.MAX_L1_PIECES_DIM`, where the pieces are made)
    MAX_L1_PIECES_DIM = forms.MAX_L1_PIECES_DIM

    def __init__(self, center: Any, radius: float, ord: float = 2):
        c = _vector(center, "Norm center")
        if ord not in (1, 2, math.inf):
            raise UtilityError(f"Norm ord must be 1, 2 or inf, got {ord!r}.")
        if not _finite_number(radius) or radius < 0:
            raise UtilityError(f"Norm radius must be a finite number >= 0, got {radius!r}.")
        super().__init__(c.size)
        self.center, self.radius, self.ord = c, float(radius), ord
        self.smooth = ord == 2  # ord 1 and inf have kinks

    def value(self, y: np.ndarray) -> float:
        return float(np.linalg.norm(self.check_input(y) - self.center, self.ord) - self.radius)

    def gradient(self, y: np.ndarray) -> np.ndarray:
        u = self.check_input(y) - self.center
        if self.ord == 2:
            n = np.linalg.norm(u)
            return u / n if n > 0 else np.zeros_like(u)
        if self.ord == 1:
            return np.sign(u)
        g = np.zeros_like(u)
        i = int(np.argmax(np.abs(u)))
        g[i] = np.sign(u[i])
        return g

    def hessian(self, y: np.ndarray) -> np.ndarray:
        u = self.check_input(y) - self.center
        if self.ord != 2:
            return np.zeros((self.dim, self.dim))
        n = np.linalg.norm(u)
        if n == 0:
            return np.zeros((self.dim, self.dim))
        return (np.eye(self.dim) - np.outer(u, u) / n**2) / n

    def describe(self) -> forms.Form | None:
        return forms.Norm(self.center, self.radius, self.ord)

    def to_spec(self) -> dict[str, Any]:
        return self._spec(center=self.center.tolist(), radius=self.radius,
                          ord="inf" if self.ord == math.inf else self.ord)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Utility:
        arguments = {key: value for key, value in spec.items() if key != "type"}
        if arguments.get("ord") == "inf":  # JSON has no infinity
            arguments["ord"] = math.inf
        return cls(**arguments)

    def __repr__(self) -> str:
        return f"Norm(center={self.center.tolist()}, radius={self.radius}, ord={self.ord})"


class CustomUtility(Utility):
    """A utility made from callables, for users who would rather not subclass.

    Parameters
    ----------
    dim : int
        Input length.
    curvature : {"concave", "convex", "affine"}
        What the function is; backends rely on it (CVXPY also checks DCP).
    value : callable ``y -> float``
    gradient : callable ``y -> (dim,)``, optional
    hessian : callable ``y -> (dim, dim)``, optional
        Needed by the ``pyomo`` bridge's exact derivatives only if ``pyomo`` is not given.
    cvxpy : callable ``cvxpy expression -> cvxpy expression``, optional
        Enables the ``cvxpy`` backend.
    pyomo : callable ``sequence of Pyomo expressions -> Pyomo expression``, optional
        Enables the ``pyomo`` backend.
    pieces : tuple (W, c), optional
        Affine pieces; enables the LP backends (``highs``, ``scipy``).
    form : curlopt.utilities.forms.Form, optional
        The function's backend-neutral form, for every backend that compiles it (the
        callables above, when given, come first).
    smooth : bool, default True
    name : str, optional
        Shown in messages.
    lower : array_like, optional
        Lower end of the domain (e.g. ``-shift`` for a logarithm).
    """

    def __init__(
        self,
        dim: int,
        curvature: str,
        value: Callable[[np.ndarray], float],
        gradient: Callable[[np.ndarray], Any] | None = None,
        hessian: Callable[[np.ndarray], Any] | None = None,
        cvxpy: Callable[[Any], Any] | None = None,
        pyomo: Callable[[Sequence[Any]], Any] | None = None,
        pieces: Sequence[Any] | None = None,
        smooth: bool = True,
        name: str = "CustomUtility",
        lower: Any = None,
        form: forms.Form | None = None,
    ) -> None:
        if curvature not in CURVATURES:
            raise UtilityError(f"curvature must be one of {CURVATURES}, got {curvature!r}.")
        if not callable(value):
            raise UtilityError("value must be a callable y -> float.")
        for label, fn in (("gradient", gradient), ("hessian", hessian), ("cvxpy", cvxpy), ("pyomo", pyomo)):
            if fn is not None and not callable(fn):
                raise UtilityError(f"{label} must be callable or None.")
        self.curvature = curvature  # instance attribute shadows the class default
        self.smooth = bool(smooth)
        super().__init__(dim)
        self._value, self._gradient, self._hessian = value, gradient, hessian
        self._cvxpy, self._pyomo, self._name = cvxpy, pyomo, name
        self._pieces: tuple[np.ndarray, np.ndarray] | None = None
        if pieces is not None:
            if isinstance(pieces, (str, bytes)) or not isinstance(pieces, (tuple, list)) or len(pieces) != 2:
                raise UtilityError(f"{name} pieces must be a pair (W, c) of a matrix and a vector, got {pieces!r}.")
            w = _matrix(pieces[0], f"{name} pieces W", self.dim)
            self._pieces = (w, _vector(pieces[1], f"{name} pieces c", w.shape[0]))
        self._lower = np.full(self.dim, -np.inf) if lower is None else _vector(lower, f"{name} lower", self.dim)
        if form is not None and not (isinstance(form, forms.Form) and form.dim == self.dim):
            raise UtilityError(f"{name} form must be a curlopt.utilities.forms.Form of input length {self.dim},"
                               f" got {form!r}.")
        self._form = form

    def value(self, y: np.ndarray) -> float:
        return float(self._value(self.check_input(y)))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        if self._gradient is None:
            raise NotImplementedError(f"{self._name} has no gradient; pass gradient=... to CustomUtility.")
        return np.asarray(self._gradient(self.check_input(y)), dtype=float).reshape(self.dim)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        if self._hessian is None:
            raise NotImplementedError(f"{self._name} has no hessian; pass hessian=... to CustomUtility.")
        return np.asarray(self._hessian(self.check_input(y)), dtype=float).reshape(self.dim, self.dim)

    def domain_lower(self) -> np.ndarray:
        return self._lower.copy()

    def describe(self) -> forms.Form | None:
        return self._form

    def affine_pieces(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._pieces is None:
            return forms.affine_pieces(self._form)
        return self._pieces[0].copy(), self._pieces[1].copy()

    def cvxpy_expr(self, y: Any) -> Any:
        if self._cvxpy is None:
            raise NotImplementedError
        return self._cvxpy(y)

    def pyomo_expr(self, y: Sequence[Any]) -> Any:
        if self._pyomo is None:
            raise NotImplementedError
        return self._pyomo(y)

    @property
    def has_cvxpy(self) -> bool:
        return self._cvxpy is not None

    @property
    def has_pyomo(self) -> bool:
        return self._pyomo is not None

    def __repr__(self) -> str:
        return f"{self._name}(dim={self.dim}, {self.curvature})"


def onto_domain(utility: Utility, y: Any, tolerance: float) -> np.ndarray:
    """``y`` with every entry below ``utility``'s domain by at most ``tolerance`` moved onto its lower bound.

    A solver holds a program's rows and bounds only to a tolerance, so an aggregate that is zero at every feasible
    point (a pair no policy reaches within an episode) may come back as ``-5e-11``: outside an entropy's domain
    ``y >= 0``, where its value is ``-inf``, although the point is on the boundary, where the value is finite.
    Entries further below the bound are left as they are (the utility then says they are outside its domain), and
    so is a bound whose value is itself infinite (a log at 0 stays ``-inf`` on the bound). A utility without a
    lower bound (``-inf``), or whose ``domain_lower`` does not give one of the right size, is left unchanged.

    Parameters
    ----------
    utility : Utility
    y : array_like, shape (dim,)
    tolerance : float
        How far below the bound an entry may be (the rows' feasibility tolerance), ``>= 0``.

    Returns
    -------
    numpy.ndarray
        A new array (``y`` is not changed).
    """
    point = np.array(y, dtype=float, copy=True)
    if getattr(utility.domain_lower, "__func__", None) is Utility.domain_lower:
        return point  # the default domain, unbounded below (every solve's check asks): nothing to move
    lower = np.asarray(utility.domain_lower(), dtype=float)
    if lower.shape != point.shape:
        return point
    near = np.isfinite(lower) & (point < lower) & (point >= lower - float(tolerance))
    point[near] = lower[near]
    return point


def curvature_violation(utility: Utility, points: int = 16, seed: int = 0) -> tuple[np.ndarray, float] | None:
    """A point where ``utility``'s Hessian contradicts its declared curvature, or None.

    A sampled, necessary check (not a proof): ``points`` random points inside the
    domain (above ``domain_lower()``, where finite) are tried; a concave utility
    must have no Hessian eigenvalue above ``1e-8 (1 + ||H||)``, a convex one none
    below its negative. Utilities without a numpy Hessian are not checked.
    """
    if utility.curvature == "affine":
        return None
    rng = np.random.default_rng(seed)
    lower = np.asarray(utility.domain_lower(), dtype=float)
    for _ in range(points):
        base = np.where(np.isfinite(lower), lower, 0.0)
        y = base + rng.uniform(0.05, 2.0, size=utility.dim) * np.where(np.isfinite(lower), 1.0, rng.choice([-1.0, 1.0], size=utility.dim))
        try:
            hessian = np.asarray(utility.hessian(y), dtype=float)
        except NotImplementedError:
            return None
        if not np.all(np.isfinite(hessian)):
            continue
        eigenvalues = np.linalg.eigvalsh((hessian + hessian.T) / 2)
        scale = 1e-8 * (1.0 + np.abs(hessian).max())
        if utility.curvature == "concave" and eigenvalues.max() > scale:
            return y, float(eigenvalues.max())
        if utility.curvature == "convex" and eigenvalues.min() < -scale:
            return y, float(eigenvalues.min())
    return None

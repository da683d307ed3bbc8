"""Utilities described once: small backend-neutral forms that every backend compiles.

A utility says *what* function it is by returning a form from ``describe()``; each
backend turns forms into its own modelling language (the ``cvxpy`` backend into
CVXPY expressions, the ``pyomo`` backend into Pyomo expressions) and the LP
backends read affine pieces from them (:func:`affine_pieces`). A new utility is
then one class in one file: its numpy ``value``, ``gradient`` and ``hessian`` and
its form; no backend code.

Leaves
------
:class:`AffinePieces`
    ``min_j (W_j·y + c_j)`` (``combine="min"``, concave), ``max_j (W_j·y + c_j)``
    (``"max"``, convex), or one affine function ``W_0·y + c_0`` (``"affine"``).
:class:`Logs`
    ``Σ_k w_k ln(y_k + shift)``.
:class:`Powers`
    ``Σ_k w_k (y_k + shift)^p / p`` (α-fairness with ``p = 1 - α``).
:class:`Entropy`
    ``-Σ_k y_k ln(y_k + shift)``.
:class:`Quadratic`
    ``yᵀQy + q·y + c`` with ``Q`` positive semidefinite.
:class:`Norm`
    ``||y - center||_ord - radius`` for ord 1, 2 or inf.
:class:`Of`
    Another utility, as that utility is compiled (its own form, or the optional
    expressions of a custom utility): how compositions take utilities.

Compositions
------------
:class:`Sum` (``Σ_i h_i(y)``), :class:`HeadPlusLinear` (``h(y[:n]) + k·y[n:]``),
:class:`Negated` (``-h(y)``), :class:`Minimum` and :class:`Maximum` (pointwise
``min_i h_i(y)`` and ``max_i h_i(y)``).

Forms hold numbers (and, in :class:`Of`, utilities); this module imports no solver package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UtilityError

__all__ = [
    "Form",
    "AffinePieces",
    "Logs",
    "Powers",
    "Entropy",
    "Quadratic",
    "Norm",
    "Of",
    "Sum",
    "HeadPlusLinear",
    "Negated",
    "Minimum",
    "Maximum",
    "affine_pieces",
    "is_separable",
    "MAX_L1_PIECES_DIM",
]

#: an L1 ball enumerates 2**dim sign patterns as affine pieces; beyond this size it is not offered as an LP
MAX_L1_PIECES_DIM = 10


def _array(value: Any, ndim: int, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim != ndim or array.size == 0:
        raise UtilityError(f"{name} must be a non-empty {ndim}-D array, got shape {array.shape}.")
    return array


#: how a form's ``__post_init__`` converts a field, by the kind its class declares in ``_kinds``
_CONVERT = {
    "vector": lambda value, name: _array(value, 1, name),
    "matrix": lambda value, name: _array(value, 2, name),
    "number": lambda value, name: float(value),
    "forms": lambda value, name: tuple(value),
}


class Form:
    """A description of a function of a vector ``y`` of length ``dim``.

    Forms are frozen dataclasses; each converts its fields as its ``_kinds`` say (numbers to floats,
    vectors and matrices to float arrays) and sets ``dim``.
    """

    dim: int
    _kinds: dict[str, str] = {}
    #: the array field whose last axis has the input length (None: see ``_input_length``)
    _sized_by: str | None = None

    def __post_init__(self) -> None:
        for name, kind in self._kinds.items():
            object.__setattr__(self, name, _CONVERT[kind](getattr(self, name), f"{type(self).__name__} {name}"))
        object.__setattr__(self, "dim", int(self._input_length()))
        self._check()

    def _input_length(self) -> int:
        return self.dim if self._sized_by is None else getattr(self, self._sized_by).shape[-1]

    def _check(self) -> None:
        """Raise UtilityError for fields that do not fit together."""

    def children(self) -> tuple[Form, ...]:
        """The forms this one is made of (none for a leaf)."""
        return ()


# ----------------------------------------------------------------------------
# Leaves
# ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AffinePieces(Form):
    """``min_j`` (``combine="min"``) or ``max_j`` (``"max"``) of ``matrix_j·y + offset_j``; ``"affine"``: one piece.

    Parameters
    ----------
    matrix : array_like, shape (J, dim)
    offset : array_like, shape (J,)
    combine : {"affine", "min", "max"}
    """

    matrix: np.ndarray
    offset: np.ndarray
    combine: str = "affine"
    _kinds = {"matrix": "matrix", "offset": "vector"}
    _sized_by = "matrix"

    def _check(self) -> None:
        rows = self.matrix.shape[0]
        if self.offset.size != rows:
            raise UtilityError(f"AffinePieces: {rows} rows but {self.offset.size} offsets.")
        if self.combine not in ("affine", "min", "max"):
            raise UtilityError(f"AffinePieces combine must be 'affine', 'min' or 'max', got {self.combine!r}.")
        if self.combine == "affine" and rows != 1:
            raise UtilityError(f"an affine AffinePieces has one row, got {rows}.")


@dataclass(frozen=True, eq=False)
class Logs(Form):
    """``Σ_k w_k ln(y_k + shift)``."""

    weights: np.ndarray
    shift: float = 0.0
    _kinds = {"weights": "vector", "shift": "number"}
    _sized_by = "weights"


@dataclass(frozen=True, eq=False)
class Powers(Form):
    """``Σ_k w_k (y_k + shift)^exponent / exponent`` (``exponent = 1 - α`` for α-fairness, non-zero)."""

    weights: np.ndarray
    exponent: float
    shift: float = 0.0
    _kinds = {"weights": "vector", "exponent": "number", "shift": "number"}
    _sized_by = "weights"

    def _check(self) -> None:
        if not self.exponent or not math.isfinite(self.exponent):
            raise UtilityError(f"Powers exponent must be finite and non-zero, got {self.exponent!r}.")


@dataclass(frozen=True, eq=False)
class Entropy(Form):
    """``-Σ_k y_k ln(y_k + shift)`` over ``dim`` entries."""

    dim: int
    shift: float = 0.0
    _kinds = {"shift": "number"}


@dataclass(frozen=True, eq=False)
class Quadratic(Form):
    """``yᵀ Q y + q·y + c`` (``Q`` symmetric positive semidefinite: the caller checks)."""

    matrix: np.ndarray
    linear: np.ndarray
    constant: float = 0.0
    _kinds = {"matrix": "matrix", "linear": "vector", "constant": "number"}
    _sized_by = "linear"

    def _check(self) -> None:
        if self.matrix.shape != (self.dim, self.dim):
            raise UtilityError(f"Quadratic matrix must have shape {(self.dim, self.dim)}, got {self.matrix.shape}.")


@dataclass(frozen=True, eq=False)
class Norm(Form):
    """``||y - center||_ord - radius`` with ``ord`` in 1, 2, inf."""

    center: np.ndarray
    radius: float
    ord: float = 2
    _kinds = {"center": "vector", "radius": "number"}
    _sized_by = "center"

    def _check(self) -> None:
        if self.ord not in (1, 2, math.inf):
            raise UtilityError(f"Norm ord must be 1, 2 or inf, got {self.ord!r}.")


@dataclass(frozen=True, eq=False)
class Of(Form):
    """Another utility, compiled as that utility is (its own form, or its optional expressions)."""

    utility: Any

    def _input_length(self) -> int:
        return self.utility.dim


# ----------------------------------------------------------------------------
# Compositions
# ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Terms(Form):
    terms: tuple[Form, ...]
    _kinds = {"terms": "forms"}

    def _input_length(self) -> int:
        dims = {term.dim for term in self.terms}
        if not dims:
            raise UtilityError(f"{type(self).__name__} needs at least one term.")
        if len(dims) != 1:
            raise UtilityError(f"{type(self).__name__} needs terms of one input length, got {sorted(dims)}.")
        return dims.pop()

    def children(self) -> tuple[Form, ...]:
        return self.terms


@dataclass(frozen=True, eq=False)
class Sum(_Terms):
    """``Σ_i h_i(y)``, in the order given."""


@dataclass(frozen=True, eq=False)
class Minimum(_Terms):
    """``min_i h_i(y)`` (concave when every ``h_i`` is)."""


@dataclass(frozen=True, eq=False)
class Maximum(_Terms):
    """``max_i h_i(y)`` (convex when every ``h_i`` is)."""


@dataclass(frozen=True, eq=False)
class Negated(Form):
    """``-h(y)``."""

    inner: Form

    def _input_length(self) -> int:
        return self.inner.dim

    def children(self) -> tuple[Form, ...]:
        return (self.inner,)


@dataclass(frozen=True, eq=False)
class HeadPlusLinear(Form):
    """``h(y[:n]) + k·y[n:]`` on ``y`` of length ``n + len(k)``, ``n = head.dim``."""

    head: Form
    coefficients: np.ndarray
    _kinds = {"coefficients": "vector"}

    def _input_length(self) -> int:
        return self.head.dim + self.coefficients.size

    def children(self) -> tuple[Form, ...]:
        return (self.head,)


# ----------------------------------------------------------------------------
# What the backends read
# ----------------------------------------------------------------------------


def is_separable(form: Form | None) -> bool:
    """True for a sum of one-variable terms (its Hessian is diagonal): :class:`Logs`, :class:`Powers`,
    :class:`Entropy`."""
    return isinstance(form, (Logs, Powers, Entropy))


def affine_pieces(form: Form | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(W, c)`` with the function ``min_j`` (concave) or ``max_j`` (convex) of ``W_j·y + c_j``, or None.

    None when the form is not LP-representable (a logarithm, a 2-norm, a minimum of convex terms, an L1
    ball in more than :data:`MAX_L1_PIECES_DIM` dimensions, ...).
    """
    found = _pieces(form) if form is not None else None
    return None if found is None else (found[0], found[1])


def _pieces(form: Form) -> tuple[np.ndarray, np.ndarray, str] | None:
    """``(W, c, combine)``; combine is "affine" (one piece), "min" or "max"."""
    if isinstance(form, AffinePieces):
        return form.matrix.copy(), form.offset.copy(), form.combine
    if isinstance(form, Norm):
        return _norm_pieces(form)
    if isinstance(form, Of):
        return _utility_pieces(form.utility)
    if isinstance(form, HeadPlusLinear):
        head = _pieces(form.head)
        if head is None:
            return None
        w, c, combine = head
        # every piece gets the same linear term: min_j / max_j (W_j y + c_j) + k·z
        return np.hstack([w, np.tile(form.coefficients, (w.shape[0], 1))]), c, combine
    if isinstance(form, Negated):
        inner = _pieces(form.inner)
        if inner is None:
            return None
        w, c, combine = inner
        return -w, -c, {"affine": "affine", "min": "max", "max": "min"}[combine]
    if isinstance(form, (Minimum, Maximum)):
        return _extremum_pieces(form)
    if isinstance(form, Sum):
        return _sum_pieces(form)
    return None


def _utility_pieces(utility: Any) -> tuple[np.ndarray, np.ndarray, str] | None:
    pieces = utility.affine_pieces()
    if pieces is None:
        return None
    w, c = pieces
    if utility.curvature == "affine" and w.shape[0] == 1:
        return w, c, "affine"
    return w, c, "min" if utility.curvature == "concave" else "max"


def _norm_pieces(form: Norm) -> tuple[np.ndarray, np.ndarray, str] | None:
    if form.ord == math.inf:
        w = np.vstack([np.eye(form.dim), -np.eye(form.dim)])
    elif form.ord == 1 and form.dim <= MAX_L1_PIECES_DIM:
        w = np.array(np.meshgrid(*[[1.0, -1.0]] * form.dim, indexing="ij")).reshape(form.dim, -1).T
    else:
        return None
    return w, -(w @ form.center) - form.radius, "max"


def _all_pieces(terms: tuple[Form, ...]) -> list[tuple[np.ndarray, np.ndarray, str]] | None:
    """The pieces of every term, or None when some term has none."""
    parts = [_pieces(term) for term in terms]
    found = [p for p in parts if p is not None]
    return found if len(found) == len(parts) else None


def _extremum_pieces(form: Minimum | Maximum) -> tuple[np.ndarray, np.ndarray, str] | None:
    combine = "min" if isinstance(form, Minimum) else "max"
    parts = _all_pieces(form.terms)
    if parts is None or any(p[2] not in ("affine", combine) for p in parts):
        return None
    return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), combine


def _sum_pieces(form: Sum) -> tuple[np.ndarray, np.ndarray, str] | None:
    """A sum of minima is the minimum over every choice of one piece per term (likewise for maxima)."""
    parts = _all_pieces(form.terms)
    if parts is None:
        return None
    kinds = {p[2] for p in parts} - {"affine"}
    if len(kinds) > 1:
        return None  # a min plus a max is neither concave nor convex
    w, c = parts[0][0], parts[0][1]
    for other_w, other_c, _ in parts[1:]:
        w = (w[:, None, :] + other_w[None, :, :]).reshape(-1, w.shape[1])
        c = (c[:, None] + other_c[None, :]).reshape(-1)
    return w, c, kinds.pop() if kinds else "affine"

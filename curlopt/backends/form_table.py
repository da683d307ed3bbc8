"""How a backend compiles utility forms: one table from form class to compile function.

Every backend declares a :class:`FormTable` (``Backend.FORMS``): for each form class of
:mod:`curlopt.utilities.forms` either a compile function (a :class:`Rule`, which may still refuse some
forms of its class, e.g. a 1-norm where only the 2-norm is smooth) or a reason the backend refuses the
whole class. A form class in neither is unknown to the backend and refused as such, never compiled by
accident; tests/test_backend_contracts.py checks that every form class of the module is declared by
every registered backend.

A compile function takes ``(form, y, compile)``: the form, the backend's expression of the input vector
``y``, and a :class:`FormCompiler` that compiles the form's children (``compile(child, y)``) and knows
the role of the utility being compiled ("the objective", "constraint 0") for error messages. What it
returns is the backend's: a CVXPY expression, a Pyomo expression, or (the LP backends) affine pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..utilities import forms

__all__ = ["Rule", "FormTable", "FormCompiler", "affine_pieces_table"]


@dataclass(frozen=True)
class Rule:
    """How a backend compiles the forms of one class.

    Parameters
    ----------
    compile : callable
        ``(form, y, compile) -> expression`` (see the module doc).
    refuses : callable, optional
        ``form -> str | None``: why this backend cannot compile this particular form (its children are
        judged on their own), or None when it can. Omitted: every form of the class is compiled.
    """

    # typed loosely: each rule takes the forms of its own class (a subclass of Form)
    compile: Callable[..., Any]
    refuses: Callable[[Any], str | None] | None = None


class FormCompiler:
    """Compiles forms through one table for one utility's ``role``; handed to compile functions."""

    def __init__(self, table: FormTable, role: str):
        self.table = table
        self.role = role

    def __call__(self, form: forms.Form, y: Any) -> Any:
        return self.table.compile(form, y, self.role)


class FormTable:
    """A backend's ``{form class: compile rule}`` and ``{form class: reason refused}``.

    Parameters
    ----------
    backend : str
        The backend's name, for messages.
    compiled : mapping of form class to Rule or compile function
        The classes the backend compiles (a bare function is a :class:`Rule` without refusals).
    refused : mapping of form class to str
        The classes the backend refuses, each with the reason in words.
    """

    def __init__(self, backend: str, compiled: Mapping[type, Rule | Callable[..., Any]],
                 refused: Mapping[type, str]):
        both = sorted(c.__name__ for c in set(compiled) & set(refused))
        if both:
            raise TypeError(f"the {backend} backend's form table both compiles and refuses {', '.join(both)}.")
        self.backend = backend
        self.compiled: dict[type, Rule] = {
            klass: rule if isinstance(rule, Rule) else Rule(rule) for klass, rule in compiled.items()}
        self.refused: dict[type, str] = dict(refused)

    def declares(self, form_class: type) -> bool:
        """True when the table says what it does with ``form_class`` (compiles or refuses it)."""
        return form_class in self.compiled or form_class in self.refused

    def refusal(self, form: forms.Form) -> str | None:
        """Why the backend cannot compile ``form`` (the first part it refuses, children first), or None."""
        klass = type(form)
        if klass in self.refused:
            return f"{klass.__name__}: {self.refused[klass]}"
        rule = self.compiled.get(klass)
        if rule is None:
            return f"{klass.__name__} is not a form the {self.backend} backend knows"
        for child in form.children():
            reason = self.refusal(child)
            if reason is not None:
                return reason
        if rule.refuses is not None:
            reason = rule.refuses(form)
            if reason is not None:
                return f"{klass.__name__}: {reason}"
        return None

    def can(self, form: forms.Form | None) -> bool:
        """True when ``form`` is a form and the backend compiles all of it."""
        return form is not None and self.refusal(form) is None

    def compile(self, form: forms.Form, y: Any, role: str = "the utility") -> Any:
        """The backend's expression of ``form`` at ``y``.

        Raises
        ------
        NotImplementedError
            For a form class the table refuses or does not know (the message says which and why). A rule's
            own refusals are not checked here: call :meth:`refusal` on the whole form first.
        """
        rule = self.compiled.get(type(form))
        if rule is None:
            raise NotImplementedError(f"the {self.backend} backend cannot compile {self.refusal(form)}.")
        return rule.compile(form, y, FormCompiler(self, role))


# ----------------------------------------------------------------------------
# The LP backends: forms become affine pieces
# ----------------------------------------------------------------------------


def _pieces(form: Any, y: Any, compile: FormCompiler) -> Any:
    """``(W, c)``: the form as the minimum (concave) or maximum (convex) of ``W_j·y + c_j`` (y is not used)."""
    return forms.affine_pieces(form)


def _without_pieces(why: str) -> Callable[[forms.Form], str | None]:
    return lambda form: None if forms.affine_pieces(form) is not None else why


_NO_PIECES = Rule(_pieces, _without_pieces("it has no affine pieces"))

def affine_pieces_table(backend: str) -> FormTable:
    """The form table of an LP backend (``highs``, ``highs-columns``, ``scipy``) named ``backend``.

    A form is compiled to its affine pieces by :func:`curlopt.utilities.forms.affine_pieces`, which
    :class:`curlopt.programs.lp.LPForm` turns into rows (an epigraph for an objective with several pieces, a
    row per piece of a constraint); smooth nonlinear forms are refused.
    """
    return FormTable(
        backend,
        {
            forms.AffinePieces: _pieces,
            forms.Norm: Rule(_pieces, _without_pieces(
                f"only the 1-norm (up to {forms.MAX_L1_PIECES_DIM} entries) and the inf-norm are piecewise linear")),
            forms.Of: Rule(_pieces, lambda form: None if form.utility.affine_pieces() is not None
                           else f"{form.utility!r} has no affine pieces"),
            forms.HeadPlusLinear: _NO_PIECES,
            forms.Negated: _NO_PIECES,
            forms.Sum: Rule(_pieces, _without_pieces(
                "a sum of a minimum and a maximum of affine pieces is neither concave nor convex")),
            forms.Minimum: Rule(_pieces, _without_pieces(
                "only a minimum of concave piecewise-linear terms has affine pieces")),
            forms.Maximum: Rule(_pieces, _without_pieces(
                "only a maximum of convex piecewise-linear terms has affine pieces")),
        },
        {
            forms.Logs: "a logarithm is not piecewise linear",
            forms.Powers: "a power is not piecewise linear",
            forms.Entropy: "an entropy is not piecewise linear",
            forms.Quadratic: "a quadratic is not piecewise linear",
        },
    )

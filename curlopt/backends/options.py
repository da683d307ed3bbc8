"""What a backend takes: its keyword options, declared once and checked in one place.

A backend class lists its own options as :class:`Option` entries in ``OPTIONS`` (after Pyomo's
``SolverConfig``, which declares each setting with a domain, a default and a description); every
backend also takes the backend-neutral :data:`COMMON_OPTIONS`, ``time_limit`` and ``verbose``.
:meth:`curlopt.backends.base.Backend.__init__` checks the keywords it is given against that declaration
with :func:`check_options`, so every backend refuses an unknown keyword, a value of the wrong type or
a value out of range with the same :class:`~curlopt.errors.BackendOptionError`, naming the option,
the backend, what was expected and the options the backend takes.

Solver-specific pass-through dictionaries (HiGHS options, Ipopt options, CVXPY solver settings) are
declared here as dictionaries with string keys; what is inside them is the solver's to judge, and each
backend tries them on a throwaway solver when it is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendOptionError

__all__ = [
    "Option", "COMMON_OPTIONS", "TIME_LIMIT", "VERBOSE", "check_options", "NUMBER", "INTEGER", "NONE",
    "string_keys", "positive_integer", "refuse_both", "declared", "refuse_unknown",
]

#: what an option that takes a number accepts (``bool`` is refused although Python counts it as an int)
NUMBER: tuple[type, ...] = (int, float, np.integer, np.floating)
#: what an option that takes an integer accepts
INTEGER: tuple[type, ...] = (int, np.integer)
#: add to ``types`` when None is a value (it then usually means "not set")
NONE: tuple[type, ...] = (type(None),)


@dataclass(frozen=True)
class Option:
    """One keyword argument of a backend.

    Parameters
    ----------
    name : str
        The keyword (and the attribute the checked value is stored in on the backend).
    types : tuple of type
        The Python types the value may have. ``bool`` passes only when listed (it is an ``int`` to Python).
    default : object
        The value when the keyword is not given (checked like a given one).
    doc : str
        What the option does, in one sentence (docs and ``help``).
    expects : str
        The accepted values in words, for error messages ("an integer >= 1").
    check : callable, optional
        ``value -> str | None``: what is wrong with a value of the right type (None when nothing is).
    convert : callable, optional
        ``value -> value``: the stored form of an accepted value (e.g. ``float``, a copied dict).
    """

    name: str
    types: tuple[type, ...]
    default: Any
    doc: str
    expects: str
    check: Callable[[Any], str | None] | None = None
    convert: Callable[[Any], Any] | None = None

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this option, or None when it is accepted."""
        if isinstance(value, bool) and bool not in self.types:
            return f"a bool is not {self.expects}"
        if not isinstance(value, self.types):
            return f"a value of type {type(value).__name__}"
        if self.check is not None:
            return self.check(value)
        return None

    def accept(self, value: Any) -> Any:
        """The stored form of an accepted ``value``."""
        return self.convert(value) if self.convert is not None else value


def check_options(backend: str, options: Mapping[str, Option], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared option's value (given, else its default), checked and converted.

    Raises
    ------
    BackendOptionError
        For a keyword that is not declared (its ``unknown`` lists them), or a value an option refuses; the
        message names the backend, the option, what it expects, and the options the backend takes.
    """
    names = list(options)
    refuse_unknown(backend, names, given)
    values = {}
    for name, option in options.items():
        value = given.get(name, option.default)
        problem = option.problem(value)
        if problem is not None:
            raise BackendOptionError(
                f"the {backend} backend's option {name}={_short(value)} is refused: it takes {option.expects}"
                f" ({problem}). The {backend} backend's options: {', '.join(names)}."
            )
        values[name] = option.accept(value)
    return values


def refuse_unknown(backend: str, takes: Sequence[str], given: Mapping[str, Any]) -> None:
    """Raise for the keywords of ``given`` that are not in ``takes`` (the one wording of that refusal).

    Raises
    ------
    BackendOptionError
        Its ``unknown`` lists those keywords; the message names them and the options the backend takes.
    """
    unknown = [key for key in given if key not in takes]
    if unknown:
        raise BackendOptionError(
            f"the {backend} backend does not take option(s) {', '.join(map(repr, sorted(map(str, unknown))))};"
            f" it takes {', '.join(map(repr, takes)) if takes else 'no options'}.",
            [str(key) for key in unknown],
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# ----------------------------------------------------------------------------
# Checks shared by the backends' declarations
# ----------------------------------------------------------------------------


def string_keys(value: Mapping[Any, Any] | None) -> str | None:
    """A pass-through dictionary's keys must be option names (strings)."""
    if value is None:
        return None
    bad = [key for key in value if not isinstance(key, str)]
    return f"keys {bad!r} are not option names" if bad else None


def positive_integer(value: Any) -> str | None:
    return None if value >= 1 else "it is below 1"


def _seconds(value: Any) -> str | None:
    if value is None:
        return None
    return None if math.isfinite(float(value)) and float(value) > 0 else "it must be finite and above 0"


def refuse_both(backend: str, neutral: str, container: str, key: str) -> None:
    """Raise for a setting given twice: as the backend-neutral option ``neutral`` and as ``key`` in the
    pass-through dictionary ``container``."""
    raise BackendOptionError(
        f"the {backend} backend was given both {neutral}=... and {container}[{key!r}]: they set the same solver"
        f" setting; give one of them."
    )


#: the most seconds one ``solve()`` may take, over the ε-tight program and its fallback together
TIME_LIMIT = Option(
    "time_limit", NUMBER + NONE, None,
    "The most seconds one solve() may take (the ε-tight program and its fallback together); reaching it ends"
    " the solve with status time_limit. None: no limit.",
    "a number of seconds above 0, or None", _seconds, lambda value: None if value is None else float(value),
)

#: the solver prints its own log
VERBOSE = Option(
    "verbose", (bool,), False,
    "Let the solver print its own log (on standard output, as the solver writes it).",
    "True or False",
)

#: the options every backend takes, whatever its solver (declared before each backend's own)
COMMON_OPTIONS: tuple[Option, ...] = (TIME_LIMIT, VERBOSE)


def declared(owner: str, own: Sequence[Option]) -> dict[str, Option]:
    """``{name: option}`` of ``own`` then :data:`COMMON_OPTIONS` (the order of the backend's signature).

    Raises
    ------
    TypeError
        When ``own`` names an option twice or redeclares a common one (a mistake in the backend's class).
    """
    out: dict[str, Option] = {}
    for option in (*own, *COMMON_OPTIONS):
        if option.name in out:
            raise TypeError(f"{owner} declares the option {option.name!r} twice (or redeclares a common option).")
        out[option.name] = option
    return out

"""Exception types of curlopt.

Every error a user can provoke derives from :class:`CurloptError`, so a caller
(and the command line) can tell "your input was wrong" from "the toolkit is
broken". Each message says what was wrong and what to do.
"""

from __future__ import annotations

__all__ = [
    "CurloptError",
    "ModelError",
    "UtilityError",
    "UtilityCodeError",
    "ProgramError",
    "BackendError",
    "UnsupportedUtilityError",
    "BackendNotInstalledError",
    "BackendOptionError",
    "EnvError",
    "AgentError",
    "UnsupportedModelError",
]


class CurloptError(ValueError):
    """Base class of every error curlopt raises on bad input or unavailable features."""


class ModelError(CurloptError):
    """A CMDP model was given invalid data (shape, NaN/inf, probabilities, sizes)."""


class UtilityError(CurloptError):
    """A utility was built with invalid parameters or evaluated outside its domain."""


class UtilityCodeError(UtilityError):
    """A utility's own code (its value, gradient, hessian, or cvxpy/Pyomo expression) raised an exception.

    The message names the utility, its role (objective or constraint), the method and the original
    exception, which is chained as ``__cause__``. Solves let this error through instead of turning it
    into a ``solver_error`` status: a bug in a utility is not solver trouble.
    """


class ProgramError(CurloptError):
    """A program was given invalid data (counts, kernel, tightness, time)."""


class BackendError(CurloptError):
    """A backend name is unknown, or a backend was misconfigured."""


class UnsupportedUtilityError(BackendError):
    """A backend cannot express a utility; the message names a backend that can."""


class BackendNotInstalledError(BackendError):
    """A backend's solver package is missing; the message names the extra to install."""


class BackendOptionError(BackendError):
    """A backend was given a keyword argument it does not take, a value its declaration of options refuses
    (wrong type, out of range; see :mod:`curlopt.backends.options`), or a solver option its solver refuses.

    ``unknown`` lists the keyword arguments the backend does not take (empty when the error is about a value).
    """

    def __init__(self, message: str, unknown: tuple[str, ...] | list[str] = ()):
        super().__init__(message)
        self.unknown = sorted(unknown)


class EnvError(CurloptError):
    """An environment was used wrongly (invalid action, step before reset, unknown option)."""


class AgentError(CurloptError):
    """An agent was given an unknown name or an invalid option."""


class UnsupportedModelError(AgentError):
    """An agent (a baseline) was given a model it cannot handle; the message suggests one that can."""

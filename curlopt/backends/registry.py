"""The registry of backends: names to classes, imported only when used."""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BackendError
from ..utilities.library import Utility
from .base import Backend, set_backend_finder
from .options import refuse_unknown

__all__ = [
    "register_backend", "get_backend", "backend_names", "installed_backends", "backends_accepting",
    "choose_backend", "resolve_backend", "auto_candidates", "backend_class",
]

# name -> "module:Class" (imported lazily so that naming a backend never imports its solver)
_BUILTIN = {
    "highs": "curlopt.backends.highs.backend:HighsBackend",
    "cvxpy": "curlopt.backends.cvxpy:CvxpyBackend",
    "pyomo": "curlopt.backends.pyomo.backend:PyomoBackend",
    # the worked example of docs/extending.md; never the ``auto`` choice (see ``auto_choice``)
    "scipy": "curlopt.backends.scipy:ScipyBackend",
    # UC-CURL's optimistic program by column generation (same optimal value as highs); never the ``auto`` choice
    "highs-columns": "curlopt.backends.highs.columns:ColumnsBackend",
    # UCRL-CMDP's box program (and UC-CURL's) by column generation (same optimal value as highs); never ``auto``
    "highs-box-columns": "curlopt.backends.highs.box_columns:BoxColumnsBackend",
    # occupancy programs by column generation with an MDP solver inside (for large kernels); never the ``auto`` choice
    "mdp-columns": "curlopt.backends.mdp.backend:MdpColumnsBackend",
}
_REGISTRY: dict[str, str | type[Backend]] = dict(_BUILTIN)


def register_backend(name: str, backend: type[Backend] | str) -> None:
    """Register a backend class (or a ``"module:Class"`` path) under ``name``."""
    if not isinstance(name, str) or not name:
        raise BackendError(f"a backend name must be a non-empty string, got {name!r}.")
    _REGISTRY[name] = backend


def backend_class(name: str) -> type[Backend]:
    """The class registered as ``name`` (imports its module, not its solver)."""
    try:
        entry = _REGISTRY[name]
    except KeyError:
        raise BackendError(f"unknown backend {name!r}; known backends: {', '.join(backend_names())}.") from None
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        try:
            loaded: type[Backend] = getattr(importlib.import_module(module), attribute)
        except ImportError as exc:  # the backend module itself is missing: a broken install
            raise BackendError(f"backend {name!r} could not be loaded ({exc}).") from exc
        _REGISTRY[name] = entry = loaded
    return entry


def backend_names() -> list[str]:
    """Every registered backend name, installed or not."""
    return list(_REGISTRY)


def installed_backends() -> list[str]:
    """Names of the backends whose solver packages are installed.

    A registered backend whose module cannot be loaded is left out with a warning.
    """
    names = []
    for name in _REGISTRY:
        try:
            if backend_class(name).is_installed():
                names.append(name)
        except BackendError as exc:
            warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
    return names


def backends_accepting(utility: Utility) -> list[str]:
    """Installed backends that can express ``utility``."""
    return [name for name in installed_backends() if backend_class(name).accepts(utility)]


def get_backend(backend: str | Backend = "highs", **options: Any) -> Backend:
    """Return a backend instance from a registry name (with ``options``) or pass an instance through.

    Raises
    ------
    BackendError
        For an unknown name (the message lists the known ones).
    BackendOptionError
        For a keyword the backend does not take (the message names it and lists those it takes), a value
        its declaration refuses (:attr:`Backend.OPTIONS`), or solver settings its solver refuses (each
        backend tries them when it is built).
    """
    if isinstance(backend, Backend):
        if options:
            raise BackendError("options can only be given with a backend name, not with a backend instance.")
        return backend
    if not isinstance(backend, str):
        raise BackendError(f"backend must be a registry name or a Backend instance, got {type(backend).__name__}.")
    cls = backend_class(backend)
    check_keywords(backend, cls, options)
    return cls(**options)


def check_keywords(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise :class:`BackendOptionError` naming the keywords ``factory`` does not take (before calling it)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read: the constructor will say
        return
    parameters = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    takes = [n for n, p in parameters.items()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    refuse_unknown(name, takes, options)


def auto_candidates() -> list[str]:
    """Installed backends ``auto`` may choose, in registry order.

    A backend class that sets ``auto_choice = False`` (:attr:`Backend.auto_choice`; e.g. ``scipy``, which does
    what ``highs`` does without its hot start) is left out: it is used only when named.
    """
    return [name for name in installed_backends() if backend_class(name).auto_choice]


def choose_backend(utilities: Sequence[Utility]) -> str:
    """The ``auto`` choice: ``highs`` when every utility is LP-representable, else the first
    installed backend (in registry order, see :func:`auto_candidates`) that accepts them all.

    Raises
    ------
    BackendError
        When no installed backend accepts every utility.
    """
    utilities = list(utilities)
    if all(u.is_lp_representable for u in utilities) and "highs" in installed_backends():
        return "highs"
    for name in auto_candidates():
        if all(backend_class(name).accepts(u) for u in utilities):
            return name
    raise BackendError(
        f"no installed backend accepts all of {utilities}; install the cvxpy or pyomo backend:"
        " pip install 'curlopt[cvxpy]' or 'curlopt[pyomo]'."
    )


def resolve_backend(backend: str | Backend, utilities: Sequence[Utility], **options: Any) -> Backend:
    """Like :func:`get_backend`, and ``"auto"`` picks one for ``utilities`` (see :func:`choose_backend`)."""
    if isinstance(backend, str) and backend == "auto":
        backend = choose_backend(utilities)
    return get_backend(backend, **options)


set_backend_finder(backends_accepting)  # error messages of Backend.check name the backends that can take a utility

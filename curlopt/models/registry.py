"""The registry of models: names to builders, and the name of each model's Gymnasium id.

A module of its own, below the builders: a builder that builds another model by name (``maxent``
on a base model) imports :func:`build_model` from here without importing the package that
registers it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from ..errors import ModelError
from .cmdp import CMDP

__all__ = ["MODELS", "build_model", "env_name", "on_register", "register_model"]

#: name -> builder, in registration order (built-in models first)
MODELS: dict[str, Callable[..., CMDP]] = {}
#: name -> the name in the model's Gymnasium id, for the models registered with one
_ENV_NAMES: dict[str, str] = {}
#: called with the name after every registration (curlopt.envs adds its Gymnasium registration here)
_HOOKS: list[Callable[[str], None]] = []
# what Gymnasium takes in the name part of an id (no "/" and no "-": "-v0" ends the id)
_ENV_NAME = re.compile(r"[A-Za-z0-9_.]+")


def register_model(name: str, builder: Callable[..., CMDP], env_name: str | None = None) -> None:
    """Make ``builder(**params)`` available as ``name`` (CLI, ``build_model`` and the environments).

    Parameters
    ----------
    name : str
        The registry name, e.g. ``"queue"``.
    builder : callable
        Returns a :class:`curlopt.CMDP` (with a kernel, for an environment) from keyword parameters.
    env_name : str, optional
        The name in the model's Gymnasium id ``curlopt/<env_name>-v0``; default ``name`` in
        CamelCase (``"machine-repair"`` -> ``"MachineRepair"``). Letters, digits, ``_`` and ``.`` only.

    Raises
    ------
    ModelError
        For an empty or non-string name, a builder that is not callable, or an ``env_name``
        (given, or derived from ``name``) Gymnasium would not take.

    Notes
    -----
    Registering again under the same name replaces the builder. When :mod:`curlopt.envs` is
    imported, the Gymnasium id is registered at once (see :func:`on_register`).
    """
    if not isinstance(name, str) or not name:
        raise ModelError(f"a model name must be a non-empty string, got {name!r}.")
    if not callable(builder):
        raise ModelError(f"model {name!r}: the builder must be callable, got {type(builder).__name__}.")
    if env_name is not None and (not isinstance(env_name, str) or not _ENV_NAME.fullmatch(env_name)):
        raise ModelError(f"model {name!r}: env_name must be letters, digits, '_' or '.', got {env_name!r}.")
    if env_name is None and not _ENV_NAME.fullmatch(_camel_case(name)):
        # checked now, so that every registered model has an environment id
        raise ModelError(f"model {name!r} needs an env_name (register_model(..., env_name=...)):"
                         f" {_camel_case(name)!r} is not a Gymnasium name.")
    MODELS[name] = builder
    if env_name is None:
        _ENV_NAMES.pop(name, None)
    else:
        _ENV_NAMES[name] = env_name
    for hook in list(_HOOKS):
        hook(name)


def _camel_case(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_. ]+", name))


def env_name(name: str) -> str:
    """The name in model ``name``'s Gymnasium id ``curlopt/<env_name>-v0``.

    The ``env_name`` it was registered with, else ``name`` in CamelCase: the parts between
    ``-``, ``_``, ``.`` and spaces, each capitalised (``"queue"`` -> ``"Queue"``).

    Raises
    ------
    ModelError
        For a name that is not registered.
    """
    if name not in MODELS:
        raise _unknown(name)
    return _ENV_NAMES.get(name) or _camel_case(name)


def _unknown(name: str) -> ModelError:
    return ModelError(f"unknown model {name!r}; built-in models: {', '.join(sorted(MODELS))}.")


def on_register(hook: Callable[[str], None]) -> None:
    """Call ``hook(name)`` after every later :func:`register_model` (added once, however often given)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)



def build_model(name: str, **params: Any) -> CMDP:
    """Build the built-in model ``name`` with its parameters.

    ``horizon=H`` (with ``budgets=`` per-episode budgets, optionally) gives the model played in episodes of H steps,
    ``discount=γ`` the model under the discounted criterion (:mod:`curlopt.models.criteria`); a builder that takes
    ``horizon`` itself gets it (and ``budgets``) as its own parameters. Without them the model is the builder's,
    unchanged.

    Raises
    ------
    ModelError
        For an unknown name, parameters the builder does not take, or both a horizon and a discount.
    """
    try:
        builder = MODELS[name]
    except KeyError:
        raise _unknown(name) from None
    criterion = {key: params.pop(key) for key in _CRITERION_KEYS if key in params and not _takes(builder, key)}
    if "horizon" in criterion and "discount" in criterion:
        raise ModelError(f"model {name!r}: give a horizon (episodic) or a discount (discounted), not both.")
    if "budgets" in criterion and "horizon" not in criterion:
        raise ModelError(f"model {name!r}: budgets are per episode and need a horizon (horizon=H).")
    try:
        model = builder(**params)
    except TypeError as exc:
        raise ModelError(f"model {name!r}: {exc}") from None
    if "horizon" in criterion:
        from .criteria import episodic  # imported here: most models are built without a horizon

        return episodic(model, criterion["horizon"], budgets=criterion.get("budgets"))
    if "discount" in criterion:
        from .criteria import discounted

        return discounted(model, criterion["discount"])
    return model


#: the parameters that choose a criterion rather than a model (taken by build_model unless the builder takes them)
_CRITERION_KEYS = ("horizon", "budgets", "discount")


def _takes(builder: Callable[..., CMDP], key: str) -> bool:
    """Whether ``builder`` names ``key`` among its parameters (a ``**params`` catch-all does not count)."""
    try:
        parameters = inspect.signature(builder).parameters
    except (TypeError, ValueError):  # a builtin or an object without a signature: it takes what it says it takes
        return False
    parameter = parameters.get(key)
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)

"""Built-in tabular models (numpy only; the Gymnasium wrappers live in :mod:`curlopt.envs`).

Each builder returns a :class:`curlopt.CMDP` with its kernel. ``build_model(name, **params)``
looks one up by name; ``MODELS`` lists them.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import ModelError
from ..model import CMDP
from .maxent import maxent_model
from .nonergodic import nonergodic_model
from .queue import queue_model
from .random import random_model
from .scheduler import scheduler_model

__all__ = [
    "MODELS",
    "build_model",
    "maxent_model",
    "nonergodic_model",
    "queue_model",
    "random_model",
    "register_model",
    "scheduler_model",
]

MODELS: dict[str, Callable[..., CMDP]] = {
    "queue": queue_model,
    "scheduler": scheduler_model,
    "nonergodic": nonergodic_model,
    "random": random_model,
    "maxent": maxent_model,
}


def register_model(name: str, builder: Callable[..., CMDP]) -> None:
    """Make ``builder(**params)`` available as ``name`` (CLI and ``build_model``)."""
    MODELS[name] = builder


def build_model(name: str, **params: Any) -> CMDP:
    """Build the built-in model ``name`` with its parameters.

    Raises
    ------
    ModelError
        For an unknown name or parameters the builder does not take.
    """
    try:
        builder = MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; built-in models: {', '.join(sorted(MODELS))}.") from None
    try:
        return builder(**params)
    except TypeError as exc:
        raise ModelError(f"model {name!r}: {exc}") from None

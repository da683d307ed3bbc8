"""Built-in tabular models (numpy only; the Gymnasium wrappers live in :mod:`curlopt.envs`).

Each builder returns a :class:`curlopt.CMDP` with its kernel. ``build_model(name, **params)``
looks one up by name; ``MODELS`` lists them. The registry is the one list of models:
:mod:`curlopt.envs` derives each Gymnasium id from it (``curlopt/<env_name(name)>-v0``),
so registering a model with :func:`register_model` also gives it an environment id.
"""

from __future__ import annotations

from .maxent import maxent_model
from .nonergodic import nonergodic_model
from .queue import queue_model
from .random import random_model
from .registry import MODELS, build_model, env_name, on_register, register_model
from .scheduler import scheduler_model
from .transforms import lazy_model, scaled_model

__all__ = [
    "MODELS",
    "build_model",
    "env_name",
    "maxent_model",
    "nonergodic_model",
    "on_register",
    "queue_model",
    "random_model",
    "register_model",
    "scheduler_model",
    "scaled_model",
    "lazy_model",
]

register_model("queue", queue_model)
register_model("scheduler", scheduler_model)
register_model("nonergodic", nonergodic_model, env_name="NonErgodic")
register_model("random", random_model)
register_model("maxent", maxent_model, env_name="MaxEnt")
register_model("scaled", scaled_model)
register_model("lazy", lazy_model)

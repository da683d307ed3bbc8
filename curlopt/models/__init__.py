"""Built-in tabular models (numpy only; the Gymnasium wrappers live in :mod:`curlopt.envs`).

Each builder returns a :class:`curlopt.CMDP` with its kernel. ``build_model(name, **params)``
looks one up by name; ``MODELS`` lists them. The registry is the one list of models:
:mod:`curlopt.envs` derives each Gymnasium id from it (``curlopt/<env_name(name)>-v0``),
so registering a model with :func:`register_model` also gives it an environment id.
"""

from __future__ import annotations

from .boxpushing import boxpushing_model
from .criteria import budget_constraints, discounted, episodic
from .discounted import DiscountedCMDP
from .dope import factored_model, inventory_model, media_streaming_model
from .episodic import EpisodicCMDP
from .gridworld import gridworld_model, marsrover_model
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
    "EpisodicCMDP",
    "DiscountedCMDP",
    "episodic",
    "discounted",
    "budget_constraints",
    "gridworld_model",
    "marsrover_model",
    "boxpushing_model",
    "factored_model",
    "media_streaming_model",
    "inventory_model",
]

register_model("queue", queue_model)
register_model("scheduler", scheduler_model)
register_model("nonergodic", nonergodic_model, env_name="NonErgodic")
register_model("random", random_model)
register_model("maxent", maxent_model, env_name="MaxEnt")
register_model("scaled", scaled_model)
register_model("lazy", lazy_model)
register_model("gridworld", gridworld_model)
register_model("marsrover", marsrover_model, env_name="MarsRover")
register_model("boxpushing", boxpushing_model, env_name="BoxPushing")
register_model("factored-cmdp", factored_model, env_name="FactoredCMDP")
register_model("media-streaming", media_streaming_model)
register_model("inventory", inventory_model)

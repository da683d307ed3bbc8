"""Gymnasium environments for the registered models (docs/math.md §8).

Importing this package imports Gymnasium and registers an id for every model of
:data:`curlopt.models.MODELS` (``curlopt/Queue-v0``, ``curlopt/Scheduler-v0``,
``curlopt/NonErgodic-v0``, ``curlopt/Random-v0``, ``curlopt/MaxEnt-v0`` for the
built-in ones; :func:`env_id` says which), and for every model registered later
with :func:`curlopt.models.register_model`::

    import gymnasium, curlopt.envs
    env = gymnasium.make("curlopt/Queue-v0", buffer=8)
    env.unwrapped.model  # the CMDP

Without importing it first, ``gymnasium.make("curlopt.envs:curlopt/Queue-v0")``
imports it for you. ``import curlopt`` alone never imports Gymnasium.
"""

from __future__ import annotations

from ..models import on_register
from .episodic import EpisodicCMDPEnv
from .registration import ENV_IDS, env_id, make, register_env, register_envs
from .tabular import TabularCMDPEnv

__all__ = ["ENV_IDS", "EpisodicCMDPEnv", "TabularCMDPEnv", "env_id", "make", "register_env", "register_envs"]

register_envs()
on_register(register_env)

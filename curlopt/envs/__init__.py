"""Gymnasium environments for the built-in models (docs/math.md §8).

Importing this package imports Gymnasium and registers the ids
``curlopt/Queue-v0``, ``curlopt/Scheduler-v0``, ``curlopt/NonErgodic-v0``,
``curlopt/Random-v0`` and ``curlopt/MaxEnt-v0``::

    import gymnasium, curlopt.envs
    env = gymnasium.make("curlopt/Queue-v0", buffer=8)
    env.unwrapped.model  # the CMDP

Without importing it first, ``gymnasium.make("curlopt.envs:curlopt/Queue-v0")``
imports it for you. ``import curlopt`` alone never imports Gymnasium.
"""

from __future__ import annotations

from .registration import ENV_IDS, make, register_envs
from .tabular import TabularCMDPEnv

__all__ = ["ENV_IDS", "TabularCMDPEnv", "make", "register_envs"]

register_envs()

"""``curlopt.envs.make`` and the Gymnasium ids ``curlopt/<Name>-v0``, derived from the model registry."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec

from .. import models
from ..models.cmdp import CMDP
from ..models.episodic import EpisodicCMDP
from .episodic import EpisodicCMDPEnv
from .tabular import TabularCMDPEnv

__all__ = ["make", "ENV_IDS", "env_id", "register_env", "register_envs"]

#: the id of an environment made from a given CMDP rather than a registered model
CMDP_ENV_ID = "curlopt/CMDP-v0"


def env_id(name: str) -> str:
    """The Gymnasium id of registered model ``name``: ``curlopt/<Name>-v0``.

    ``<Name>`` is :func:`curlopt.models.env_name` (the ``env_name`` the model was
    registered with, else its name in CamelCase).

    Raises
    ------
    curlopt.errors.ModelError
        For a name that is not registered.
    """
    return f"curlopt/{models.env_name(name)}-v0"


class _EnvIds(Mapping):
    """Model name -> Gymnasium id, read from :data:`curlopt.models.MODELS` at each access.

    A view, not a copy: a model registered later is in it at once.
    """

    def __getitem__(self, name: str) -> str:
        if name not in models.MODELS:
            raise KeyError(name)
        return env_id(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(models.MODELS))

    def __len__(self) -> int:
        return len(models.MODELS)

    def __repr__(self) -> str:
        return f"ENV_IDS({dict(self)!r})"


#: Gymnasium id of each registered model (a live view of the model registry)
ENV_IDS: Mapping[str, str] = _EnvIds()


def make(name: str | CMDP, render_mode: str | None = None, max_episode_steps: int | None = None,
         **params: Any) -> gymnasium.Env:
    """An environment for a built-in model (by name, with its parameters) or for a given model.

    Parameters
    ----------
    name : str or CMDP
        A registered model (see :data:`curlopt.models.MODELS`: ``"queue"``,
        ``"scheduler"``, ...), or a CMDP with a kernel.
    render_mode : {None, "ansi"}, default None
    max_episode_steps : int, optional
        Wrap the environment in :class:`gymnasium.wrappers.TimeLimit`, which
        truncates every episode after this many steps. This is for users of the
        Gymnasium API (episodic training loops, ``check_env``). The tasks are
        continuing and curlopt's learning loop (:func:`curlopt.experiments.run`)
        plays one never-ending episode: its generic stepping path refuses an
        environment that ends or truncates an episode, and its fast path samples
        the model's kernel directly (wrappers take no part), so leave it out for
        learning runs.
    **params
        The model's parameters, e.g. ``make("queue", buffer=8)``.

    Returns
    -------
    TabularCMDPEnv, EpisodicCMDPEnv or TimeLimit
        The bare environment (a :class:`TimeLimit` around it with
        ``max_episode_steps``). Its ``spec`` is set, with the id of
        :func:`env_id` (``curlopt/CMDP-v0`` for a given CMDP), so
        ``env.spec.make(render_mode=...)`` builds the same environment again
        (Gymnasium's ``check_env`` tests the render modes that way);
        ``gymnasium.make`` adds Gymnasium's own wrappers.

    Raises
    ------
    curlopt.errors.ModelError
        For an unknown name or bad parameters.
    curlopt.errors.EnvError
        For a model without a kernel, a bad render mode or a ``max_episode_steps`` that is not an integer >= 1.
    """
    from ..errors import EnvError

    if max_episode_steps is not None and (isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int)
                                          or max_episode_steps < 1):
        raise EnvError(f"max_episode_steps must be an integer >= 1 or None, got {max_episode_steps!r}.")
    if isinstance(name, CMDP):
        if params:
            raise EnvError(f"parameters {sorted(params)} apply to named models only, not to a given CMDP.")
        env = _environment(name, render_mode)
        spec_id = CMDP_ENV_ID
    else:
        # build_model first: an unknown name is a ModelError naming the registered models
        env = _environment(models.build_model(name, **params), render_mode)
        spec_id = env_id(name)
    env.spec = EnvSpec(id=spec_id, entry_point="curlopt.envs.registration:make", max_episode_steps=max_episode_steps,
                       kwargs={"name": name, **params})
    if max_episode_steps is None:
        return env
    from gymnasium.wrappers import TimeLimit

    return TimeLimit(env, max_episode_steps=max_episode_steps)


def _environment(model: CMDP, render_mode: str | None) -> TabularCMDPEnv:
    """The environment of ``model``: episodic (truncated every H steps) for an EpisodicCMDP, else continuing."""
    if isinstance(model, EpisodicCMDP):
        return EpisodicCMDPEnv(model, render_mode=render_mode)
    return TabularCMDPEnv(model, render_mode=render_mode)


def register_envs() -> None:
    """Register every model of :data:`curlopt.models.MODELS` with Gymnasium (idempotent).

    ``gymnasium.make("curlopt/Queue-v0", buffer=8)`` then builds the model with
    those parameters. No time limit is set: the tasks are continuing. Importing
    :mod:`curlopt.envs` calls this, and calls :func:`register_env` for every model
    registered afterwards.
    """
    for name in list(models.MODELS):
        register_env(name)


def register_env(name: str) -> None:
    """Register registered model ``name`` with Gymnasium as :func:`env_id` ``(name)`` (idempotent)."""
    spec_id = env_id(name)
    existing = gymnasium.registry.get(spec_id)
    if existing is not None and existing.kwargs.get("name") == name:
        return
    # Another model deriving the same id replaces it (Gymnasium warns that it overrides it).
    gymnasium.register(id=spec_id, entry_point="curlopt.envs.registration:make", kwargs={"name": name})

"""``curlopt.envs.make`` and the Gymnasium ids ``curlopt/<Name>-v0``."""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec

from ..model import CMDP
from .tabular import TabularCMDPEnv

__all__ = ["make", "ENV_IDS", "register_envs"]

#: Gymnasium id of each built-in model.
ENV_IDS = {
    "queue": "curlopt/Queue-v0",
    "scheduler": "curlopt/Scheduler-v0",
    "nonergodic": "curlopt/NonErgodic-v0",
    "random": "curlopt/Random-v0",
    "maxent": "curlopt/MaxEnt-v0",
}


def make(name: str | CMDP, render_mode: str | None = None, max_episode_steps: int | None = None,
         **params: Any) -> gymnasium.Env:
    """An environment for a built-in model (by name, with its parameters) or for a given model.

    Parameters
    ----------
    name : str or CMDP
        ``"queue"``, ``"scheduler"``, ``"nonergodic"``, ``"random"``, ``"maxent"``
        (see :data:`curlopt.models.MODELS`), or a CMDP with a kernel.
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
    TabularCMDPEnv or TimeLimit
        The bare environment (a :class:`TimeLimit` around it with
        ``max_episode_steps``). Its ``spec`` is set, with the id of
        :data:`ENV_IDS` (``curlopt/CMDP-v0`` for a given CMDP), so
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
        env = TabularCMDPEnv(name, render_mode=render_mode)
        env_id = "curlopt/CMDP-v0"
    else:
        from ..models import build_model

        env = TabularCMDPEnv(build_model(name, **params), render_mode=render_mode)
        env_id = ENV_IDS.get(name, "curlopt/CMDP-v0")
    env.spec = EnvSpec(id=env_id, entry_point="curlopt.envs.registration:make", max_episode_steps=max_episode_steps,
                       kwargs={"name": name, **params})
    if max_episode_steps is None:
        return env
    from gymnasium.wrappers import TimeLimit

    return TimeLimit(env, max_episode_steps=max_episode_steps)


def register_envs() -> None:
    """Register every built-in model with Gymnasium (idempotent).

    ``gymnasium.make("curlopt/Queue-v0", buffer=8)`` then builds the model with
    those parameters. No time limit is set: the tasks are continuing.
    """
    for name, env_id in ENV_IDS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point="curlopt.envs.registration:make", kwargs={"name": name})

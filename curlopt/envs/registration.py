"""``curlopt.envs.make`` and the Gymnasium ids ``curlopt/<Name>-v0``."""

from __future__ import annotations

from typing import Any

import gymnasium

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


def make(name: str | CMDP, render_mode: str | None = None, **params: Any) -> TabularCMDPEnv:
    """An environment for a built-in model (by name, with its parameters) or for a given model.

    Parameters
    ----------
    name : str or CMDP
        ``"queue"``, ``"scheduler"``, ``"nonergodic"``, ``"random"``, ``"maxent"``
        (see :data:`curlopt.models.MODELS`), or a CMDP with a kernel.
    render_mode : {None, "ansi"}, default None
    **params
        The model's parameters, e.g. ``make("queue", buffer=8)``.

    Returns
    -------
    TabularCMDPEnv
        The bare environment (no Gymnasium wrappers); ``gymnasium.make`` adds them.

    Raises
    ------
    curlopt.errors.ModelError
        For an unknown name or bad parameters.
    curlopt.errors.EnvError
        For a model without a kernel, or a bad render mode.
    """
    if isinstance(name, CMDP):
        if params:
            from ..errors import EnvError

            raise EnvError(f"parameters {sorted(params)} apply to named models only, not to a given CMDP.")
        return TabularCMDPEnv(name, render_mode=render_mode)
    from ..models import build_model

    return TabularCMDPEnv(build_model(name, **params), render_mode=render_mode)


def register_envs() -> None:
    """Register every built-in model with Gymnasium (idempotent).

    ``gymnasium.make("curlopt/Queue-v0", buffer=8)`` then builds the model with
    those parameters. No time limit is set: the tasks are continuing.
    """
    for name, env_id in ENV_IDS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point="curlopt.envs.registration:make", kwargs={"name": name})

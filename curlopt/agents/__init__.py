"""Learning agents and their epoch triggers.

``make_agent(name, model, **options)`` builds a registered agent; ``AGENTS``
lists them. Agents take any backend (a registry name or an instance).
"""

from __future__ import annotations

from typing import Any

from ..errors import AgentError
from ..models.cmdp import CMDP
from .base import Agent, EpochPlan, PlanSource, ProgramAgent
from .baselines import PrimalDual, UcrlCmdp, UnsupportedModelError
from .curl import PsCurl, UcCurl
from .safe import SafeCurl
from .triggers import (
    TRIGGERS,
    DoublingTrigger,
    EpochTrigger,
    FixedLengthTrigger,
    GlobalLinearTrigger,
    LinearTrigger,
    PerPairLinearTrigger,
    make_trigger,
    trigger_rule,
)

__all__ = [
    "AGENTS", "Agent", "EpochPlan", "PlanSource", "ProgramAgent", "UcCurl", "PsCurl", "SafeCurl", "UcrlCmdp", "PrimalDual", "UnsupportedModelError",
    "make_agent", "register_agent",
    "EpochTrigger", "DoublingTrigger", "LinearTrigger", "GlobalLinearTrigger", "PerPairLinearTrigger",
    "FixedLengthTrigger", "TRIGGERS", "make_trigger", "trigger_rule",
]

AGENTS: dict[str, type[Agent]] = {"uc-curl": UcCurl, "ps-curl": PsCurl, "safe-curl": SafeCurl, "ucrl-cmdp": UcrlCmdp, "primal-dual": PrimalDual}


def register_agent(name: str, cls: type[Agent]) -> None:
    """Make an Agent subclass available by name (CLI and :func:`make_agent`)."""
    AGENTS[name] = cls


def make_agent(name: str, model: CMDP, **options: Any) -> Agent:
    """Build the agent registered as ``name`` for ``model``.

    Raises
    ------
    AgentError
        For an unknown name or an option the agent does not take.
    """
    try:
        cls = AGENTS[name]
    except KeyError:
        raise AgentError(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}.") from None
    try:
        return cls(model, **options)
    except TypeError as exc:
        raise AgentError(f"agent {name!r}: {exc}") from None

"""Learning agents and their epoch triggers.

``make_agent(name, model, **options)`` builds a registered agent; ``AGENTS``
lists them. Agents take any backend (a registry name or an instance). Each agent
declares its options (:mod:`curlopt.agents.options`): :func:`agent_options` gives
them, :func:`check_agent_options` checks a set of options without a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import AgentError
from ..models.cmdp import CMDP
from .base import Agent, EpochPlan, PlanSource, ProgramAgent
from .baselines import PrimalDual, UcrlCmdp, UnsupportedModelError
from .curl import CmdpPsrl, PsCurl, UcCurl
from .model_free import TripleQA
from .options import AgentOption, check_value, refuse_keywords
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
    "AGENTS", "Agent", "EpochPlan", "PlanSource", "ProgramAgent", "UcCurl", "PsCurl", "CmdpPsrl", "SafeCurl", "UcrlCmdp", "PrimalDual", "TripleQA", "UnsupportedModelError",
    "make_agent", "register_agent", "agent_class", "agent_options", "check_agent_options", "AgentOption",
    "EpochTrigger", "DoublingTrigger", "LinearTrigger", "GlobalLinearTrigger", "PerPairLinearTrigger",
    "FixedLengthTrigger", "TRIGGERS", "make_trigger", "trigger_rule",
]

AGENTS: dict[str, type[Agent]] = {"uc-curl": UcCurl, "ps-curl": PsCurl, "safe-curl": SafeCurl, "ucrl-cmdp": UcrlCmdp, "primal-dual": PrimalDual,
                              "cmdp-psrl": CmdpPsrl, "triple-qa": TripleQA}


def register_agent(name: str, cls: type[Agent]) -> None:
    """Make an Agent subclass available by name (CLI and :func:`make_agent`)."""
    AGENTS[name] = cls


def agent_class(name: str) -> type[Agent]:
    """The class registered as ``name``.

    Raises
    ------
    AgentError
        For a name no agent is registered as.
    """
    try:
        return AGENTS[name]
    except KeyError:
        raise AgentError(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}.") from None


def agent_options(name: str) -> dict[str, AgentOption]:
    """``{option name: declaration}`` of every keyword the agent registered as ``name`` takes, in its constructor's
    order, with the constructor's defaults (an agent that passes other keywords on to its backend says so in
    ``PASSES_ON``)."""
    return agent_class(name).declared_options()


def check_agent_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` for the agent registered as ``name``, checked by its declaration before any model is built.

    What needs the model (a constraint's slope bound, the size of a full support, whether the utilities suit a
    baseline) is checked when the agent is built. Keywords the agent passes on to its backend are checked against
    the options of the backend named by ``backend`` (its default when not given); with ``auto`` or a backend
    instance, where the backend is not known yet, they are kept as given.

    Returns
    -------
    dict
        The options given, each declared one in its checked form (``1`` as ``1.0`` for a number, for example).

    Raises
    ------
    AgentError
        For an unknown agent, a keyword the agent refuses or does not take, or a value its declaration refuses.
    """
    cls = agent_class(name)
    declared = cls.declared_options()
    passed_on = {key: value for key, value in options.items() if key not in declared}
    refuse_keywords(name, passed_on, cls.REFUSED, declared=None if cls.PASSES_ON else list(declared))
    checked = {key: check_value(declared[key], value) if key in declared else value for key, value in options.items()}
    backend = checked.get("backend", declared["backend"].default if "backend" in declared else None)
    if passed_on and isinstance(backend, str) and backend != "auto":
        from ..backends.registry import backend_class

        takes = backend_class(backend).declared_options()
        unknown = sorted(key for key in passed_on if key not in takes)
        if unknown:
            raise AgentError(f"{name} does not take option(s) {unknown} (extra options are passed to the backend,"
                             f" and the {backend} backend takes {', '.join(takes)}).")
    return checked


def make_agent(name: str, model: CMDP, **options: Any) -> Agent:
    """Build the agent registered as ``name`` for ``model``.

    Raises
    ------
    AgentError
        For an unknown name or an option the agent does not take.
    """
    cls = agent_class(name)
    try:
        return cls(model, **options)
    except TypeError as exc:
        raise AgentError(f"agent {name!r}: {exc}") from None

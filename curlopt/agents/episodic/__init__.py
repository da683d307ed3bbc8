"""Learning agents for episodic (finite-horizon) constrained MDPs.

``make_episodic_agent(name, model, **options)`` builds one; ``EPISODIC_AGENTS`` lists them (a registry of its own:
the infinite-horizon agents stay in :data:`curlopt.agents.AGENTS`). docs/math.md, "The episodic setting", states
each algorithm, its paper, bonuses and constants.
"""

from __future__ import annotations

import inspect
from typing import Any

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from .base import EpisodePlan, EpisodeSource, EpisodicAgent, ProgramEpisodicAgent, SafePolicy, require_safe_policy
from .concave import ConRl, Moma, MomaProgram
from .model_free import TripleQ
from .optimistic import Dope, EpisodicUcCurl, OptCmdp, episode_tightness
from .pessimistic import OptPessLp
from .primal_dual import OptPessPrimalDual
from .sampling import EpisodicPsCurl

__all__ = ["EPISODIC_AGENTS", "EpisodicAgent", "ProgramEpisodicAgent", "EpisodePlan", "EpisodeSource", "SafePolicy",
           "OptCmdp", "Dope", "OptPessLp", "OptPessPrimalDual", "EpisodicUcCurl", "EpisodicPsCurl", "ConRl", "Moma",
           "MomaProgram", "TripleQ", "make_episodic_agent", "require_safe_policy", "episode_tightness"]

EPISODIC_AGENTS: dict[str, type[EpisodicAgent]] = {
    "opt-cmdp": OptCmdp, "optpess-lp": OptPessLp, "optpess-primal-dual": OptPessPrimalDual, "dope": Dope,
    "uc-curl": EpisodicUcCurl, "ps-curl": EpisodicPsCurl, "conrl": ConRl, "moma": Moma, "moma-program": MomaProgram, "triple-q": TripleQ,
}


def make_episodic_agent(name: str, model: EpisodicCMDP, **options: Any) -> EpisodicAgent:
    """Build the episodic agent registered as ``name`` for ``model``.

    Raises
    ------
    AgentError
        For an unknown name or an option the agent does not take.
    """
    try:
        cls = EPISODIC_AGENTS[name]
    except KeyError:
        raise AgentError(f"unknown episodic agent {name!r}; known: {', '.join(EPISODIC_AGENTS)}.") from None
    _refuse_unknown(name, cls, options)
    try:
        return cls(model, **options)
    except TypeError as exc:
        raise AgentError(f"episodic agent {name!r}: {exc}") from None


def _refuse_unknown(name: str, cls: type[EpisodicAgent], options: dict[str, Any]) -> None:
    """Refuse, in the project's words, an option the agent's constructor has no parameter for (Python's own
    message, "__init__() got an unexpected keyword argument", names neither the agent nor what it takes). An agent
    that passes extra options on to its backend (``**backend_options``) leaves them to the backend to check."""
    parameters = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    takes = [key for key, p in parameters.items() if key not in ("self", "model") and p.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    unknown = [key for key in options if key not in takes]
    if "backend" in unknown:
        raise AgentError(f"{name} solves no program: it takes no backend (its options are {', '.join(takes)}).")
    if unknown:
        raise AgentError(f"{name} does not take {', '.join(map(repr, unknown))}; its options are {', '.join(takes)}.")

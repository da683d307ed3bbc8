"""What an agent takes: its keyword options, declared once, with the typed declaration the backends use.

Each agent class lists its options in ``OPTIONS``, as :class:`AgentOption` entries (a backend's
:class:`~curlopt.backends.options.Option` with the name its messages use): the types a value may have, what
the option accepts in words, the check of a value of the right type, and what the option does. The defaults
are the constructor's own (Python's one place for them): :meth:`curlopt.agents.Agent.__init_subclass__` takes
them from the signature and refuses a class whose ``OPTIONS`` does not name exactly its keyword parameters.

From that one declaration come the checks of the constructors (:func:`check_value`), ``curlopt agents``,
the option tables of the guide (``curlopt agents --markdown``) and the check of a study's agent options
before any model is built (:func:`check_agent_options`).

An option's ``check`` here says what a value of the right type lacks as the words that follow the option's
name, "must be an integer >= 1", so that every refusal reads ``<name> must be <what it takes>, got <value>.``
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..backends.options import INTEGER, NONE, NUMBER, Option
from ..errors import AgentError
from ..programs.optimistic import RADII
from ..programs.policy import UNREACHED_FILLS
from ..programs.tightness import EPSILON_MAX, TIGHTNESS_CONSTANT_MAX
from .estimates import FULL_SUPPORT_LIMIT, SUPPORTS
from .triggers import TRIGGERS

__all__ = [
    "AgentOption", "REQUIRED", "MAX_PRIOR", "check_value", "value_problem", "refuse_keywords", "choice", "number",
    "integer", "boolean", "seed_problem", "with_doc", "BACKEND", "TRIGGER", "TIGHTNESS_CONSTANT",
    "HORIZON_LOWER_BOUND", "SEED", "UNREACHED", "SUPPORT", "MIN_EPOCH_LENGTH", "RADIUS", "RADIUS_SCALE", "PRIOR",
    "HORIZON", "REWARDS", "SIGNAL_KNOWLEDGE",
]

#: the default of an option the constructor has no default for (it must be given)
REQUIRED: Any = object()

#: the largest Dirichlet prior α0 the posterior-sampling agents take
MAX_PRIOR = 1e6


@dataclass(frozen=True)
class AgentOption(Option):
    """One keyword argument of an agent: a backend's :class:`~curlopt.backends.options.Option` and the name its
    messages give it.

    Parameters
    ----------
    label : str, optional
        How a refusal names the option ("theta (θ)", "the horizon T"); its keyword when empty.

    Notes
    -----
    ``check`` returns the words after the option's name that say what a value lacks ("must lie in [0, 1]"), or
    None; a value of a type not in ``types`` (or a bool, unless listed) "must be" ``expects``.
    """

    label: str = ""

    @property
    def called(self) -> str:
        """The option's name in messages: its label, else its keyword."""
        return self.label or self.name


def value_problem(option: Option, value: Any) -> str | None:
    """What ``value`` lacks for ``option``, as the words after its name ("must be one of 'a', 'b'"), or None."""
    if (isinstance(value, bool) and bool not in option.types) or not isinstance(value, option.types):
        return f"must be {option.expects}"
    return option.check(value) if option.check is not None else None


def check_value(option: AgentOption, value: Any) -> Any:
    """``value`` in the stored form of ``option`` (converted), once the declaration accepts it.

    Raises
    ------
    AgentError
        ``<name> must be <what it takes>, got <value>.`` for a value the declaration refuses.
    """
    problem = value_problem(option, value)
    if problem is not None:
        raise AgentError(f"{option.called} {problem}, got {_short(value)}.")
    return option.accept(value)


def refuse_keywords(agent: str, given: Mapping[str, Any], refused: Mapping[str, str],
                    declared: Sequence[str] | None = None) -> None:
    """Refuse the keywords of ``given`` that ``refused`` names, saying why the agent has no use for them; with
    ``declared`` (an agent that passes nothing on), refuse every keyword too, listing the options it takes.

    Raises
    ------
    AgentError
        ``<agent> does not take '<key>': <why>.`` or ``<agent> does not take '<key>'; its options are ....``
    """
    for key in given:
        if key in refused:
            raise AgentError(f"{agent} does not take {key!r}: {refused[key]}.")
    if declared is not None and given:
        raise AgentError(f"{agent} does not take {', '.join(map(repr, given))}; its options are"
                         f" {', '.join(declared)}.")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# ----------------------------------------------------------------------------
# Declarations by kind of value
# ----------------------------------------------------------------------------


def choice(name: str, choices: Sequence[str], doc: str) -> AgentOption:
    """An option that names one of ``choices``."""
    expects = "one of " + ", ".join(map(repr, choices))
    allowed = tuple(choices)
    return AgentOption(name, (str,), None, doc, expects,
                       lambda value: None if value in allowed else f"must be {expects}")


def number(name: str, doc: str, *, low: float = 0.0, strict: bool = False, high: float | None = None,
           none: bool = False, label: str = "", expects: str = "", too_high: str = "",
           as_float: bool = True) -> AgentOption:
    """A finite number ``>= low`` (``> low`` when ``strict``) and ``<= high``; None too when ``none``.

    ``too_high`` replaces the words for a value above ``high`` (an explanation of the bound); the value is kept
    as a float, or with ``as_float=False`` as the Python int or float it is (a numpy number becomes one: the agent
    records its options in the trace, as JSON).
    """
    if not expects:
        if high is None:
            expects = f"a finite number {'>' if strict else '>='} {low:g}"
        else:
            expects = f"a finite number in {'(' if strict else '['}{low:g}, {high:g}]"
        if none:
            expects += ", or None"

    def check(value: Any) -> str | None:
        if value is None:
            return None
        number = float(value)
        if not (math.isfinite(number) and (number > low if strict else number >= low)):
            return f"must be {expects}"
        if high is not None and number > high:
            return too_high or f"must be {expects}"
        return None

    convert = _as_float if as_float else _as_python_number
    return AgentOption(name, NUMBER + (NONE if none else ()), None, doc, expects, check, convert, label)


def _as_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _as_python_number(value: Any) -> int | float | None:
    if value is None:
        return None
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def integer(name: str, doc: str, *, low: int = 1, label: str = "", note: str = "") -> AgentOption:
    """An integer ``>= low`` (``note``: what the smallest value means, shown in parentheses)."""
    expects = f"an integer >= {low}" + (f" ({note})" if note else "")
    return AgentOption(name, INTEGER, None, doc, expects, lambda value: None if value >= low else f"must be {expects}",
                       int, label)


def boolean(name: str, doc: str) -> AgentOption:
    """True or False (numpy's booleans too)."""
    return AgentOption(name, (bool, np.bool_), None, doc, "True or False", convert=bool)


def seed_problem(value: Any) -> str | None:
    """What a seed lacks ("must be ..."), or None: an integer >= 0, None, or anything numpy's ``default_rng`` takes."""
    expects = "must be None, an integer >= 0 or a numpy SeedSequence"
    if isinstance(value, bool) or (isinstance(value, (int, np.integer)) and value < 0):
        return expects
    try:
        np.random.default_rng(value)
    except (TypeError, ValueError) as exc:
        return f"{expects} ({exc})"
    return None


def _trigger_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return None if value in TRIGGERS else (
            f"names an unknown epoch trigger; use one of {', '.join(TRIGGERS)} or a trigger object")
    if callable(getattr(value, "limits", None)):
        return None
    return f"must be one of {', '.join(TRIGGERS)} or an object with a limits(visits_before, previous_epoch_visits," \
           " epoch_start) method"


def _backend_problem(value: Any) -> str | None:
    from ..backends import Backend

    return None if isinstance(value, (str, Backend)) else "must be a backend name or a Backend instance"


# ----------------------------------------------------------------------------
# The options several agents share
# ----------------------------------------------------------------------------

#: the backend of an agent that solves a program (its name resolved by the backend registry)
BACKEND = AgentOption(
    "backend", (object,), None,
    "The backend that solves the agent's program: a registry name (curlopt backends) or a Backend instance;"
    " auto picks one for the model's utilities.",
    "a backend name or a Backend instance", _backend_problem,
)
#: the epoch rule
TRIGGER = AgentOption(
    "trigger", (object,), None,
    "The epoch rule: doubling, linear (the paper's), linear-global, linear-per-pair, or a trigger object.",
    f"one of {', '.join(map(repr, TRIGGERS))} or a trigger object", _trigger_problem,
)
#: K_ε of the tightness schedule
TIGHTNESS_CONSTANT = number(
    "tightness_constant", "K_ε of the tightness schedule ε = K_ε sqrt(ln τ / τ).", high=TIGHTNESS_CONSTANT_MAX,
    label="tightness_constant (K_ε)", expects="a finite number >= 0",
    too_high=f"must be at most {TIGHTNESS_CONSTANT_MAX:.0f}: ε = K_ε sqrt(ln τ / τ) reaches K_ε / sqrt(e) at τ = e,"
             f" and a program takes ε <= {EPSILON_MAX:g}",
)
#: T_l of the tightness schedule
HORIZON_LOWER_BOUND = number(
    "horizon_lower_bound", "T_l: with it, τ = max(t_e, T_l) in the tightness schedule; None: τ = t_e.", low=1.0,
    none=True, label="horizon_lower_bound (T_l)", expects="a finite number >= 1, or None", as_float=False,
)
#: the agent's own seed
SEED = AgentOption(
    "seed", (object,), None, "The agent's own seed (the learning loop reseeds it from the run's seed).",
    "None, an integer >= 0 or a numpy SeedSequence", seed_problem,
)
#: the fill of the states a plan does not reach
UNREACHED = choice(
    "unreached", UNREACHED_FILLS,
    "The policy in states the plan's occupancy does not reach: uniform; safe (the actions that least increase"
    " the constraints); reach (the per-step feasible actions back to the plan's states in the fewest expected"
    " steps); reach-any (the same over all actions).",
)
#: the successors the agent's counts and estimates range over
SUPPORT = choice(
    "support", SUPPORTS,
    "The successors the agent's counts and estimates range over, whatever the kernel's storage: those the model's"
    f" kernel gives positive probability (model), all S (full: dense arrays, refused above {FULL_SUPPORT_LIMIT:,}"
    " entries S·A·S for a sparse-stored model), or auto: full up to 2^20 entries S·A·S (the paper's sizes), model"
    " above.",
)
#: the fewest steps of an epoch
MIN_EPOCH_LENGTH = integer(
    "min_epoch_length",
    "The fewest steps of an epoch unless the horizon ends it: a run of T steps solves at most T / L + 1"
    " programs (1: the trigger alone decides).",
    note="1: the trigger alone decides",
)
#: UC-CURL's L1 confidence radius
RADIUS = choice(
    "radius", RADII,
    "The L1 confidence radius β: analysis, sqrt(14 S ln(2 A t_e) / max(1, N)), the radius of the paper's regret"
    " analysis; experiment, sqrt(S ln(A t_e) / max(1, N)), the smaller radius of its simulations.",
)
#: the factor of the radius
RADIUS_SCALE = number("radius_scale", "A finite factor >= 0 multiplying the confidence radius β.")
#: the Dirichlet prior of the posterior draws
PRIOR = number(
    "prior", "The Dirichlet prior α0 of the posterior draws (1 is uniform over kernels).", strict=True,
    high=MAX_PRIOR, label="the Dirichlet prior", expects=f"a number in (0, {MAX_PRIOR:g}]",
)
#: the horizon T of the baselines, which need it up front
HORIZON = number(
    "horizon", "The horizon T, required (curlopt run passes --steps).", low=1.0, none=True, label="the horizon T",
    expects="a finite number >= 1",
)
#: whether an agent is told the rewards and costs or learns them from the signals it observes
SIGNAL_KNOWLEDGE = ("known", "learned")
#: the agents' ``rewards`` option
REWARDS = choice(
    "rewards", SIGNAL_KNOWLEDGE,
    "known: the agent is told the model's reward and cost tables (the paper's assumption); learned: it plans on the"
    " running means of the signals it observes, with an optimistic reward and a cost bonus (docs/math.md).",
)


def with_doc(option: AgentOption, doc: str) -> AgentOption:
    """``option`` described for one agent (the same checks)."""
    return replace(option, doc=doc)

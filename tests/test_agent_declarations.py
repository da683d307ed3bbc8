"""The agents' declared options: one declaration per agent class, read by the constructors' checks, by
``curlopt agents``, by the study check (:func:`curlopt.agents.check_agent_options`) and by the guide's tables."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from curlopt.agents import AGENTS, ProgramAgent, agent_options, check_agent_options, make_agent
from curlopt.agents.options import RADIUS, REQUIRED, AgentOption, check_value
from curlopt.cli.agents import options_markdown
from curlopt.errors import AgentError
from curlopt.models import build_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(AGENTS))
def test_the_declaration_names_the_constructor_keywords_with_their_defaults(name):
    parameters = [p for p in list(inspect.signature(AGENTS[name].__init__).parameters.values())[1:]
                  if p.name != "model" and p.kind is p.POSITIONAL_OR_KEYWORD]
    options = agent_options(name)
    assert list(options) == [p.name for p in parameters]
    for p in parameters:
        assert options[p.name].default == (REQUIRED if p.default is p.empty else p.default)
        assert options[p.name].doc and options[p.name].expects


def test_a_class_whose_declaration_misses_a_keyword_is_refused_when_defined():
    with pytest.raises(TypeError, match=r"Odd.OPTIONS declares \['radius'\], but its constructor takes"):
        class Odd(ProgramAgent):
            OPTIONS: ClassVar[tuple[AgentOption, ...]] = (RADIUS,)

            def __init__(self, model: Any, radius: str = "analysis", extra: int = 1) -> None: ...


# Bad values, each refused by make_agent (with a model) and by check_agent_options (without one) with the same words.
BAD = [
    ("uc-curl", "radius", "foo", r"^radius must be one of 'analysis', 'experiment', got 'foo'\.$"),
    ("uc-curl", "radius_scale", -1, r"^radius_scale must be a finite number >= 0, got -1\.$"),
    ("uc-curl", "tightness_constant", 2e6, r"^tightness_constant \(K_ε\) must be at most 1648721: "),
    ("uc-curl", "horizon_lower_bound", 0.5, r"^horizon_lower_bound \(T_l\) must be a finite number >= 1, or None"),
    ("ps-curl", "prior", 0.0, r"^the Dirichlet prior must be a number in \(0, 1e\+06\], got 0\.0\.$"),
    ("ps-curl", "margin", "units", r"^margin must be one of 'absolute', 'range', got 'units'\.$"),
    ("ps-curl", "trigger", "quadratic", r"^trigger names an unknown epoch trigger"),
    ("ps-curl", "min_epoch_length", True, r"^min_epoch_length must be an integer >= 1"),
    ("ps-curl", "support", "some", r"^support must be one of 'auto', 'model', 'full', got 'some'\.$"),
    ("ps-curl", "seed", -3, r"^seed must be None, an integer >= 0 or a numpy SeedSequence, got -3\.$"),
    ("safe-curl", "bonus", math.nan, r"^bonus must be a finite number in \[0, 1e\+06\], got nan\.$"),
    ("safe-curl", "cost_lipschitz", [1.0, -2.0], r"^cost_lipschitz must be a finite number >= 0, one per constraint"),
    ("ucrl-cmdp", "epoch_exponent", 1.5, r"^epoch_exponent must lie in \[0, 1\], got 1\.5\.$"),
    ("primal-dual", "theta", 0, r"^theta \(θ\) must be a finite number > 0, got 0\.$"),
    ("primal-dual", "episode_length", 2.5, r"^episode_length \(H\) must be an integer >= 1, got 2\.5\.$"),
    ("primal-dual", "scale", "yes", r"^scale must be True or False, got 'yes'\.$"),
]


@pytest.mark.parametrize("name, key, value, pattern", BAD, ids=[f"{n}-{k}" for n, k, _, _ in BAD])
def test_a_bad_value_is_refused_alike_with_and_without_a_model(name, key, value, pattern):
    horizon = {"horizon": 100} if AGENTS[name].needs_horizon else {}
    with pytest.raises(AgentError, match=pattern):
        check_agent_options(name, {key: value})
    with pytest.raises(AgentError, match=pattern):
        make_agent(name, build_model("queue"), **horizon, **{key: value})


@pytest.mark.parametrize("name, options, pattern", [
    ("ps-curl", {"radius": "analysis"}, r"^ps-curl does not take 'radius': PS-CURL samples a posterior kernel"),
    ("uc-curl", {"prior": 2.0}, r"^uc-curl does not take 'prior': it draws no posterior samples"),
    ("primal-dual", {"gamma": 0.9}, r"^primal-dual does not take 'gamma'; its options are horizon, theta, eta,"),
    ("ucrl-cmdp", {"trigger": "linear"}, r"^ucrl-cmdp does not take 'trigger': its epochs have a fixed length"),
    ("ucrl-cmdp", {"backend": "highs", "max_rounds": 3}, r"^ucrl-cmdp does not take option\(s\) \['max_rounds'\]"),
    ("nope", {}, r"^unknown agent 'nope'"),
])
def test_keywords_an_agent_does_not_take_are_refused_by_name(name, options, pattern):
    with pytest.raises(AgentError, match=pattern):
        check_agent_options(name, options)


def test_good_options_come_back_checked_and_backend_options_pass_on():
    checked = check_agent_options("uc-curl", {"radius_scale": 2, "horizon_lower_bound": 10, "time_limit": 5})
    assert checked == {"radius_scale": 2.0, "horizon_lower_bound": 10, "time_limit": 5}
    assert isinstance(checked["radius_scale"], float) and isinstance(checked["horizon_lower_bound"], int)
    # the default backend of ucrl-cmdp is named: its own options pass
    assert check_agent_options("ucrl-cmdp", {"max_rounds": 3}) == {"max_rounds": 3}
    assert check_agent_options("primal-dual", {"scale": np.bool_(False)}) == {"scale": False}


def test_check_value_converts_only_what_it_accepts():
    option = agent_options("safe-curl")["penalty"]
    assert check_value(option, None) is None and check_value(option, np.float32(0.5)) == 0.5
    with pytest.raises(AgentError, match=r"^penalty must be a finite number in \[0, 1e\+06\], or None, got True\.$"):
        check_value(option, True)


def test_the_guide_tables_are_what_the_declarations_print():
    text = (ROOT / "docs" / "guide" / "agents.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- agent options: begin -->\n(.*)<!-- agent options: end -->", text, re.DOTALL)
    assert block is not None, "docs/guide/agents.md has no generated options block"
    assert block.group(1) == options_markdown(), "regenerate with: curlopt agents --markdown"
    # every option of every agent appears in its agent's table
    for name in AGENTS:
        table = block.group(1).split(f"**{name}**")[1].split("\n\n**")[0]
        assert [re.match(r"\| `([^`]+)`", line).group(1) for line in table.splitlines() if line.startswith("| `")] \
            == list(agent_options(name)) + (["**backend_options"] if AGENTS[name].PASSES_ON else [])


#: how the guide's hand-written tables name the agents
GUIDE_NAMES = {"UC-CURL": "uc-curl", "PS-CURL": "ps-curl", "safe mode": "safe-curl", "UCRL-CMDP": "ucrl-cmdp",
               "primal-dual": "primal-dual"}


def test_the_defaults_in_the_guide_s_own_tables_are_the_declared_ones():
    """The tables written by hand at the top of docs/guide/agents.md (with the paper's settings beside them) give
    each option's default in their third column: it must be the declared default of every agent the row names (the
    CURL agents when it names none)."""
    text = (ROOT / "docs" / "guide" / "agents.md").read_text(encoding="utf-8").split("<!-- agent options: begin")[0]
    rows = re.findall(r"^\| `(\w+)`( \(([^)]*)\))? \|[^|]*\| `?([^`|(]+?)`?(?: \([^|]*\))? \|", text, re.MULTILINE)
    assert len(rows) >= 7, rows
    for option, _, named, default in rows:
        agents = [GUIDE_NAMES[n] for n in GUIDE_NAMES if n in named] or ["uc-curl", "ps-curl"]
        for agent in agents:
            declared = agent_options(agent).get(option)
            if declared is None:  # "every epoch-based agent": only those that take it
                continue
            written = f"{declared.default:g}" if isinstance(declared.default, float) else str(declared.default)
            assert written.lower() == default.strip().lower(), (option, agent, default)


def test_numpy_numbers_are_recorded_as_python_numbers():
    agent = make_agent("uc-curl", build_model("queue"), horizon_lower_bound=np.int64(1000), radius_scale=np.float32(2))
    assert type(agent.horizon_lower_bound) is int and agent.horizon_lower_bound == 1000
    assert type(agent.radius_scale) is float and agent.describe()["radius_scale"] == 2.0

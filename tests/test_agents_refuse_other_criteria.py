"""The long-run agents refuse a model of another criterion instead of solving the wrong problem."""

from __future__ import annotations

import pytest

from curlopt.agents import AGENTS, agent_options, make_agent
from curlopt.errors import AgentError
from curlopt.models import build_model


@pytest.mark.parametrize("agent", sorted(AGENTS))
@pytest.mark.parametrize(("criterion", "advice"), [({"horizon": 5}, "episodic agent"), ({"discount": 0.9}, "optimum")])
def test_every_long_run_agent_refuses_episodic_and_discounted_models(agent: str, criterion: dict, advice: str) -> None:
    model = build_model("queue", **criterion)
    assert model.criterion != "average"
    options = {"horizon": 1000} if "horizon" in agent_options(agent) else {}  # the baselines need T up front
    with pytest.raises(AgentError, match=advice):
        make_agent(agent, model, **options)

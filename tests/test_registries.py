"""The registries drive the contract tests; PlanSource is a str enum; ProgramAgent is the public program-agent base.

The contract tests themselves live beside the pieces they check: every registered model in tests/test_envs.py
(``test_check_env_passes``, ``test_gymnasium_make``), every registered agent in tests/test_agents.py
(``test_registered_agent_meets_the_contract``, ``test_registered_agent_lists_its_options``) and every registered
backend in tests/test_backends.py (``test_registered_backend_declares_itself``,
``test_missing_backend_says_how_to_install_it``) and tests/test_conformance.py (installed ones). This file checks
that they are parametrised over the registries as they stand when the tests are collected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import FailingHighs, installed_backend_names, registered_agents, registered_backends, registered_models

from curlopt import CMDP, Linear, LinearBound
from curlopt.agents import AGENTS, Agent, EpochPlan, PlanSource, ProgramAgent, PsCurl, register_agent
from curlopt.backends import backend_names, installed_backends, register_backend
from curlopt.backends.registry import _REGISTRY
from curlopt.backends.results import ProgramVariant
from curlopt.envs import make
from curlopt.experiments import load_trace, run
from curlopt.models import MODELS, build_model, register_model
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.tightness import tightness

ROOT = Path(__file__).resolve().parents[1]


def two_state_model() -> CMDP:
    """Two states, two actions: action a moves to state a w.p. 0.9; reward 1 in state 1; cost 1 for action 1."""
    kernel = np.zeros((2, 2, 2))
    kernel[:, 0] = [0.9, 0.1]
    kernel[:, 1] = [0.1, 0.9]
    rewards = np.array([[[0.0, 0.0], [1.0, 1.0]]])
    costs = np.array([[[0.0, 1.0], [0.0, 1.0]]])
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 0.7)], kernel, name="two-state")


# -- the parametrisation sources read the registries -------------------------------------------------------------------


def test_the_parametrisation_sources_are_the_registries():
    assert registered_models() == list(MODELS)
    assert registered_agents() == list(AGENTS)
    assert registered_backends() == backend_names()
    assert installed_backend_names() == installed_backends()


def test_a_registered_piece_appears_in_the_parametrisation_sources():
    class Idle(Agent):
        name = "idle"

        def _plan(self, time):
            S, A = self.model.n_states, self.model.n_actions
            return EpochPlan(np.full((S, A), 1.0 / A), PlanSource.RULE)

    assert not {"two-state"} & set(registered_models()) and "idle" not in registered_agents()
    try:
        register_model("two-state", two_state_model)
        register_agent("idle", Idle)
        register_backend("scipy-again", "curlopt.backends.scipy:ScipyBackend")
        assert registered_models()[-1] == "two-state"
        assert registered_agents()[-1] == "idle"
        assert registered_backends()[-1] == "scipy-again" and "scipy-again" in installed_backend_names()
    finally:
        MODELS.pop("two-state", None)
        AGENTS.pop("idle", None)
        _REGISTRY.pop("scipy-again", None)
    assert "two-state" not in registered_models() and "idle" not in registered_agents()
    assert "scipy-again" not in registered_backends()


# A pytest plugin registering pieces before collection, as a package shipping its own would from its conftest.
PLUGIN = '''
import gymnasium
import numpy as np

from curlopt import CMDP, Linear, LinearBound
from curlopt.agents import Agent, EpochPlan, PlanSource, register_agent
from curlopt.backends import register_backend
from curlopt.backends.scipy import ScipyBackend
from curlopt.models import register_model


def dummy_model():
    kernel = np.zeros((2, 2, 2))
    kernel[:, 0] = [0.9, 0.1]
    kernel[:, 1] = [0.1, 0.9]
    return CMDP(np.array([[[0.0, 0.0], [1.0, 1.0]]]), np.array([[[0.0, 1.0], [0.0, 1.0]]]), Linear([1.0]),
                [LinearBound([1.0], 0.7)], kernel, name="dummy")


def kernel_free_model():  # broken: an environment needs a kernel
    return CMDP(np.ones((1, 2, 2)), objective=Linear([1.0]))


class DummyUniform(Agent):
    """Plays the uniform policy.

    Parameters
    ----------
    trigger : str, default "doubling"
        When an epoch ends.
    seed : optional
        Unused: it draws nothing.
    """

    name = "dummy-uniform"

    def __init__(self, model, trigger="doubling", seed=None):
        super().__init__(model, trigger, seed)

    def _plan(self, time):
        S, A = self.model.n_states, self.model.n_actions
        return EpochPlan(np.full((S, A), 1.0 / A), PlanSource.RULE)


class DummyBroken(DummyUniform):
    """Plays rows that sum to 2 (broken)."""

    name = "dummy-broken"

    def _plan(self, time):
        plan = super()._plan(time)
        plan.policy = 2 * plan.policy
        return plan


class DummyBackend(ScipyBackend):
    name = "dummy-backend"


class Misnamed(ScipyBackend):  # broken: registered under another name than its own
    pass


register_model("dummy-model", dummy_model)
register_model("dummy-kernel-free", kernel_free_model)
register_agent("dummy-uniform", DummyUniform)
register_agent("dummy-broken", DummyBroken)
register_backend("dummy-backend", DummyBackend)
register_backend("dummy-misnamed", Misnamed)
'''

EXPECTED = {
    "tests/test_envs.py::test_check_env_passes[dummy-model]": "PASSED",
    "tests/test_envs.py::test_gymnasium_make[dummy-model]": "PASSED",
    "tests/test_envs.py::test_gymnasium_make[dummy-kernel-free]": "FAILED",
    "tests/test_agents.py::test_registered_agent_meets_the_contract[dummy-uniform]": "PASSED",
    "tests/test_agents.py::test_registered_agent_lists_its_options[dummy-uniform]": "PASSED",
    "tests/test_agents.py::test_registered_agent_meets_the_contract[dummy-broken]": "FAILED",
    "tests/test_backends.py::test_registered_backend_declares_itself[dummy-backend]": "PASSED",
    "tests/test_backends.py::test_missing_backend_says_how_to_install_it[dummy-backend]": "PASSED",
    "tests/test_backends.py::test_registered_backend_declares_itself[dummy-misnamed]": "FAILED",
}


def test_pieces_registered_before_collection_are_checked_by_the_contracts(tmp_path):
    """In a fresh pytest session whose plugin registers pieces, the contract tests are collected for them, the
    well-formed ones pass and the broken ones fail."""
    (tmp_path / "registry_dummies.py").write_text(textwrap.dedent(PLUGIN))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    files = sorted({test.split("::")[0] for test in EXPECTED})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "registry_dummies", "-p", "no:cacheprovider", "-q", "-rA",
         "-k", "dummy", *files],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    outcomes = {}
    for line in done.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED"):
            outcomes[rest.split(" - ")[0]] = word
    assert {test: outcomes.get(test) for test in EXPECTED} == EXPECTED, done.stdout[-3000:] + done.stderr[-3000:]


# -- PlanSource ----------------------------------------------------------------------------------------------------------


def test_plan_sources_are_written_and_read_back_as_the_trace_strings(tmp_path):
    # the strings committed traces hold: they never change
    assert {s.name: s.value for s in PlanSource} == {
        "TIGHT": "tight", "FALLBACK": "fallback", "LEAST_VIOLATION": "least-violation", "KEPT": "kept-previous",
        "UNIFORM": "uniform-initial", "RULE": "update-rule"}
    # A run whose solver fails in epochs 1 and 3: its trace file holds each epoch's source as the plain string, and
    # read back those strings are the members again (the first epoch has no policy to keep: uniform).
    model = build_model("queue")
    trace = run(PsCurl(model, backend=FailingHighs(fail_on={1, 3})), make("queue"), 400, seed=0, progress=False)
    sources = [e.source for e in trace.epochs]
    assert sources[:3] == [PlanSource.UNIFORM, PlanSource.TIGHT, PlanSource.KEPT]
    written = json.loads(trace.save(tmp_path / "trace.json").read_text(encoding="utf-8"))
    assert [e["source"] for e in written["epochs"]] == [s.value for s in sources]
    assert [e.source for e in load_trace(tmp_path / "trace.json").epochs] == sources
    # the program variants a solve reports are plan sources of the same name
    assert {v.name: PlanSource(v.value).name for v in ProgramVariant} == {"TIGHT": "TIGHT", "FALLBACK": "FALLBACK"}


def test_a_trace_with_enum_sources_writes_the_same_bytes_as_plain_strings(tmp_path):
    from curlopt.agents import UcCurl
    from curlopt.experiments import load_trace, run

    trace = run(UcCurl(two_state_model(), tightness_constant=10.0), _env(), 300, seed=0, progress=False)
    sources = [e.source for e in trace.epochs]
    assert all(type(s) is PlanSource for s in sources)
    assert {PlanSource.TIGHT, PlanSource.FALLBACK} <= set(sources)  # K_ε = 10: ε > 0.7 makes early programs infeasible
    written = trace.save(tmp_path / "enum.json").read_bytes()
    for epoch in trace.epochs:
        epoch.source = str.__str__(epoch.source)  # the plain string
    assert all(type(e.source) is str for e in trace.epochs)
    assert trace.save(tmp_path / "plain.json").read_bytes() == written
    loaded = load_trace(tmp_path / "enum.json")
    assert [e.source for e in loaded.epochs] == sources  # plain strings read back equal the members


def _env():
    from curlopt.envs import make

    return make(two_state_model())


def test_reports_and_figures_know_every_plan_source():
    from curlopt.experiments.outputs.figures.epochs import SOURCES as FIGURE_SOURCES
    from curlopt.experiments.outputs.report import SOURCES as REPORT_SOURCES

    assert list(REPORT_SOURCES) == [s.value for s in PlanSource]
    assert list(FIGURE_SOURCES) == [s.value for s in PlanSource]


# -- ProgramAgent --------------------------------------------------------------------------------------------------------


def test_the_program_agents_share_the_public_base_class():
    import curlopt.agents.curl as curl

    program_agents = {name for name, cls in AGENTS.items() if issubclass(cls, ProgramAgent)}
    assert program_agents == {"uc-curl", "ps-curl", "safe-curl", "ucrl-cmdp", "cmdp-psrl"}
    assert not hasattr(curl, "_ProgramAgent")


class CertaintyEquivalence(ProgramAgent):
    """The occupancy program on the empirical kernel, written on ProgramAgent as its docstring says."""

    name = "ce-test"

    def _build_program(self):
        S, A = self.model.n_states, self.model.n_actions
        return OccupancyProgram(self.model, kernel=np.full((S, A, S), 1.0 / S))

    def _update_program(self, time, epsilon):
        S = self.model.n_states
        visits = self.counts.sum(axis=2, keepdims=True)
        kernel = np.where(visits > 0, self.counts / np.maximum(visits, 1.0), 1.0 / S)
        self.program.update(kernel=kernel, epsilon=epsilon)


def test_an_agent_written_on_program_agent_inherits_the_epoch_cycle():
    from curlopt.experiments import run

    agent = CertaintyEquivalence(two_state_model(), trigger="doubling")
    assert not hasattr(agent, "last_result")
    trace = run(agent, _env(), 2000, seed=1, progress=False)
    assert trace.epochs and all(e.source in (PlanSource.TIGHT, PlanSource.FALLBACK) for e in trace.epochs)
    for epoch in trace.epochs:  # the base class's schedule, K_ε = 1 by default
        assert epoch.epsilon == pytest.approx(tightness(epoch.start))
    assert trace.meta["agent"] == "ce-test" and trace.meta["backend"] == "highs"
    # the optimum (0.66) keeps action 1 in state 1 and spends the rest of the budget in state 0; the uniform policy
    # earns 0.5
    assert agent.policy[1, 1] > 0.9 and trace.epochs[-1].exact_objective > 0.6
    with pytest.raises(TypeError, match="abstract"):
        type("Incomplete", (ProgramAgent,), {"_build_program": lambda self: None})(two_state_model())

"""Shared fixtures: one test body runs on every installed backend; Hypothesis profiles.

Hypothesis profiles (select with HYPOTHESIS_PROFILE=name):
  ci        few examples, the default when CI is set (keeps the suite well under 15 minutes on 2 cores)
  dev       the default elsewhere
  thorough  many examples, for a long local check
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from curlopt.backends.base import RawSolution
from curlopt.backends.highs.backend import CompiledHighs, HighsBackend
from curlopt.backends.results import Status

settings.register_profile(
    "ci", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# -- parametrisation sources --------------------------------------------------------------------------------------
# The contract tests are parametrised over the registries themselves, read when the test modules are collected, so a
# model, agent or backend registered before collection (by a plugin, or in curlopt itself) is checked on arrival.
# tests/test_registries.py checks that this holds.


def registered_models() -> list[str]:
    """Every model of :data:`curlopt.models.MODELS` (the environments), in registration order."""
    from curlopt.models import MODELS

    return list(MODELS)


def registered_agents() -> list[str]:
    """Every agent of :data:`curlopt.agents.AGENTS`, in registration order."""
    from curlopt.agents import AGENTS

    return list(AGENTS)


def registered_backends() -> list[str]:
    """Every registered backend, installed or not."""
    from curlopt.backends import backend_names

    return backend_names()


def installed_backend_names() -> list[str]:
    """Every registered backend whose solver packages are installed."""
    from curlopt.backends import installed_backends

    return installed_backends()


@pytest.fixture(params=installed_backend_names())
def backend_name(request) -> str:
    """Every installed backend, by registry name."""
    return request.param


def backend_or_skip(name: str, program):
    """A compiled program, or skip the test when that backend does not accept the program's utilities."""
    from curlopt import get_backend
    from curlopt.errors import UnsupportedUtilityError

    backend = get_backend(name)
    try:
        return backend.compile(program)
    except UnsupportedUtilityError as exc:
        pytest.skip(f"{name} does not accept this program: {exc}")


@pytest.fixture(scope="module")
def reference_trace(tmp_path_factory):
    """A short PS-CURL run on the queue saved as a run file (for tests that damage, reload or rewrite one)."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments import run
    from curlopt.models import build_model

    path = tmp_path_factory.mktemp("trace") / "T300-seed000.json.gz"
    run(make_agent("ps-curl", build_model("queue")), make("queue"), 300, seed=0, progress=False).save(path)
    return path


class FailingHighs(HighsBackend):
    """HiGHS reporting a numerical error on chosen solve calls, counted from 1 (fault injection)."""

    name = "failing-highs"

    def __init__(self, fail_on):
        super().__init__()
        self.fail_on, self.calls = set(fail_on), 0

    def _compile(self, program):
        backend = self

        class Compiled(CompiledHighs):
            def _solve(self, with_constraints):
                backend.calls += 1
                if backend.calls in backend.fail_on:
                    return RawSolution(Status.NUMERICAL_ERROR, message="injected fault")
                return super()._solve(with_constraints)

        return Compiled(self, program)

"""Solver faults during a run: each is recorded on its epoch, the previous policy is kept and the run goes on; an
infeasible tight program is a fallback, not a fault."""

from __future__ import annotations

import numpy as np
import pytest

from curlopt import Status, build_model
from curlopt.agents import PlanSource, PsCurl, UcCurl
from curlopt.backends.base import RawSolution
from curlopt.backends.highs.backend import CompiledHighs, HighsBackend
from curlopt.envs import make
from curlopt.experiments import run


class FaultyHighs(HighsBackend):
    """HiGHS whose solve calls listed in ``faults`` (counted from 1) end with a chosen fault."""

    name = "faulty-highs"

    def __init__(self, faults: dict[int, str]):
        super().__init__()
        self.faults, self.calls = faults, 0

    def _compile(self, program):
        backend = self

        class Compiled(CompiledHighs):
            def _solve(self, with_constraints):
                backend.calls += 1
                fault = backend.faults.get(backend.calls)
                if fault == "exception":
                    raise RuntimeError("solver crashed")
                if fault is not None:
                    return RawSolution(Status(fault), message=f"injected {fault}")
                return super()._solve(with_constraints)

        return Compiled(self, program)


FAULTS = ["time_limit", "iteration_limit", "numerical_error", "solver_error", "unbounded", "unknown", "exception"]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("agent_class", [UcCurl, PsCurl])
def test_a_solver_fault_is_recorded_and_the_run_continues(fault, agent_class):
    model = build_model("queue")
    agent = agent_class(model, backend=FaultyHighs({2: fault, 5: fault}), trigger="linear")
    trace = run(agent, make("queue"), 400, seed=0, progress=False)
    assert trace.checkpoints["t"][-1] == 400  # the run completed
    faulty = [e for e in trace.epochs if e.source == PlanSource.KEPT]
    assert [e.index for e in faulty] == [1, 4]
    expected = "solver_error" if fault == "exception" else fault
    assert all(e.status == expected for e in faulty)
    assert all(("crashed" if fault == "exception" else "injected") in e.message for e in faulty)
    # the kept policy is the previous epoch's: same exact long-run value
    for e in faulty:
        assert e.exact_objective == trace.epochs[e.index - 1].exact_objective
    for e in trace.epochs:
        assert np.isfinite(e.exact_objective)


def test_an_infeasible_tight_program_is_a_fallback_not_a_fault():
    agent = PsCurl(build_model("queue"), backend=FaultyHighs({}), tightness_constant=10.0, trigger="linear")
    trace = run(agent, make("queue"), 200, seed=0, progress=False)
    assert any(e.source == PlanSource.FALLBACK for e in trace.epochs)
    assert not any(e.source == PlanSource.KEPT for e in trace.epochs)

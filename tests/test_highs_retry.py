"""HiGHS without a verdict after a hot start is run again from scratch before the result says ``unknown``.

On a few infeasible random programs the hot-started fallback (or the tight solve) ended with model status
``kNotset`` ("excessive dual values") or ``kUnknown``, with no point, where a solve from scratch answers. Here the
first run is made to end that way, so the retry is seen whatever HiGHS does on this machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from curlopt import CMDP, LinearBound, build_model, get_backend
from curlopt.backends.highs.backend import CompiledHighs
from curlopt.backends.results import ProgramVariant, Status
from curlopt.programs.occupancy import OccupancyProgram


def _infeasible_random(seed: int = 3) -> CMDP:
    """A random model whose every cost bound is cut by 1.1: negative, so no policy meets them (costs lie in [0, 1))."""
    m = build_model("random", n_states=10, n_costs=3, seed=seed)
    bounds = [LinearBound(g.weights, g.bound - 1.1) for g in m.constraints]
    return CMDP(m.rewards, m.costs, m.objective, bounds, kernel=m.kernel, initial=m.initial, name="infeasible")


@pytest.fixture
def first_run_without_verdict(monkeypatch):
    """The next HiGHS run on each attempt ends with ``status`` instead of running (as the hot start did)."""
    seen = []

    def install(status: str, attempts: int = 1):
        real = CompiledHighs._run

        def run(self):
            if len(seen) < attempts:
                seen.append(status)
                return status, 0, 0.0
            return real(self)

        monkeypatch.setattr(CompiledHighs, "_run", run)
        return seen

    return install


@pytest.mark.parametrize("status", ["kNotset", "kUnknown"])
def test_a_fallback_without_verdict_is_solved_from_scratch(first_run_without_verdict, status):
    program = OccupancyProgram(_infeasible_random())
    expected = get_backend("highs").solve(program)
    assert expected.program is ProgramVariant.FALLBACK and expected.status is Status.OPTIMAL
    compiled = get_backend("highs").compile(program)
    compiled.solve()  # the tight attempt proves infeasibility; its basis is the hot start of the fallback
    real = CompiledHighs._run
    calls = []

    def fallback_without_verdict(self):
        calls.append(1)
        if len(calls) == 2:  # the fallback's first run (the tight attempt is the first)
            return status, 0, 0.0
        return real(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CompiledHighs, "_run", fallback_without_verdict)
        result = compiled.solve()
    assert result.tight_status is Status.INFEASIBLE and result.program is ProgramVariant.FALLBACK
    assert result.status is Status.OPTIMAL, result.message
    assert f"HiGHS ended with model status {status} from its hot start; re-solved from scratch" in result.message
    assert result.objective == pytest.approx(expected.objective, abs=1e-9)


def test_a_tight_solve_without_verdict_is_solved_from_scratch(first_run_without_verdict):
    seen = first_run_without_verdict("kUnknown")
    program = OccupancyProgram(_infeasible_random())
    result = get_backend("highs").solve(program)
    assert seen == ["kUnknown"]
    assert result.tight_status is Status.INFEASIBLE and result.program is ProgramVariant.FALLBACK, result.message
    assert result.status is Status.OPTIMAL


def test_a_verdict_still_missing_after_the_retry_is_unknown_and_says_what_was_tried(first_run_without_verdict):
    first_run_without_verdict("kNotset", attempts=3)
    program = OccupancyProgram(build_model("queue"))
    result = get_backend("highs").solve(program)
    assert result.status is Status.UNKNOWN and result.x is None
    assert "HiGHS model status kNotset" in result.message and "re-solved from scratch" in result.message
    assert "re-solved by the interior-point method: kNotset" in result.message


def test_a_verdict_missing_after_the_cold_retry_is_asked_of_the_interior_point_method(first_run_without_verdict):
    seen = first_run_without_verdict("kUnknown", attempts=2)   # the hot start and the simplex from scratch
    program = OccupancyProgram(_infeasible_random())
    compiled = get_backend("highs").compile(program)
    result = compiled.solve()
    assert seen == ["kUnknown", "kUnknown"]
    assert result.tight_status is Status.INFEASIBLE and result.program is ProgramVariant.FALLBACK, result.message
    assert result.status is Status.OPTIMAL
    assert "re-solved by the interior-point method: kInfeasible" in result.message
    assert compiled.highs.getOptionValue("solver")[1] == "choose"   # the backend's own solver option is back


def test_the_infeasible_model_is_infeasible():
    """Independently of HiGHS: the bounds ask for average costs below what any state-action pair costs."""
    m = _infeasible_random()
    lowest = m.costs.reshape(m.n_costs, -1).min(axis=1)
    assert np.all(np.array([g.bound for g in m.constraints]) < lowest)

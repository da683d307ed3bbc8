"""compare-solvers compares like with like: common instances, flagged disagreements, refusals, instance counts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import invoke

from curlopt import build_model
from curlopt.backends import registry
from curlopt.backends.base import RawSolution
from curlopt.backends.highs.backend import HighsBackend
from curlopt.backends.results import Status
from curlopt.errors import CurloptError
from curlopt.experiments import compare
from curlopt.experiments.compare import MAX_INSTANCES, compare_solvers, program_instances
from curlopt.testing.reference import model_optimum

#: the instance the flaky backend fails on, and the one the biased backend gets wrong
FAILED, BIASED = 1, 2


class FlakyHighs(HighsBackend):
    """HiGHS, failing (a solver_error status) on the ``FAILED``-th solve of each compiled program."""

    name = "flaky"

    def _compile(self, program):
        compiled = super()._compile(program)
        solve, calls = compiled._solve, []

        def flaky(with_constraints):
            calls.append(with_constraints)
            if len(calls) - 1 == FAILED:
                return RawSolution(Status.SOLVER_ERROR, message="injected failure")
            return solve(with_constraints)

        compiled._solve = flaky
        return compiled


class BiasedHighs(HighsBackend):
    """HiGHS, whose objective on the ``BIASED``-th solve is 1e-3 (relative) too high: a solver that is wrong."""

    name = "biased"

    def _compile(self, program):
        compiled = super()._compile(program)
        solve, calls = compiled.solve, []

        def biased(*args, **kwargs):
            result = solve(*args, **kwargs)
            calls.append(result)
            if len(calls) - 1 == BIASED:
                result.objective *= 1 + 1e-3
            return result

        compiled.solve = biased
        return compiled


@pytest.fixture
def fake_backends(monkeypatch):
    for cls in (FlakyHighs, BiasedHighs):
        monkeypatch.setitem(registry._REGISTRY, cls.name, cls)


def _reference_objectives(model, instances) -> list[float]:
    """Each instance's optimum from the independent LP of curlopt.testing.reference (scipy's linprog)."""
    return [model_optimum(model, kernel=data["kernel"], epsilon=data["epsilon"]).value for data in instances]


def test_means_are_over_the_instances_every_solver_solved(fake_backends):
    model = build_model("queue")
    report = compare_solvers(model, program="sampled", epochs=4, backends=["highs", "flaky"])
    _, instances = program_instances(model, "sampled", 4)
    reference = _reference_objectives(model, instances)
    assert report.instances == 4 and report.common == [0, 2, 3]
    # the flaky backend has HiGHS's two solvers, simplex and ipm: both fail on that instance
    assert report.dropped == [f"instance {FAILED}: not solved by flaky/simplex solver_error, flaky/ipm solver_error"]
    expected = np.mean([reference[i] for i in (0, 2, 3)])  # the same three instances for every row
    for row in report.rows:
        assert report.mean_objective(row) == pytest.approx(expected, rel=1e-7), row.solver
    table = report.table()
    assert "over the 3 of 4 instance(s) every compared solver solved (0, 2, 3); 1 dropped:" in table
    assert f"dropped instance {FAILED}: not solved by flaky/simplex solver_error" in table
    assert "agreement: on every instance, the solvers that solved it agree within 1e-05" in table
    assert report.to_dict()["compared_instances"] == [0, 2, 3]


def test_disagreements_beyond_the_tolerance_are_flagged(fake_backends, capsys, monkeypatch):
    model = build_model("queue")
    report = compare_solvers(model, program="sampled", epochs=3, backends=["highs", "biased"])
    assert len(report.disagreements) == 1 and report.disagreements[0].startswith(f"instance {BIASED}: objectives differ")
    assert "DISAGREEMENT beyond 1e-05 (relative) on 1 instance(s):" in report.table()
    loose = compare_solvers(model, program="sampled", epochs=3, backends=["highs", "biased"], tolerance=1e-2)
    assert loose.disagreements == [] and "agreement:" in loose.table()

    monkeypatch.setattr(compare, "installed_backends", lambda: ["highs", "biased"])
    code, out, err = invoke(["compare-solvers", "queue", "--program", "sampled", "--instances", "3"], capsys)
    assert code == 0 and "DISAGREEMENT beyond 1e-05" in out
    assert err.startswith(f"warning: solvers disagree beyond 1e-05 (relative): instance {BIASED}: objectives differ")


def test_a_refused_program_says_refused_and_is_left_out_of_the_comparison():
    # HiGHS takes no logarithm: the scheduler's program is refused when compiled, not failed when solved.
    report = compare_solvers(build_model("scheduler"), program="optimum", backends=["highs", "scipy"])
    assert [r.status_summary() for r in report.rows] == ["refused"] * len(report.rows)
    assert all(not r.compared and r.statuses == [] for r in report.rows)
    assert report.common == [] and report.dropped == [] and report.disagreements == []
    table = report.table()
    assert "refused" in table and "solver_error" not in table
    assert "mean objective: none, no solver solved any instance" in table


def test_fewer_instances_than_asked_are_said_and_explained(capsys, monkeypatch):
    model = build_model("queue")
    report = compare_solvers(model, program="optimum", epochs=3, backends=["highs"])
    assert report.instances == 1 and report.requested == 3
    assert report.notes == ["3 instances were asked for, but the optimum program has one (the true kernel, ε = 0)."]
    optimum = model_optimum(model).value
    assert all(report.mean_objective(r) == pytest.approx(optimum, rel=1e-8) for r in report.rows)

    monkeypatch.setattr(compare, "installed_backends", lambda: ["highs"])
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--instances", "3", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["instances"] == 1 and data["requested"] == 3 and data["notes"] == report.notes
    assert err == f"note: {report.notes[0]}\n"
    with pytest.raises(CurloptError, match=f"between 1 and {MAX_INSTANCES:,}"):
        program_instances(model, "optimistic", MAX_INSTANCES + 1)


def test_size_works_for_the_queue_and_is_refused_clearly_elsewhere(capsys, monkeypatch):
    monkeypatch.setattr(compare, "installed_backends", lambda: ["highs"])
    code, out, err = invoke(["compare-solvers", "queue", "--size", "4", "--instances", "1"], capsys)
    assert code == 0 and "S=4, A=16" in out.splitlines()[0], err  # buffer 3: states 0..3
    code, out, err = invoke(["compare-solvers", "queue", "--size", "4,16", "--instances", "1"], capsys)
    assert code == 0 and "S=4, A=16" in out.splitlines()[0], err
    code, out, err = invoke(["compare-solvers", "random", "--size", "3,2", "--instances", "1"], capsys)
    assert code == 0 and "S=3, A=2" in out.splitlines()[0], err
    for args, message in [
        (["queue", "--size", "4,3"], "the queue has A = 16 actions (service x flow probabilities), not 3; give --size 4"),
        (["queue", "--size", "1"], "--size takes S (states, at least 2) or S,A for queue, got '1'"),
        (["queue", "--size", "4", "--param", "buffer=5"], "--size and --param buffer=... both set buffer"),
        (["scheduler", "--size", "4,2"], ("--size sizes the random model (S,A) and the queue (S = buffer + 1);"
                                          " 'scheduler' has a fixed size")),
        (["random", "--size", "3"], "--size takes S,A (two integers) for random, got '3'"),
    ]:
        code, out, err = invoke(["compare-solvers", *args], capsys)
        assert code == 2 and out == "" and err.startswith(f"error: {message}") and err.count("\n") == 1, (args, err)

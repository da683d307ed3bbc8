"""compare-solvers fails when nothing was solved, takes any finite time limit, and calls a solver that cannot take
a program (or ran out of memory) what it is: refused (or stopped), not a solver error."""

from __future__ import annotations

import pytest
from cli_helpers import invoke

from curlopt import build_model
from curlopt.backends import registry
from curlopt.backends.base import RawSolution
from curlopt.backends.highs.backend import HighsBackend
from curlopt.backends.results import Status
from curlopt.experiments.compare import compare_solvers


class _OneVariant(HighsBackend):
    @classmethod
    def solver_variants(cls):
        return [(cls.name, {})]


class AbsentBackend(_OneVariant):
    name = "absent"
    requires = ("no_such_package_for_curlopt_tests",)


class OutOfMemoryHighs(_OneVariant):
    """Fails every solve with SCS's words for a failed allocation."""

    name = "out-of-memory"

    def _compile(self, program):
        compiled = super()._compile(program)
        compiled._solve = lambda with_constraints: RawSolution(Status.SOLVER_ERROR,
                                                              message="SCS: ScsWork allocation error!")
        return compiled


@pytest.fixture
def extra_backends(monkeypatch):
    for cls in (AbsentBackend, OutOfMemoryHighs):
        monkeypatch.setitem(registry._REGISTRY, cls.name, cls)


def test_nothing_solved_in_the_time_limit_exits_non_zero(capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--backends", "highs",
                             "--time-limit", "1e-9"], capsys)
    assert code == 1
    assert err.splitlines()[-1] == ("error: no solver solved any instance of the optimum program (highs/simplex,"
                                    " highs/ipm: time_limit 1/1).")
    assert "time_limit 1/1" in out  # the table is still printed


def test_only_a_backend_not_installed_exits_non_zero(extra_backends, capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--backends", "absent"], capsys)
    assert code == 1 and "absent/absent: not installed" in err.splitlines()[-1]


def test_a_huge_time_limit_in_child_processes_is_no_traceback(capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--backends", "highs",
                             "--time-limit", "1e7", "--isolate"], capsys)
    assert code == 0 and "Traceback" not in err and "OverflowError" not in err, err
    assert out.count("optimal 1/1") == 2


def test_solvers_that_take_linear_programs_only_refuse_a_logarithm():
    pytest.importorskip("cvxpy")
    pytest.importorskip("pyomo")
    model = build_model("scheduler")  # a sum of logarithms
    report = compare_solvers(model, program="optimum", backends=["cvxpy", "pyomo"], isolate=False)
    rows = {(r.backend, r.solver): r for r in report.rows}
    for key in (("cvxpy", "HIGHS"), ("pyomo", "appsi_highs")):
        if key in rows:  # a variant offered where its solver is installed
            assert rows[key].status_summary() == "refused", rows[key].error
            assert "is not LP-representable" in rows[key].error and not rows[key].statuses
    assert ("cvxpy", "HIGHS") in rows


def test_a_solver_out_of_memory_is_stopped_not_a_solver_error(extra_backends):
    report = compare_solvers(build_model("queue"), program="optimum", backends=["out-of-memory", "highs"],
                             isolate=False)
    row = report.rows[0]
    assert row.status_summary() == "stopped"
    assert row.error == "stopped: out of memory while solving instance 0 (SCS: ScsWork allocation error!)"

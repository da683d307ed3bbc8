"""curlopt compare-solvers: every installed backend and solver on the same instances."""

from __future__ import annotations

import json
import math

import pytest
from cli_helpers import invoke as _cli
from typer.testing import CliRunner

from curlopt import build_model
from curlopt.cli import _register, app
from curlopt.errors import CurloptError
from curlopt.experiments.compare import compare_solvers, program_instances


def test_every_solver_solves_the_same_instances_and_agrees():
    report = compare_solvers(build_model("queue"), program="sampled", epochs=3, backends=["highs", "cvxpy"])
    labels = {(r.backend, r.solver) for r in report.rows}
    assert ("highs", "simplex") in labels and ("highs", "ipm") in labels and ("cvxpy", "CLARABEL") in labels
    for row in report.rows:
        assert len(row.statuses) == 3 and set(row.statuses) == {"optimal"}
        assert max(row.residuals) < 1e-7
    assert report.disagreements == []


def test_a_refusing_backend_is_reported_not_raised():
    report = compare_solvers(build_model("scheduler"), program="optimum", backends=["highs"])
    assert all(r.error.startswith("refused") for r in report.rows)
    assert "refused" in report.table()


def test_instances_follow_the_requested_program():
    model = build_model("queue")
    cls, instances = program_instances(model, "optimistic", 4)
    times = [d["time"] for d in instances]
    assert cls.__name__ == "OptimisticProgram" and times == sorted(times)
    # counts grow along the simulated run
    totals = [d["counts"].sum() for d in instances]
    assert totals == sorted(totals) and totals[-1] == times[-1] - 1
    with pytest.raises(CurloptError, match="program must be one of"):
        program_instances(model, "dual", 2)


def test_cli_prints_a_table_and_json():
    _register()
    runner = CliRunner()
    result = runner.invoke(app, ["compare-solvers", "queue", "--epochs", "2"])
    assert result.exit_code == 0, result.output
    assert "backend" in result.stdout and "highs" in result.stdout and "max residual" in result.stdout
    result = runner.invoke(app, ["compare-solvers", "random", "--size", "3,2", "--program", "optimum", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["instances"] == 1 and data["rows"]


def test_compare_solvers_counts_instances_and_epochs_is_a_deprecated_alias(capsys):
    code, out, err = _cli(["compare-solvers", "queue", "--instances", "2", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["instances"] == 2 and "deprecated" not in err
    code, out, err = _cli(["compare-solvers", "queue", "--epochs", "1", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["instances"] == 1
    notes = [line for line in err.splitlines() if "--epochs" in line]
    assert notes == ["note: --epochs is deprecated here; use --instances (the number of program instances)."]
    code, _, err = _cli(["compare-solvers", "queue", "--epochs", "1", "--instances", "2"], capsys)
    assert code == 2 and "give --instances only" in " ".join(err.replace("│", " ").split())
    code, out, _ = _cli(["compare-solvers", "--help"], capsys)
    assert "--instances" in out and "--epochs" not in out  # the old name is hidden


def test_compare_solvers_refuses_a_tolerance_that_disables_the_check(capsys):
    from curlopt.cli import main
    from curlopt.experiments.compare import compare_solvers

    for bad in (math.nan, -1e-3, math.inf):
        with pytest.raises(CurloptError, match="tolerance must be a finite number >= 0"):
            compare_solvers(build_model("queue"), program="optimum", tolerance=bad, backends=["highs"])
    with pytest.raises(SystemExit) as done:
        main(["compare-solvers", "queue", "--tolerance", "nan"])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("error: --tolerance must be a finite number >= 0")

"""compare-solvers' reference is the consensus of the exact solvers, never an interior-point answer over simplex ones
that agree; and its notes are said once."""

from __future__ import annotations

import pytest
from cli_helpers import invoke

from curlopt.experiments.compare import ComparisonReport, SolverRow

#: the exact optimum the simplex rows below agree on (to 1e-15), and the interior-point row's error
OPTIMUM = 39.4692240216
IPOPT_ERROR = 3.6e-11


def _row(backend: str, solver: str, objectives: list[float], residual: float) -> SolverRow:
    count = len(objectives)
    return SolverRow(backend, solver, statuses=["optimal"] * count, objectives=list(objectives),
                     residuals=[residual] * count, times=[0.0] * count, iterations=[1] * count)


def _report(rows: list[SolverRow]) -> ComparisonReport:
    count = len(rows[0].statuses)
    return ComparisonReport("optimum", count, rows, 1e-5, [], requested=count, common=list(range(count)))


def test_agreeing_simplex_rows_are_the_reference_over_a_more_precise_looking_interior_point_one():
    # Ipopt's point has the smallest residual (1e-18) but its objective is 3.6e-11 below eight simplex answers that
    # agree with each other to 1e-15: the smallest residual chose Ipopt; the consensus must choose a simplex row.
    simplex = [_row(b, s, [OPTIMUM + 1e-15 * k], 1e-12) for k, (b, s) in enumerate([
        ("highs", "simplex"), ("highs", "ipm"), ("scipy", "scipy"), ("cvxpy", "HIGHS"), ("pyomo", "appsi_highs"),
        ("highs-columns", "highs-columns"), ("highs-box-columns", "highs-box-columns"), ("cvxpy", "CLARABEL")])]
    ipopt = _row("pyomo", "cyipopt-bridge", [OPTIMUM - IPOPT_ERROR * OPTIMUM], 1e-18)
    report = _report([ipopt] + simplex)
    reference, why = report.reference()
    assert (reference.backend, reference.solver) == ("highs", "simplex")
    assert why.startswith("the consensus of the exact solvers: ")
    assert "a vertex (simplex or crossover) solver" in why
    # the simplex rows are 0 off (to 1e-15), Ipopt is the one off by its error
    assert report.gap(ipopt) == pytest.approx(IPOPT_ERROR * OPTIMUM / OPTIMUM, rel=1e-3)
    assert max(report.gap(r) for r in simplex) < 1e-14


def test_the_consensus_outvotes_a_lone_exact_row_with_the_smallest_residual():
    # two exact rows agree on each instance; a third, with the smallest residual, is 1e-6 off on one instance
    one = _row("highs", "simplex", [1.0, 2.0, 3.0], 1e-10)
    two = _row("scipy", "scipy", [1.0, 2.0, 3.0 + 1e-13], 1e-10)
    lone = _row("highs-columns", "highs-columns", [1.0, 2.0 + 1e-6, 3.0], 1e-17)
    reference, why = _report([lone, one, two]).reference()
    assert reference is one and why.startswith("the consensus of the exact solvers: 2 of 3 agree within 1e-09")


def test_without_agreement_a_vertex_solver_comes_before_an_interior_point_one():
    ipopt = _row("pyomo", "cyipopt-bridge", [1.0], 1e-18)
    highs = _row("highs", "simplex", [1.0 + 1e-6], 1e-9)
    reference, why = _report([ipopt, highs]).reference()
    assert reference is highs and why.startswith("no two exact solvers agree within 1e-09")
    # an interior-point row is the reference only when it is all there is
    reference, why = _report([ipopt]).reference()
    assert reference is ipopt and "an interior-point solver" in why


def test_the_note_about_instances_is_printed_once(capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--backends", "highs"], capsys)
    text = "10 instances were asked for, but the optimum program has one"
    assert code == 0, err
    assert (out + err).count(text) == 1

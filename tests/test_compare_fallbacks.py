"""compare-solvers counts fallback solves apart: a point of the program without constraint rows is never
"optimal", never in the means, and its residual is measured against the program asked (constraint rows too)."""

from __future__ import annotations

import json

import numpy as np
from cli_helpers import invoke
from scipy.optimize import linprog

from curlopt import build_model
from curlopt.experiments.compare import compare_solvers, program_instances
from curlopt.models.files import save_model


def _infeasible_queue(tmp_path):
    """The queue with constraint 0's bound at -100: g(ζ) = -ζ_0 + 100 <= 0 asks ζ_0 >= 100, and ζ_0 is a mean of
    costs at most 4, so no occupancy meets it."""
    model = build_model("queue")
    assert model.constraints[0].weights.tolist() == [-1.0, 0.0]
    assert np.max(model.costs[0]) <= 4.0  # the closed-form reason it is infeasible
    path = save_model(model, tmp_path / "q.json")
    data = json.loads(path.read_text())
    data["constraints"][0]["bound"] = -100.0
    infeasible = tmp_path / "q_infeas.json"
    infeasible.write_text(json.dumps(data))
    return infeasible


def test_a_fallback_solve_is_not_optimal(tmp_path, capsys):
    path = _infeasible_queue(tmp_path)
    code, out, err = invoke(["compare-solvers", str(path), "--program", "optimum", "--backends", "highs"], capsys)
    assert "optimal" not in out.split("mean objective:")[0], out  # no row's status says optimal
    assert "fallback 1/1" in out
    assert "mean objective: none" in out
    assert "FALLBACK: highs/simplex, highs/ipm on instance(s) 0 of 1" in out
    # its point violates the constraint by 100 - ζ_0 >= 96
    line = next(x for x in out.splitlines() if x.startswith("FALLBACK"))
    assert float(line.split("up to ")[1].split(")")[0]) >= 96
    code, out, err = invoke(["compare-solvers", str(path), "--program", "optimum", "--backends", "highs", "--json"],
                            capsys)
    data = json.loads(out)
    assert [r["status"] for r in data["rows"]] == ["fallback 1/1"] * 2
    assert all(r["mean_objective"] is None and r["gap"] is None and r["fallbacks"] == [0] for r in data["rows"])
    assert data["reference"] is None
    assert data["answered"] is True  # infeasible is an answer: the command does not fail for it
    assert code == 0


def _feasible(model, kernel: np.ndarray, epsilon: float) -> bool:
    """Whether the ε-tight occupancy program on ``kernel`` has a point: a feasibility LP written here (ρ >= 0,
    Σρ = 1, every flow row, and w_m·C ρ <= b_m - ε for each linear bound)."""
    S, A = model.n_states, model.n_actions
    P = np.asarray(kernel).reshape(S, A, S)
    flow = np.zeros((S, S * A))
    for s in range(S):
        for a in range(A):
            flow[s, s * A + a] += 1.0
            flow[:, s * A + a] -= P[s, a]
    costs = np.array([np.tensordot(np.asarray(g.weights), model.costs, axes=1).ravel() for g in model.constraints])
    solved = linprog(np.zeros(S * A), A_ub=costs, b_ub=[g.bound - epsilon for g in model.constraints],
                     A_eq=np.vstack([np.ones((1, S * A)), flow]), b_eq=np.concatenate([[1.0], np.zeros(S)]),
                     bounds=(0, None), method="highs")
    assert solved.status in (0, 2), solved.message
    return solved.status == 0


def test_fallback_instances_are_left_out_of_the_means_and_counted_apart():
    model = build_model("random", n_states=10, n_costs=3, margin=0.001)
    _, instances = program_instances(model, "sampled", 6, 0)
    infeasible = [i for i, data in enumerate(instances) if not _feasible(model, data["kernel"], data["epsilon"])]
    assert infeasible == [0, 1]  # the case the issue saw: two of the six sampled programs have no point
    report = compare_solvers(model, program="sampled", epochs=6, backends=["highs", "scipy"], isolate=False)
    assert report.common == [2, 3, 4, 5]
    for row in report.rows:
        assert row.fallbacks() == infeasible
        assert row.status_summary() == "optimal 4/6, fallback 2/6"
        # the fallback's points violate a constraint (g > 0), and their residual counts the g rows
        assert all(row.violations[i] > 0 and row.residuals[i] >= row.violations[i] for i in infeasible)
        assert row.max_residual() < 1e-9  # over the instances it solved
    assert any(line.startswith("FALLBACK: highs/simplex, highs/ipm, scipy/scipy on instance(s) 0, 1 of 6")
               for line in report.explanation())

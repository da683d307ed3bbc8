"""compare-solvers on the episodic and discounted criteria: the known-model program of the model's criterion on every
backend, checked against LPs written here with scipy's linprog."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import invoke
from scipy.optimize import linprog

from curlopt import CMDP, Linear, LinearBound
from curlopt.errors import CurloptError
from curlopt.experiments.compare import compare_solvers
from curlopt.models.criteria import discounted, episodic
from curlopt.models.files import save_model

BACKENDS = ["highs", "scipy"]


def small_model(seed: int = 3) -> CMDP:
    rng = np.random.default_rng(seed)
    S, A = 3, 2
    kernel = rng.dirichlet(np.ones(S), size=(S, A))
    rewards = rng.uniform(0, 1, (1, S, A))
    costs = rng.uniform(0, 1, (1, S, A))
    bound = float(np.quantile(costs, 0.4))
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], bound)], kernel,
                initial=np.array([0.5, 0.5, 0.0]))


def episodic_lp(model) -> float:
    """max Σ_h r·q_h over q_h(s,a) >= 0: Σ_a q_0(s,a) = μ(s), Σ_a q_{h+1}(j,a) = Σ P(j|s,a) q_h(s,a), and the model's
    linear constraint w·Σ_h c·q_h <= bound (its per-episode budget)."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    P = np.asarray(model.kernel).reshape(S * A, S)
    n = S * A
    visits = np.repeat(np.eye(S), A, axis=0).T                   # (S, n)
    a_eq = np.zeros((H * S, H * n))
    b_eq = np.zeros(H * S)
    a_eq[:S, :n] = visits
    b_eq[:S] = model.initial
    for h in range(1, H):
        a_eq[h * S:(h + 1) * S, h * n:(h + 1) * n] = visits
        a_eq[h * S:(h + 1) * S, (h - 1) * n:h * n] = -P.T
    reward = np.tile(np.asarray(model.rewards)[0].reshape(-1)[: n], H) if np.asarray(model.rewards).ndim == 3 \
        else np.asarray(model.rewards)[0].reshape(-1)
    cost = np.tile(np.asarray(model.costs)[0].reshape(-1)[: n], H) if np.asarray(model.costs).ndim == 3 \
        else np.asarray(model.costs)[0].reshape(-1)
    g = model.constraints[0]
    res = linprog(-reward, A_ub=(g.weights[0] * cost)[None], b_ub=[g.bound], A_eq=a_eq, b_eq=b_eq, bounds=(0, None),
                  method="highs")
    assert res.status == 0, res.message
    return -res.fun


def discounted_lp(model) -> float:
    """max r·d over d >= 0 with Σ_a d(j,a) − γ Σ P(j|s,a) d(s,a) = (1 − γ) μ(j) and w·c·d <= bound."""
    S, A, gamma = model.n_states, model.n_actions, model.discount
    P = np.asarray(model.kernel).reshape(S * A, S)
    a_eq = np.repeat(np.eye(S), A, axis=0).T - gamma * P.T
    g = model.constraints[0]
    cost = np.asarray(model.costs)[0].reshape(-1)
    res = linprog(-np.asarray(model.rewards)[0].reshape(-1), A_ub=(g.weights[0] * cost)[None], b_ub=[g.bound],
                  A_eq=a_eq, b_eq=(1 - gamma) * np.asarray(model.initial), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def check_report(report, expected: float) -> None:
    assert report.instances == 1
    solved = [row for row in report.rows if row.objectives]
    assert {row.backend for row in solved} >= set(BACKENDS), [(r.backend, r.error) for r in report.rows]
    for row in solved:
        assert all(status == "optimal" for status in row.statuses), (row.backend, row.statuses)
        assert row.objectives[0] == pytest.approx(expected, rel=1e-7, abs=1e-9), row.backend
    assert not report.disagreements


def test_compare_solvers_on_an_episodic_model_matches_the_lp_written_here():
    model = episodic(small_model(), 4)
    expected = episodic_lp(model)
    check_report(compare_solvers(model, program="optimum", backends=BACKENDS, isolate=False), expected)


def test_compare_solvers_on_a_discounted_model_matches_the_lp_written_here():
    model = discounted(small_model(), 0.8)
    expected = discounted_lp(model)
    check_report(compare_solvers(model, program="optimum", backends=BACKENDS, isolate=False), expected)


@pytest.mark.parametrize("program", ["optimistic", "sampled"])
def test_the_average_criterion_programs_refuse_an_episodic_model(program):
    with pytest.raises(CurloptError, match="episodic criterion.*program 'optimum'"):
        compare_solvers(episodic(small_model(), 4), program=program, backends=BACKENDS, isolate=False)


def test_cli_compare_solvers_with_a_horizon_and_a_discount(capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--horizon", "3",
                             "--backends", "highs,scipy", "--no-isolate", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["program"] == "optimum"
    objectives = [row["objectives"][0] for row in report["rows"]]
    assert len(objectives) == 3 and max(objectives) - min(objectives) < 1e-9
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--discount", "0.9",
                             "--backends", "highs", "--no-isolate"], capsys)
    assert code == 0, err
    assert "γ=0.9" in out and "optimal 1/1" in out


def test_cli_compare_solvers_refuses_both_criteria_and_a_learning_program(capsys):
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--horizon", "3", "--discount",
                             "0.9", "--backends", "highs"], capsys)
    assert code != 0 and "not both" in err
    code, out, err = invoke(["compare-solvers", "queue", "--horizon", "3", "--backends", "highs"], capsys)
    assert code != 0 and "program 'optimum'" in err


def test_cli_compare_solvers_on_a_model_file_that_carries_a_horizon(tmp_path, capsys):
    model = episodic(small_model(), 4)
    path = save_model(model, tmp_path / "episodic.json")
    code, out, err = invoke(["compare-solvers", str(path), "--program", "optimum", "--backends", "highs,scipy",
                             "--no-isolate", "--json"], capsys)
    assert code == 0, err
    objectives = [row["objectives"][0] for row in json.loads(out)["rows"]]
    assert objectives and all(v == pytest.approx(episodic_lp(model), rel=1e-7) for v in objectives)

"""A model whose constraints are infeasible: the run, the sweep and its summary say so, and say what the regret is
measured against (the optimum without constraints); fallback epochs and violating runs are said, not only counted."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest
from cli_helpers import invoke
from scipy.optimize import linprog

from curlopt import build_model
from curlopt.agents import make_agent
from curlopt.envs import make
from curlopt.experiments import run
from curlopt.models.files import load_model, save_model

STEPS = 1_500


@pytest.fixture
def infeasible_file(tmp_path):
    """The queue with constraint 1 asking ζ_0 >= 100 (g = -ζ_0 + 100): ζ_0 is a mean of costs at most 4."""
    model = build_model("queue")
    assert model.constraints[0].weights.tolist() == [-1.0, 0.0] and np.max(model.costs[0]) <= 4.0
    data = json.loads(save_model(model, tmp_path / "q.json").read_text())
    data["constraints"][0]["bound"] = -100.0
    path = tmp_path / "q_infeas.json"
    path.write_text(json.dumps(data))
    return path


def _unconstrained_optimum(model) -> float:
    """max w·Rρ over the occupancy polytope (ρ >= 0, Σρ = 1, every flow row), no constraint rows: linprog."""
    S, A = model.n_states, model.n_actions
    P = np.asarray(model.kernel).reshape(S, A, S)
    flow = np.zeros((S, S * A))
    for s in range(S):
        for a in range(A):
            flow[s, s * A + a] += 1.0
            flow[:, s * A + a] -= P[s, a]
    gain = np.tensordot(np.asarray(model.objective.weights), model.rewards, axes=1).ravel()
    solved = linprog(-gain, A_eq=np.vstack([np.ones((1, S * A)), flow]), b_eq=np.concatenate([[1.0], np.zeros(S)]),
                     bounds=(0, None), method="highs")
    assert solved.status == 0
    return -solved.fun


def test_a_run_on_an_infeasible_model_says_what_its_regret_is_against(infeasible_file, capsys):
    model = load_model(infeasible_file)
    free = _unconstrained_optimum(model)
    with pytest.warns(RuntimeWarning, match="constraints are infeasible.*regret R\\(t\\) is measured against it"):
        trace = run(make_agent("ps-curl", model, backend="highs"), make(model), STEPS)
    assert trace.optimum_infeasible and trace.summary()["optimum_infeasible"] is True
    assert trace.summary()["optimum"] == pytest.approx(free, rel=1e-9)
    # the feasible queue's optimum is the constrained one, and nothing is said
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert not run(make_agent("ps-curl", build_model("queue"), backend="highs"), "queue", 200).optimum_infeasible

    code, out, err = invoke(["run", str(infeasible_file), "-a", "ps-curl", "--steps", str(STEPS)], capsys)
    assert code == 0, err
    assert f"(optimum without the constraints, which are infeasible: f(λ*) = {free:.6g})" in out
    assert "(against the optimum without constraints)" in out
    assert "warning: the model's constraints are infeasible" in err
    lines = {line.split()[0]: line for line in out.splitlines()}
    epochs = len(trace.epochs)
    assert lines["fallback"].startswith(f"fallback     {epochs} of {epochs} epochs played a fallback policy")
    assert lines["violating"].startswith("violating    C(T) = ")


def test_a_violating_run_is_said_in_its_summary(capsys):
    # UC-CURL on the scheduler, 300 steps: its running costs end violating g_1, and it fell back in some epochs
    args = ["run", "scheduler", "-a", "uc-curl", "--steps", "300"]
    code, out, err = invoke(args + ["--json"], capsys)
    data = json.loads(out)
    g = data["summary"]["constraints"]
    assert g[0] > 0 and data["summary"]["violation"] == max(g)
    code, text, _ = invoke(args, capsys)
    lines = {line.split()[0]: line for line in text.splitlines()}
    assert lines["violating"] == (f"violating    C(T) = {max(g):.3g} > 0: the average costs after T steps violate"
                                  f" g_1 = {g[0]:.3g}")
    fallbacks = data["summary"]["fallback_epochs"]
    assert fallbacks > 0 and lines["fallback"].startswith(
        f"fallback     {fallbacks} of {data['summary']['epochs']} epochs played a fallback policy")


def test_a_sweep_on_an_infeasible_model_says_so_in_its_summary(infeasible_file, tmp_path, capsys):
    out = tmp_path / "out"
    study = tmp_path / "study.toml"
    study.write_text(f'[study]\nname = "infeasible"\nsteps = 300\nseeds = 2\nout = {json.dumps(out.as_posix())}\n'
                     f'[model]\nfile = {json.dumps(infeasible_file.as_posix())}\n[options]\nbackend = "highs"\n'
                     '[[algorithms]]\nagent = "ps-curl"\n', encoding="utf-8")
    code, _, err = invoke(["sweep", str(study), "--no-figures", "--jobs", "1"], capsys)
    assert code == 0, err
    with open(out / "summary.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["optimum_infeasible"] == "true"
    assert row["fallback_runs"] == "2" and row["violating_runs"] == "2"
    assert float(row["optimum"]) == pytest.approx(_unconstrained_optimum(load_model(infeasible_file)), rel=1e-9)
    markdown = (out / "summary.md").read_text()
    assert "the constraints are infeasible: the optimum without them" in markdown
    assert "| 2/2 |" in markdown  # runs with fallbacks
    report = (out / "report.html").read_text()
    assert "the constraints are infeasible: the optimum without them" in report

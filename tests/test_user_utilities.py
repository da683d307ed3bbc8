"""A user's own utility: its declared domain guides the curvature check, and model files name it by import path.

The reference optimum is computed with scipy.optimize.minimize over the occupancy polytope written out in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from user_utilities import InverseSum

from curlopt import CMDP
from curlopt.backends import installed_backends
from curlopt.errors import ModelError, UnsupportedUtilityError
from curlopt.models.files import load_model, save_model
from curlopt.optimum import solve_optimum

pytestmark = pytest.mark.skipif("pyomo" not in installed_backends(), reason="needs the pyomo backend")

KERNEL = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.3], [0.1, 0.9]]])
REWARDS = np.array([[[1.0, 0.2], [0.1, 0.0]], [[0.0, 0.3], [0.9, 1.0]]])  # (K=2, S=2, A=2)


def model(utility: InverseSum) -> CMDP:
    return CMDP(REWARDS, objective=utility, kernel=KERNEL, name="inverse-sum")


def reference_optimum(weights: np.ndarray) -> float:
    """max −Σ w_k/λ_k over ρ >= 0, Σρ = 1, Σ_a ρ(s',a) = Σ P(s'|s,a) ρ(s,a) (one flow row is redundant: dropped), by
    SLSQP from several starts."""
    flow = np.zeros((2, 4))
    for s2 in range(2):
        for s in range(2):
            for a in range(2):
                flow[s2, 2 * s + a] = (s == s2) - KERNEL[s, a, s2]
    rewards = REWARDS.reshape(2, 4)
    best = -np.inf
    for start in np.random.default_rng(0).dirichlet(np.ones(4), size=8):
        result = minimize(lambda x: np.sum(weights / (rewards @ x)), start, method="SLSQP", bounds=[(0, 1)] * 4,
                          constraints=[{"type": "eq", "fun": lambda x: np.append(flow[:-1] @ x, x.sum() - 1.0)}],
                          options={"ftol": 1e-14, "maxiter": 500})
        if result.success:
            best = max(best, -float(result.fun))
    return best


def test_a_declared_domain_lets_the_pyomo_backend_take_the_utility() -> None:
    weights = np.array([1.0, 2.0])
    result = solve_optimum(model(InverseSum(weights.tolist())), backend="pyomo")
    assert result.objective == pytest.approx(reference_optimum(weights), rel=1e-6)


def test_without_its_domain_the_curvature_check_refuses_and_says_how_to_declare_it() -> None:
    with pytest.raises(UnsupportedUtilityError, match="declare its domain"):
        solve_optimum(model(InverseSum([1.0, 2.0], declare_domain=False)), backend="pyomo")


def test_a_model_file_names_the_utility_by_import_path(tmp_path: Path) -> None:
    path = save_model(model(InverseSum([1.0, 2.0])), tmp_path / "m.json")
    assert json.loads(path.read_text())["objective"]["type"] == "user_utilities:InverseSum"
    loaded = load_model(path)
    assert isinstance(loaded.objective, InverseSum)
    assert loaded.objective.weights.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(("objective", "message"), [
    ({"type": "no_such_module_here:Thing"}, "cannot import"),
    ({"type": "user_utilities:Missing"}, "has no 'Missing'"),
    ({"type": "user_utilities:not_a_utility"}, "must give a curlopt Utility"),
    ({"type": "user_utilities:InverseSum", "args": {"weights": [1.0], "colour": 1}}, "raised TypeError"),
    ({"type": "user_utilities:InverseSum", "args": [1.0]}, "keyword arguments"),
    ({"type": "user_utilities:InverseSum", "weights": [1.0]}, "takes only 'type' and 'args'"),
])
def test_bad_import_paths_are_one_line_model_errors(tmp_path: Path, objective: dict, message: str) -> None:
    data = json.loads(save_model(model(InverseSum([1.0, 2.0])), tmp_path / "m.json").read_text())
    data["objective"] = objective
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ModelError, match=message):
        load_model(tmp_path / "bad.json")

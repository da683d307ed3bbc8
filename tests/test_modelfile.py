"""Model files: round trip, refusals naming the key, and fuzzing (only ModelError escapes)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curlopt import CustomUtility, ModelError, build_model, load_model, save_model
from curlopt.cli import main

BUILT_IN = [("queue", {}), ("scheduler", {}), ("scheduler", {"sla": None}), ("maxent", {"shift": 0.01}),
            ("random", {"objective": "log", "n_costs": 2}), ("nonergodic", {})]


@pytest.mark.parametrize("name, params", BUILT_IN)
def test_round_trip_reproduces_the_model(tmp_path, name, params):
    model = build_model(name, **params)
    loaded = load_model(save_model(model, tmp_path / "m.json"))
    for attribute in ("rewards", "costs", "kernel", "initial"):
        np.testing.assert_array_equal(getattr(loaded, attribute), getattr(model, attribute))
    assert type(loaded.objective) is type(model.objective) and repr(loaded.objective) == repr(model.objective)
    assert [repr(g) for g in loaded.constraints] == [repr(g) for g in model.constraints]
    point = np.linspace(0.1, 0.9, model.n_rewards)
    assert loaded.objective.value(point) == model.objective.value(point)


def write(tmp_path, data) -> str:
    path = tmp_path / "model.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


VALID = {"format": "curlopt-model", "version": 1, "rewards": [[[1.0, 0.0]]], "costs": [],
         "kernel": [[[1.0], [1.0]]], "objective": {"type": "Linear", "weights": [1.0]}, "constraints": []}


@pytest.mark.parametrize("change, pattern", [
    ({"format": "other"}, "is not a curlopt model file"),
    ({"version": 7}, "model file version 7 is not supported"),
    ({"rewards": None}, "rewards is missing"),
    ({"rewards": [1.0, 2.0]}, "rewards must have shape"),
    ({"objective": {"type": "Cubic"}}, "objective: unknown utility type 'Cubic'"),
    ({"objective": {"weights": [1.0]}}, "objective must be an object with a 'type' key"),
    ({"objective": {"type": "Linear", "weight": [1.0]}}, r"objective \(Linear\): .*unexpected keyword"),
    ({"objective": {"type": "SumOfLogs", "weights": [-1.0]}}, r"objective \(SumOfLogs\): .*non-negative"),
    ({"constraints": {"type": "LinearBound"}}, "'constraints' must be a list"),
    ({"kernel": [[[0.5], [1.0]]]}, "kernel does not sum to 1"),
])
def test_invalid_files_are_refused_naming_the_problem(tmp_path, change, pattern):
    with pytest.raises(ModelError, match=pattern):
        load_model(write(tmp_path, {**VALID, **change}))


def test_missing_unreadable_and_incomplete_files(tmp_path):
    with pytest.raises(ModelError, match="no model file at"):
        load_model(tmp_path / "absent.json")
    with pytest.raises(ModelError, match="is not valid JSON"):
        load_model(write(tmp_path, "{not json"))
    with pytest.raises(ModelError, match="the key 'objective' is missing"):
        load_model(write(tmp_path, {k: v for k, v in VALID.items() if k != "objective"}))


def test_custom_utilities_cannot_be_saved(tmp_path):
    base = build_model("queue")
    from curlopt import CMDP

    model = CMDP(base.rewards, base.costs, CustomUtility(1, "concave", value=lambda y: float(y[0])), (), base.kernel)
    with pytest.raises(ModelError, match="cannot be written to a model file"):
        save_model(model, tmp_path / "m.json")


def test_the_cli_takes_a_model_file(tmp_path, capsys):
    path = save_model(build_model("queue"), tmp_path / "queue.json")
    with pytest.raises(SystemExit) as done:
        main(["optimum", str(path), "--json"])
    assert done.value.code in (0, None)
    assert json.loads(capsys.readouterr().out)["status"] == "optimal"


JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=100)
@given(overrides=st.dictionaries(st.sampled_from(sorted(VALID) + ["initial", "name"]), JSON, max_size=4))
def test_fuzzed_model_files_raise_only_model_errors(tmp_path_factory, overrides):
    path = tmp_path_factory.mktemp("fuzz") / "m.json"
    path.write_text(json.dumps({**VALID, **overrides}))
    try:
        load_model(path)
    except ModelError:
        pass


#: utilities as model files written before utilities carried their own specs hold them (one of each type)
OLD_FORMAT_UTILITIES = [
    {"type": "Linear", "weights": [1.0, -0.5], "offset": 0.25},
    {"type": "SumOfLogs", "weights": [1.0, 2.0], "shift": 0.1},
    {"type": "AlphaFairness", "alpha": 2.0, "weights": [1.0, 1.0], "shift": 0.0},
    {"type": "MinOfLinear", "matrix": [[1.0, 0.0], [0.0, 1.0]], "offset": [0.0, 0.5]},
    {"type": "Entropy", "dim": 2, "shift": 0.01},
    {"type": "LinearBound", "weights": [1.0, 0.0], "bound": 0.3},
    {"type": "MaxOfLinear", "matrix": [[1.0, 1.0]], "bounds": [0.8]},
    {"type": "ConvexQuadratic", "matrix": [[1.0, 0.0], [0.0, 2.0]], "linear": [0.0, 0.1], "constant": -1.0},
    {"type": "Norm", "center": [0.5, 0.5], "radius": 0.2, "ord": "inf"},
    {"type": "Norm", "center": [0.5, 0.5], "radius": 0.2, "ord": 1},
]


@pytest.mark.parametrize("spec", OLD_FORMAT_UTILITIES, ids=lambda s: f"{s['type']}-{s.get('ord', '')}")
def test_the_utility_format_is_unchanged(spec):
    from curlopt.models.files import utility_from_spec, utility_to_spec

    utility = utility_from_spec(json.loads(json.dumps(spec)), "objective")
    assert type(utility).__name__ == spec["type"]
    assert json.dumps(utility_to_spec(utility)) == json.dumps(spec)  # the same keys, in the same order

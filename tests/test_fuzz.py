"""Fuzzing: malformed models and command lines raise only documented errors.

Model construction may raise only curlopt's own errors (``CurloptError`` subclasses); the CLI turns every
error into one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curlopt import CMDP, CurloptError, Linear, LinearBound, SumOfLogs
from curlopt.cli import main

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-3, 3))


def arrays(max_dims=4, max_side=3):
    shapes = st.lists(st.integers(0, max_side), min_size=0, max_size=max_dims).map(tuple)
    return shapes.flatmap(lambda shape: st.lists(FLOATS, min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))
                          .map(lambda values, shape=shape: np.array(values, dtype=float).reshape(shape)))


def anything():
    return st.one_of(arrays(), st.none(), st.text(max_size=5), st.integers(), st.lists(st.text(max_size=2), max_size=3))


@settings(max_examples=150)
@given(rewards=anything(), costs=anything(), kernel=anything(), initial=anything(),
       objective=st.sampled_from([Linear([1.0]), SumOfLogs(dim=2), "f", None]),
       constraints=st.sampled_from([(), (LinearBound([1.0], 0.5),), ("g",), (SumOfLogs(dim=1),)]))
def test_model_construction_raises_only_documented_errors(rewards, costs, kernel, initial, objective, constraints):
    try:
        CMDP(rewards, costs, objective, constraints, kernel, initial)
    except CurloptError:
        pass


@settings(max_examples=150)
@given(kernel=arrays(max_dims=3, max_side=3))
def test_a_valid_model_with_a_malformed_kernel(kernel):
    try:
        CMDP(np.ones((1, 2, 2)), objective=Linear([1.0]), kernel=kernel)
    except CurloptError as exc:
        assert str(exc)  # a message, always


WORDS = ["optimum", "run", "diagnose", "reproduce", "compare-solvers", "backends", "queue", "scheduler", "nope",
         "--backend", "highs", "cvxpy", "gurobi", "--steps", "0", "-1", "10", "abc", "--seed", "--param", "buffer=0",
         "buffer=x", "sla=2", "x", "--agent", "ps-curl", "zz", "--epochs", "linear", "weird", "--json", "--tightness",
         "nan", "-5", "--executor", "dask", "--jobs", "--program", "--size", "1,1", "--epsilon", "inf"]


@settings(max_examples=60, deadline=None)
@given(argv=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
def test_the_cli_never_shows_a_traceback(argv, tmp_path_factory):
    if "reproduce" in argv or ("run" in argv and "--steps" not in argv):
        argv = argv + ["--steps", "50"]  # keep fuzzed runs short
    if "reproduce" in argv:
        argv = argv + ["--seeds", "1", "--out", str(tmp_path_factory.mktemp("out")), "--no-figures"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code in (0, 1, 2, None), argv


def test_cli_errors_are_one_line_and_debug_shows_the_traceback(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["optimum", "nope"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: unknown model 'nope'; built-in models: " + err[0].split("built-in models: ")[1]]
    with pytest.raises(CurloptError):
        main(["--debug", "optimum", "nope"])


@pytest.mark.parametrize("argv", [
    ["reproduce", "queue", "--tightness", "-1"], ["reproduce", "queue", "--seeds", "0"],
    ["reproduce", "queue", "--steps", "-5"], ["reproduce", "queue", "--jobs", "0"],
    ["reproduce", "queue", "--executor", "dask"], ["reproduce", "queue", "--algorithms", "nope"],
    ["run", "queue", "--steps", "0"], ["run", "queue", "--seed", "-1"], ["run", "queue", "--tightness", "-2"],
    ["run", "queue", "--agent", "primal-dual", "--epochs", "linear"], ["optimum", "queue", "--epsilon", "-1"],
    ["optimum", "queue", "--param", "buffer=0"], ["optimum", "scheduler", "--param", "sla=2"],
])
def test_invalid_option_values_exit_2_with_a_message(argv, tmp_path, capsys):
    if argv[0] == "reproduce":
        argv = argv + ["--out", str(tmp_path), "--no-figures"]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")

"""Inputs out of bounds or malformed, from the command line and the API: each is refused with one line (a
CurloptError in the API) naming what was wrong, before any work and never as a traceback; models too
large for memory are refused before they are allocated."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, forbid_running
from cli_helpers import invoke as cli

import curlopt
from curlopt import CMDP, CurloptError, Linear, build_model, load_model, save_model
from curlopt.utilities.library import CustomUtility

LINUX = sys.platform.startswith("linux")


def _model_file(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def _tiny_kernel_model(tmp_path: Path) -> str:
    kernel = np.zeros((2, 1, 2))
    kernel[0, 0] = [1 - 1e-20, 1e-20]
    kernel[1, 0] = [1e-20, 1 - 1e-20]
    model = CMDP(np.ones((1, 2, 1)), objective=Linear([1.0]), kernel=kernel, name="tiny")
    return str(save_model(model, tmp_path / "tiny.json"))


@pytest.mark.parametrize("case", ["nested", "huge-int", "dev-zero", "directory", "buffer", "seed", "option-seed",
                                  "diagnose-tiny-probability", "utility-huge-int", "utility-type-list"])
def test_cli_inputs_that_used_to_raise_bare_errors(case, tmp_path, capsys):
    valid = {"format": "curlopt-model", "version": 1, "rewards": [[[1.0]]], "objective": {"type": "Linear", "weights": [1.0]}}
    if case == "nested":
        args = ["optimum", _model_file(tmp_path, "m.json", "[" * 100_000 + "]" * 100_000)]
    elif case == "huge-int":
        args = ["optimum", _model_file(tmp_path, "m.json", json.dumps({**valid, "rewards": [[[10 ** 400]]]}))]
    elif case == "utility-huge-int":
        args = ["optimum", _model_file(tmp_path, "m.json", json.dumps(
            {**valid, "objective": {"type": "SumOfLogs", "dim": 1, "shift": 10 ** 400}}))]
    elif case == "utility-type-list":
        args = ["optimum", _model_file(tmp_path, "m.json", json.dumps({**valid, "objective": {"type": [1]}}))]
    elif case == "dev-zero":
        if not LINUX:
            pytest.skip("needs /dev/zero")
        (tmp_path / "zero.json").symlink_to("/dev/zero")
        args = ["optimum", str(tmp_path / "zero.json")]
    elif case == "directory":
        (tmp_path / "dir.json").mkdir()
        args = ["optimum", str(tmp_path / "dir.json")]
    elif case == "buffer":
        args = ["optimum", "queue", "--param", "buffer=100000000"]  # a sparse kernel of 4.8e9 nonzeros: beyond the limit
    elif case == "seed":
        args = ["run", "queue", "--steps", "20", "--seed", "-1"]
    elif case == "option-seed":
        args = ["run", "queue", "--steps", "20", "--option", "seed=-1"]
    else:
        args = ["diagnose", _tiny_kernel_model(tmp_path)]
    started = time.perf_counter()
    code, out, err = cli(args, capsys)
    assert time.perf_counter() - started < 20
    if case == "diagnose-tiny-probability":  # now a report, with the hitting time beyond double precision
        assert code == 0, err
        assert "beyond double precision" in out
        return
    assert_one_line_error(code, err)


def test_api_entry_points_refuse_bad_arguments_with_curlopt_errors():
    from curlopt.agents import make_agent
    from curlopt.experiments import run

    with pytest.raises(CurloptError, match="constraints"):
        CMDP(np.ones((1, 2, 2)), objective=Linear([1.0]), constraints=None)
    with pytest.raises(CurloptError, match="path"):
        load_model(None)
    with pytest.raises(CurloptError, match="pieces"):
        CustomUtility(1, "concave", lambda y: 0.0, pieces=(np.ones((1, 1)),))
    agent = make_agent("ps-curl", build_model("queue"))
    with pytest.raises(CurloptError, match="env"):
        run(agent, None, 10)
    with pytest.raises(CurloptError, match="checkpoints"):
        run(agent, "queue", 10, checkpoints="many")
    with pytest.raises(CurloptError, match="rewards"):
        CMDP([[[10 ** 400]]], objective=Linear([1.0]))
    with pytest.raises(CurloptError, match="shift"):
        curlopt.SumOfLogs(dim=1, shift=10 ** 400)
    with pytest.raises(CurloptError, match="model"):
        save_model(None, "x.json")


@pytest.mark.parametrize("name, params", [
    ("queue", {"buffer": 10 ** 8}), ("random", {"n_states": 100_000}), ("random", {"n_actions": 10 ** 9}),
    ("maxent", {"base": "random", "n_states": 200, "n_actions": 100}), ("queue", {"service": [0.5] * 10 ** 5, "flow": [0.5] * 10 ** 2}),
])
def test_models_too_large_for_memory_are_refused_before_allocating(name, params):
    import tracemalloc

    from curlopt.models.cmdp import MAX_MODEL_BYTES

    tracemalloc.start()
    try:
        with pytest.raises(curlopt.ModelError, match="GiB"):
            build_model(name, **params)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MAX_MODEL_BYTES / 8  # at most the (small) base model of maxent was built


# -- bounds on options and study sizes --------------------------------------------------------------------------------


@pytest.mark.parametrize("args, fragment", [
    (["--prior", "1e308"], "prior"),
    (["--checkpoints", "100000000"], "--checkpoints"),
    (["--steps", str(2 ** 63)], "--steps"),
    (["--steps", str(10 ** 12 + 1)], "--steps"),
    (["--option", "nokey"], "--option takes key=value"),
    (["--agent", "ucrl-cmdp", "--option", "horizon=-1"], "horizon is --steps"),
])
def test_option_bounds_are_refused_in_one_line(args, fragment, monkeypatch, capsys):
    forbid_running(monkeypatch)
    code, _, err = cli(["run", "queue", "--steps", "100", *args], capsys)
    assert_one_line_error(code, err, fragment)


def test_prior_and_checkpoint_bounds_in_the_api():
    from curlopt.agents import PsCurl
    from curlopt.agents.curl import MAX_PRIOR
    from curlopt.experiments import checkpoint_times, run

    model = build_model("queue")
    with pytest.raises(CurloptError, match="prior"):
        PsCurl(model, prior=MAX_PRIOR * 10)
    PsCurl(model, prior=MAX_PRIOR)
    assert len(checkpoint_times(1000, 10 ** 6)) <= 1000
    trace = run(PsCurl(model), "queue", 300, checkpoints=10 ** 6, progress=False)  # at most one per step
    assert trace.checkpoints["t"].size <= 300 and trace.checkpoints["t"][-1] == 300
    with pytest.raises(CurloptError, match="steps"):
        run(PsCurl(model), "queue", 10 ** 12 + 1)
    with pytest.raises(CurloptError, match="checkpoints"):
        run(PsCurl(model), "queue", 10, checkpoints=10 ** 6 + 1)


@pytest.mark.parametrize("bad", [-1, "x", True])
def test_agent_seed_is_refused_by_name(bad):
    from curlopt.agents import make_agent
    from curlopt.models import build_model

    with pytest.raises(CurloptError, match="seed must be"):
        make_agent("ps-curl", build_model("queue"), seed=bad)


@pytest.mark.parametrize("line, key", [("steps = 1000000000001", "[study] steps"),
                                       ("checkpoints = 1000001", "[study] checkpoints")])
def test_study_steps_and_checkpoints_are_bounded_before_anything_runs(tmp_path, line, key):
    from curlopt.experiments.study.reader import load_study

    base = {"steps": "steps = 100", "checkpoints": "checkpoints = 10"}
    base[key.split()[-1]] = line
    path = tmp_path / "s.toml"
    path.write_text(f'[study]\nname = "s"\nseeds = 1\n{base["steps"]}\n{base["checkpoints"]}\n'
                    '[model]\nname = "queue"\n[[algorithms]]\nagent = "ps-curl"\n', encoding="utf-8")
    with pytest.raises(CurloptError, match=re.escape(key) + ".*at most"):
        load_study(path)

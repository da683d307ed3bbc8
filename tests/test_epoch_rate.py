"""A run whose epochs put its expected time far past a few minutes says so once, naming min_epoch_length.

The thresholds (seconds before the check, expected seconds that warn) are module constants; the tests lower them so
a short run stands for a long one. A run below them says nothing.
"""

from __future__ import annotations

import warnings

import pytest
from cli_helpers import invoke

import curlopt.experiments.simulation.loop as loop
from curlopt.agents import make_agent
from curlopt.envs import make
from curlopt.models import build_model


def _run(steps: int = 400, **options):
    model = build_model("queue")
    agent = make_agent("ps-curl", model, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = loop.run(agent, make(model), steps, seed=0, progress=False, model=model)
    return trace, [w for w in caught if "min_epoch_length" in str(w.message)]


def test_a_slow_run_says_so_once_with_the_option_that_bounds_it(monkeypatch):
    monkeypatch.setattr(loop, "EPOCH_RATE_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(loop, "EPOCH_RATE_WARN_SECONDS", 0.0)
    trace, said = _run()
    assert len(trace.epochs) > 5
    assert len(said) == 1 and said[0].category is RuntimeWarning
    text = str(said[0].message)
    assert text.startswith("ps-curl: ") and "epochs in the first" in text and "min_epoch_length bounds the epochs" in text
    assert said[0].filename == __file__  # at run()'s caller


def test_a_run_below_the_thresholds_says_nothing():
    _, said = _run()
    assert said == []


def test_the_warning_names_the_runs_own_min_epoch_length(monkeypatch):
    monkeypatch.setattr(loop, "EPOCH_RATE_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(loop, "EPOCH_RATE_WARN_SECONDS", 0.0)
    _, said = _run(steps=600, min_epoch_length=50)
    assert len(said) == 1 and "this run has min_epoch_length=50" in str(said[0].message)


def test_the_command_line_prints_it_as_one_warning_line(monkeypatch, capsys):
    monkeypatch.setattr(loop, "EPOCH_RATE_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(loop, "EPOCH_RATE_WARN_SECONDS", 0.0)
    code, _, err = invoke(["run", "queue", "--agent", "ps-curl", "--steps", "300", "--no-progress"], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "min_epoch_length" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: ps-curl: "), err


@pytest.mark.parametrize("elapsed_share", [0.2])
def test_a_run_slow_in_its_steps_not_its_epochs_does_not_blame_the_epochs(monkeypatch, elapsed_share):
    rate = loop._EpochRate(make_agent("ps-curl", build_model("queue")), 10_000)
    rate.started -= 100.0                       # 100 s so far ...
    rate.stepping = 100.0 * (1 - elapsed_share)  # ... mostly in the steps
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rate.after_epoch(100, 3)                 # expected 10,000 s: slow, but not because of its epochs
    assert caught == []

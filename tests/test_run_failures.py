"""Failures are never silent: runs whose epochs mostly failed to solve, contradicting options, worker warnings."""

from __future__ import annotations

import json
import logging

import pytest
from cli_helpers import invoke

from curlopt.backends import registry
from curlopt.backends.base import RawSolution
from curlopt.backends.highs.backend import HighsBackend
from curlopt.backends.results import Status
from curlopt.experiments.outputs.solve_failures import MAX_FAILED_SHARE, failed_solves_warning, most_epochs_failed
from curlopt.experiments.simulation.trace import EpochRecord, Trace, load_trace

#: what the failing backend says on every solve
INJECTED = "injected failure: the solver is down"


class FailingHighs(HighsBackend):
    """The HiGHS backend with a solver that fails on every solve (a status, as a broken solver gives)."""

    name = "failing-highs"

    def _compile(self, program):
        compiled = super()._compile(program)
        compiled._solve = lambda with_constraints: RawSolution(Status.SOLVER_ERROR, message=INJECTED)
        return compiled


@pytest.fixture
def failing_backend(monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, FailingHighs.name, FailingHighs)
    return FailingHighs.name


def _trace(sources: list[str]) -> Trace:
    epochs = [EpochRecord(index=i, start=1 + 10 * i, length=10, epsilon=0.1, source=source,
                          status="optimal" if source == "tight" else "solver_error",
                          message="" if source == "tight" else f"failure {i}") for i, source in enumerate(sources)]
    return Trace(meta={"backend": "highs"}, optimum=None, checkpoints={}, epochs=epochs)


# -- the rule ---------------------------------------------------------------------------------------------------------
def test_more_than_half_of_the_epochs_failing_is_the_threshold():
    assert MAX_FAILED_SHARE == 0.5
    half = _trace(["uniform-initial", "tight", "kept-previous", "tight"])  # 2 of 4: not more than half
    assert not most_epochs_failed(half) and failed_solves_warning(half) is None
    most = _trace(["uniform-initial", "kept-previous", "tight", "kept-previous"])  # 3 of 4
    assert most_epochs_failed(most)
    assert failed_solves_warning(most).startswith("3 of 4 epochs failed to solve (more than 50%; backend highs,"
                                                  " first failure in epoch 0: solver_error: failure 0)")
    # Fallbacks (an infeasible ε-tight program, solved without its rows) are solved epochs, not failures.
    assert failed_solves_warning(_trace(["fallback", "fallback", "tight"])) is None
    assert failed_solves_warning(_trace([])) is None


def test_a_run_whose_solves_all_failed_warns_and_exits_1_with_its_trace_written(tmp_path, capsys, failing_backend):
    out = tmp_path / "run.json"
    code, stdout, err = invoke(["run", "queue", "--backend", failing_backend, "--steps", "300", "--out", str(out)],
                               capsys)
    trace = load_trace(out)  # still written
    epochs = len(trace.epochs)
    assert code == 1 and epochs > 1 and {e.source for e in trace.epochs} <= {"uniform-initial", "kept-previous"}
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {epochs} of {epochs} epochs failed to solve (more than"
                                                   f" 50%; backend {failing_backend}, first failure in epoch 0:")
    assert INJECTED in lines[0] and f"{epochs} solver failures" in stdout and f"trace        {out}" in stdout

    code, stdout, err = invoke(["run", "queue", "--backend", failing_backend, "--steps", "300", "--json"], capsys)
    assert code == 1 and json.loads(stdout)["warnings"][0].startswith(f"{epochs} of {epochs} epochs failed")
    code, _, err = invoke(["--quiet", "run", "queue", "--backend", failing_backend, "--steps", "300"], capsys)
    assert code == 1 and err == ""  # --quiet hides the warning, not the exit status


def test_a_sweep_keeps_runs_whose_solves_failed_but_warns_and_exits_1(tmp_path, capsys, failing_backend):
    study = tmp_path / "failing.toml"
    study.write_text(f"""
[study]
name = "failing"
steps = 200
seeds = 2
out = "{tmp_path / 'out'}"
[model]
name = "queue"
[[algorithms]]
agent = "ps-curl"
options = {{ backend = "{failing_backend}" }}
[[algorithms]]
agent = "primal-dual"
""", encoding="utf-8")
    args = ["sweep", str(study), "--jobs", "1", "--no-progress", "--no-figures"]
    for _attempt in range(2):  # run, then resume: the runs are kept (not run again) and still reported
        code, stdout, err = invoke(args, capsys)
        assert code == 1, err
        warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
        runs = [line for line in warnings if line.startswith("warning: run queue/ps-curl/")]
        assert len(runs) == 2 and all("epochs failed to solve" in line and INJECTED in line for line in runs)
        assert warnings[-1] == ("warning: 2 of 4 runs had most epochs unsolved (listed above); the summary keeps"
                                " them")
        assert "primal-dual" not in " ".join(warnings)
        assert (tmp_path / "out" / "summary.csv").exists() and len(list((tmp_path / "out").rglob("*.json.gz"))) == 4
    assert "4 runs already finished" in stdout


# -- options that contradict each other -------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--epochs", "linear", "--option", "trigger=doubling"],
     "--epochs linear and --option trigger=doubling contradict each other (both set trigger); give one of them."),
    (["--backend", "highs", "--option", "backend=cvxpy"],
     "--backend highs and --option backend=cvxpy contradict each other (both set backend); give one of them."),
    (["--tightness", "2", "--option", "tightness_constant=3"],
     ("--tightness 2.0 and --option tightness_constant=3 contradict each other (both set tightness_constant); give"
      " one of them.")),
    (["--option", "trigger=linear", "--option", "trigger=doubling"],
     "--option trigger='linear' and --option trigger='doubling' contradict each other; give --option trigger once."),
    (["--param", "buffer=3", "--param", "buffer=4"],
     "--param buffer=3 and --param buffer=4 contradict each other; give --param buffer once."),
])
def test_contradicting_options_are_refused_naming_both(args, message, capsys):
    code, stdout, err = invoke(["run", "queue", "--steps", "50", *args], capsys)
    assert (code, stdout, err) == (2, "", f"error: {message}\n")


def test_options_that_agree_are_accepted(capsys):
    code, stdout, err = invoke(["run", "queue", "--steps", "50", "--epochs", "linear", "--option", "trigger=linear",
                                "--tightness", "1", "--option", "tightness_constant=1.0"], capsys)
    assert code == 0 and "(linear epochs)" in stdout, err


# -- warnings of worker processes -------------------------------------------------------------------------------------
def _nonergodic_tasks():
    from curlopt.experiments.study.planning import plan_study
    from curlopt.experiments.study.reader import study_from_dict

    study = study_from_dict({"study": {"name": "nonergodic", "steps": 200, "seeds": 2},
                             "model": {"name": "nonergodic"}, "algorithms": [{"agent": "primal-dual"}]})
    return plan_study(study).tasks


def _run_in_workers(executor, capfd) -> tuple[list, str]:
    """Run the two tasks of a study on a model that is not ergodic (every run warns) as the command line would:
    under its logging; return the outcomes and everything written to stderr, by this process or its workers."""
    from curlopt.cli.logs import command_logging

    with command_logging():
        outcomes = list(executor.run(_nonergodic_tasks()))
    return outcomes, capfd.readouterr().err


def _check_one_warning_line(outcomes: list, err: str) -> None:
    assert len(outcomes) == 2 and all(trace is not None and error is None for _, trace, error in outcomes), outcomes
    lines = err.splitlines()
    found = [line for line in lines if "is not ergodic" in line]
    assert len(found) == 1 and found[0].startswith("warning: model 'nonergodic' is not ergodic:"), err
    assert not any("RuntimeWarning" in line or "executors.py" in line for line in lines), err


def test_warnings_of_pool_workers_print_once_as_one_warning_line(capfd):
    from curlopt.experiments.executors import LocalExecutor

    executor = LocalExecutor(2, force=True)  # two worker processes even on a one-core machine
    _check_one_warning_line(*_run_in_workers(executor, capfd))


@pytest.mark.slow  # a local Ray starts and stops: most of this test's time
def test_warnings_of_ray_workers_print_once_as_one_warning_line(capfd):
    pytest.importorskip("ray")
    from curlopt.experiments.executors import RayExecutor

    outcomes, err = _run_in_workers(RayExecutor(jobs=2), capfd)
    _check_one_warning_line(outcomes, err)
    # Whatever Ray itself said on the way went through the toolkit's logging too (not Ray's "time LEVEL file -- ").
    assert not [line for line in err.splitlines() if "WARNING" in line and " -- " in line], err


def test_rays_own_messages_go_through_the_toolkits_logging(capsys):
    from curlopt.cli.logs import command_logging
    from curlopt.experiments.executors import ray_logs_to_curlopt

    ray_logger = logging.getLogger("ray")
    before = (ray_logger.handlers[:], ray_logger.level, ray_logger.propagate)
    with command_logging(), ray_logs_to_curlopt():
        logging.getLogger("ray._private.worker").warning("Token  authentication is\n enabled (%s)", "cluster")
        logging.getLogger("ray._private.worker").info("Started a local Ray instance.")  # below the level shown
    assert capsys.readouterr().err == "warning: Token authentication is enabled (cluster) (from ray)\n"
    assert (ray_logger.handlers, ray_logger.level, ray_logger.propagate) == before

"""The command line's finish (issue 16): --version, python -m curlopt, curlopt agents, --instances, warnings, envs.make."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from curlopt import __version__
from curlopt.envs import ENV_IDS, TabularCMDPEnv, make
from curlopt.errors import EnvError
from curlopt.models import build_model
from cli_helpers import invoke as _cli

ROOT = Path(__file__).resolve().parent.parent




def _curlopt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curlopt", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


# -- entry points ------------------------------------------------------------------------------------------------------
def test_version(capsys):
    code, out, err = _cli(["--version"], capsys)
    assert code == 0 and out == f"curlopt {__version__}\n" and not err


def test_python_dash_m_curlopt_is_the_command():
    completed = _curlopt("--help")
    assert completed.returncode == 0, completed.stderr
    for command in ("run", "sweep", "reproduce", "report", "agents", "backends", "--quiet", "--verbose", "--version"):
        assert command in completed.stdout
    old = subprocess.run([sys.executable, "-m", "curlopt.cli", "--version"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert old.returncode == 0 and old.stdout == f"curlopt {__version__}\n"


# -- curlopt agents ----------------------------------------------------------------------------------------------------
def test_agents_lists_every_agent_with_its_options_and_defaults(capsys):
    from curlopt.agents import AGENTS

    code, out, err = _cli(["agents"], capsys)
    assert code == 0, err
    for name in AGENTS:
        assert f"\n{name}: " in "\n" + out
    uc_curl = out.split("\nps-curl: ")[0]
    radius = next(line for line in uc_curl.splitlines() if line.split()[:1] == ["radius"])
    assert radius.split()[1] == "analysis" and "confidence radius" in radius
    assert "SPEC" not in out and "``" not in out and ":class:" not in out

    code, out, err = _cli(["agents", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == set(AGENTS)
    options = {o["name"]: o for o in data["uc-curl"]["options"]}
    assert options["radius"]["default"] == "analysis" and options["radius"]["description"]
    assert options["tightness_constant"]["default"] == 1.0
    assert "model" not in options
    prior = {o["name"]: o for o in data["ps-curl"]["options"]}["prior"]
    assert prior["default"] == 1.0 and "Dirichlet" in prior["description"]
    # PS-CURL's docstring says "As for UcCurl": the shared options take UC-CURL's descriptions
    backend = {o["name"]: o for o in data["ps-curl"]["options"]}["backend"]
    assert backend["description"] == options["backend"]["description"] != ""


def test_run_help_points_to_agents_and_env_takes_a_model_file(capsys):
    code, out, _ = _cli(["run", "--help"], capsys)
    assert code == 0 and "curlopt agents" in out
    for command in ("run", "optimum", "diagnose", "compare-solvers"):
        code, out, _ = _cli([command, "--help"], capsys)
        assert code == 0 and "model file (.json)" in " ".join(out.replace("│", " ").split()), command


# -- compare-solvers --instances ---------------------------------------------------------------------------------------
def test_compare_solvers_counts_instances_and_epochs_is_a_deprecated_alias(capsys):
    code, out, err = _cli(["compare-solvers", "queue", "--instances", "2", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["instances"] == 2 and "deprecated" not in err
    code, out, err = _cli(["compare-solvers", "queue", "--epochs", "1", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["instances"] == 1
    notes = [line for line in err.splitlines() if "--epochs" in line]
    assert notes == ["note: --epochs is deprecated here; use --instances (the number of program instances)."]
    code, _, err = _cli(["compare-solvers", "queue", "--epochs", "1", "--instances", "2"], capsys)
    assert code == 2 and "give --instances only" in " ".join(err.replace("│", " ").split())
    code, out, _ = _cli(["compare-solvers", "--help"], capsys)
    assert "--instances" in out and "--epochs" not in out  # the old name is hidden


# -- warnings ----------------------------------------------------------------------------------------------------------
def test_a_warning_prints_as_one_line_and_quiet_hides_it():
    completed = _curlopt("run", "nonergodic", "--steps", "200", "--no-progress")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("warning: model 'nonergodic' is not ergodic")
    assert "RuntimeWarning" not in completed.stderr and ".py:" not in completed.stderr
    assert "warnings.warn" not in completed.stderr and "trace = run(" not in completed.stderr  # no source line
    quiet = _curlopt("--quiet", "run", "nonergodic", "--steps", "200", "--no-progress")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout == completed.stdout.replace(completed.stdout.splitlines()[-1], quiet.stdout.splitlines()[-1])


def test_warnings_in_process_go_through_logging_and_are_restored(capsys):
    from curlopt.cli.logs import LOGGER, _show_warning, command_logging, set_level

    before = warnings.showwarning
    with command_logging():
        assert warnings.showwarning is _show_warning
        _show_warning("ours\n  on two lines", RuntimeWarning, str(ROOT / "curlopt" / "lp.py"), 1)
        _show_warning("theirs", DeprecationWarning, "/x/lib/python3.11/site-packages/ray/_private/worker.py", 9)
        set_level(verbose=True)
        LOGGER.debug("details")
        set_level(quiet=True)
        _show_warning("hidden", RuntimeWarning, str(ROOT / "curlopt" / "lp.py"), 1)
        LOGGER.error("shown")
    assert warnings.showwarning is before
    err = capsys.readouterr().err
    assert err.splitlines() == ["warning: ours on two lines", "warning: theirs (DeprecationWarning from ray)",
                                "debug: details", "error: shown"]
    with pytest.raises(Exception, match="not both"):
        set_level(quiet=True, verbose=True)


# -- curlopt.envs.make -------------------------------------------------------------------------------------------------
def test_make_has_a_spec_and_passes_check_env_with_its_render_modes():
    env = make("queue")
    assert isinstance(env, TabularCMDPEnv) and env.spec is not None and env.spec.id == ENV_IDS["queue"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "not able to test alternative render modes" would be an error here
        check_env(env)
        check_env(make(build_model("nonergodic")))
    again = make("queue", buffer=3).spec.make(render_mode="ansi")
    assert again.unwrapped.model.n_states == 4 and again.unwrapped.render_mode == "ansi"
    assert gymnasium.make(ENV_IDS["queue"]).unwrapped.spec.kwargs == {"name": "queue"}


def test_max_episode_steps_truncates():
    env = make("queue", max_episode_steps=5)
    assert env.spec.max_episode_steps == 5
    env.reset(seed=0)
    ends = [env.step(env.action_space.sample())[2:4] for _ in range(5)]
    assert ends == [(False, False)] * 4 + [(False, True)]
    env.reset(seed=1)
    assert env.step(0)[3] is False  # a new episode counts from 0 again
    for bad in (0, -1, 2.5, True):
        with pytest.raises(EnvError, match="max_episode_steps"):
            make("queue", max_episode_steps=bad)


def test_options_take_the_study_file_spelling_of_booleans():
    """`-o scale=true` (as a study file writes it) is the boolean, not the string 'true'."""
    from curlopt.cli.common import parse_params

    assert parse_params(["scale=true", "a=False", "b=null", "c=1e-3", "d=word"], "--option") == \
        {"scale": True, "a": False, "b": None, "c": 1e-3, "d": "word"}

"""The command line itself: its entry points (--version, python -m curlopt), `curlopt agents` and the help
texts, one-line warnings and --quiet, the spelling of option values, and --json that is only JSON with exit
codes that agree."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import pytest
from cli_helpers import ROOT, fresh_process
from cli_helpers import invoke as _cli

from curlopt import __version__


def _curlopt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curlopt", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


# -- entry points -----------------------------------------------------------------------------------------------------
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


# -- curlopt agents and the help texts --------------------------------------------------------------------------------
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


# -- warnings --------------------------------------------------------------------------------------------------------
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


# -- option values ---------------------------------------------------------------------------------------------------
def test_options_take_the_study_file_spelling_of_booleans():
    """`-o scale=true` (as a study file writes it) is the boolean, not the string 'true'."""
    from curlopt.cli.common import parse_params

    assert parse_params(["scale=true", "a=False", "b=null", "c=1e-3", "d=word"], "--option") == \
        {"scale": True, "a": False, "b": None, "c": 1e-3, "d": "word"}


# -- --json is JSON, and exit codes agree: solver output goes to stderr -----------------------------------------------
NOISY = textwrap.dedent("""
    import os, sys
    from curlopt.backends import register_backend
    from curlopt.backends.base import RawSolution
    from curlopt.backends.highs.backend import CompiledHighs, HighsBackend
    from curlopt.backends.results import Status

    class Noisy(HighsBackend):
        name = "noisy"
        def _compile(self, program):
            print("python-level solver chatter")
            os.write(1, b"C-level solver chatter\\n")
            class Compiled(CompiledHighs):
                def _solve(self, with_constraints):
                    os.write(1, b"C-level iteration log\\n")
                    if {fail}:
                        return RawSolution(Status.NUMERICAL_ERROR, message="injected")
                    return super()._solve(with_constraints)
            return Compiled(self, program)

    register_backend("noisy", Noisy)
    from curlopt.cli import main
    main({argv})
""")


@pytest.mark.parametrize("fail", [False, True])
def test_optimum_json_is_json_and_exit_codes_agree(fail):
    codes = {}
    for as_json in (True, False):
        argv = ["optimum", "queue", "--backend", "noisy"] + (["--json"] if as_json else [])
        done = fresh_process(code=NOISY.format(fail=fail, argv=argv))
        codes[as_json] = done.returncode
        assert "chatter" in done.stderr and "iteration log" in done.stderr  # solver output went to stderr
        assert "chatter" not in done.stdout and "iteration log" not in done.stdout
        if as_json:
            data = json.loads(done.stdout)  # the whole of stdout
            assert data["status"] == ("numerical_error" if fail else "optimal")
    assert codes[True] == codes[False] == (1 if fail else 0)

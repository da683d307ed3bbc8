"""Running the ``curlopt`` command as the tests do (in this process or in a fresh one), and what those tests share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: the checkout's root
ROOT = Path(__file__).resolve().parents[1]


def invoke(args: list[str], capsys) -> tuple[int, str, str]:
    """Run ``curlopt ARGS`` through :func:`curlopt.cli.main`; return (exit code, stdout, stderr)."""
    from curlopt.cli import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fresh_process(*args: str, code: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m curlopt.cli ARGS`` in a fresh process (or ``python -c CODE``), output captured as text."""
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "curlopt.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def subprocess_env() -> dict[str, str]:
    """The environment for a child process: this checkout first on the path, and no CURLOPT_FORCE_JOBS (the
    child must cap --jobs at the cores as a user's command does)."""
    env = {k: v for k, v in os.environ.items() if k != "CURLOPT_FORCE_JOBS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    """Exit code 2 and a last stderr line ``error: ...`` holding every fragment, without a traceback."""
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[-1], (fragment, lines[-1])


def forbid_running(monkeypatch) -> None:
    """Make any run started by the command fail the test (a refusal must come before the work)."""
    import curlopt.experiments as experiments

    def fail(*args, **kwargs):
        raise AssertionError("the run started although its arguments were unusable")

    monkeypatch.setattr(experiments, "run", fail)


def study_file(tmp_path: Path, out: Path, seeds: int = 2, steps: int = 100, name: str = "study.toml") -> Path:
    """A small study file: PS-CURL on the queue with HiGHS, writing to ``out``."""
    path = tmp_path / name
    path.write_text(
        f'[study]\nname = "small"\nsteps = {steps}\nseeds = {seeds}\nout = {json.dumps(out.as_posix())}\n'
        '[model]\nname = "queue"\n[options]\nbackend = "highs"\n[[algorithms]]\nagent = "ps-curl"\n',
        encoding="utf-8")
    return path

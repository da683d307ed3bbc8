"""Output paths: `run`, `sweep` and `reproduce` check --out before any work; a write that fails later
(a full disk) is one line on stderr, and the runs already finished are kept."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, forbid_running, study_file
from cli_helpers import invoke as cli

LINUX = sys.platform.startswith("linux")


@pytest.mark.parametrize("out, fragment", [
    ("", "empty"),
    ("afile/t.json", "is a file, not a folder"),
    ("existing-dir", "is a directory"),
    pytest.param("/proc/x/t.json", "/proc/x", marks=pytest.mark.skipif(not LINUX, reason="Linux paths")),
    pytest.param("/sys/t.json", "/sys", marks=pytest.mark.skipif(not LINUX, reason="Linux paths")),
])
def test_run_checks_its_output_path_before_running(out, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "existing-dir").mkdir()
    forbid_running(monkeypatch)
    code, _, err = cli(["run", "queue", "--steps", "50", "--out", out], capsys)
    assert_one_line_error(code, err, "--out", fragment)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anywhere")
def test_run_refuses_an_unwritable_folder_before_running(tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    forbid_running(monkeypatch)
    try:
        code, _, err = cli(["run", "queue", "--steps", "50", "--out", str(locked / "t.json")], capsys)
    finally:
        locked.chmod(0o700)
    assert_one_line_error(code, err, "Permission denied")


def _full_disk(after: int = 0):
    """A replacement for the trace writer that succeeds ``after`` times, then fails with ENOSPC."""
    from curlopt.fileio import atomic_write_bytes

    calls = []

    def write(path, data):
        calls.append(path)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return atomic_write_bytes(path, data)
    return write


def test_a_full_disk_after_a_run_is_one_line_and_the_summary_is_still_shown(tmp_path, monkeypatch, capsys):
    import curlopt.experiments.simulation.trace as trace_module

    monkeypatch.setattr(trace_module, "atomic_write_bytes", _full_disk())
    out = tmp_path / "t.json.gz"
    code, stdout, err = cli(["run", "queue", "--steps", "50", "--out", str(out), "--no-progress"], capsys)
    assert_one_line_error(code, err, f"could not write {out}: {os.strerror(errno.ENOSPC)}")
    assert "R(T)" in stdout and not out.exists()


@pytest.mark.parametrize("command", ["sweep", "reproduce"])
def test_a_full_disk_stops_a_sweep_in_one_line_keeping_the_finished_runs(command, tmp_path, monkeypatch, capsys):
    import curlopt.experiments.simulation.trace as trace_module

    out = tmp_path / "out"
    if command == "sweep":
        args = ["sweep", str(study_file(tmp_path, out, seeds=3))]
    else:
        args = ["reproduce", "queue", "--seeds", "3", "--steps", "100", "--algorithms", "ps-curl-doubling",
                "--out", str(out)]
    args += ["--jobs", "1", "--no-progress", "--no-figures"]
    monkeypatch.setattr(trace_module, "atomic_write_bytes", _full_disk(after=1))
    code, _, err = cli(args, capsys)
    assert_one_line_error(code, err, "could not write", ".json.gz", os.strerror(errno.ENOSPC))
    assert len(list(out.rglob("*.json.gz"))) == 1 and not list(out.rglob("*.tmp"))
    monkeypatch.undo()
    code, stdout, err = cli(args, capsys)
    assert code == 0, err
    assert "1 runs already finished" in stdout


@pytest.mark.parametrize("command", ["sweep", "reproduce"])
def test_sweeps_check_their_output_folder_first(command, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    for out, fragment in [("", "empty"), (str(tmp_path / "afile"), "is a file, not a folder")]:
        if command == "sweep":
            args = ["sweep", str(study_file(tmp_path, tmp_path / "unused")), "--out", out]
        else:
            args = ["reproduce", "queue", "--seeds", "1", "--steps", "50", "--out", out]
        code, _, err = cli(args + ["--jobs", "1", "--no-progress", "--no-figures"], capsys)
        assert_one_line_error(code, err, fragment)
    assert not (tmp_path / "unused").exists()


@pytest.mark.skipif(not LINUX, reason="Linux paths")
def test_a_study_whose_out_cannot_be_created_fails_in_one_line(tmp_path, capsys):
    code, _, err = cli(["sweep", str(study_file(tmp_path, Path("/proc/curlopt-nowhere"))), "--jobs", "1",
                        "--no-progress", "--no-figures"], capsys)
    assert_one_line_error(code, err, "could not write /proc/curlopt-nowhere")

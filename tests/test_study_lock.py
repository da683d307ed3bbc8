"""One writer per study folder: real concurrent sweeps, a refused second sweep, --wait, and a SIGKILLed holder."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from curlopt.experiments.outputs.lock import (
    LOCK_NAME,
    FolderInUseError,
    FolderLock,
    read_holder,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="fcntl locks are POSIX")

#: seconds a test waits for another process before it gives up
PATIENCE = 120

#: a sweep whose runs wait until a gate file exists: it holds the study folder's lock for as long as the test wants
GATED_SWEEP = """
import pathlib, sys, time
import curlopt.experiments.executors as executors

gate = pathlib.Path(sys.argv[2])
run = executors.execute_task


def gated(task, progress=False):
    while not gate.exists():
        time.sleep(0.05)
    return run(task, progress=progress)


executors.execute_task = gated  # jobs=1 runs every task in this process, through this name
from curlopt.cli import main

main(["sweep", sys.argv[1], "--jobs", "1", "--no-progress", "--no-figures"])
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(f"""
[study]
name = "tiny"
steps = 300
seeds = 2
out = "{tmp_path / 'out'}"

[model]
name = "queue"

[[algorithms]]
agent = "primal-dual"
""", encoding="utf-8")
    return path


def _sweep(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curlopt", "sweep", *args, "--jobs", "1", "--no-progress",
                           "--no-figures"], capture_output=True, text=True, timeout=PATIENCE, check=False)


def _start_gated(tmp_path: Path, study: Path) -> tuple[subprocess.Popen, Path]:
    script = tmp_path / "gated_sweep.py"
    script.write_text(GATED_SWEEP, encoding="utf-8")
    gate = tmp_path / "gate"
    holder = subprocess.Popen([sys.executable, str(script), str(study), str(gate)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:  # until the lock file names it
        found = read_holder(tmp_path / "out")
        if found is not None and found.pid == holder.pid:
            return holder, gate
        assert holder.poll() is None, holder.communicate()
        time.sleep(0.05)
    holder.kill()
    raise AssertionError("the gated sweep never took the lock")


def _trace_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "out").rglob("*.json.gz"))


def test_a_second_sweep_is_refused_a_third_waits_and_takes_over_when_the_holder_is_killed(tmp_path, study):
    holder, gate = _start_gated(tmp_path, study)
    waiting = None
    try:
        refused = _sweep(str(study))
        record = json.loads((tmp_path / "out" / LOCK_NAME).read_text())
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(
            f"error: {tmp_path / 'out'} is in use by another sweep (pid {holder.pid} on host {socket.gethostname()},"
            f" started {record['started']}, command: gated_sweep.py {study} {gate}); wait for it with --wait")
        assert _trace_files(tmp_path) == []  # the refused sweep ran nothing (and the holder is held at its gate)

        waiting = subprocess.Popen([sys.executable, "-m", "curlopt", "sweep", str(study), "--wait", "--jobs", "1",
                                    "--no-progress", "--no-figures"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        said = []
        for line in waiting.stdout:  # until it says that it waits (each message is flushed as it is printed)
            said.append(line)
            if line.startswith("waiting for"):
                break
        assert waiting.poll() is None and said[-1].startswith(
            f"waiting for {tmp_path / 'out'}: in use by another sweep (pid {holder.pid}"), said
        holder.send_signal(signal.SIGKILL)  # the holder dies without releasing anything
        holder.communicate(timeout=PATIENCE)
        out, err = waiting.communicate(timeout=PATIENCE)
    finally:
        gate.touch()
        holder.kill()
        if waiting is not None and waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert (f"note: took over {tmp_path / 'out' / LOCK_NAME} from a sweep that ended without releasing it (that"
            f" process is gone): pid {holder.pid} on host {socket.gethostname()}") in out
    assert "0 runs already finished" in out and "2 to run" in out  # the killed holder had finished none
    assert len(_trace_files(tmp_path)) == 2 and not (tmp_path / "out" / LOCK_NAME).exists()


def test_locks_in_one_process_exclude_each_other_and_a_waiter_follows_a_new_file(tmp_path):
    first = FolderLock(tmp_path / "out")
    first.acquire()
    record = json.loads((tmp_path / "out" / LOCK_NAME).read_text())
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
    with pytest.raises(FolderInUseError, match=rf"in use by another sweep \(pid {os.getpid()} on host"):
        FolderLock(tmp_path / "out").acquire()

    said: list[str] = []
    second = FolderLock(tmp_path / "out", wait=True, say=said.append)
    waiter = threading.Thread(target=second.acquire)
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive() and said and said[0].startswith("waiting for")
    first.release()  # deletes the file the waiter has open, then unlocks it
    waiter.join(timeout=PATIENCE)
    assert not waiter.is_alive()
    # The waiter holds the file now at the path (not the deleted one), so a third lock is refused.
    assert os.path.samestat(os.fstat(second._fd), os.stat(tmp_path / "out" / LOCK_NAME))
    with pytest.raises(FolderInUseError):
        FolderLock(tmp_path / "out").acquire()
    second.release()
    assert not (tmp_path / "out" / LOCK_NAME).exists()
    with FolderLock(tmp_path / "out"):  # free again
        pass

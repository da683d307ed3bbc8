"""The worker processes of a sweep: they die with their parent, SIGTERM interrupts like Ctrl-C keeping the
finished runs, and --jobs above the cores is reduced unless forced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import invoke as cli
from cli_helpers import subprocess_env

LINUX = sys.platform.startswith("linux")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()  # fields from the state on (the name may hold spaces)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_for_workers(process: subprocess.Popen, count: int, timeout: float = 60) -> list[int]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert process.poll() is None, "the sweep ended before its workers started"
        children = _children(process.pid)
        if sum("spawn_main" in _cmdline(c) for c in children) >= count:
            return children
        time.sleep(0.05)
    raise AssertionError("the workers did not start")


def _reproduce_command(out: Path, seeds: int, steps: int) -> list[str]:
    return [sys.executable, "-m", "curlopt.cli", "reproduce", "queue", "--seeds", str(seeds), "--steps", str(steps),
            "--algorithms", "ps-curl-doubling", "--jobs", "2", "--force-jobs", "--out", str(out), "--no-figures",
            "--no-progress"]


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_pool_workers_and_the_resource_tracker_die_when_the_sweep_is_killed(tmp_path):
    process = subprocess.Popen(_reproduce_command(tmp_path / "out", 4, 2_000_000), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=subprocess_env())
    children: list[int] = []
    try:
        children = _wait_for_workers(process, 2)
        assert any("resource_tracker" in _cmdline(c) for c in children) or len(children) >= 2
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.time() + 5
        while time.time() < deadline and any(_alive(c) for c in children):
            time.sleep(0.05)
        survivors = [(c, _cmdline(c)) for c in children if _alive(c)]
        assert not survivors, f"orphaned after SIGKILL of the sweep: {survivors}"
    finally:
        for pid in [process.pid, *children]:  # only what this test started
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_sigterm_stops_a_sweep_like_ctrl_c_keeping_the_finished_runs(tmp_path):
    from curlopt.experiments.simulation.trace import load_trace

    out = tmp_path / "out"
    process = subprocess.Popen(_reproduce_command(out, 8, 20_000), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, env=subprocess_env())
    children: list[int] = []
    try:
        children = _wait_for_workers(process, 2)
        deadline = time.time() + 120
        while time.time() < deadline and not list(out.rglob("*.json.gz")):
            time.sleep(0.05)
        assert list(out.rglob("*.json.gz")), "no run finished"
        os.kill(process.pid, signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 143, err
        assert "interrupted: finished runs are saved; run the same command again to resume" in err
        assert "Traceback" not in err
        finished = list(out.rglob("*.json.gz"))
        assert 1 <= len(finished) < 8
        for path in finished:
            assert int(load_trace(path).checkpoints["t"][-1]) == 20_000
        assert not list(out.rglob("*.tmp"))
        deadline = time.time() + 5
        while time.time() < deadline and any(_alive(c) for c in children):
            time.sleep(0.05)
        assert not [c for c in children if _alive(c)]
    finally:
        for pid in [process.pid, *children]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)


def test_a_worker_whose_parent_is_gone_exits_at_once():
    code = ("import os, sys\n"
            "from curlopt.experiments.executors import _die_with_parent\n"
            "_die_with_parent(os.getppid() + 1_000_000)\n"  # not our parent: as if it had died before the call
            "sys.exit(0)\n")
    done = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), timeout=60)
    assert done.returncode == 1


# -- --jobs and the cores ---------------------------------------------------------------------------------------------


def test_jobs_above_the_cores_are_reduced_unless_forced(monkeypatch):
    from curlopt.experiments.executors import LocalExecutor, default_jobs

    monkeypatch.delenv("CURLOPT_FORCE_JOBS", raising=False)
    cores = default_jobs()
    capped = LocalExecutor(cores + 28)
    assert capped.jobs == cores and "--force-jobs" in capped.describe() and f"--jobs {cores + 28}" in capped.describe()
    assert LocalExecutor(cores).jobs == cores and "reduced" not in LocalExecutor(cores).describe()
    assert LocalExecutor(cores + 28, force=True).jobs == cores + 28
    monkeypatch.setenv("CURLOPT_FORCE_JOBS", "1")
    assert LocalExecutor(cores + 28).jobs == cores + 28


def test_force_jobs_flag(tmp_path, monkeypatch, capsys):
    from curlopt.experiments.executors import default_jobs

    monkeypatch.delenv("CURLOPT_FORCE_JOBS", raising=False)
    many = default_jobs() + 28
    base = ["reproduce", "queue", "--seeds", "1", "--steps", "50", "--algorithms", "ps-curl-doubling", "--jobs",
            str(many), "--no-progress", "--no-figures"]
    code, out, err = cli(base + ["--out", str(tmp_path / "a")], capsys)
    assert code == 0, err
    assert f"--jobs {many} reduced to the {default_jobs()} cores" in out
    code, out, err = cli(base + ["--out", str(tmp_path / "b"), "--force-jobs"], capsys)
    assert code == 0, err
    assert f"local ({many} worker processes)" in out  # one run: executed in this process all the same
    assert "CURLOPT_FORCE_JOBS" not in os.environ


def test_a_worker_terminated_mid_result_does_not_hang_the_pools_exit():
    # half a message in the result pipe (as a worker terminated while writing its result leaves it): the pool's
    # manager thread waits in recv for the rest; once the workers are gone the pipe's end must make it stop
    import multiprocessing
    import struct
    from concurrent.futures import ProcessPoolExecutor

    from curlopt.experiments.executors import _unblock_result_reader

    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    assert pool.submit(abs, -1).result(timeout=60) == 1  # the manager thread and the worker are running
    thread = pool._executor_manager_thread
    writer = pool._result_queue._writer
    os.write(writer.fileno(), struct.pack("!i", 1000) + b"half")  # a header for 1,000 bytes, then 4 of them
    time.sleep(0.5)  # the manager thread is now in recv, waiting for the other 996
    processes, results = list(pool._processes.values()), pool._result_queue
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    _unblock_result_reader(results, processes)
    thread.join(timeout=10)
    assert not thread.is_alive()

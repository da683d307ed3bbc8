"""One row in a child process: when a comparison isolates its rows, the child's start (spawn context), the
wall-clock guard past the time limit, the child's peak resident set, and why a child that ended early did."""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...backends.base import Backend
from ...models.cmdp import CMDP
from .rows import SolverRow

__all__ = ["ISOLATE_PAIRS", "ISOLATE_ENTRIES", "GUARD_SECONDS", "STARTUP_SECONDS", "isolation_default",
           "guard_margin", "peak_memory"]

#: a model with at least this many pairs S·A is compared in child processes by default (:func:`isolation_default`)
ISOLATE_PAIRS = 5_000
#: ... and so is one whose kernel stores at least this many entries (S·A·S when dense, its nonzeros when sparse)
ISOLATE_ENTRIES = 100_000
#: the wall-clock guard's margin past the time limit: at least this many seconds, or half the limit
GUARD_SECONDS = 10.0
#: seconds a child may take to start (interpreter, imports, the model and its instances), on top of the guard
STARTUP_SECONDS = 60.0


def isolation_default(model: CMDP) -> tuple[bool, str]:
    """Whether a comparison on ``model`` runs each backend in a child process by default, and why.

    Yes for a large model: ``S·A >= ISOLATE_PAIRS`` (5,000) or a kernel of ``>= ISOLATE_ENTRIES`` (10^5) stored
    entries (``S·A·S`` when stored dense, its nonzeros when sparse), where a backend may take minutes or GiBs.
    """
    pairs = model.n_states * model.n_actions
    entries = model.nnz if model.sparse else pairs * model.n_states
    if pairs >= ISOLATE_PAIRS:
        return True, f"the model is large: S·A = {pairs:,} >= {ISOLATE_PAIRS:,}"
    if entries >= ISOLATE_ENTRIES:
        return True, f"the model is large: its kernel holds {entries:,} entries >= {ISOLATE_ENTRIES:,}"
    return False, f"the model is small (S·A = {pairs:,}, {entries:,} kernel entries)"


def guard_margin(time_limit: float) -> float:
    """Seconds the wall-clock guard lets a stage run past ``time_limit``: the larger of 10 s and half the limit
    (a solver checks its limit only now and then, and a backend's compile has none)."""
    return max(GUARD_SECONDS, 0.5 * time_limit)


#: a child process's work, ``child(connection, task)``: a function at module level (the spawned child imports it by
#: its module and name). It is given, not imported: it lives with the comparison, which uses the study executors'
#: process helpers, and this sub-package's modules may not import ``curlopt.experiments``' own (a cycle of rooms).
Child = Callable[[Any, "_Task"], None]


@dataclass
class _Task:
    """What a child process needs to run one row (pickled to it: the model, the backend class by reference)."""

    model: CMDP
    program: str
    epochs: int
    seed: int
    backend: str
    solver: str
    factory: type[Backend] | None
    options: dict
    time_limit: float | None
    parent: int


def peak_memory() -> int | None:
    """This process's peak resident set in bytes, or None where it cannot be read.

    Linux: ``VmHWM`` of ``/proc/self/status``. Not ``getrusage(RUSAGE_SELF).ru_maxrss``: the kernel carries a
    process's peak across ``exec`` into the new program, so a spawned child reports at least its parent's peak
    (measured: 833 MB for a child whose own peak was 15 MB, under a parent holding 800 MB). Elsewhere
    ``ru_maxrss`` (bytes on macOS, KiB on other systems), with that caveat.
    """
    value = _process_peak("self")
    if value is not None:
        return value
    try:
        import resource
    except ImportError:  # no getrusage (Windows)
        return None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else 1024 * peak


def _process_peak(pid: int | str) -> int | None:
    """``VmHWM`` of a process (``"self"`` or a pid), bytes; None without /proc or once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _run_isolated(task: _Task, margin: float | None, child: Child) -> tuple[SolverRow, list]:
    """One row in a child process (spawn context): its last reported state, why it stopped if it did, and the
    warnings the child raised (those of a child that finished; the caller raises them again, each once).

    ``child(connection, task)`` is the child's work (:func:`curlopt.experiments.compare._child_main`); it sends
    dicts on ``connection``: ``kind`` (``compile``, ``solve <i>``, ``done``, ``failed``), ``row``, ``peak``, and
    with ``done`` the ``warnings``, with ``failed`` the ``error``.
    """
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=child, args=(writer, task), daemon=True,
                              name=f"curlopt compare {task.backend}/{task.solver}")
    row = SolverRow(task.backend, task.solver, isolated=True)
    try:
        process.start()
    except Exception as exc:  # e.g. a model or backend class that cannot be pickled to the child
        writer.close()
        reader.close()
        row.error = (f"stopped: the child process could not start ({type(exc).__name__}: {exc}); run it in this"
                     " process (isolate=False, --no-isolate)")
        return row, []
    writer.close()
    stage, began, ended, why = "start", time.perf_counter(), "", ""
    found: list = []  # the child's warnings, sent with its last word
    while True:
        allowance = None
        if task.time_limit is not None and margin is not None:
            allowance = task.time_limit + margin + (STARTUP_SECONDS if stage == "start" else 0.0)
        wait = None if allowance is None else max(0.0, began + allowance - time.perf_counter())
        if not _poll(reader, wait):
            # read while it lives: exact; without /proc, the last report (a lower bound)
            peak = _process_peak(process.pid) if process.pid is not None else None
            row.peak_memory, row.peak_exact = (peak, True) if peak is not None else (row.peak_memory, False)
            process.kill()
            assert allowance is not None and task.time_limit is not None
            why = (f"stopped: killed by the wall-clock guard while {_doing(stage, task)}: still running after"
                   f" {allowance:g} s (the {task.time_limit:g} s time limit + {margin:g} s margin"
                   + (f" + {STARTUP_SECONDS:g} s to start" if stage == "start" else "") + ")")
            break
        try:
            message = reader.recv()
        except (EOFError, OSError):  # the child is gone without a last word
            break
        if message.get("row") is not None:
            row = message["row"]
        row.peak_memory = message.get("peak")
        ended = message["kind"]
        if ended == "done":
            found = message.get("warnings", [])
            break
        if ended == "failed":
            why = f"stopped: {message['error']} while {_doing(stage, task)}"
            break
        stage, began = ended, time.perf_counter()
    process.join(5.0)
    if process.is_alive():  # it sent its last word but does not end (or was just killed): make sure
        process.kill()
        process.join(5.0)
    reader.close()
    if not why and ended != "done":
        row.peak_exact = False
        why = f"stopped: the child process {_exit_reason(process.exitcode)} while {_doing(stage, task)}"
    if why:
        row.error = why
    row.isolated = True
    return row, found


#: the longest single wait on the child's pipe, seconds: the system's poll takes a timeout in milliseconds of a C
#: int (about 24.8 days), so a longer wait (a time limit of 1e7 s) is taken in pieces
_LONGEST_POLL = 86_400.0


def _poll(reader: Any, wait: float | None) -> bool:
    """Whether a message arrived within ``wait`` seconds (None: until one does, or the child ends)."""
    if wait is None:
        return bool(reader.poll(None))
    deadline = time.perf_counter() + wait
    while True:
        left = deadline - time.perf_counter()
        if reader.poll(max(0.0, min(left, _LONGEST_POLL))):
            return True
        if left <= _LONGEST_POLL:
            return False


def _doing(stage: str, task: _Task) -> str:
    if stage == "start":
        return "starting (imports, the model, the instances)"
    if stage == "compile":
        return "building and compiling the program"
    if stage.startswith("solve "):
        return f"solving instance {stage.split()[1]}"
    return stage


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "did not end"
    if code >= 0:
        return f"exited with code {code} without a result"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    if -code == getattr(signal, "SIGKILL", None):  # (Windows has no SIGKILL)
        return f"was killed ({name}, not by the guard: often the system's out-of-memory killer)"
    return f"crashed ({name})"

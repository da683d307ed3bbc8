"""One writer per study folder: a lock held for the life of a sweep, naming its holder.

A sweep (``curlopt sweep``, ``curlopt reproduce``, :func:`~curlopt.experiments.runner.run_study`)
holds an exclusive advisory lock on ``<out>/study.lock`` from before it writes
anything until its summary and figures are written. The file records the holder
as one line of JSON: its pid, host, start time and command. A second sweep on
the same folder is refused with one line naming the holder, or waits for it
(``wait=True``, ``--wait``). The holder removes the file when it finishes.

Why ``fcntl.flock`` (and not the ``filelock`` package, nor a pid file):

* the kernel releases an flock when its process ends, however it ends (SIGKILL
  included), so a lock is never held by a process that is gone. A killed
  sweep leaves its file behind but not its lock: the next sweep takes the lock
  at once, reads the record left behind and says whose lock it took over. No
  guess from pids (which the kernel reuses) or from the file's age is needed;
* the record lives in the locked file itself, where a refused sweep can read
  it (filelock's Unix lock truncates the lock file on every attempt);
* it is in the standard library.

The holder deletes the file before it lets the lock go; a sweep that was
waiting on the deleted file notices (its locked file is no longer the one at
the path) and starts again on the new one, so two sweeps can never both hold
the folder.

Limits: ``flock`` is POSIX. On a network file system it works where the file
system supports locks (NFS maps it to its own locks on Linux since 2.6.12);
where it does not, the sweep stops with the system's reason instead of running
unlocked. Without ``fcntl`` (Windows) the folder is not locked, and a note says
so.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import socket
import sys
import time as clock
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CurloptError
from ...fileio import write_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "FolderLock", "FolderLockError", "FolderInUseError", "LockHolder", "read_holder"]

#: the lock file's name in the output folder
LOCK_NAME = "study.lock"
#: seconds between two attempts while waiting
POLL_SECONDS = 0.2
_FORMAT = "curlopt-lock"
_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


class FolderLockError(CurloptError):
    """The output folder could not be locked (the message says why)."""


class FolderInUseError(FolderLockError):
    """Another sweep holds the output folder; the message names it (pid, host, start time)."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a study folder: the content of its lock file."""

    pid: int
    host: str
    started: str
    command: str = ""

    @classmethod
    def here(cls) -> LockHolder:
        started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        command = ""
        if sys.argv and sys.argv[0]:
            program = Path(sys.argv[0])
            name = f"python -m {program.parent.name}" if program.name == "__main__.py" else program.name
            command = " ".join([name, *sys.argv[1:]])
        return cls(os.getpid(), socket.gethostname(), started, command)

    @classmethod
    def parse(cls, text: str) -> LockHolder | None:
        """The holder a lock file records; None for an empty or unreadable record."""
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT:
                return None
            return cls(int(data["pid"]), str(data["host"]), str(data["started"]), str(data.get("command", "")))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def record(self) -> str:
        return json.dumps({"format": _FORMAT, "version": 1, "pid": self.pid, "host": self.host,
                           "started": self.started, "command": self.command}) + "\n"

    def describe(self) -> str:
        """``pid 1234 on host box, started 2026-11-25T10:00:00+00:00, command: curlopt sweep s.toml``."""
        text = f"pid {self.pid} on host {self.host}, started {self.started}"
        return text + (f", command: {self.command}" if self.command else "")

    def is_gone(self) -> bool:
        """True when the process is on this host and no longer runs (unknown elsewhere: False)."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # e.g. EPERM: a process of another user has this pid
            return False
        return False


def read_holder(folder: str | os.PathLike) -> LockHolder | None:
    """The holder recorded in ``folder``'s lock file, if any (held now, or left by a sweep that was killed)."""
    try:
        return LockHolder.parse((Path(folder) / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


class FolderLock:
    """An exclusive lock on a study folder for the life of a ``with`` block (see the module docstring).

    Parameters
    ----------
    folder : path
        The study's output folder (created if missing).
    wait : bool, default False
        Wait for the holder to finish instead of refusing.
    say : callable, optional
        Where the notes go (waiting; taking over the lock of a sweep that was killed).

    Raises
    ------
    FolderInUseError
        When another sweep holds the folder and ``wait`` is False.
    FolderLockError
        When the folder's file system refuses locks.
    WriteError
        When the folder or the lock file cannot be created or written.
    """

    def __init__(self, folder: str | os.PathLike, wait: bool = False, say: Callable[[str], None] | None = None):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.wait = wait
        self.say = say or (lambda _message: None)
        self.holder = LockHolder.here()
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock (waiting for the holder when ``wait``); write this process's record into the file."""
        if fcntl is None:  # pragma: no cover - Windows
            self.say(f"note: {self.folder} is not locked (this platform has no fcntl); run one sweep on it at a time")
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # the one-line error of every failed write: could not write <path>: <reason>
            raise write_error(self.folder, exc) from None
        announced = False
        while True:
            fd = self._locked_descriptor()
            if fd is not None:
                break
            who = self._holder_text()
            if not self.wait:
                raise FolderInUseError(f"{self.folder} is in use by another sweep ({who}); wait for it with --wait,"
                                       " or give another output folder.")
            if not announced:
                announced = True
                self.say(f"waiting for {self.folder}: in use by another sweep ({who})")
            clock.sleep(POLL_SECONDS)
        previous = LockHolder.parse(_read(fd))
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, self.holder.record().encode("utf-8"), 0)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise write_error(self.path, exc) from None
        self._fd = fd
        if previous is not None:
            gone = " (that process is gone)" if previous.is_gone() else ""
            self.say(f"note: took over {self.path} from a sweep that ended without releasing it{gone}:"
                     f" {previous.describe()}; its finished runs are kept")

    def _holder_text(self) -> str:
        """The holder as text; its record is written right after it takes the lock, so allow it a moment."""
        for _ in range(10):
            holder = read_holder(self.folder)
            if holder is not None:
                return holder.describe()
            clock.sleep(0.05)
        return "a process that has not written its record"

    def _locked_descriptor(self) -> int | None:
        """A descriptor of the file at the path, locked by us; None when another process holds it."""
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            except OSError as exc:
                raise write_error(self.path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in _BUSY:
                    return None
                raise FolderLockError(f"cannot lock {self.path} ({exc.strerror or exc}): its file system does not"
                                      " support locks; put the study folder on a local disk.") from None
            if _same_file(fd, self.path):
                return fd
            os.close(fd)  # the holder deleted this file as it finished: start again on the one at the path

    def release(self) -> None:
        """Delete the lock file, then let the lock go (a sweep waiting on the old file starts again)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 64 * 1024, 0).decode("utf-8", errors="replace")
    except OSError:
        return ""

"""Files: the one atomic writer of the toolkit, bounded reads, and output-path checks.

Every file curlopt writes (run traces, model files, ``study.json``,
``config.json``) goes through :func:`atomic_write_bytes` / :func:`atomic_write_text`:

* the data goes to a temporary file with a unique name (``.<name>.<random>.tmp``)
  in the target's own folder, created with ``O_CREAT | O_EXCL`` and mode
  ``0o666``, so the kernel applies the umask (and any default ACL) exactly as for
  a plain ``open(path, "w")``; when the target already exists as a regular file,
  its permission bits are kept;
* the temporary file is flushed and ``fsync``-ed, then renamed over the target
  with :func:`os.replace` (atomic on POSIX and Windows), and the folder is
  ``fsync``-ed (best effort);
* on any failure (a full disk, a signal, a target that is a directory) the
  temporary file is removed and the error is raised.

A reader therefore sees either the old file or the new one, never a partial
file, and concurrent writers of the same path never collide (the last rename
wins).

Reads of user-given files go through :func:`read_bytes_limited`, which refuses
a file (or a device such as ``/dev/zero``) larger than a bound instead of
reading it whole.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from .errors import CurloptError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "read_bytes_limited",
    "check_output_file",
    "check_output_dir",
    "MAX_READ_BYTES",
    "WriteError",
    "write_error",
]

#: The largest file :func:`read_bytes_limited` reads by default (64 MiB): model files and traces are far smaller.
MAX_READ_BYTES = 64 * 1024 * 1024


class WriteError(CurloptError):
    """A file could not be written (the message names the path and the system's reason)."""


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _open_temporary(folder: Path, name: str) -> tuple[int, Path]:
    for _ in range(100):
        temporary = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(folder))  # pragma: no cover


def _fsync_folder(folder: Path) -> None:
    try:
        handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(handle)
    except OSError:  # pragma: no cover - some file systems refuse it
        pass
    finally:
        os.close(handle)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module's notes); return the path.

    The parent folder must exist. Raises :class:`OSError` (with the temporary
    file removed) when the write fails; callers turn it into a one-line message.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    handle, temporary = _open_temporary(folder, path.name)
    try:
        try:
            existing = os.stat(path)
            if stat.S_ISREG(existing.st_mode) and hasattr(os, "fchmod"):
                os.fchmod(handle, stat.S_IMODE(existing.st_mode))
        except OSError:
            pass
        with os.fdopen(handle, "wb") as stream:
            handle = -1
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if handle >= 0:
            os.close(handle)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_folder(folder)
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded with ``encoding`` (UTF-8)."""
    return atomic_write_bytes(path, text.encode(encoding))


def read_bytes_limited(path: str | os.PathLike, limit: int = MAX_READ_BYTES, what: str = "file") -> bytes:
    """The bytes of ``path``, reading at most ``limit`` of them.

    Raises
    ------
    CurloptError
        When the file holds more than ``limit`` bytes (or is an endless device).
    OSError
        When it cannot be opened or read (missing, a directory, no permission).
    """
    with open(path, "rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise CurloptError(f"the {what} {path} is larger than {limit // (1024 * 1024)} MiB; refusing to read it.")
    return data


def _probe(folder: Path, label: str) -> None:
    """Create and remove a temporary file in ``folder``; raise WriteError naming ``label`` if that fails."""
    try:
        handle, temporary = _open_temporary(folder, "write-test")
    except OSError as exc:
        raise WriteError(f"{label}: cannot write to {folder}: {_describe(exc)}.") from None
    os.close(handle)
    try:
        os.unlink(temporary)
    except OSError:  # pragma: no cover
        pass


def check_output_file(path: str | os.PathLike | None, option: str = "--out") -> Path:
    """Check, before any work, that a file can be written at ``path``; create its folder. Return the path.

    Refuses an empty path, a path that is an existing directory and a folder that
    cannot be created or written to (one line naming ``option`` and the reason).
    """
    text = os.fspath(path) if path is not None else ""
    if not str(text).strip():
        raise WriteError(f"{option} must be a file name, got an empty string.")
    path = Path(text)
    if path.is_dir():
        raise WriteError(f"{option} {path} is a directory; give a file name (e.g. {path / 'trace.json.gz'}).")
    folder = path.parent if str(path.parent) else Path(".")
    _make_folder(folder, f"{option} {path}")
    _probe(folder, f"{option} {path}")
    return path


def _make_folder(folder: Path, label: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise WriteError(f"{label}: {blocker} is a file, not a folder.") from None
    except OSError as exc:
        raise WriteError(f"{label}: cannot create the folder {folder}: {_describe(exc)}.") from None


def check_output_dir(path: str | os.PathLike | None, option: str = "--out") -> Path:
    """Check, before any work, that ``path`` is (or can be created as) a writable folder. Return it."""
    text = os.fspath(path) if path is not None else ""
    if not str(text).strip():
        raise WriteError(f"{option} must be a folder name, got an empty string.")
    path = Path(text)
    _make_folder(path, f"{option} {path}")
    _probe(path, f"{option} {path}")
    return path


def write_error(path: str | os.PathLike, exc: OSError) -> WriteError:
    """The one-line error for a failed write: ``could not write <path>: <reason>``."""
    return WriteError(f"could not write {path}: {_describe(exc)}.")

"""How the command line prints warnings and notes: one line each on stderr, through :mod:`logging`.

:func:`command_logging` (used by :func:`curlopt.cli.main`) sends the
``curlopt`` logger to stderr as ``warning: <message>`` (``error: ...``,
``debug: ...``), and routes Python warnings there too, in place of
Python's two-line ``file:line: Category: message`` + source line. A warning
raised by curlopt's own code (e.g. the ergodicity check's RuntimeWarning)
prints as ``warning: <message>``; one from another package adds its category
and package, ``warning: <message> (DeprecationWarning from ray)``. While a
progress bar is active, the lines are written through ``tqdm.write``
(:func:`tqdm.contrib.logging.logging_redirect_tqdm`), so they never land inside
a bar.

The root options ``--quiet`` (errors only) and ``--verbose`` (debug messages
too) set the level with :func:`set_level`.

Worker processes of a parallel study (a local pool with ``--jobs`` > 1, or Ray)
do not print warnings themselves: each run's warnings come back with its result
and are raised again in the command's process
(:func:`curlopt.experiments.executors.reissue_warnings`), so they print here as
one ``warning:`` line each (a warning every worker raised, once). Ray's own log
messages go to the ``curlopt.ray`` logger while a sweep runs on Ray, and print as
``warning: <message> (from ray)``.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

__all__ = ["LOGGER", "command_logging", "set_level", "warn", "note", "deprecated_alias", "aliased_option"]

#: the logger every message of the command line goes through
LOGGER = logging.getLogger("curlopt")
_PACKAGE = Path(__file__).resolve().parent.parent  # the curlopt package folder


class _OneLineFormatter(logging.Formatter):
    """``warning: message`` on one line (``error:``, ``debug:``; information as it is)."""

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        if record.levelno == logging.INFO:
            return text
        return f"{record.levelname.lower()}: {text}"


def _from_curlopt(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):
        return False


def _package(filename: str) -> str:
    """The installed package a file belongs to (its top folder under site-packages), else the file's stem."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts[:-1]:
            return Path(parts[parts.index(marker) + 1]).stem
    return Path(filename).stem


def _show_warning(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """``warnings.showwarning`` replacement: one ``warning:`` line through the ``curlopt`` logger."""
    text = " ".join(str(message).split())
    if not _from_curlopt(filename):
        text += f" ({category.__name__} from {_package(filename)})"
    LOGGER.getChild("warnings").warning("%s", text)


@contextmanager
def command_logging() -> Iterator[None]:
    """Within the block: the ``curlopt`` logger prints one line per message on stderr, and so do Python warnings.

    Everything is restored on exit (the handler, the level, ``warnings.showwarning``).
    """
    from tqdm.contrib.logging import logging_redirect_tqdm

    handler = logging.StreamHandler(sys.stderr)  # the stderr of this command (tests swap it)
    handler.setFormatter(_OneLineFormatter())
    saved = (LOGGER.handlers[:], LOGGER.level, LOGGER.propagate, warnings.showwarning)
    LOGGER.handlers = [handler]
    LOGGER.setLevel(logging.WARNING)
    LOGGER.propagate = False
    warnings.showwarning = _show_warning
    try:
        with logging_redirect_tqdm(loggers=[LOGGER]):
            yield
    finally:
        LOGGER.handlers, level, LOGGER.propagate, warnings.showwarning = saved
        LOGGER.setLevel(level)


def set_level(quiet: bool = False, verbose: bool = False) -> None:
    """``--quiet``: errors only; ``--verbose``: debug messages too; otherwise warnings and errors."""
    if quiet and verbose:
        raise typer.BadParameter("give --quiet or --verbose, not both.")
    LOGGER.setLevel(logging.ERROR if quiet else logging.DEBUG if verbose else logging.WARNING)


def warn(message: str) -> None:
    """A one-line ``warning: ...`` on stderr (hidden by ``--quiet``), whether or not logging is set up."""
    if LOGGER.isEnabledFor(logging.WARNING):
        typer.echo(f"warning: {' '.join(message.split())}", err=True)


def note(message: str) -> None:
    """A one-line ``note: ...`` on stderr (hidden by ``--quiet``)."""
    if LOGGER.isEnabledFor(logging.WARNING):
        typer.echo(f"note: {' '.join(message.split())}", err=True)


# -- renamed options -------------------------------------------------------------------------------------------------
def _default(ctx: Any, name: str) -> bool:
    """Whether parameter ``name`` took its default (by the source's name: typer may bundle its own click)."""
    return getattr(ctx.get_parameter_source(name), "name", "") == "DEFAULT"


def aliased_option(alias: str, old: str, new: str) -> Callable[..., Any]:
    """Callback of an option ``new`` that a hidden deprecated option ``old`` (parameter ``alias``) may stand for."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        given = ctx.params.get(alias)
        if given is None:
            return value
        if not _default(ctx, param.name):
            raise typer.BadParameter(f"give {new} only ({old} is its deprecated name).")
        return given

    return callback


def deprecated_alias(target: str, old: str, new: str, meaning: str) -> Callable[..., Any]:
    """Callback of the hidden option ``old`` (deprecated name of ``new``, parameter ``target``): a one-line note."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is None:
            return None
        if ctx.get_parameter_source(target) is not None and not _default(ctx, target):
            raise typer.BadParameter(f"give {new} only ({old} is its deprecated name).")
        note(f"{old} is deprecated here; use {new} ({meaning}).")
        return value

    return callback

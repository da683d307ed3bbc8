"""Helpers shared by the commands: environment parameters, model lookup, and SIGTERM handling."""

from __future__ import annotations

import ast
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ..errors import CurloptError
from ..models.cmdp import CMDP

#: words read as Python constants in key=value options
_WORDS = {"true": True, "false": False, "null": None, "none": None}
#: an example per flag, for messages
_EXAMPLES = {"--param": "buffer=8", "--option": "prior=2"}


def parse_params(items: list[str] | None, flag: str = "--param") -> dict[str, Any]:
    """Parse ``key=value`` strings; values are Python literals (``8``, ``0.5``, ``None``, ``[0.2,0.4]``) or strings.

    ``true``/``false``/``null`` (any case, as in a study file) are read as ``True``/``False``/``None`` too.

    ``flag`` names the option in messages (``--param``, ``--option``). A key given twice with different values
    is refused (naming both), rather than the last one silently winning.
    """
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise CurloptError(f"{flag} takes key=value (e.g. {flag} {_EXAMPLES.get(flag, 'key=1')}), got {item!r}.")
        value = _literal(raw.strip())
        if key in params and not _same(params[key], value):
            raise CurloptError(f"{flag} {key}={params[key]!r} and {flag} {key}={value!r} contradict each other;"
                               f" give {flag} {key} once.")
        params[key] = value
    return params


def _literal(text: str) -> Any:
    if text.lower() in _WORDS:  # the TOML spelling a study file uses: the same option, the same value
        return _WORDS[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):  # not a literal: a string
        return text


def _same(first: Any, second: Any) -> bool:
    """Whether two option values are the same option (``1`` and ``1.0`` are; ``1`` and ``True`` are not)."""
    return type(first) is type(second) and first == second or (
        not isinstance(first, bool) and not isinstance(second, bool)
        and isinstance(first, (int, float)) and isinstance(second, (int, float)) and first == second)


def merge_options(named: dict[str, tuple[str, Any]], given: dict[str, Any], flag: str = "--option") -> dict[str, Any]:
    """The options of the named flags (``{option: (flag, value)}``, None values left out) with the ``--option`` ones.

    An ``--option`` that sets the same option as a named flag to another value (``--epochs linear --option
    trigger=doubling``) is refused with one line naming both, rather than one of them silently winning.
    """
    options = {key: value for key, (_, value) in named.items() if value is not None}
    for key, value in given.items():
        if key in options and not _same(options[key], value):
            raise CurloptError(f"{named[key][0]} {_show(options[key])} and {flag} {key}={_show(value)} contradict each"
                               f" other (both set {key}); give one of them.")
        options[key] = value
    return options


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def load_model(env: str, params: list[str] | None) -> CMDP:
    """The built-in model ``env`` with ``--param`` values, or a JSON model file when ``env`` ends in ``.json``."""
    if env.endswith(".json"):
        from ..models.files import load_model as load_file

        if params:
            raise CurloptError("--param applies to built-in models, not to a model file.")
        return load_file(env)
    from ..models import build_model

    return build_model(env, **parse_params(params))


# -- interruption -----------------------------------------------------------------------------------------------------
#: printed when a sweep or reproduce is interrupted (Ctrl-C or SIGTERM)
INTERRUPTED = "interrupted: finished runs are saved; run the same command again to resume."
#: exit codes: 128 + the signal's number, as a shell reports a process killed by it
EXIT_SIGINT, EXIT_SIGTERM = 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread where Ctrl-C raises KeyboardInterrupt (so the same cleanup runs)."""


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` (a KeyboardInterrupt); later ones are ignored meanwhile.

    Outside the main thread (where signal handlers cannot be set) the block runs unchanged.
    """
    raised: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:  # the signature signal.signal calls
        if raised:
            return  # already stopping: let the cleanup finish
        raised.append(signum)
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_interrupted(exc: BaseException) -> None:
    """Print :data:`INTERRUPTED` on stderr and exit 143 after SIGTERM, 130 after Ctrl-C."""
    import typer

    typer.echo(INTERRUPTED, err=True)
    sys.exit(EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT)

"""Helpers shared by the commands: environment parameters, model lookup, and SIGTERM handling."""

from __future__ import annotations

import ast
import signal
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import CurloptError
from ..models.cmdp import CMDP


#: words read as Python constants in key=value options
_WORDS = {"true": True, "false": False, "null": None, "none": None}
#: an example per flag, for messages
_EXAMPLES = {"--param": "buffer=8", "--option": "prior=2"}


def parse_params(items: list[str] | None, flag: str = "--param") -> dict[str, Any]:
    """Parse ``key=value`` strings; values are Python literals (``8``, ``0.5``, ``None``, ``[0.2,0.4]``) or strings.

    ``true``/``false``/``null`` (any case, as in a study file) are read as ``True``/``False``/``None`` too.

    ``flag`` names the option in messages (``--param``, ``--option``).
    """
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise CurloptError(f"{flag} takes key=value (e.g. {flag} {_EXAMPLES.get(flag, 'key=1')}), got {item!r}.")
        text = raw.strip()
        if text.lower() in _WORDS:  # the TOML spelling a study file uses: the same option, the same value
            params[key] = _WORDS[text.lower()]
            continue
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):  # not a literal: a string
            value = text
        params[key] = value
    return params


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
    raised = []

    def handler(signum, frame):  # noqa: ARG001
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

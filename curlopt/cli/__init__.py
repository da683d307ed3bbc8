"""The ``curlopt`` command line.

One module per command; :func:`main` turns every :class:`curlopt.CurloptError`
into a one-line message and a non-zero exit (``--debug`` shows the traceback).
Warnings print as one ``warning: ...`` line on stderr (:mod:`curlopt.cli.logs`);
the root options ``--quiet`` and ``--verbose`` set how much is printed, and
``--version`` prints the version. ``python -m curlopt`` is the same command.
"""

from __future__ import annotations

import sys

import typer

from ..errors import CurloptError
from .app import app


def _register() -> None:
    # Each command module adds itself to `app`; imported here, after `app` exists.
    from . import agents, backends, compare, diagnose, optimum, report, reproduce, run, sweep  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``curlopt`` script.

    Usage errors (unknown options, values of the wrong type) are printed by the CLI
    library with the usage line and exit 2; curlopt's own errors print one line
    ``error: ...`` and exit 2. ``--debug`` re-raises them with the traceback.
    """
    _register()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    from .logs import command_logging

    try:
        with command_logging():  # warnings and notes: one line each on stderr (see curlopt.cli.logs)
            app(args=argv, prog_name="curlopt")  # standalone mode: exits through SystemExit
    except CurloptError as exc:
        if debug:
            raise
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)

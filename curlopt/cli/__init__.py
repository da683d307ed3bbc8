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

app = typer.Typer(
    name="curlopt",
    help="Concave-utility constrained RL with zero constraint violations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"curlopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print errors only (no warnings or notes)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print debug messages too."),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    from .logs import set_level

    _state["debug"] = debug
    set_level(quiet=quiet, verbose=verbose)


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

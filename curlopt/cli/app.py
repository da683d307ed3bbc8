"""The ``curlopt`` Typer application and its root options; every command module adds itself to :data:`app`.

A module of its own (not the package's ``__init__``), so that a command module imports ``app``
without importing the package that imports every command module.
"""

from __future__ import annotations

import typer

__all__ = ["app"]

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

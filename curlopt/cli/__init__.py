"""The ``curlopt`` command line.

One module per command; :func:`main` turns every :class:`curlopt.CurloptError`
into a one-line message and a non-zero exit (``--debug`` shows the traceback).
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


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors.")) -> None:
    _state["debug"] = debug


def _register() -> None:
    # Each command module adds itself to `app`; imported here, after `app` exists.
    from . import backends, compare, diagnose, optimum, reproduce, run, sweep  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``curlopt`` script.

    Usage errors (unknown options, values of the wrong type) are printed by the CLI
    library with the usage line and exit 2; curlopt's own errors print one line
    ``error: ...`` and exit 2. ``--debug`` re-raises them with the traceback.
    """
    _register()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        app(args=argv, prog_name="curlopt")  # standalone mode: exits through SystemExit
    except CurloptError as exc:
        if debug:
            raise
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)

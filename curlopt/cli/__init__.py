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
    from . import backends, compare, diagnose, optimum, reproduce, run  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``curlopt`` script."""
    _register()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        app(args=argv, standalone_mode=False)
    except CurloptError as exc:
        if debug:
            raise
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code or 0)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            typer.echo("aborted", err=True)
            sys.exit(130)
        raise

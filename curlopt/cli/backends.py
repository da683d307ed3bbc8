"""``curlopt backends``: which backends are registered and installed."""

from __future__ import annotations

import typer

from .app import app


@app.command("backends")
def backends_command() -> None:
    """List the registered backends, whether each is installed, what it takes, and where ``auto`` takes it."""
    from ..backends.registry import auto_takes, backend_class, backend_names

    names = backend_names()
    width = max(len(name) for name in names)  # a registered name may be longer than the built-in ones
    for name in names:
        cls = backend_class(name)
        state = "installed" if cls.is_installed() else f"not installed (pip install 'curlopt[{cls.extra}]')"
        typer.echo(f"{name:{width}s} {state:40s} takes {cls.takes}; auto: {auto_takes(name)}")

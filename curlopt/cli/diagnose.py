"""``curlopt diagnose ENV``: ergodicity, hitting/relaxation times and the Slater margin of a model."""

from __future__ import annotations

import json

import typer

from .app import app
from .common import load_model


@app.command("diagnose")
def diagnose_command(
    env: str = typer.Argument(..., help="Built-in model name, e.g. queue, scheduler, nonergodic, random, maxent, or a model file (.json)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Model parameter key=value (repeatable)."),
    backend: str = typer.Option(
        None, "--backend", "-b",
        help="Backend for the Slater-margin program (default: highs when the constraints are LP-representable).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Report whether the model is ergodic, its hitting and relaxation times, and its Slater margin.

    A large model (e.g. ``queue -p buffer=10000``, stored sparse) is checked on its nonzeros; what is not computed
    at its size is printed as a note saying why.
    """
    from ..diagnostics import diagnose

    model = load_model(env, param)
    report = diagnose(model, backend=backend)
    if as_json:
        typer.echo(json.dumps({"env": env, **report.to_dict()}, indent=2))
        return
    typer.echo(str(report))

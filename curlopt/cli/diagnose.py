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
    criterion = getattr(model, "criterion", "average")
    if criterion != "average":
        # every number it prints is the long-run average's (stationary chains, a stationary Slater margin): on a model
        # whose constraints bound per-episode totals or discounted values they would describe another problem
        from ..errors import CurloptError

        raise CurloptError(f"diagnose reports the long-run average criterion's ergodicity, hitting times and Slater"
                           f" margin; model {model.name!r} is {criterion}: its constraints act on other values."
                           f" Use curlopt optimum {env} (its status says whether the constraints can hold).")
    report = diagnose(model, backend=backend)
    if as_json:
        typer.echo(json.dumps({"env": env, **report.to_dict()}, indent=2))
        return
    typer.echo(str(report))

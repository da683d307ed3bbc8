"""``curlopt compare-solvers ENV``: every installed backend and solver on the same program instances."""

from __future__ import annotations

import json

import typer

from .app import app
from .common import load_model
from .logs import aliased_option, deprecated_alias


@app.command("compare-solvers")
def compare_command(
    env: str = typer.Argument(..., help="Built-in model name, e.g. queue or scheduler, or a model file (.json)."),
    program: str = typer.Option("optimistic", "--program", help="optimum, optimistic or sampled."),
    epochs: int = typer.Option(10, "--instances", help="Number of program instances (data snapshots).",
                               callback=aliased_option("deprecated_epochs", "--epochs", "--instances")),
    deprecated_epochs: int = typer.Option(None, "--epochs", hidden=True, help="Deprecated name of --instances.",
                                          callback=deprecated_alias("epochs", "--epochs", "--instances",
                                                                    "the number of program instances")),
    size: str = typer.Option(None, "--size", help="S,A of a random model (ENV must be random)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Model parameter key=value (repeatable)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulated run and posterior samples."),
    tolerance: float = typer.Option(1e-5, "--tolerance", help="Relative objective tolerance for agreement (a finite number >= 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Print backend, solver, status, objective, largest constraint residual, solve times and iterations."""
    from ..backends.base import solver_output_to_stderr
    from ..errors import CurloptError
    from ..experiments.compare import check_tolerance, compare_solvers

    check_tolerance(tolerance, "--tolerance")

    params = list(param or [])
    if size is not None:
        if env != "random":
            raise CurloptError("--size builds a random model: use it with ENV = random.")
        try:
            n_states, n_actions = (int(v) for v in size.split(","))
        except ValueError:
            raise CurloptError(f"--size takes S,A (two integers), got {size!r}.") from None
        params += [f"n_states={n_states}", f"n_actions={n_actions}"]
    model = load_model(env, params)
    with solver_output_to_stderr():  # whatever a solver prints goes to stderr: stdout is the report alone
        report = compare_solvers(model, program=program, epochs=epochs, seed=seed, tolerance=tolerance)
    if as_json:
        typer.echo(json.dumps({"env": env, **report.to_dict()}, indent=2))
    else:
        typer.echo(f"{env}: {report.program} program, {report.instances} instance(s), {model!r}")
        typer.echo(report.table())
    for line in report.disagreements:
        typer.echo(f"warning: solvers disagree beyond {tolerance:g} (relative): {line}", err=True)

"""``curlopt compare-solvers ENV``: every installed backend and solver on the same program instances."""

from __future__ import annotations

import json
import logging

import typer

from ..errors import CurloptError
from ..models.cmdp import CMDP
from .app import app
from .logs import aliased_option, deprecated_alias
from .optimum import _model_of_criterion


@app.command("compare-solvers")
def compare_command(
    env: str = typer.Argument(..., help="Built-in model name, e.g. queue or scheduler, or a model file (.json)."),
    program: str = typer.Option("optimistic", "--program", help="optimum, optimistic or sampled."),
    epochs: int = typer.Option(10, "--instances", help="Number of program instances (data snapshots).",
                               callback=aliased_option("deprecated_epochs", "--epochs", "--instances")),
    deprecated_epochs: int = typer.Option(None, "--epochs", hidden=True, help="Deprecated name of --instances.",
                                          callback=deprecated_alias("epochs", "--epochs", "--instances",
                                                                    "the number of program instances")),
    size: str = typer.Option(None, "--size", help="The model's size: S,A for random; S (or S,16) for queue (S = buffer + 1 states)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Model parameter key=value (repeatable)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulated run and posterior samples."),
    tolerance: float = typer.Option(1e-5, "--tolerance", help="Relative objective tolerance for agreement (a finite number >= 0)."),
    backends: str = typer.Option(None, "--backends", help="Comma-separated backends to compare (default: every installed one; one that cannot express the model's utilities shows as refused)."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds per solve, given to every backend (its time_limit option); a solve that reaches it shows status time_limit."),
    isolate: bool = typer.Option(None, "--isolate/--no-isolate", help="Run each backend and solver in a child process: peak memory, and a crash or a kill becomes a row (default: on for a model with S·A >= 5,000 or >= 100,000 kernel entries)."),
    progress: bool = typer.Option(None, "--progress/--no-progress", help="One line on stderr as each backend and solver starts and ends (default: on for a large model, as --isolate)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    horizon: int = typer.Option(None, "--horizon", help="Play the model in episodes of H steps: compares the"
                                " episodic known-model program (--program optimum; values are per-episode totals)."),
    discount: float = typer.Option(None, "--discount", help="The discounted criterion with factor 0 < γ < 1: compares"
                                   " the discounted known-model program (--program optimum)."),
) -> None:
    """Print backend, solver, status, objective, gap, largest constraint residual, compile and solve times,
    iterations and (isolated runs) peak memory.

    The mean objectives are over the instances every solver solved (the others are listed, with who failed them);
    a solver the backend does not take the program with is shown as refused; objectives that differ beyond
    --tolerance on an instance are flagged; the gap is measured against the most accurate answer (named under the
    table: the consensus of the exact solvers); the report says when fewer instances ran than --instances asked,
    and a solve that answered the fallback program (its constraints infeasible) is counted apart, never as
    optimal. Exits 1 when no solver answered any instance (each row says how it ended: a time limit, a refusal, an
    error, not installed). With --horizon H or --discount γ (or a model file that carries one) the model is under
    the episodic or discounted criterion and --program optimum compares that criterion's known-model program; the
    other programs are the long-run average's and refuse such a model. With --isolate (the default for a
    large model) and --time-limit, a child still compiling or solving well past the limit is killed and its row says
    so.
    """
    from ..backends.base import solver_output_to_stderr
    from ..experiments.compare import (
        check_backends,
        check_time_limit,
        check_tolerance,
        compare_solvers,
        isolation_default,
    )
    from .logs import LOGGER, note, warn

    check_tolerance(tolerance, "--tolerance")
    check_time_limit(time_limit, "--time-limit")
    names = None if backends is None else check_backends(
        [name.strip() for name in backends.split(",") if name.strip()], "--backends")
    params = list(param or [])
    if size is not None:
        params += size_params(env, size, params)
    model = _model_of_criterion(env, params, horizon, discount)
    if size is not None and env == "queue":
        _check_queue_actions(size, model)
    show = progress if progress is not None else isolation_default(model)[0]

    def say(line: str) -> None:
        if show and LOGGER.isEnabledFor(logging.WARNING):  # --quiet hides it, as it hides notes
            typer.echo(line, err=True)

    with solver_output_to_stderr():  # whatever a solver prints goes to stderr: stdout is the report alone
        report = compare_solvers(model, program=program, epochs=epochs, seed=seed, tolerance=tolerance,
                                 backends=names, time_limit=time_limit, isolate=isolate, progress=say)
    if as_json:
        typer.echo(json.dumps({"env": env, **report.to_dict()}, indent=2))
        for line in report.notes:  # said once: on stderr beside the JSON (the table's lines say them otherwise)
            note(line)
    else:
        typer.echo(f"{env}: {report.program} program, {report.instances} instance(s), {model!r}")
        typer.echo(report.table())
    for line in report.disagreements:
        warn(f"solvers disagree beyond {tolerance:g} (relative): {line}")
    nothing = report.nothing_solved()
    if nothing:
        typer.echo(f"error: {nothing}", err=True)
        raise typer.Exit(1)


def _sizes(size: str, allowed: str) -> list[int]:
    try:
        values = [int(v) for v in size.split(",")]
    except ValueError:
        raise CurloptError(f"--size takes {allowed}, got {size!r}.") from None
    return values


def size_params(env: str, size: str, given: list[str]) -> list[str]:
    """The ``--param`` entries ``--size`` stands for: ``n_states``/``n_actions`` (random), ``buffer`` (queue).

    Raises
    ------
    CurloptError
        For a malformed size, a model whose size is fixed, or a size also given with ``--param``.
    """
    if env == "random":
        values = _sizes(size, "S,A (two integers)")
        if len(values) != 2:
            raise CurloptError(f"--size takes S,A (two integers) for random, got {size!r}.")
        names: tuple[str, ...] = ("n_states", "n_actions")
    elif env == "queue":
        values = _sizes(size, "S or S,A (integers)")
        if not 1 <= len(values) <= 2 or values[0] < 2:
            raise CurloptError(f"--size takes S (states, at least 2) or S,A for queue, got {size!r}; the queue has"
                               " S = buffer + 1 states.")
        names, values = ("buffer",), [values[0] - 1]
    else:
        raise CurloptError(f"--size sizes the random model (S,A) and the queue (S = buffer + 1); {env!r} has a fixed"
                           " size (or give its own --param values).")
    for name in names:
        if any(item.partition("=")[0].strip() == name for item in given):
            raise CurloptError(f"--size and --param {name}=... both set {name}; give one of them.")
    return [f"{name}={value}" for name, value in zip(names, values, strict=True)]


def _check_queue_actions(size: str, model: CMDP) -> None:
    """The queue's actions are its service x flow grids: an A in --size must match them."""
    values = _sizes(size, "S or S,A (integers)")
    if len(values) == 2 and values[1] != model.n_actions:
        raise CurloptError(f"the queue has A = {model.n_actions} actions (service x flow probabilities), not"
                           f" {values[1]}; give --size {values[0]} (or --param service=[...] flow=[...] for other"
                           " grids).")

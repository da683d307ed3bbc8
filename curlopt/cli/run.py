"""``curlopt run ENV``: one learning run, its summary, and its trace file."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from .app import app
from .common import load_model, merge_options, parse_params
from .run_episodic import run_episodic

if TYPE_CHECKING:
    from ..experiments.simulation.trace import Trace
    from ..models.cmdp import CMDP


@app.command("run")
def run_command(
    env: str = typer.Argument(..., help="Built-in environment name, e.g. queue or scheduler, or a model file (.json)."),
    agent: str = typer.Option("ps-curl", "--agent", "-a", help="Agent name (curlopt agents lists them)."),
    epochs: str = typer.Option(None, "--epochs", "-e", help="Epoch trigger: doubling (default; ends when a pair's epoch visits reach its earlier visits), linear (the paper's rule: per-pair thresholds that grow by one each time the pair ends an epoch), linear-global (epoch e ends at some pair's e-th visit) or linear-per-pair (threshold from the pair's previous-epoch visits)."),
    steps: int = typer.Option(100_000, "--steps", "-T", help="Horizon T (steps to play)."),
    seed: int = typer.Option(0, "--seed", "-s", help="Seed of the run."),
    backend: str = typer.Option(None, "--backend", "-b", help="Backend registry name (default auto: highs for LP-representable utilities, else cvxpy/pyomo)."),
    tightness: float = typer.Option(None, "--tightness", "-k", help="Tightness constant K_ε (default 1)."),
    horizon_lower_bound: float = typer.Option(None, "--horizon-lower-bound", help="Known lower bound T_l on the horizon."),
    prior: float = typer.Option(None, "--prior", help="Dirichlet prior α0 (ps-curl; default 1)."),
    option: list[str] = typer.Option(None, "--option", "-o", help="Other agent option key=value (repeatable; curlopt agents lists each agent's options and defaults)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Environment parameter key=value (repeatable)."),
    path: str = typer.Option("auto", "--path", help="Stepping path: auto, fast or generic."),
    out: str = typer.Option(None, "--out", help="Write the trace here (.json, or .json.gz to compress)."),
    checkpoints: int = typer.Option(100, "--checkpoints", help="About this many log-spaced checkpoints."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    progress: bool = typer.Option(None, "--progress/--no-progress", help="Progress bar (default: on for long runs)."),
) -> None:
    """Run an agent for T steps and print its summary (final f(λ^), R(T), g_m, C(T), epochs, fallbacks, time).

    `curlopt agents` lists the agents and every option they take, with its default. An --option that contradicts
    a named option (--epochs linear --option trigger=doubling) is refused. A run in which more than half of the
    epochs failed to solve ends with a warning and exit status 1 (the summary is printed and the trace written).
    """
    from ..agents import AGENTS, make_agent
    from ..envs import make
    from ..errors import CurloptError
    from ..experiments import run
    from ..experiments.outputs.solve_failures import failed_solves_warning
    from ..experiments.simulation.loop import MAX_CHECKPOINTS, MAX_STEPS
    from ..fileio import check_output_file, write_error
    from .logs import warn

    # Every argument is checked before any work, the output path included (created, and written to once).
    if not 2 <= checkpoints <= MAX_CHECKPOINTS:
        raise CurloptError(f"--checkpoints must be between 2 and {MAX_CHECKPOINTS:,}, got {checkpoints}.")
    if not 1 <= steps <= MAX_STEPS:
        raise CurloptError(f"--steps must be between 1 and {MAX_STEPS:.0e} (10^12), got {steps}.")
    if seed < 0:
        raise CurloptError(f"--seed must be an integer >= 0, got {seed}.")
    if out is not None:
        check_output_file(out)
    model = load_model(env, param)
    # Only the options the user gave: an agent refuses one it does not take, by name.
    named = {"trigger": ("--epochs", epochs), "backend": ("--backend", backend),
             "tightness_constant": ("--tightness", tightness),
             "horizon_lower_bound": ("--horizon-lower-bound", horizon_lower_bound), "prior": ("--prior", prior)}
    options = merge_options(named, parse_params(option, "--option"))
    if "seed" in options:
        value = options["seed"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CurloptError(f"--option seed must be an integer >= 0, got {value!r}.")
    run_episodic(model, env, agent, steps, seed, options, out, as_json)  # an episodic model's run ends the command there
    if getattr(AGENTS.get(agent), "needs_horizon", False):
        if "horizon" in options:
            raise CurloptError(f"{agent}'s horizon is --steps ({steps}); drop --option horizon={options['horizon']!r}"
                               " and set --steps instead.")
        options["horizon"] = steps
    learner = make_agent(agent, model, **options)
    trace = run(learner, make(model), steps, seed=seed, path=path, checkpoints=checkpoints, progress=progress, env_name=env)
    failure = None
    if out is not None:
        try:
            trace.save(out)
        except OSError as exc:  # e.g. the disk filled up during the run: the summary is still printed
            failure = write_error(out, exc)
    summary = trace.summary()
    unsolved = failed_solves_warning(trace)
    if as_json:
        typer.echo(json.dumps({"meta": trace.meta, "summary": summary, "trace": None if failure else out,
                               "warnings": [unsolved] if unsolved else []}, indent=2))
    else:
        _print_summary(trace, summary, model)
        if out is not None and failure is None:
            typer.echo(f"trace        {out}")
    if failure is not None:
        raise failure
    if unsolved is not None:  # the run is kept (its trace written), but it did not do what was asked
        warn(unsolved)
        raise typer.Exit(code=1)


def _print_summary(trace: Trace, summary: dict[str, Any], model: CMDP) -> None:
    meta = trace.meta
    typer.echo(f"run          {meta['agent']} ({meta['trigger']} epochs) on {meta['env']}, backend {meta.get('backend', '-')},"
               f" T={meta['steps']}, seed {meta['seed']}, {meta['path']} path")
    optimum = summary["optimum"]
    typer.echo(f"f(λ^(T))     {summary['objective']:.6g}" + (f"   (optimum f(λ*) = {optimum:.6g})" if optimum is not None else ""))
    typer.echo(f"R(T)         {summary['regret']:.6g}")
    for m, value in enumerate(summary["constraints"]):
        typer.echo(f"g_{m + 1}(ζ^(T))   {value:.6g}   ({model.constraints[m]!r})")
    typer.echo(f"C(T)         {summary['violation']:.6g}")
    typer.echo(f"epochs       {summary['epochs']} ({summary['fallback_epochs']} fallback, {summary['failed_epochs']} solver failures)")
    typer.echo(f"wall time    {summary['wall_time']:.2f} s")

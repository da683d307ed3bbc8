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
    backend: str = typer.Option(None, "--backend", "-b", help="Backend registry name (default auto: the registry's rule for the agent's program, by model size and structure; curlopt backends lists them)."),
    optimum_backend: str = typer.Option(None, "--optimum-backend", help="Backend of the reference optimum f(λ*) (default: the agent's backend; auto: the registry's rule for the model's occupancy program, e.g. mdp-columns on large sparse random models)."),
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

    Under the summary, one line each says what the numbers alone do not: a model whose constraints are infeasible
    (the regret is then against the optimum without them), epochs that played a fallback policy, and a run that
    ends violating a constraint (C(T) > 0).

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
    value = options.get("seed", 0)  # the agent's own seed, when --option gives one
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CurloptError(f"--option seed must be an integer >= 0, got {value!r}.")
    # an episodic model's run ends the command there
    run_episodic(model, env, agent, steps, seed, options, out, as_json, path=path, optimum_backend=optimum_backend,
                 progress=progress)
    if getattr(AGENTS.get(agent), "needs_horizon", False):
        if "horizon" in options:
            raise CurloptError(f"{agent}'s horizon is --steps ({steps}); drop --option horizon={options['horizon']!r}"
                               " and set --steps instead.")
        options["horizon"] = steps
    learner = make_agent(agent, model, **options)
    trace = run(learner, make(model), steps, seed=seed, path=path, checkpoints=checkpoints, progress=progress, env_name=env,
                optimum_backend=optimum_backend)
    failure = None
    if out is not None:
        try:
            trace.save(out)
        except OSError as exc:  # e.g. the disk filled up during the run: the summary is still printed
            failure = write_error(out, exc)
    unsolved = failed_solves_warning(trace)
    _show(trace, model, as_json, None if failure is not None else out, unsolved)
    if failure is not None:
        raise failure
    if unsolved is not None:  # the run is kept (its trace written), but it did not do what was asked
        warn(unsolved)
        raise typer.Exit(code=1)


def _show(trace: Trace, model: CMDP, as_json: bool, written: str | None, unsolved: str | None) -> None:
    """The run's summary on stdout (JSON, or lines), with what the numbers alone do not say (its findings)."""
    from ..experiments.simulation.findings import run_findings

    summary = trace.summary()
    findings = run_findings(trace)
    if as_json:
        typer.echo(json.dumps({"meta": trace.meta, "summary": summary, "trace": written,
                               "warnings": [unsolved] if unsolved else [],
                               "findings": {label: text for label, text in findings}}, indent=2))
        return
    _print_summary(trace, summary, model, findings)
    if written is not None:
        typer.echo(f"trace        {written}")


def _print_summary(trace: Trace, summary: dict[str, Any], model: CMDP, findings: list[tuple[str, str]]) -> None:
    meta = trace.meta
    typer.echo(f"run          {meta['agent']} ({meta['trigger']} epochs) on {meta['env']}, backend {meta.get('backend', '-')},"
               f" T={meta['steps']}, seed {meta['seed']}, {meta['path']} path")
    optimum = summary["optimum"]
    which = "optimum without the constraints, which are infeasible:" if summary["optimum_infeasible"] else "optimum"
    typer.echo(f"f(λ^(T))     {summary['objective']:.6g}" + (f"   ({which} f(λ*) = {optimum:.6g})" if optimum is not None else ""))
    typer.echo(f"R(T)         {summary['regret']:.6g}" + ("   (against the optimum without constraints)"
                                                          if summary["optimum_infeasible"] else ""))
    for m, value in enumerate(summary["constraints"]):
        typer.echo(f"g_{m + 1}(ζ^(T))   {value:.6g}   ({model.constraints[m]!r})")
    typer.echo(f"C(T)         {summary['violation']:.6g}")
    typer.echo(f"epochs       {summary['epochs']} ({summary['fallback_epochs']} fallback, {summary['failed_epochs']} solver failures)")
    for label, text in findings:  # fallback epochs, a violation: said, not only counted
        if label != "infeasible":  # said by the f(λ*) and R(T) lines, and the run's warning
            typer.echo(f"{label:<12} {text}")
    typer.echo(f"wall time    {summary['wall_time']:.2f} s")

"""``curlopt reproduce queue|scheduler``: the paper's experiments as a resumable sweep over seeds."""

from __future__ import annotations

import sys

import typer

from . import app


@app.command("reproduce")
def reproduce_command(
    experiment: str = typer.Argument(..., help="Experiment: queue or scheduler."),
    full: bool = typer.Option(False, "--full", help="Published scale: T=500,000; 50 seeds (queue) or 10 (scheduler)."),
    seeds: int = typer.Option(None, "--seeds", "-n", help="Number of seeds 0..N-1 (default: the scale's)."),
    steps: int = typer.Option(None, "--steps", "-T", help="Horizon T of every run (default: the scale's)."),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Parallel runs (default: the number of cores; 1 = in this process)."),
    executor: str = typer.Option("local", "--executor", help="local (process pool) or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)."),
    backend: str = typer.Option(None, "--backend", "-b", help="Backend for every agent (default: highs for queue, cvxpy for scheduler)."),
    out: str = typer.Option(None, "--out", "-o", help="Output folder (default results/<experiment>)."),
    algorithms: str = typer.Option(None, "--algorithms", "-a",
                                   help="Comma-separated subset of the algorithm keys, e.g. ps-curl-doubling,uc-curl-linear."),
    tightness: float = typer.Option(1.0, "--tightness", "-k", help="Tightness constant K_ε."),
    checkpoints: int = typer.Option(100, "--checkpoints", help="About this many log-spaced checkpoints per run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="Write the PNG figures (needs matplotlib)."),
) -> None:
    """Run the experiment's sweep (resumable), then write its run traces, summary tables and figures.

    Without --full the horizon and seeds are reduced so that the sweep takes a few minutes on two cores; the
    output states the scale. Re-running the same command skips the runs already finished in --out.
    """
    from ..experiments.sweep import reproduce

    keys = [key.strip() for key in algorithms.split(",") if key.strip()] if algorithms else None
    try:
        result = reproduce(
            experiment, full=full, seeds=seeds, steps=steps, jobs=jobs, executor=executor, address=address,
            backend=backend, out=out, algorithms=keys, tightness=tightness, checkpoints=checkpoints,
            progress=progress, figures=figures, echo=typer.echo,
        )
    except KeyboardInterrupt:
        typer.echo("interrupted: finished runs are saved; run the same command again to resume.", err=True)
        sys.exit(130)
    typer.echo("")
    typer.echo(result.summary_md.read_text(encoding="utf-8").split("\nCells are mean")[0].rstrip())
    typer.echo("")
    present = sum(1 for task in result.tasks if (result.out / task.relative_path).exists())
    typer.echo(f"runs         {result.out / 'runs'}/<setting>/<algorithm>/T<steps>-seed<seed>.json.gz  ({present} trace files)")
    typer.echo(f"summary      {result.summary_csv}  {result.summary_md}")
    if result.figures:
        typer.echo(f"figures      {result.figures[0].parent}/  ({len(result.figures)} PNG files)")
    if result.failed:
        typer.echo(f"error: {len(result.failed)} runs failed; the summary leaves them out. Run the command again to retry:",
                   err=True)
        for task, message in result.failed:
            typer.echo(f"  {task.key}: {message}", err=True)
        sys.exit(1)

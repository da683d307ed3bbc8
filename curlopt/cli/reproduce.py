"""``curlopt reproduce queue|scheduler``: the paper's experiments as presets of the study runner (resumable)."""

from __future__ import annotations

import typer

from .app import app


@app.command("reproduce")
def reproduce_command(
    experiment: str = typer.Argument(..., help="Experiment: queue or scheduler, or a preset file (a study file with a"
                                                " [reproduce] section, like curlopt/experiments/presets/queue.toml)."),
    profile: str = typer.Option("paper", "--profile",
                                help="paper: the options the paper's experiments state (UC-CURL radius=experiment, K_ε=1);"
                                     " analysis: the analysed algorithm (radius=analysis, K_ε=1)."),
    full: bool = typer.Option(False, "--full", help="Published scale: T=500,000; 50 seeds (queue) or 10 (scheduler)."),
    seeds: int = typer.Option(None, "--seeds", "-n", help="Number of seeds 0..N-1 (default: the scale's)."),
    steps: int = typer.Option(None, "--steps", "-T", help="Horizon T of every run (default: the scale's)."),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Parallel runs (default: the number of cores; 1 = in this process; more than the cores is reduced to them unless --force-jobs)."),
    force_jobs: bool = typer.Option(False, "--force-jobs", help="Run --jobs workers even when that is more than the cores."),
    executor: str = typer.Option("local", "--executor", help="local (process pool) or ray."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)."),
    backend: str = typer.Option(None, "--backend", "-b", help="One backend for every agent (default: the CURL agents on highs for queue, cvxpy for scheduler; UCRL-CMDP on its own default, highs-box-columns)."),
    out: str = typer.Option(None, "--out", "-o",
                            help="Output folder (default results/<experiment>, results/<experiment>-<profile> for a"
                                 " profile other than paper)."),
    algorithms: str = typer.Option(None, "--algorithms", "-a",
                                   help="Comma-separated subset of the algorithm keys, e.g. ps-curl-doubling,uc-curl-linear."),
    tightness: float = typer.Option(None, "--tightness", "-k", help="Tightness constant K_ε (default: the profile's, 1)."),
    checkpoints: int = typer.Option(100, "--checkpoints", help="About this many log-spaced checkpoints per run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="Write the figures (needs matplotlib)."),
    max_runs: int = typer.Option(None, "--max-runs", min=1, help="Allow up to this many runs (default 5,000); more are refused before anything runs."),
    wait: bool = typer.Option(False, "--wait", help="When another sweep is writing the output folder, wait for it to finish instead of stopping."),
) -> None:
    """Run the experiment (resumable) through the study runner, then write its run traces, summary tables and figures.

    Without --full the horizon and seeds are reduced so that the sweep takes a few minutes on two cores; the
    output states the scale, the profile and every algorithm's options (also written to study.json). Re-running
    the same command skips the runs already finished in --out.
    """
    from ..experiments.presets import reproduce
    from ..fileio import check_output_dir
    from .common import exit_interrupted, sigterm_interrupts
    from .sweep import forced_jobs, report

    if out is not None:  # before any run: an empty, unwritable or misnamed --out stops here, in one line
        check_output_dir(out)
    keys = [key.strip() for key in algorithms.split(",") if key.strip()] if algorithms else None
    try:
        with sigterm_interrupts(), forced_jobs(force_jobs):
            result = reproduce(
                experiment, profile=profile, full=full, seeds=seeds, steps=steps, jobs=jobs, executor=executor,
                address=address, backend=backend, out=out, algorithms=keys, tightness=tightness,
                checkpoints=checkpoints, progress=progress, figures=figures, echo=typer.echo, max_runs=max_runs,
                wait=wait,
            )
    except KeyboardInterrupt as exc:  # Ctrl-C (exit 130) or SIGTERM (exit 143)
        exit_interrupted(exc)
    report(result)

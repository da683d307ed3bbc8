"""``curlopt sweep STUDY.toml``: a study file's grid of configurations × seeds, resumable."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from .app import app

if TYPE_CHECKING:
    from ..experiments.runner import StudyResult


@app.command("sweep")
def sweep_command(
    study: str = typer.Argument(..., help="The study file (TOML)."),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Parallel runs (default: the study's, else the number of cores; 1 = in this process; more than the cores is reduced to them unless --force-jobs)."),
    force_jobs: bool = typer.Option(False, "--force-jobs", help="Run --jobs workers even when that is more than the cores."),
    executor: str = typer.Option(None, "--executor", help="local (process pool) or ray (default: the study's, else local)."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (default: the study's, else start a local Ray)."),
    out: str = typer.Option(None, "--out", "-o", help="Output folder (default: the study's out, else results/studies/<name>)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="Write the figures (needs matplotlib)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the study and print its plan; run and write nothing."),
    max_runs: int = typer.Option(None, "--max-runs", min=1, help="Allow a study of up to this many runs (default: the study's max_runs, else 5,000); a larger one is refused before anything is expanded."),
    wait: bool = typer.Option(False, "--wait", help="When another sweep is writing the output folder, wait for it to finish instead of stopping."),
) -> None:
    """Run a study file (resumable): every configuration of its grid × its seeds, then the summary and figures.

    The whole file is checked first (keys, types, agents, options, and each configuration's agent built once), so
    a mistake stops it with one line naming the key, before any run. Each configuration has its own folder,
    runs/<setting>/<algorithm>/<configuration>/, so changing an option never overwrites earlier runs; re-running
    the same command skips the runs already finished.

    The run count (configurations x seeds) is checked before the grid is expanded: above the limit (--max-runs,
    or the study file's max_runs) the study stops with its counts. One sweep at a time writes an output folder: it holds
    study.lock there while it runs, and a second sweep on the folder stops with one line naming the holder (pid,
    host, start time), or waits with --wait. A run in which most epochs failed to solve is kept, warned about, and
    makes the command exit 1.
    """
    from ..experiments.runner import run_study
    from ..fileio import WriteError, check_output_dir
    from .common import exit_interrupted, sigterm_interrupts

    if out is not None:  # before any run: an empty, unwritable or misnamed --out stops here, in one line
        if not out.strip():
            raise WriteError("--out must be a folder name, got an empty string.")
        if not dry_run:
            check_output_dir(out)
    try:
        with sigterm_interrupts(), forced_jobs(force_jobs):
            result = run_study(study, jobs=jobs, executor=executor, address=address, out=out, progress=progress,
                               figures=figures, dry_run=dry_run, echo=typer.echo, max_runs=max_runs, wait=wait)
    except KeyboardInterrupt as exc:  # Ctrl-C (exit 130) or SIGTERM (exit 143)
        exit_interrupted(exc)
    if not dry_run:
        report(result)


@contextmanager
def forced_jobs(force: bool) -> Iterator[None]:
    """With ``force``, let the local executor start more workers than cores (``CURLOPT_FORCE_JOBS=1`` meanwhile)."""
    from ..experiments.executors import FORCE_JOBS_VARIABLE

    if not force:
        yield
        return
    previous = os.environ.get(FORCE_JOBS_VARIABLE)
    os.environ[FORCE_JOBS_VARIABLE] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(FORCE_JOBS_VARIABLE, None)
        else:
            os.environ[FORCE_JOBS_VARIABLE] = previous


#: the mostly unsolved runs listed one per line (the count of all of them follows)
_LISTED = 10


def report(result: StudyResult) -> None:
    """The summary tables and where the files are; the failed runs and those mostly unsolved (exit 1) if any."""
    typer.echo("")
    if result.summary_md is not None:
        text = result.summary_md.read_text(encoding="utf-8")
        typer.echo(text.split("\nHow to read the tables:")[0].rstrip())  # the tables and notes, not the legend
        typer.echo("")
    present = sum(1 for task in result.tasks if (result.out / task.relative_path).exists())
    run_name = "K<episodes>" if result.study is not None and result.study.episodic else "T<steps>"
    typer.echo(f"runs         {result.out / 'runs'}/<setting>/<algorithm>/<configuration>/{run_name}-seed<seed>.json.gz"
               f"  ({present} trace files)")
    typer.echo(f"study        {result.out / 'study.json'}")
    if result.summary_csv is not None:
        typer.echo(f"summary      {result.summary_csv}  {result.summary_md}")
    if result.figures:
        typer.echo(f"figures      {result.figures[0].parent}/  ({len(result.figures)} files)")
    if getattr(result, "report", None):
        typer.echo(f"report       {result.report}")
    from .logs import warn

    for task, message in result.unsolved[:_LISTED]:
        warn(f"run {task.key}: {message}")
    if result.failed:
        typer.echo(f"error: {len(result.failed)} runs failed; the summary leaves them out. Run the command again to retry:",
                   err=True)
        for task, message in result.failed:
            typer.echo(f"  {task.key}: {message}", err=True)
    if result.unsolved:
        more = len(result.unsolved) - _LISTED
        warn(f"{len(result.unsolved)} of {len(result.tasks)} runs had most epochs unsolved"
             + (f" (the first {_LISTED} are listed above)" if more > 0 else " (listed above)")
             + "; the summary keeps them")
    if result.failed or result.unsolved:
        sys.exit(1)

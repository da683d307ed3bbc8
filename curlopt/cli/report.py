"""``curlopt report RESULTS_DIR``: a finished study's HTML report, from its saved runs (nothing is run)."""

from __future__ import annotations

import typer

from .app import app


@app.command("report")
def report_command(
    results: str = typer.Argument(..., help="A study output folder (with study.json and runs/), e.g. results/queue."),
    out: str = typer.Option(None, "--out", "-o", help="The HTML file to write (default RESULTS_DIR/report.html)."),
    figures: bool = typer.Option(True, "--figures/--no-figures",
                                 help="Embed the figures (drawn for the report when figures/ has none; needs"
                                      " matplotlib)."),
    summary: bool = typer.Option(True, "--summary/--no-summary", help="Print the summary tables in the terminal."),
) -> None:
    """Render a finished reproduction or study as one self-contained HTML page, from its saved runs.

    The page has the configuration (study.json), the versions, the summary tables with intervals, every figure,
    the epochs by policy source and solver status with solve times, the fallback and failed epochs, and the exact
    constraint value of every epoch's policy. Figures are embedded; the page loads nothing from the network.
    """
    from pathlib import Path

    from ..experiments.outputs.report import load_study_output, print_summary, render_report
    from ..experiments.outputs.summary import study_rows
    from ..fileio import atomic_write_text, check_output_file, write_error
    from .logs import warn

    output = load_study_output(results)
    target = Path(out) if out is not None else output.folder / "report.html"
    if out is not None:
        check_output_file(out)
    rows = study_rows(output.groups)
    page = render_report(output, rows, figures=figures)
    try:
        atomic_write_text(target, page)
    except OSError as exc:
        raise write_error(target, exc) from None
    if summary:
        print_summary(output, rows)
    typer.echo(f"report       {target}")
    for line in output.stale:  # tables of some runs beside figures of others: said, not only in the page
        warn(line)

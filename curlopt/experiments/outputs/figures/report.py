"""The figures of a study's HTML report: the ones under ``figures/``, and the exact constraint values per epoch.

* :func:`study_figures`: the PNG files of a study output's ``figures/`` folder
  as bytes, each with a caption saying when it was drawn from another
  ``summary.csv`` than the one beside it (its ``curlopt-summary-sha256`` text
  chunk, see :func:`png_text`); when the folder has none, the figures are drawn
  with :func:`curlopt.experiments.outputs.figures.plots.plot_study` into a temporary folder
  (matplotlib present) or left out with a note (matplotlib missing).
* :func:`exact_constraint_figure`: for one setting, the largest exact
  constraint value ``max_m g_m`` of every epoch's policy on the true kernel
  against the epoch's start, per configuration, with the line g = 0 (drawn
  for the report only; the traces record the values as ``exact_constraints``).

matplotlib is imported only when a figure is drawn (through
:mod:`curlopt.experiments.outputs.figures.style`).
"""

from __future__ import annotations

import hashlib
import io
import math
import struct
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ....errors import CurloptError
from ..summary import percent
from .dots import Points, scatter_dots
from .style import (
    DPI,
    SUMMARY_HASH_KEY,
    ZERO_STYLE,
    dedupe_legend,
    drop_layout_renderer,
    load_matplotlib,
    note,
    outside_legend,
    plural,
    release,
)
from .titles import fit_axes_titles, fit_suptitle
from .view import setting_view

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    from matplotlib.axes import Axes

    from ..runs import ConfigurationRuns
    from .view import Curves

__all__ = ["ReportFigure", "png_text", "png_bytes", "study_figures", "exact_constraint_figure",
           "exact_constraint_png", "PNG_SIGNATURE"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class ReportFigure:
    """One PNG of the report: its name, bytes and a caption (empty when there is nothing to say).

    ``saved``: the PNG is a file of the study's ``figures/`` folder, named ``name``; False for a figure drawn for
    the report only (the exact constraint values), whose name is then not a file's and is not shown as one.
    """

    name: str
    data: bytes
    caption: str = ""
    saved: bool = True


def png_text(data: bytes) -> dict[str, str]:
    """The text chunks (``tEXt``, ``zTXt``, ``iTXt``) of a PNG, read with the standard library.

    Raises
    ------
    CurloptError
        When ``data`` is not a PNG.
    """
    if not data.startswith(PNG_SIGNATURE):
        raise CurloptError("not a PNG file (its signature is missing).")
    texts: dict[str, str] = {}
    position = len(PNG_SIGNATURE)
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position: position + 8])
        body = data[position + 8: position + 8 + length]
        position += 12 + length
        try:
            if kind == b"tEXt":
                key, _, value = body.partition(b"\0")
                texts[key.decode("latin-1")] = value.decode("latin-1")
            elif kind == b"zTXt":
                key, _, rest = body.partition(b"\0")
                texts[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
            elif kind == b"iTXt":
                key, _, rest = body.partition(b"\0")
                compressed, rest = rest[0], rest[2:]
                _language, _, rest = rest.partition(b"\0")
                _translated, _, value = rest.partition(b"\0")
                texts[key.decode("latin-1")] = (zlib.decompress(value) if compressed else value).decode("utf-8")
        except (zlib.error, UnicodeDecodeError, IndexError):  # a damaged chunk is skipped, not fatal
            continue
        if kind == b"IEND":
            break
    return texts


def png_bytes(figure: matplotlib.figure.Figure) -> bytes:
    """A figure rendered to PNG in memory (the resolution of the study's figures)."""
    buffer = io.BytesIO()
    drop_layout_renderer(figure)
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _caption(data: bytes, summary_hash: str | None) -> str:
    try:
        recorded = png_text(data).get(SUMMARY_HASH_KEY)
    except CurloptError:
        return "not a PNG file"
    if recorded is None or summary_hash is None or recorded == summary_hash:
        return ""
    return "drawn from another summary.csv than the one in this folder: it may be out of date"


def study_figures(folder: Path, groups: Sequence[ConfigurationRuns],
                  runs_summary: str | None = None) -> tuple[list[ReportFigure], list[str]]:
    """The figures of a study output folder and notes on what was done to get them (see the module docstring).

    ``runs_summary``: the SHA-256 of the summary the runs found now give (:func:`~..summary.study_csv_text`).
    With it, a figure drawn from another summary (a run file removed or added since the figures were drawn, so a
    figure of 5 seeds beside tables of 4) is not shown: every figure is drawn again from the runs found, and a
    note says so. Without it, the figures are compared with the ``summary.csv`` beside them and captioned when
    they differ.
    """
    folder = Path(folder)
    summary_hash = runs_summary or _file_sha256(folder / "summary.csv")
    files = sorted((folder / "figures").glob("*.png")) if (folder / "figures").is_dir() else []
    found: list[ReportFigure] = []
    for path in files:
        try:
            data = path.read_bytes()
        except OSError as exc:
            return found, [f"could not read {path} ({exc.strerror or exc})"]
        found.append(ReportFigure(path.name, data, _caption(data, summary_hash)))
    stale = runs_summary is not None and any(figure.caption for figure in found)
    if found and not stale:
        return found, []
    try:
        load_matplotlib()
    except CurloptError:
        if stale:
            return found, ["figures/ was drawn from other runs than those found (a run file removed or added since):"
                           " matplotlib is not installed to draw them again, so they may not match the tables."]
        return [], ["figures/ has no figures and matplotlib is not installed (pip install 'curlopt[plot]'):"
                    " the report has the tables only."]
    from .plots import plot_study

    with tempfile.TemporaryDirectory(prefix="curlopt-report-") as scratch:
        paths = plot_study(groups, scratch)
        drawn = [ReportFigure(path.name, path.read_bytes()) for path in paths]
    if stale:
        return drawn, ["figures/ was drawn from other runs than those found (a run file removed or added since):"
                       " the figures here were drawn again from the runs found, for this report only; run the"
                       " study again to rewrite figures/ and the summary files."]
    return drawn, ["figures/ has no figures: they were drawn from the runs for this report only."]


# -- exact constraint values per epoch -------------------------------------------------------------------------------
def _epoch_maxima(group: ConfigurationRuns) -> tuple[np.ndarray, np.ndarray, int]:
    """Start (at least 1) and max_m exact g_m of every epoch of every seed; the count of epochs without one."""
    runs = group.aggregated()
    known = ~np.isnan(runs.epoch_exact_max)
    starts = np.maximum(runs.epoch_start[known], 1).astype(float)
    return starts, runs.epoch_exact_max[known], int(np.sum(~known))


def _dot_points(group: ConfigurationRuns, finite: np.ndarray) -> Points:
    """The dots of :func:`_epoch_maxima` where ``finite`` (a mask over its values): ``(start, max_m g_m)``, made
    from the aggregate's arrays when drawn."""
    runs = group.aggregated()
    keep = ~np.isnan(runs.epoch_exact_max)
    keep[keep] = finite
    chosen: slice | np.ndarray = slice(None) if keep.all() else keep

    def points() -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(runs.epoch_start[chosen], 1).astype(float), runs.epoch_exact_max[chosen]

    return points


def _binned_median(starts: np.ndarray, values: np.ndarray) -> tuple[list[float], list[float]]:
    """The median in 20 log-spaced bins of the epoch start (bins without epochs left out)."""
    edges = np.geomspace(1.0, max(float(np.max(starts)), 2.0) * 1.0001, 21)
    centre, median = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (starts >= lo) & (starts < hi)
        if np.any(inside):
            centre.append(math.sqrt(lo * hi))
            median.append(float(np.median(values[inside])))
    return centre, median


def _exact_panel(ax: Axes, title: str, curves: Sequence[Curves], groups: Sequence[ConfigurationRuns]) -> bool:
    """One panel of configurations; False when none of them has an exact value."""
    missing, drawn = 0, False
    for c in curves:
        starts, values, lost = _epoch_maxima(groups[c.position])
        missing += lost
        if not values.size:
            continue
        drawn = True
        finite = np.isfinite(values)
        # the summary table's share (per run, then the mean over seeds), not the share of the pooled epochs
        share = percent(groups[c.position].aggregated().violating_shares()[0])
        scatter_dots(ax, _dot_points(groups[c.position], finite), s=5, color=c.color, alpha=0.25, lw=0, zorder=2)
        centre, median = _binned_median(starts[finite], values[finite]) if np.any(finite) else ([], [])
        ax.plot(centre, median, color=c.color, ls=c.linestyle or "-", marker=c.marker, ms=4, lw=1.4, zorder=3,
                label=f"{c.label} ({share} of epochs > 0)")
    ax.axhline(0.0, **ZERO_STYLE, zorder=4, label="g = 0 (every constraint holds below)")
    ax.set_xscale("log")
    ax.set_xlabel("epoch start t_e (steps)")
    ax.set_ylabel("max_m g_m of the epoch's policy (exact)")
    ax.set_title((f"{title}: " if title else "") + "largest constraint value of each epoch's policy on the true"
                 " kernel (dots: every epoch of every seed; line: median per time bin)", fontsize=8.5)
    ax.grid(True, which="major", alpha=0.25)
    if missing:
        note(ax, [f"{plural(missing, 'epoch')} without an exact evaluation not shown"])
    handles, labels = dedupe_legend(ax)
    outside_legend(ax, handles, labels)
    return drawn


def exact_constraint_figure(groups: Sequence[ConfigurationRuns]) -> matplotlib.figure.Figure | None:
    """The exact constraint values per epoch of one setting, not saved (None without constraints or values)."""
    Figure, Canvas = load_matplotlib()
    view = setting_view(groups)
    if not view.n_constraints:
        return None
    rows = len(view.panels)
    fig = Figure(figsize=(11, max(4.4, 3.6 * rows + 0.8)), layout="constrained")
    drawn = False
    for row, (title, curves) in enumerate(view.panels):
        drawn |= _exact_panel(fig.add_subplot(rows, 1, row + 1), title, curves, view.groups)
    if not drawn:
        return None
    Canvas(fig)
    fit_suptitle(fig, f"{view.head} — exact constraint value of every epoch's policy ({view.seeds_text})", 10)
    fit_axes_titles(fig)
    return fig


def exact_constraint_png(groups: Sequence[ConfigurationRuns]) -> bytes | None:
    """:func:`exact_constraint_figure` as PNG bytes (None when there is nothing to draw)."""
    figure = exact_constraint_figure(groups)
    if figure is None:
        return None
    data = png_bytes(figure)
    release(figure)
    return data

"""What every figure shares: colours, line styles, markers, text helpers, small axes helpers and saving.

matplotlib is imported only inside the functions that need it
(:func:`load_matplotlib`, :func:`plain_log_labels`); importing this module
does not load it. :func:`save_png` renders a figure to PNG in memory and
writes it with the toolkit's atomic writer, so a kill leaves the old file or
the new one, never a partial PNG.
"""

from __future__ import annotations

import gc
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ....errors import CurloptError
from ....fileio import atomic_write_bytes
from ..heap import give_back_memory
from ..summary import LOCATION_DIGITS, clean_label, significant

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from matplotlib.figure import Figure

__all__ = ["DPI", "SUMMARY_HASH_KEY", "PALETTE", "LINESTYLES", "MARKERS", "OPTIMUM_STYLE", "ZERO_STYLE", "SLOPE_STYLE",
           "NOTE_STYLE", "load_matplotlib", "save_png", "clean", "plural", "count_text", "outside_legend", "seed_text", "shorten",
           "t_text", "note", "plain_log_labels", "dedupe_legend", "agg_renderer", "drop_layout_renderer"]

#: resolution of the PNG files
DPI = 150
#: the PNG text key of every study figure's record of its summary: the SHA-256 of the ``summary.csv`` bytes
SUMMARY_HASH_KEY = "curlopt-summary-sha256"
# tab10 without its grey (grey and black are kept for reference lines)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
LINESTYLES: tuple[Any, ...] = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (2, 2)), (0, (8, 2, 1, 2, 1, 2)),
                               (0, (3, 1, 3, 4)), (0, (10, 3)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
OPTIMUM_STYLE: dict[str, Any] = dict(color="black", ls=(0, (6, 3)), lw=1.3)
ZERO_STYLE: dict[str, Any] = dict(color="black", ls="-", lw=1.0)
SLOPE_STYLE: dict[str, Any] = dict(color="0.45", ls=":", lw=1.0)
NOTE_STYLE: dict[str, Any] = dict(fontsize=6.5, color="0.15", va="bottom", ha="left",
                  bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="0.7", alpha=0.85, lw=0.5))


def load_matplotlib() -> tuple[type[Figure], type[FigureCanvasAgg]]:
    """``(Figure, FigureCanvasAgg)``: no pyplot, no change of the process-wide backend.

    Raises
    ------
    CurloptError
        If matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CurloptError("figures need matplotlib: pip install 'curlopt[plot]'.") from None
    return Figure, FigureCanvasAgg


def agg_renderer(fig: Figure) -> RendererAgg:
    """The renderer of a figure on the Agg canvas (every figure here is: :func:`load_matplotlib`'s canvas)."""
    # matplotlib types ``fig.canvas`` as the base canvas, which has no ``get_renderer``
    return cast("FigureCanvasAgg", fig.canvas).get_renderer()


def save_png(figure: Figure, path: str | os.PathLike, metadata: dict[str, str] | None = None) -> Path:
    """Render ``figure`` to PNG and write it atomically (its folder is created if needed); return the path.

    ``metadata`` is written into the PNG's text chunks (e.g. ``{"curlopt-summary-sha256": ...}``).
    """
    path = Path(path)
    buffer = io.BytesIO()
    drop_layout_renderer(figure)
    figure.savefig(buffer, format="png", dpi=DPI, metadata=dict(metadata) if metadata else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_bytes(path, buffer.getvalue())


def drop_layout_renderer(figure: Figure) -> None:
    """Let go of the renderer a figure was laid out with (at the figure's dpi) before it is saved at :data:`DPI`.

    Measuring the titles to wrap them draws nothing but takes the canvas's renderer, whose pixel buffer is the
    whole figure at its own dpi (some 15 MiB for the overview of many panels), and every text measured keeps a
    reference to it. Saving at another dpi makes a second renderer; without this both buffers are alive while
    the figure is drawn (the overview of 5,000 runs peaked 12 MiB higher). Only the cached renderer goes: what
    was measured with it (the wrapped titles) stays, and the PNG is the same.
    """
    from matplotlib.text import Text

    canvas = vars(figure.canvas)
    canvas.pop("renderer", None)
    canvas.pop("_lastKey", None)  # the cache's key: without it the next draw makes a renderer anew
    for text in figure.findobj(Text):
        if vars(text).get("_renderer") is not None:
            # matplotlib's cache of the last renderer; its own pickling drops it the same way
            text._renderer = None  # type: ignore[attr-defined]
    # no gc.collect() here: those were the renderer's only references, so it is freed at once (the 5,000-run
    # resummary peaked at 290 MiB with or without a collection, which cost some 60 ms a figure)
    give_back_memory()  # the buffer's pages go back to the system before the saving renderer takes its own


def release(figure: Figure) -> None:
    """Let a figure that was saved give its memory back now, not when Python's cycle collector next runs.

    A figure drawn without pyplot has no ``close``: its artists and it refer to each other, so only the cycle
    collector frees them, and until it runs every figure drawn so far stays in memory (with its pixel buffer,
    tens of megabytes for a figure of many panels). Clearing the figure drops its artists, deleting the Agg
    canvas's cached renderer drops the buffer, and one collection frees the rest. The figure is empty afterwards.
    """
    figure.clear()
    vars(figure.canvas).pop("renderer", None)  # the Agg canvas keeps its last renderer (the pixel buffer)
    gc.collect()
    give_back_memory()


# -- text ------------------------------------------------------------------------------------------------------------
def clean(text: str) -> str:
    """Display text without references to sections of the external specification (see ``clean_label``)."""
    return clean_label(text)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def count_text(count: float) -> str:
    """A count (or a mean of counts) as the summary table writes it (:func:`~..summary.significant`, 3 significant
    digits): ``314``, ``1370``, ``496`` for a mean of 496.5 in the table and in the figure alike."""
    return significant(float(count), LOCATION_DIGITS)


def seed_text(counts: Sequence[int]) -> str:
    """``3 seeds``, ``1 seed``, ``2–5 seeds`` (the distinct seed counts of some configurations)."""
    distinct = sorted(set(counts))
    if not distinct:
        return "no seeds"
    if len(distinct) == 1:
        return f"{distinct[0]} seed" + ("" if distinct[0] == 1 else "s")
    return f"{distinct[0]}–{distinct[-1]} seeds"


def shorten(text: str, limit: int = 64) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def t_text(t: float) -> str:
    """A time step for a note: ``1,000``, ``2.5e+06``."""
    return f"{t:,.0f}" if t < 1e6 else f"{t:.3g}"


# -- axes ------------------------------------------------------------------------------------------------------------
def note(ax: Axes, lines: list[str], width: int = 80) -> None:
    """A small boxed note in the lower left corner of a panel (wrapped; not part of the layout)."""
    if lines:
        import textwrap

        text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in lines)
        box = ax.text(0.015, 0.02, text, transform=ax.transAxes, gid="note", zorder=10, **NOTE_STYLE)
        box.set_in_layout(False)


def plain_log_labels(axis: Axis) -> None:
    """Tick labels of a log axis as plain numbers (``0.3``, ``2``), where matplotlib would write ``3×10^-1``."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Plain(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1.2, 0.5)))


def outside_legend(ax: Axes, handles: Sequence[Any], labels: Sequence[str]) -> None:
    """The legend to the right of the axes, outside the plotting area: inside it (``loc="best"``) a legend hides
    the lines it has to avoid once they fill the panel (the epochs figure's primal-dual line from t ≈ 10 to 3,000)."""
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.85)


def dedupe_legend(ax: Axes) -> tuple[list[Any], list[str]]:
    """The legend handles and labels of ``ax``, each label once (its first handle)."""
    seen: dict[str, Any] = {}
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        seen.setdefault(label, handle)
    return list(seen.values()), list(seen)

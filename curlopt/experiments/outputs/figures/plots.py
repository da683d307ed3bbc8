"""Figures of a study: the regret–violation frontier, running averages against time, and the epochs' solves.

:func:`plot_study` writes, for every setting (model) of a study, under the
directory it is given:

``<setting>-frontier.png``
    The headline picture: one point per configuration at (mean R(T), mean C(T))
    over its seeds, with bars spanning the 95% bootstrap interval of each mean
    (the interval of ``summary.csv``); with two or three seeds that interval is
    the range of the seeds, and the bars are dotted and called so in the
    legend. Colour and marker tell the algorithm (legend); each point is
    labelled with its varied options next to it when the labels fit clear of
    each other and of the markers, otherwise with a number that the legend
    explains (clusters of near-equal configurations are common). A filled marker
    means C(T) = 0 on every seed, a hollow one C(T) > 0 on at least one. R is on
    a log axis when every mean and interval end is positive (the axis label
    says which), C on a linear axis that shows 0; when every C(T) is 0 the
    figure is lower and the points sit on the middle line C = 0.
``<setting>-objective.png``
    The running average objective f(λ^(t)) against t (log axis), with the
    optimum f(λ*) as a dashed black line.
``<setting>-regret.png``
    The regret R(t) = f(λ*) − f(λ^(t)) on log-log axes, with grey dotted
    reference lines c/√t for c = 10^k (k integer: fixed lines of slope −1/2 that
    do not depend on the data; read the slope of a curve against them).
``<setting>-constraints.png``
    One row of panels per constraint g_m(ζ^(t)), with the line g = 0 (solid
    black; the constraint holds below it). A setting without constraints gets
    ``<setting>-costs.png`` with the average costs ζ_i(t) instead.
``<setting>-overview.png``
    All of the above curve panels in one figure (no empty panels).
``<setting>-epochs.png``
    Left: the solver's time per epoch against the epoch's start t_e (log-log),
    every epoch of every seed as a faint dot and the median per time bin as a
    line; epochs whose solver status was not ``optimal`` are marked with black
    crosses. Right: the share of epochs by where the policy came from (tight
    program, fallback, kept previous, uniform initial, update rule), one
    stacked bar per configuration (shares per run, averaged over seeds), with
    the mean number of epochs per run as a whole number.

Every figure's title is wrapped to the figure's width and every panel's title
to the panel's width (:mod:`.titles`).

Curves: every line is the mean over seeds; the band around it is exactly the
mean ± one sample standard deviation (ddof = 1) over seeds, point by point (no
band with one seed). The checkpoint times are the same for every seed of a
configuration; a checkpoint where some seed's value is not finite is left out.

What the curve panels do not hide:

* configurations are told apart by colour, line style and markers (markers of
  different configurations sit at interleaved times, so coinciding curves stay
  visible); curves that coincide (largest difference below
  :data:`COINCIDE_TOLERANCE` of the axis range) are named in a note in the
  panel, and so are curves that stay within :data:`NEAR_TOLERANCE` of the axis
  range from :func:`settle_time` on (nearly identical at the figure's resolution);
* a configuration with mean C(T) > 0 has hollow markers and its C(T) in its
  legend entry;
* the y range is set by the curves after the first :func:`settle_time` steps
  (the first running averages swing widely); when a mean or band leaves the
  range, a note says so; on a log axis, where a band's lower edge is ≤ 0 the
  band is drawn to the bottom of the axis and a note says so; points where the
  mean regret is ≤ 0 cannot be drawn on the log axis, and a note says so.

Many configurations: with at most :data:`SINGLE_PANEL_MAX` configurations a
setting's curves share one panel per quantity. With more, they are split into
small multiples: one column of panels per algorithm, an algorithm with more
than :data:`MAX_LINES` configurations split into columns of at most that many
(small consecutive groups of different algorithms share a column). The
panels of a row share their y range and axis scale. The frontier and the
epochs' bars always show every configuration.

matplotlib is imported only when a figure is drawn, and only through
:class:`matplotlib.figure.Figure` with the Agg canvas: no pyplot, no change of
the process-wide backend (``pip install 'curlopt[plot]'``). Every PNG is
rendered in memory and written atomically by :func:`curlopt.fileio.atomic_write_bytes`
(a temporary file in the same folder, then a rename). The builders
(:func:`frontier_figure`, :func:`curve_figure`, :func:`epochs_figure`,
:func:`setting_figures`) return the :class:`~matplotlib.figure.Figure` without
saving it.

The figures are built in the modules of :mod:`curlopt.experiments.outputs.figures` (one each: shared style,
curves stacked over seeds, one curve panel, the curve figures, the frontier and its labels, the epochs); this
module ties them together, and the package is their one public door.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .curves import curve_figure
from .epochs import epochs_figure
from .frontier import frontier_figure
from .style import load_matplotlib, release, save_png
from .view import setting_view

if TYPE_CHECKING:  # pragma: no cover
    from ..runs import ConfigurationRuns

__all__ = ["plot_study", "setting_figures"]


def setting_figures(groups: Sequence[ConfigurationRuns], frontier: bool = True,
                    epochs: bool = True) -> Iterator[tuple[str, Any]]:
    """``(file name, Figure)`` for every figure of one setting, built one at a time (see the module docstring)."""
    view = setting_view(groups)
    if frontier:
        yield f"{view.name}-frontier.png", frontier_figure(view.groups)
    for kind in ("objective", "regret"):
        yield f"{view.name}-{kind}.png", curve_figure(view, kind)
    side = curve_figure(view, "constraints")
    if side is not None:
        yield f"{view.name}-{'constraints' if view.n_constraints else 'costs'}.png", side
    yield f"{view.name}-overview.png", curve_figure(view, "overview")
    if epochs:
        figure = epochs_figure(view)
        if figure is not None:
            yield f"{view.name}-epochs.png", figure


def _by_setting(groups: Sequence[ConfigurationRuns]) -> list[list[ConfigurationRuns]]:
    ordered: dict[str, list] = {}
    for group in groups:
        if group is None or not group.traces:
            continue
        ordered.setdefault(getattr(group.setting, "name", str(group.setting)), []).append(group)
    return list(ordered.values())


def plot_study(groups: Sequence[ConfigurationRuns], out_dir: str | Path,
               metadata: dict[str, str] | None = None) -> list[Path]:
    """Write every figure of a study under ``out_dir``; return the paths (see the module docstring).

    Configurations of different settings never share a figure. Configurations
    without finished runs are left out. ``metadata`` (text keys and values) is
    written into every PNG's text chunks: the study runner records there the
    SHA-256 of the ``summary.csv`` the figures were drawn with
    (``curlopt-summary-sha256``), so a copied figure can be traced to its summary.

    Raises
    ------
    CurloptError
        If matplotlib is not installed.
    OSError
        If a file cannot be written (no partial file is left behind).
    """
    load_matplotlib()
    out_dir = Path(out_dir)
    paths: list[Path] = []
    for members in _by_setting(groups):
        for name, figure in setting_figures(members):  # drawn, written and let go one at a time
            paths.append(save_png(figure, out_dir / name, metadata))
            release(figure)
    return paths

"""The figures' memory savings draw the same pictures: dots whose positions are made when drawn, and the layout
renderer let go before saving. Each is compared with the plain matplotlib way, PNG byte for byte."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from curlopt.experiments.outputs.figures.dots import scatter_dots  # noqa: E402
from curlopt.experiments.outputs.figures.report import png_bytes  # noqa: E402
from curlopt.experiments.outputs.figures.style import DPI, load_matplotlib  # noqa: E402
from curlopt.experiments.outputs.figures.titles import fit_axes_titles, fit_suptitle  # noqa: E402


def _points(n: int = 20_000, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    starts = np.sort(rng.integers(0, 50_000, n)).astype(np.int32)
    times = rng.lognormal(-7.0, 1.0, n)
    return starts, times


def _figure(dots_on_demand: bool) -> bytes:
    Figure, Canvas = load_matplotlib()
    starts, times = _points()
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for colour, part in (("C0", slice(0, 12_000)), ("C1", slice(12_000, None))):
        def points(part: slice = part) -> tuple[np.ndarray, np.ndarray]:
            return np.maximum(starts[part], 1).astype(float), times[part]

        if dots_on_demand:
            scatter_dots(ax, points, s=4, color=colour, alpha=0.18, lw=0, zorder=2)
        else:
            ax.scatter(*points(), s=4, color=colour, alpha=0.18, lw=0, zorder=2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    Canvas(fig)
    fit_suptitle(fig, "solve time per epoch — " * 6, 10)
    ax.set_title("dots: every epoch of every seed; line: median per time bin " * 2, fontsize=8.5)
    fit_axes_titles(fig)
    return png_bytes(fig)


def test_dots_made_when_drawn_give_the_same_png_as_axes_scatter() -> None:
    assert hashlib.sha256(_figure(True)).hexdigest() == hashlib.sha256(_figure(False)).hexdigest()


def test_dots_keep_no_positions_but_give_scatters_own() -> None:
    Figure, Canvas = load_matplotlib()
    starts, times = _points(5_000)

    def points() -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(starts, 1).astype(float), times

    plain_ax = Figure().add_subplot()
    plain = plain_ax.scatter(*points(), s=4)
    lazy_ax = Figure().add_subplot()
    lazy = scatter_dots(lazy_ax, points, s=4)
    # what matplotlib reads is the array Axes.scatter keeps, values and mask alike
    assert np.array_equal(lazy.get_offsets().data, plain.get_offsets().data)
    assert np.array_equal(np.ma.getmaskarray(lazy.get_offsets()), np.ma.getmaskarray(plain.get_offsets()))
    assert np.allclose(lazy_ax.dataLim.get_points(), plain_ax.dataLim.get_points())
    # ... but the collection holds none of them: changing the source changes what it reads
    times[:] = 1.0
    assert np.all(lazy.get_offsets()[:, 1] == 1.0)
    assert not np.all(plain.get_offsets()[:, 1] == 1.0)
    with pytest.raises(TypeError, match="cannot be set"):
        lazy.set_offsets(np.zeros((3, 2)))


def _titled_figure():  # type: ignore[no-untyped-def]
    Figure, Canvas = load_matplotlib()
    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([1, 2, 3])
    Canvas(fig)
    fit_suptitle(fig, "a title long enough to be wrapped on a small figure " * 3, 10)
    ax.set_title("a panel title long enough to be wrapped " * 3, fontsize=8.5)
    fit_axes_titles(fig)
    return fig


def test_the_layout_renderer_is_let_go_before_saving_and_the_png_is_the_same() -> None:
    kept = _titled_figure()
    buffer = io.BytesIO()
    kept.savefig(buffer, format="png", dpi=DPI)  # matplotlib's own way: the layout renderer kept
    fig = _titled_figure()
    layout = fig.canvas.get_renderer()
    assert fig._suptitle._renderer is layout  # the measured text keeps the renderer it was measured with
    data = png_bytes(fig)
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(buffer.getvalue()).hexdigest()

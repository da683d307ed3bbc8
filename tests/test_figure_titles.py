"""The study figures have no visual defects: titles inside the figure, a frontier without an empty C range, labels
clear of markers, epoch counts as plain integers, and bars over two or three seeds that do not claim to be bootstrap
intervals.

Every figure is built from hand-made runs (no study is run) and measured in pixels with the figure's own renderer
after its layout (``draw_without_rendering``): what the PNG shows, at its resolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from curlopt.experiments.outputs.runs import ConfigurationRuns
from curlopt.experiments.simulation.trace import EpochRecord, Trace

mpl = pytest.importorskip("matplotlib")

from curlopt.experiments.outputs.figures import plots as P  # noqa: E402  (after the skip: these import matplotlib)
from curlopt.experiments.outputs.figures.report import exact_constraint_figure  # noqa: E402

T = 2000
OPTIMUM = 2.0


@dataclass(frozen=True)
class Setting:
    """Stands in for a study's SettingSpec, with a label as long as the built-in queue's."""

    name: str = "queue"
    label: str = "single-server queue with flow and service control, buffer 5"
    cost_names: tuple[str, ...] = ("service cost", "flow cost")

    def constraint_names(self) -> list[str]:
        return ["ζ_1 - 0.5 ≤ 0", "ζ_2 - 0.5 ≤ 0"]


def run(seed: int, regret: float, constraints, epochs: int = 4) -> Trace:
    """A run ending at R(T) = ``regret`` and g(ζ^(T)) = ``constraints``, with ``epochs`` epochs (exact g recorded)."""
    t = np.unique(np.geomspace(1, T, 20).astype(np.int64))
    shape = np.log(T / t) / np.log(T)  # 1 at t = 1, 0 at t = T
    regret_curve = regret + (1.0 + 0.1 * seed) * shape
    g = np.asarray(constraints, dtype=float)[None, :] + 0.2 * shape[:, None]
    checkpoints = {"t": t, "rewards": (OPTIMUM - regret_curve)[:, None], "costs": g + 0.5,
                   "objective": OPTIMUM - regret_curve, "constraints": g, "regret": regret_curve,
                   "violation": np.maximum(g.max(axis=1), 0.0)}
    starts = np.linspace(1, T, epochs + 1).astype(int)
    records = [EpochRecord(i, int(starts[i]), int(starts[i + 1] - starts[i]), 0.1, "tight", "optimal",
                           0.001 * (1 + i % 3), exact_constraints=list(constraints)) for i in range(epochs)]
    meta = {"seed": seed, "env": "queue", "agent": "uc-curl", "steps": T}
    return Trace(meta, {"objective": OPTIMUM}, checkpoints, records, 1.0)


def configuration(label: str, regrets, constraints, *, algorithm: str = "uc-curl", varied=None,
                  epochs=None) -> ConfigurationRuns:
    """One configuration with a run per entry of ``regrets`` (seeds 0, 1, ...); ``constraints`` per seed."""
    epochs = epochs or [4] * len(regrets)
    traces = [run(seed, r, constraints[seed], epochs[seed]) for seed, r in enumerate(regrets)]
    return ConfigurationRuns(Setting(), algorithm, algorithm, label, label.lower().replace(" ", "-"),
                             dict(varied or {}), dict(varied or {}), traces)


def two_configurations() -> list[ConfigurationRuns]:
    """Two configurations of two seeds: one panel per quantity, in the narrowest figures."""
    return [configuration("UC-CURL (K_ε=1)", [0.30, 0.34], [[-0.2, -0.3], [-0.1, -0.3]],
                          varied={"tightness_constant": 1}),
            configuration("PS-CURL", [0.50, 0.56], [[0.05, -0.3], [-0.1, -0.2]], algorithm="ps-curl")]


def many_configurations() -> list[ConfigurationRuns]:
    """Ten configurations: small multiples, with the long panel titles of the epochs figure."""
    groups = [configuration(f"UC-CURL (K_ε={k}, radius=experiment)", [0.2 * k, 0.2 * k + 0.05],
                            [[-0.2, -0.3]] * 2, varied={"tightness_constant": k, "radius": "experiment"})
              for k in range(1, 7)]
    groups += [configuration(f"PS-CURL (K_ε={k})", [0.1 * k, 0.1 * k + 0.02], [[-0.1, -0.3]] * 2,
                             algorithm="ps-curl", varied={"tightness_constant": k}) for k in range(1, 4)]
    return groups + [configuration("Primal-dual", [0.9, 1.0], [[-0.1, -0.2]] * 2, algorithm="primal-dual")]


def build(kind: str, groups):
    if kind == "frontier":
        return P.frontier_figure(groups)
    if kind == "epochs":
        return P.epochs_figure(groups)
    if kind == "exact":
        return exact_constraint_figure(groups)
    return P.curve_figure(groups, kind)


def laid_out(figure):
    figure.draw_without_rendering()
    return figure.canvas.get_renderer()


def shown_texts(figure):
    """Every text the figure draws (titles, axis labels, legends, notes, point labels) but the tick labels."""
    from matplotlib.text import Text

    ticks = {id(label) for ax in figure.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks() for label in (tick.label1, tick.label2)}
    return [text for text in figure.findobj(Text)
            if id(text) not in ticks and text.get_visible() and text.get_text().strip()]


# -- titles and labels inside the figure ---------------------------------------------------------------------------
CASES = [(kind, "two") for kind in ("frontier", "objective", "regret", "constraints", "overview", "epochs", "exact")]
CASES += [("epochs", "many"), ("objective", "many")]


@pytest.mark.parametrize("kind,data", CASES, ids=[f"{kind}-{data}" for kind, data in CASES])
def test_every_title_and_label_lies_inside_the_figure(kind, data):
    figure = build(kind, two_configurations() if data == "two" else many_configurations())
    renderer = laid_out(figure)
    assert figure.get_suptitle(), "every figure has a title"
    width, height = figure.bbox.width, figure.bbox.height
    texts = shown_texts(figure)
    assert any(text.get_text() == figure.get_suptitle() for text in texts)
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.x1 <= width + 0.5 and box.y0 >= -0.5 and box.y1 <= height + 0.5, \
            f"{kind}: {text.get_text()!r} at {box.bounds} leaves the {width:.0f}×{height:.0f} figure"
    # a panel's title stays above its panel: it does not run into the next one
    for ax in figure.axes:
        if ax.title.get_text():
            box, panel = ax.title.get_window_extent(renderer), ax.get_window_extent(renderer)
            assert panel.x0 - 1 <= box.x0 and box.x1 <= panel.x1 + 1, \
                f"{kind}: {ax.get_title()!r} is wider than its panel"


def test_a_wrapped_title_keeps_every_word():
    figure = build("objective", two_configurations())
    laid_out(figure)
    title = figure.get_suptitle()
    assert "\n" in title  # the one-line title is wider than the 7.5-inch figure: it was wrapped
    expected = ("queue: single-server queue with flow and service control, buffer 5 — lines: mean over 2 seeds;"
                " bands: mean ± one sample standard deviation")
    assert " ".join(title.split()) == expected


# -- the frontier when no configuration violates ---------------------------------------------------------------------
def no_violation() -> list[ConfigurationRuns]:
    """The shape of a real study: six UC-CURL points within 1% of each other, PS-CURL apart, every C(T) = 0."""
    feasible = [[-0.2, -0.3]] * 3
    groups = [configuration(f"UC-CURL (K_ε={k}, radius={radius})", [2.25 + 0.004 * i + 0.001 * s for s in range(3)],
                            feasible, varied={"tightness_constant": k, "radius": radius})
              for i, (k, radius) in enumerate((k, r) for k in (0.5, 1, 2) for r in ("analysis", "experiment"))]
    groups += [configuration(f"PS-CURL (K_ε={k})", [1.3 + 0.1 * i + 0.05 * s for s in range(3)], feasible,
                             algorithm="ps-curl", varied={"tightness_constant": k}) for i, k in enumerate((0.5, 1, 2))]
    return groups + [configuration("Primal-dual", [2.2, 2.21, 2.22], feasible, algorithm="primal-dual")]


def markers(ax):
    return {str(line.get_gid())[len("point:"):]: line for line in ax.lines if str(line.get_gid()).startswith("point:")}


def overlap(a, b, gap: float = 0.0) -> bool:
    return a.x0 < b.x1 + gap and b.x0 < a.x1 + gap and a.y0 < b.y1 + gap and b.y0 < a.y1 + gap


def test_a_frontier_without_violations_shows_its_points_in_a_lower_figure():
    groups = no_violation()
    assert all(tr.checkpoints["violation"][-1] == 0.0 for g in groups for tr in g.traces)
    flat = P.frontier_figure(groups)
    renderer = laid_out(flat)
    ax = flat.axes[0]
    axes_box = ax.get_window_extent(renderer)
    for label, line in markers(ax).items():
        y = line.get_window_extent(renderer)
        middle = ((y.y0 + y.y1) / 2 - axes_box.y0) / axes_box.height
        assert 0.3 <= middle <= 0.7, f"{label} sits at {middle:.2f} of the axes' height, not in its middle"
    assert [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]] == [0.0]
    # the same frontier with one violating seed keeps the full height: the flat one spends less on nothing
    violating = no_violation()
    violating[0] = configuration("UC-CURL (K_ε=0.1)", [2.0, 2.1, 2.2], [[0.05, -0.3], [-0.2, -0.3], [-0.2, -0.3]])
    assert flat.get_size_inches()[1] < P.frontier_figure(violating).get_size_inches()[1]


def test_frontier_labels_keep_clear_of_every_marker_and_of_each_other():
    """The layout rule: a label's box does not meet any marker (its drawn size) nor another label (2 px apart)."""
    for groups in (no_violation(), two_configurations()):
        figure = P.frontier_figure(groups)
        renderer = laid_out(figure)
        ax = figure.axes[0]
        points = markers(ax)
        labels = {str(t.get_gid())[len("label:"):]: t.get_window_extent(renderer) for t in ax.texts
                  if str(t.get_gid()).startswith("label:")}
        assert set(labels) == set(points) == {g.label for g in groups}  # every point labelled
        axes_box = ax.get_window_extent(renderer)
        for name, box in labels.items():
            assert axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1 and axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1
            for other, line in points.items():
                assert not overlap(box, line.get_window_extent(renderer)), \
                    f"label of {name} covers the marker of {other}"
            for other, other_box in labels.items():
                assert other == name or not overlap(box, other_box, gap=2.0), f"labels of {name} and {other} touch"


# -- counts, and bars over few seeds -----------------------------------------------------------------------------------
def test_epoch_counts_are_plain_integers():
    counts = {"UC-CURL": [1369, 1371], "PS-CURL": [314, 314], "Primal-dual": [2, 3]}
    groups = [configuration(label, [0.3, 0.4], [[-0.2, -0.3]] * 2, algorithm=label.lower(), epochs=per_seed)
              for label, per_seed in counts.items()]
    figure = P.epochs_figure(groups)
    bars = next(ax for ax in figure.axes if ax.patches)
    shown = sorted(t.get_text() for t in bars.texts if t.get_text()[:1].isdigit())
    # the mean per run over the seeds, rounded half up, with a thousands separator: 1370, 314, 2.5 -> 3
    by_hand = sorted(f"{math.floor(np.mean(per_seed) + 0.5):,}" for per_seed in counts.values())
    assert shown == by_hand == ["1,370", "3", "314"]


def bar_segments(ax, label: str):
    bars = {str(c.get_gid()): c for c in ax.collections}
    return bars[f"xbar:{label}"], bars[f"ybar:{label}"]


def test_bars_over_two_or_three_seeds_say_they_are_the_range_not_a_bootstrap_interval():
    few = configuration("two seeds", [0.30, 0.40], [[0.1, -0.3], [0.3, -0.3]])
    three = configuration("three seeds", [0.5, 0.55, 0.7], [[0.2, -0.3], [-0.1, -0.3], [0.1, -0.3]],
                          algorithm="ps-curl")
    # a 95% percentile-bootstrap interval over n <= 3 seeds has the smallest and largest seed as its ends: a resample
    # repeats the smallest seed n times with probability n^-n, at least the 2.5% the interval leaves out at each end
    assert all(n ** -n >= 0.025 for n in (2, 3)) and 4 ** -4 < 0.025
    figure = P.frontier_figure([few, three])
    ax = figure.axes[0]
    for group in (few, three):
        regrets = [tr.checkpoints["regret"][-1] for tr in group.traces]
        violations = [tr.checkpoints["violation"][-1] for tr in group.traces]
        xbar, ybar = bar_segments(ax, group.label)
        (x0, _), (x1, _) = xbar.get_segments()[0]
        (_, y0), (_, y1) = ybar.get_segments()[0]
        assert sorted((x0, x1)) == pytest.approx([min(regrets), max(regrets)])
        assert sorted((y0, y1)) == pytest.approx([min(violations), max(violations)])
        assert xbar.get_linestyle()[0][1] is not None  # dotted, not solid
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts()).replace("\n", " ")
    assert "not a bootstrap interval" in legend and "range of the seeds" in legend
    assert "95% bootstrap interval" not in legend  # no configuration has enough seeds for one


def test_four_seeds_keep_solid_bootstrap_bars_beside_dotted_ranges():
    few = configuration("two seeds", [0.30, 0.40], [[0.1, -0.3], [0.3, -0.3]])
    four = configuration("four seeds", [0.5, 0.55, 0.7, 0.6], [[0.2, -0.3], [-0.1, -0.3], [0.1, -0.3], [0.0, -0.3]],
                         algorithm="ps-curl")
    ax = P.frontier_figure([few, four]).axes[0]
    assert bar_segments(ax, "four seeds")[0].get_linestyle()[0][1] is None  # solid
    assert bar_segments(ax, "two seeds")[0].get_linestyle()[0][1] is not None
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts()).replace("\n", " ")
    assert "95% bootstrap interval" in legend and "not a bootstrap interval" in legend

"""A study's summary tables and figures, from hand-built traces with known numbers.

Expected values are computed here with numpy on the same numbers, not by calling the code under test. The
bootstrap intervals are checked against the exact bootstrap distribution of the mean (every resample, counted
by convolution), within the Monte-Carlo error of the summary's finite number of resamples.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from curlopt.errors import CurloptError
from curlopt.experiments.outputs import summary as S
from curlopt.experiments.outputs.runs import ConfigurationRuns
from curlopt.experiments.simulation.trace import EpochRecord, Trace

T = 1000
OPTIMUM = 2.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ToySetting:
    """Stands in for a study's SettingSpec (no model is built)."""

    name: str = "toy"
    label: str = "a toy model (docs/math.md §8)"
    cost_names: tuple[str, ...] = ("service cost", "flow cost")
    n_constraints: int = 2

    def constraint_names(self) -> list[str]:
        return [f"ζ_{m + 1} - 0.5 ≤ 0 (docs/math.md §{m})" for m in range(self.n_constraints)]


def checkpoint_times(steps: int = T) -> np.ndarray:
    return np.unique(np.geomspace(1, steps, 25).astype(np.int64))


def make_trace(seed: int, regret: float, constraints, *, wall: float = 1.0, epochs=None, spread: float = 0.1,
               steps: int = T, scale: float = 1.0) -> Trace:
    """A run whose final R(T) is ``regret`` and final g(ζ^(T)) is ``constraints``; earlier values vary with the seed."""
    t = checkpoint_times(steps)
    shape = np.log(steps / t) / np.log(steps)  # 1 at t = 1, 0 at t = T
    regret_curve = scale * (regret + (1.0 + spread * seed) * shape)
    constraints = np.asarray(constraints, dtype=float)
    g = constraints[None, :] + (0.2 + spread * seed) * shape[:, None] * np.ones(len(constraints))[None, :]
    violation = np.maximum(g.max(axis=1), 0.0) if len(constraints) else np.zeros(len(t))
    objective = OPTIMUM * scale - regret_curve
    checkpoints = {
        "t": t, "rewards": objective[:, None], "costs": g + 0.5, "objective": objective,
        "constraints": g.reshape(len(t), len(constraints)), "regret": regret_curve, "violation": violation,
    }
    meta = {"seed": seed, "env": "toy", "agent": "uc-curl", "trigger": "doubling", "backend": "highs", "steps": steps}
    return Trace(meta, {"objective": OPTIMUM * scale}, checkpoints, list(epochs or []), wall)


def group(label: str, traces, *, algorithm: str = "uc-curl", varied=None, setting=None) -> ConfigurationRuns:
    varied = dict(varied or {})
    return ConfigurationRuns(setting or ToySetting(), algorithm, algorithm, label, re.sub(r"\W+", "-", label).lower(),
                             {"trigger": "doubling", **varied}, varied, sorted(traces, key=lambda tr: tr.meta["seed"]))


def epoch(index: int, start: int, length: int, exact, source: str = "tight", solve_time: float = 0.01,
          status: str = "optimal") -> EpochRecord:
    return EpochRecord(index, start, length, 0.1, source, status, solve_time, exact_constraints=exact)


def exact_bootstrap_means(values, step: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The exact bootstrap distribution of the mean of ``values``: ``(support, cumulative probabilities)``.

    A resample draws n values with replacement, each of the n with probability 1/n, so its sum is distributed
    as the n-fold convolution of the sample's empirical distribution. The values lie on a grid of ``step``, so
    the convolution is one of integer-indexed probability vectors: exact, and independent of any sampling.
    """
    grid = np.rint(np.asarray(values, dtype=float) / step).astype(np.int64)
    assert np.allclose(grid * step, values, rtol=0, atol=1e-12), "the values must lie on the grid"
    n, low = grid.size, int(grid.min())
    empirical = np.bincount(grid - low) / n
    distribution = np.array([1.0])
    for _ in range(n):
        distribution = np.convolve(distribution, empirical)
    support = (n * low + np.arange(distribution.size)) * step / n
    keep = distribution > 0
    return support[keep], np.cumsum(distribution[keep])


#: Monte-Carlo slack of a percentile-bootstrap end. With B resamples, the number of resampled means at or below
#: a point x is Binomial(B, F(x)) (F: the exact bootstrap distribution). The 2.5% end is read between the
#: 250th and 251st of B = 9,999 sorted means, so it falls below the exact quantile Q(0.025 - δ) only if 250 or
#: more draws land where F < 0.025 - δ, and above Q(0.025 + δ) only if 250 or fewer land where F >= 0.025 + δ.
#: With δ six binomial standard deviations, sqrt(0.025 · 0.975 / B) ≈ 0.0016 each (δ ≈ 0.0094), either happens
#: with probability below 1e-8 (Chernoff); the same holds at 97.5%.
BOOTSTRAP_SLACK = 6 * math.sqrt(0.025 * 0.975 / S.BOOTSTRAP_RESAMPLES)


def percentile_window(values, level: float, step: float = 0.05) -> tuple[float, float]:
    """``[Q(level - δ), Q(level + δ)]``: where a bootstrap percentile end at ``level`` must lie (see above)."""
    support, cumulative = exact_bootstrap_means(values, step)

    def quantile(p: float) -> float:  # the smallest mean whose cumulative probability reaches p
        return float(support[min(np.searchsorted(cumulative, p - 1e-12), support.size - 1)])

    return quantile(level - BOOTSTRAP_SLACK), quantile(level + BOOTSTRAP_SLACK)


def assert_bootstrap_interval(low: float, high: float, values, step: float = 0.05) -> None:
    """``(low, high)`` is a 95% percentile-bootstrap interval of the mean of ``values``, within Monte-Carlo error."""
    for end, level in ((low, 0.025), (high, 0.975)):
        lowest, highest = percentile_window(values, level, step)
        assert lowest - 1e-12 <= end <= highest + 1e-12, (values, level, end, (lowest, highest))


def test_the_interval_is_the_95_percent_percentile_bootstrap_of_the_mean():
    # Ten values on a grid of 0.1: the exact bootstrap distribution has 130 atoms, fine enough that the windows
    # tell the 95% interval from a 90% or a 99% one (checked first, so this test could fail on either).
    values = [0.3, 0.7, 0.1, 1.2, 0.5, 0.9, 0.4, 1.5, 0.2, 0.8]
    below, above = percentile_window(values, 0.025, 0.1), percentile_window(values, 0.975, 0.1)
    # the ends of a 90% and of a 99% interval lie outside the 95% windows, even with their own slack ...
    assert percentile_window(values, 0.05, 0.1)[0] > below[1] and percentile_window(values, 0.005, 0.1)[1] < below[0]
    assert percentile_window(values, 0.95, 0.1)[1] < above[0] and percentile_window(values, 0.995, 0.1)[0] > above[1]
    low, high = S.bootstrap_interval(values)  # ... and the summary's interval lies inside them
    assert_bootstrap_interval(low, high, values, 0.1)
    assert S.bootstrap_interval(values) == (low, high)  # a fixed seed: the same interval on every call


# The numbers of the tests.
REGRETS = [0.5, 0.7, 0.4, 0.9]
G1 = [-0.1, 0.05, -0.2, 0.1]
G2 = [-0.3, -0.25, -0.4, -0.1]
WALL = [1.0, 2.0, 3.0, 5.0]


def study_groups(wall_offset: float = 0.0) -> list[ConfigurationRuns]:
    a = group("UC-CURL (K_ε=1)", [make_trace(s, REGRETS[s], [G1[s], G2[s]], wall=WALL[s] + wall_offset)
                                  for s in range(4)], varied={"tightness_constant": 1})
    safe = group("UC-CURL (K_ε=10)", [make_trace(s, 1.0 + 0.1 * s, [-0.2 - 0.01 * s, -0.3], wall=1.0 + wall_offset)
                                     for s in range(3)], varied={"tightness_constant": 10})
    single = group("PS-CURL", [make_trace(7, 0.8, [-0.1, 0.2], wall=2.0 + wall_offset)], algorithm="ps-curl")
    return [a, safe, single]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as stream:
        reader = csv.DictReader(stream)
        return list(reader.fieldnames or []), list(reader)


# -- summary --------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    csv_path, md_path, rows = S.write_study_summary(study_groups(), out, title="toy study", description="A test",
                                                    notes=["one note"])
    return out, csv_path, md_path, rows


def test_means_stds_and_intervals_by_hand(written):
    _, csv_path, _, rows = written
    _, table = read_csv(csv_path)
    row = table[0]
    violations = [max(g1, g2, 0.0) for g1, g2 in zip(G1, G2, strict=True)]
    objectives = [OPTIMUM - r for r in REGRETS]
    for name, values in (("regret", REGRETS), ("objective", objectives), ("g1", G1), ("g2", G2),
                         ("violation", violations)):
        assert float(row[f"{name}_mean"]) == pytest.approx(np.mean(values), rel=1e-12, abs=1e-15), name
        assert float(row[f"{name}_std"]) == pytest.approx(np.std(values, ddof=1), rel=1e-12), name
        low, high = float(row[f"{name}_ci_low"]), float(row[f"{name}_ci_high"])
        assert_bootstrap_interval(low, high, values)
        assert min(values) <= low <= np.mean(values) <= high <= max(values)
    assert float(row["zero_violation_share"]) == pytest.approx(np.mean([v == 0 for v in violations]))
    assert float(row["wall_time_mean"]) == pytest.approx(np.mean(WALL))
    assert float(row["wall_time_std"]) == pytest.approx(np.std(WALL, ddof=1))
    assert row["seeds"] == "4" and row["steps"] == str(T) and float(row["optimum"]) == OPTIMUM
    assert row["option.tightness_constant"] == "1" and row["trigger"] == "doubling" and row["backend"] == "highs"
    # the returned rows carry the same numbers as the file, and no private keys
    assert rows[0]["regret_mean"] == float(row["regret_mean"]) and not any(k.startswith("_") for k in rows[0])


def test_all_zero_violation_gives_the_degenerate_interval(written):
    _, csv_path, md_path, _ = written
    row = read_csv(csv_path)[1][1]
    assert [float(row[f"violation_{k}"]) for k in ("mean", "std", "ci_low", "ci_high")] == [0.0, 0.0, 0.0, 0.0]
    assert float(row["zero_violation_share"]) == 1.0
    assert S.bootstrap_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)
    assert "| 0 ± 0 [0, 0] | 3/3 |" in md_path.read_text(encoding="utf-8")


def test_one_seed_has_no_spread_and_no_interval(written):
    _, csv_path, md_path, _ = written
    row = read_csv(csv_path)[1][2]
    assert row["seeds"] == "1" and float(row["regret_mean"]) == pytest.approx(0.8)
    for name in ("regret", "objective", "g1", "g2", "violation"):
        assert row[f"{name}_std"] == row[f"{name}_ci_low"] == row[f"{name}_ci_high"] == "", name
    assert float(row["violation_mean"]) == pytest.approx(0.2) and float(row["zero_violation_share"]) == 0.0
    assert row["option.tightness_constant"] == ""  # PS-CURL has no grid axis here
    line = next(line for line in md_path.read_text(encoding="utf-8").splitlines() if line.startswith("| PS-CURL"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[1] == "1" and cells[3] == "0.800" and "±" not in line and "[" not in line


def test_violating_epoch_shares_by_hand(tmp_path):
    # seed 0: the epoch without an exact evaluation is left out; max g = 0 is not a violation
    first = [epoch(0, 1, 10, [-0.1, -0.2]), epoch(1, 11, 20, [0.1, -0.3]), epoch(2, 31, 30, None),
             epoch(3, 61, 40, [-0.5, 0.0]), epoch(4, 101, 100, [0.2, 0.3])]
    # seed 1: one violating epoch of four, a NaN evaluation left out
    second = [epoch(0, 1, 5, [-1.0, -1.0]), epoch(1, 6, 5, [0.5, -1.0]), epoch(2, 11, 10, [-1.0, float("nan")]),
              epoch(3, 21, 30, [-0.1, -0.1]), epoch(4, 51, 60, [-0.2, -0.2])]
    runs = group("UC-CURL", [make_trace(0, 0.5, [-0.1, -0.1], epochs=first), make_trace(1, 0.5, [-0.1, -0.1],
                                                                                         epochs=second)])
    epochs_by_hand = [2 / 4, 1 / 4]
    steps_by_hand = [(20 + 100) / (10 + 20 + 40 + 100), 5 / (5 + 5 + 30 + 60)]
    _, _, rows = S.write_study_summary([runs], tmp_path)
    assert rows[0]["violating_epoch_share"] == pytest.approx(np.mean(epochs_by_hand))
    assert rows[0]["violating_step_share"] == pytest.approx(np.mean(steps_by_hand))
    assert rows[0]["epochs_mean"] == 5.0
    none = group("UC-CURL", [make_trace(0, 0.5, [-0.1, -0.1], epochs=[epoch(0, 1, 10, None)])])
    _, _, rows = S.write_study_summary([none], tmp_path)
    assert math.isnan(rows[0]["violating_epoch_share"]) and math.isnan(rows[0]["violating_step_share"])
    unconstrained = group("UC-CURL", [make_trace(0, 0.5, [], epochs=[epoch(0, 1, 10, [])])],
                          setting=ToySetting(n_constraints=0))
    _, md_path, rows = S.write_study_summary([unconstrained], tmp_path)
    assert rows[0]["violating_epoch_share"] == 0.0 and "g1_mean" not in rows[0]


def test_csv_has_the_documented_columns(written):
    _, csv_path, _, _ = written
    header, table = read_csv(csv_path)
    assert header == S.study_columns(2, ["tightness_constant"]) and len(table) == 3
    assert header[:6] == ["setting", "algorithm", "label", "agent", "key", "option.tightness_constant"]
    doc = S.__doc__
    for column in header:
        base = re.sub(r"_(mean|std|ci_low|ci_high)$", "", column)
        base = re.sub(r"^g\d+$", "g<m>", base)
        base = re.sub(r"^option\..*$", "option.<name>", base)
        assert base in S.STUDY_COLUMN_DOCS, column
        assert f"``{base}" in doc, column  # documented in the module docstring
    for column in header:  # full precision: every float round-trips
        for row in table:
            value = row[column]
            if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?", value):
                assert repr(float(value)) == value


def test_only_time_columns_differ_between_writes(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    S.write_study_summary(study_groups(), first)
    S.write_study_summary(study_groups(wall_offset=0.5), second)
    header, rows_a = read_csv(first / "summary.csv")
    _, rows_b = read_csv(second / "summary.csv")
    differing = {column for a, b in zip(rows_a, rows_b, strict=True) for column in header if a[column] != b[column]}
    assert differing == {"wall_time_mean"}  # the std does not change with an offset
    assert set(differing) <= set(S.TIME_COLUMNS)
    mask = os.umask(0)
    os.umask(mask)
    for path in (first / "summary.csv", first / "summary.md"):
        assert (path.stat().st_mode & 0o777) == (0o666 & ~mask)
    assert not list(tmp_path.rglob("*.tmp"))


def test_markdown_tables_digits_plurals_and_legend(written):
    _, _, md_path, _ = written
    text = md_path.read_text(encoding="utf-8")
    assert "docs/math.md" not in text and text.startswith("# toy study: summary over seeds")
    assert "## toy: a toy model" in text and "- one note" in text
    assert "1–4 seeds per configuration" in text
    line = next(line for line in text.splitlines() if line.startswith("| UC-CURL (K_ε=1)"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    row = read_csv(written[1])[1][0]  # the markdown shows the CSV's interval, to 3 significant digits
    low, high = float(row["regret_ci_low"]), float(row["regret_ci_high"])
    assert_bootstrap_interval(low, high, REGRETS)
    std = np.std(REGRETS, ddof=1)
    assert cells[3] == f"0.625 ± {std:.2f} [{low:#.3g}, {high:#.3g}]"
    assert cells[1] == "4"
    assert re.search(r"\[[^\]]+, [^\]]+\]", cells[4])  # the interval as [lo, hi]
    assert "9,999" in text and "percentile bootstrap" in text and "How to read the tables" in text
    for cell in cells[2:7]:  # means and interval ends: 3 significant digits, std: 2
        match = re.fullmatch(r"(\S+) ± (\S+) \[(\S+), (\S+)\]", cell)
        assert match, cell
        for number in (match[1], match[3], match[4]):
            assert number == "0" or len(number.lstrip("-0.").replace(".", "")) == 3, cell
        assert match[2] == "0" or len(match[2].lstrip("-0.").replace(".", "")) == 2, cell


def test_significant_digits():
    assert [S.significant(v, 3) for v in (4.47123, -0.07351, 0.041, 9.996, 1234.5, 0.0, float("nan"))] == [
        "4.47", "-0.0735", "0.0410", "10.0", "1230", "0", "–"]
    assert [S.significant(v, 2) for v in (0.031, 0.22174, 12.0)] == ["0.031", "0.22", "12"]
    assert S.percent(0.1234) == "12.3%" and S.percent(0.0) == "0%" and S.percent(1.0) == "100%"


# -- figures --------------------------------------------------------------------------------------------------------
from curlopt.experiments.outputs.figures import plots as P  # noqa: E402  (matplotlib loads when a figure is drawn)

try:
    import matplotlib as mpl
except ImportError:  # pragma: no cover
    mpl = None
needs_matplotlib = pytest.mark.skipif(mpl is None, reason="figures need matplotlib")


def curve_axes(figure):
    return [ax for ax in figure.axes if any(str(line.get_gid() or "").startswith("curve:") for line in ax.lines)]


def by_gid(ax, prefix: str):
    items = list(ax.lines) + list(ax.collections)
    return {str(item.get_gid()): item for item in items if str(item.get_gid() or "").startswith(prefix)}


def notes(ax) -> str:
    return "\n".join(text.get_text() for text in ax.texts if text.get_gid() == "note")


def all_text(figure) -> list[str]:
    from matplotlib.text import Text

    return [artist.get_text() for artist in figure.findobj(Text)]


def spread_groups(scale: float = 1.0):
    """Three configurations with three seeds each; the third violates the constraints."""
    feasible = group("UC-CURL (K_ε=1)", [make_trace(s, 0.3 + 0.05 * s, [-0.2, -0.3], scale=scale)
                                         for s in range(3)], varied={"tightness_constant": 1})
    other = group("UC-CURL (K_ε=3)", [make_trace(s, 0.4 + 0.1 * s, [-0.1, -0.2], spread=0.5, scale=scale)
                                      for s in range(3)], varied={"tightness_constant": 3})
    violating = group("PS-CURL", [make_trace(s, 0.1, [0.05 * (s + 1), -0.2], scale=scale) for s in range(3)],
                      algorithm="ps-curl")
    return [feasible, other, violating]


@needs_matplotlib
def test_band_is_mean_plus_minus_one_sample_std():
    groups = spread_groups()
    figure = P.curve_figure(groups, "objective")
    ax = curve_axes(figure)[0]
    for g in groups:
        values = np.stack([tr.checkpoints["objective"] for tr in g.traces])
        mean, std = values.mean(axis=0), values.std(axis=0, ddof=1)
        band = by_gid(ax, "band:")[f"band:{g.label}"]
        vertices = np.concatenate([path.vertices for path in band.get_paths()])
        t = g.traces[0].checkpoints["t"]
        for k, time in enumerate(t):
            ys = vertices[np.isclose(vertices[:, 0], time), 1]
            assert np.any(np.isclose(ys, mean[k] - std[k], rtol=0, atol=1e-12)), (g.label, time)
            assert np.any(np.isclose(ys, mean[k] + std[k], rtol=0, atol=1e-12)), (g.label, time)
        assert vertices[:, 1].min() == pytest.approx((mean - std).min()) and vertices[:, 1].max() == pytest.approx(
            (mean + std).max())
        line = by_gid(ax, "curve:")[f"curve:{g.label}"]
        assert np.allclose(line.get_ydata(), mean, rtol=0, atol=1e-12)
    assert any("mean ± one sample standard deviation" in text for text in all_text(figure))


@needs_matplotlib
def test_log_band_below_zero_is_noted_not_clipped():
    wide = group("wide", [make_trace(s, r, [-0.1, -0.1]) for s, r in enumerate((-0.5, 0.1, 0.6))])
    figure = P.curve_figure([wide], "regret")
    ax = curve_axes(figure)[0]
    assert ax.get_yscale() == "log"
    band = by_gid(ax, "band:")["band:wide"]
    values = np.stack([tr.checkpoints["regret"] for tr in wide.traces])
    lower = values.mean(axis=0) - values.std(axis=0, ddof=1)
    assert lower.min() < 0
    vertices = np.concatenate([path.vertices for path in band.get_paths()])
    assert vertices[:, 1].min() == pytest.approx(lower.min())  # the data are not clamped
    assert "lower edge ≤ 0" in notes(ax)


@needs_matplotlib
def test_slope_reference_does_not_move_with_the_data():
    lines = []
    for scale in (1.0, 10.0):
        figure = P.curve_figure(spread_groups(scale), "regret")
        ax = curve_axes(figure)[0]
        slopes = by_gid(ax, "slope:")
        assert slopes
        for gid, line in slopes.items():
            k = int(gid.split(":")[1])
            x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
            assert np.allclose(y * np.sqrt(x), 10.0 ** k)  # c/√t with c = 10^k, independent of the curves
        lines.append({gid: np.asarray(line.get_ydata()) for gid, line in slopes.items()})
        assert any("slope −1/2" in label for label in ax.get_legend_handles_labels()[1]) or any(
            "slope −1/2" in text for text in all_text(figure))
    common = set(lines[0]) & set(lines[1])
    assert common and all(np.array_equal(lines[0][gid], lines[1][gid]) for gid in common)


@needs_matplotlib
def test_infeasible_configuration_is_drawn_differently():
    groups = spread_groups()
    figure = P.curve_figure(groups, "objective")
    ax = curve_axes(figure)[0]
    curves = by_gid(ax, "curve:")
    feasible, violating = curves["curve:UC-CURL (K_ε=1)"], curves["curve:PS-CURL"]
    assert mpl.colors.to_rgba(violating.get_markerfacecolor()) == mpl.colors.to_rgba("white")
    assert mpl.colors.to_rgba(feasible.get_markerfacecolor()) == mpl.colors.to_rgba(feasible.get_color())
    legend_texts = [text.get_text() for legend in figure.legends + [a.get_legend() for a in figure.axes if a.get_legend()]
                    for text in legend.get_texts()]
    mean_violation = np.mean([tr.checkpoints["violation"][-1] for tr in groups[2].traces])
    assert any(text.startswith("PS-CURL") and f"C(T) = {mean_violation:.3g}" in text for text in legend_texts)
    assert any("hollow markers" in text for text in legend_texts)
    assert not any(text.startswith("UC-CURL (K_ε=1)") and "C(T)" in text for text in legend_texts)


@needs_matplotlib
def test_coinciding_curves_get_different_styles_and_a_note():
    traces = [make_trace(s, 0.3, [-0.2, -0.2]) for s in range(2)]
    twin_a = group("twin A", traces)
    twin_b = group("twin B", [make_trace(s, 0.3, [-0.2, -0.2]) for s in range(2)])
    apart = group("apart", [make_trace(s, 0.9, [-0.1, -0.1]) for s in range(2)])
    figure = P.curve_figure([twin_a, twin_b, apart], "overview")
    for ax in curve_axes(figure):
        curves = by_gid(ax, "curve:")
        a, b = curves["curve:twin A"], curves["curve:twin B"]
        assert np.array_equal(a.get_ydata(), b.get_ydata(), equal_nan=True)
        assert (a.get_linestyle(), a.get_marker()) != (b.get_linestyle(), b.get_marker())
        assert a.get_linestyle() != b.get_linestyle() and a.get_marker() != b.get_marker()
        assert a.get_markevery() != b.get_markevery()  # markers at interleaved times stay visible
        assert "identical curves: twin A = twin B" in notes(ax)
        assert "apart" not in notes(ax).split("identical curves")[-1]


@needs_matplotlib
def test_frontier_points_and_error_bars():
    groups = study_groups()
    figure = P.frontier_figure(groups)
    ax = figure.axes[0]
    points = by_gid(ax, "point:")
    assert len(points) == len(groups)
    for g in groups:
        regrets = [tr.checkpoints["regret"][-1] for tr in g.traces]
        violations = [tr.checkpoints["violation"][-1] for tr in g.traces]
        line = points[f"point:{g.label}"]
        assert line.get_xdata()[0] == pytest.approx(np.mean(regrets))
        assert line.get_ydata()[0] == pytest.approx(np.mean(violations))
        hollow = mpl.colors.to_rgba(line.get_markerfacecolor()) == mpl.colors.to_rgba("white")
        assert hollow == any(v > 0 for v in violations)
        bars = by_gid(ax, "xbar:")
        if len(g.traces) == 1:
            assert f"xbar:{g.label}" not in bars
            continue
        # the bars are the summary table's intervals (the same numbers as summary.csv), which are bootstrap intervals
        (x0, y0), (x1, y1) = bars[f"xbar:{g.label}"].get_segments()[0]
        assert (min(x0, x1), max(x0, x1)) == pytest.approx(S.bootstrap_interval(regrets)) and y0 == y1
        assert_bootstrap_interval(min(x0, x1), max(x0, x1), regrets)
        (x0, y0), (x1, y1) = by_gid(ax, "ybar:")[f"ybar:{g.label}"].get_segments()[0]
        if any(violations):
            assert (min(y0, y1), max(y0, y1)) == pytest.approx(S.bootstrap_interval(violations), abs=1e-12)
            assert_bootstrap_interval(min(y0, y1), max(y0, y1), violations)
        else:  # C(T) = 0 on every seed: the degenerate interval [0, 0]
            assert (min(y0, y1), max(y0, y1)) == (0.0, 0.0)
        assert x0 == x1
    assert ax.get_xscale() == "log" and "log axis" in ax.get_xlabel()
    assert ax.get_ylim()[0] < 0 < ax.get_ylim()[1]  # C = 0 is visible
    labels = {str(text.get_gid()) for text in ax.texts if str(text.get_gid() or "").startswith("label:")}
    assert labels == {f"label:{g.label}" for g in groups}  # every point labelled
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert any("filled" in text for text in legend) and any("hollow" in text for text in legend)


@needs_matplotlib
@pytest.mark.filterwarnings("error::UserWarning")
def test_overview_has_no_empty_axes_and_small_multiples_stay_small():
    three = [group("one", [make_trace(s, 0.3, [-0.2]) for s in range(2)], setting=ToySetting(n_constraints=1))]
    figure = P.curve_figure(three, "overview")  # objective, regret, one constraint: an odd number of panels
    assert len(figure.axes) == 3
    for ax in figure.axes:
        assert ax.get_visible() and any(str(line.get_gid() or "").startswith("curve:") for line in ax.lines)
    many = [group(f"UC-CURL (K_ε={k})", [make_trace(s, 0.1 * k, [-0.2, -0.1]) for s in range(2)],
                  varied={"tightness_constant": k}) for k in range(1, 11)]
    many += [group(f"PS-CURL (K_ε={k})", [make_trace(s, 0.2 * k, [-0.2, -0.1]) for s in range(2)], algorithm="ps-curl",
                   varied={"tightness_constant": k}) for k in range(1, 4)]
    figure = P.curve_figure(many, "overview")
    counts = [len(by_gid(ax, "curve:")) for ax in figure.axes if ax.get_visible() and ax.lines]
    assert len(counts) == len(figure.axes) and max(counts) <= P.MAX_LINES and sum(counts) == 4 * len(many)
    figure.savefig(io.BytesIO(), format="png", dpi=60)  # the layout holds (a collapse warns, an error here)
    assert min(ax.get_position().width for ax in figure.axes) > 0.15


@needs_matplotlib
def test_epochs_figure_bars_are_the_source_shares():
    runs = group("UC-CURL", [
        make_trace(0, 0.3, [-0.1, -0.1], epochs=[epoch(0, 1, 4, [-0.1, -0.1]), epoch(1, 5, 8, [-0.1, -0.1], "fallback"),
                                                  epoch(2, 13, 16, [-0.1, -0.1], status="iteration_limit"),
                                                  epoch(3, 29, 32, [-0.1, -0.1], "kept-previous")]),
        make_trace(1, 0.3, [-0.1, -0.1], epochs=[epoch(0, 1, 10, [-0.1, -0.1]), epoch(1, 11, 20, [0.1, -0.1])]),
    ])
    figure = P.epochs_figure([runs])
    bars = [ax for ax in figure.axes if ax.patches][0]
    widths = {}
    for patch, label in zip(bars.patches, [c.get_label() for c in bars.containers for _ in c.patches], strict=False):
        widths[label] = patch.get_width()
    by_hand = {"tight program": np.mean([2 / 4, 2 / 2]), "fallback (tight program infeasible)": np.mean([1 / 4, 0]),
               "solver failed: previous policy kept": np.mean([1 / 4, 0])}
    assert widths == pytest.approx(by_hand)
    times = [ax for ax in figure.axes if not ax.patches][0]
    assert times.get_xscale() == "log" and times.get_yscale() == "log"
    assert "1 epoch with a solver status other than optimal" in notes(times)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


@needs_matplotlib
@pytest.mark.filterwarnings("error::UserWarning")
def test_plot_study_writes_every_figure(tmp_path):
    groups = [g for g in study_groups()]
    for g in groups:
        for s, trace in enumerate(g.traces):
            trace.epochs = [epoch(0, 1, 10, [-0.1, -0.1], solve_time=0.01 * (s + 1)),
                            epoch(1, 11, T - 10, [0.1, -0.1], "fallback", solve_time=0.02)]
    other = group("UC-CURL", [make_trace(s, 0.2, []) for s in range(2)],
                  setting=ToySetting(name="plain", label="no constraints", n_constraints=0))
    paths = P.plot_study(groups + [other], tmp_path / "figures")
    names = {path.name for path in paths}
    assert names == {"toy-frontier.png", "toy-objective.png", "toy-regret.png", "toy-constraints.png",
                     "toy-overview.png", "toy-epochs.png", "plain-frontier.png", "plain-objective.png",
                     "plain-regret.png", "plain-overview.png"}
    mask = os.umask(0)
    os.umask(mask)
    for path in paths:
        assert path.parent == tmp_path / "figures" and path.stat().st_size > 10_000
        width, height = png_size(path)
        assert width >= 600 and height >= 400
        assert (path.stat().st_mode & 0o777) == (0o666 & ~mask)
    assert not list(tmp_path.rglob("*.tmp"))


@needs_matplotlib
def test_no_section_references_in_any_figure():
    groups = study_groups()
    for g in groups:
        for trace in g.traces:
            trace.epochs = [epoch(0, 1, T, [-0.1, -0.1])]
    for name, figure in P.setting_figures(groups):
        texts = all_text(figure)
        assert texts and not any("docs/math.md" in text or "§" in text for text in texts), name
        titles = [ax.get_title() for ax in figure.axes] + [ax.get_ylabel() for ax in figure.axes]
        assert not any("docs/" in text for text in titles), name


def test_missing_matplotlib_raises_a_curlopt_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(CurloptError, match="matplotlib"):
        P.plot_study(study_groups(), tmp_path)


def test_figure_modules_import_without_matplotlib_and_export_what_they_list():
    code = ("import sys\nimport curlopt.experiments.outputs.figures.plots, curlopt.experiments.outputs.summary\n"
            "import curlopt.experiments.outputs.figures.curves, curlopt.experiments.outputs.figures.frontier\n"
            "import curlopt.experiments.outputs.figures.epochs\n"
            "assert not [m for m in sys.modules if m == 'matplotlib' or m.startswith('matplotlib.')]")
    subprocess.run([sys.executable, "-c", code], check=True)
    for module in (P, S):
        assert all(hasattr(module, name) for name in module.__all__), module.__name__


@needs_matplotlib
def test_a_failed_figure_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    out = tmp_path / "figures"
    paths = P.plot_study(study_groups(), out)
    before = {path: path.read_bytes() for path in paths}

    def fail(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(Figure, "savefig", fail)
    with pytest.raises(OSError, match="disk full"):
        P.plot_study(study_groups(), out)
    assert {path: path.read_bytes() for path in paths} == before  # rendered in memory first: no 0-byte PNG
    assert sorted(path.name for path in out.iterdir()) == sorted(path.name for path in paths)


def test_frontier_survives_seeds_that_all_end_at_the_same_value(tmp_path):
    # np.mean([0.1] * 3) = 0.10000000000000002 > 0.1 = the degenerate interval's ends: a bar of length -1e-17.
    assert np.mean([0.1] * 3) != 0.1
    same = group("PS-CURL (K_ε=1)", [make_trace(s, 0.1, [-0.2, -0.3]) for s in range(3)], varied={"tightness_constant": 1})
    from curlopt.experiments.outputs.figures.plots import plot_study

    paths = plot_study([same], tmp_path)
    assert any(path.name.endswith("-frontier.png") and path.stat().st_size > 0 for path in paths)


def test_unreached_states_column_by_hand(tmp_path):
    def with_unreached(seed, counts):
        trace = make_trace(seed, 0.2, [-0.1])
        trace.epochs = [EpochRecord(i, 1 + i, 1, 0.1, "tight", "optimal", unreached=c) for i, c in enumerate(counts)]
        return trace

    # seed 0: epochs with 2, 4 and one without a count -> 3; seed 1: 1, 1 -> 1; mean over seeds 2.
    runs = group("UC-CURL", [with_unreached(0, [2, 4, None]), with_unreached(1, [1, 1])])
    none = group("Primal-dual", [with_unreached(0, [None, None])], algorithm="primal-dual")
    _, rows = read_csv(S.write_study_summary([runs, none], tmp_path)[0])
    assert float(rows[0]["unreached_states"]) == 2.0
    assert rows[1]["unreached_states"] in ("", "nan")

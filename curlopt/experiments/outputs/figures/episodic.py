"""An episodic study's figures, per setting (model): the cumulative regret against episodes, and the
regret–strong-violation frontier.

``<setting>-regret.png``
    R(k) = Σ_{j<=k} f(λ*) − f(λ^{π_j}) against k (log–log where positive), one line per configuration: the mean
    over seeds, and a band from the smallest to the largest run (every seed's curve inside it).
``<setting>-frontier.png``
    Each configuration's mean total regret against its mean strong violation Σ_k max_m (g_m(ζ^{π_k}))_+, with
    the 95% bootstrap intervals of both means (the summary's) as error bars: the lower left is better.

Every PNG records the SHA-256 of ``summary.csv`` (``metadata``) as the infinite-horizon figures do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..episodic_summary import EpisodicRuns
from .style import MARKERS, PALETTE, load_matplotlib, save_png

__all__ = ["plot_episodic_study", "regret_figure", "frontier_figure"]


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in text)


def regret_figure(groups: Sequence[EpisodicRuns], setting: str) -> Any:
    """The cumulative regret of each configuration on ``setting`` against the episode index."""
    Figure, FigureCanvasAgg = load_matplotlib()
    fig = Figure(figsize=(7.5, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    positive = True
    for i, group in enumerate(groups):
        curves = np.array([np.cumsum(run.columns["regret"]) for run in group.runs])
        k = np.arange(1, curves.shape[1] + 1)
        mean = curves.mean(axis=0)
        color = PALETTE[i % len(PALETTE)]
        ax.plot(k, mean, color=color, lw=1.4, label=f"{group.label} ({len(group.runs)} seeds)")
        if len(group.runs) > 1:
            ax.fill_between(k, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.15, lw=0)
        positive = positive and bool(np.all(curves.min(axis=0)[k >= 10] > 0))
    ax.set_xscale("log")
    if positive:
        ax.set_yscale("log")
    else:
        ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xlabel("episode k")
    ax.set_ylabel("cumulative regret R(k)")
    ax.set_title(f"{setting}: cumulative regret (mean over seeds, band: smallest to largest run)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return fig


def frontier_figure(rows: Sequence[dict[str, Any]], setting: str) -> Any:
    """Mean regret against mean strong violation of each configuration on ``setting``, with 95% intervals."""
    Figure, FigureCanvasAgg = load_matplotlib()
    fig = Figure(figsize=(7.5, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for i, row in enumerate(rows):
        x, y = row["strong_violation_mean"], row["regret_mean"]
        xerr = _error(x, row["strong_violation_ci_low"], row["strong_violation_ci_high"])
        yerr = _error(y, row["regret_ci_low"], row["regret_ci_high"])
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=MARKERS[i % len(MARKERS)], color=PALETTE[i % len(PALETTE)],
                    ms=6, capsize=3, lw=1, label=row["label"])
    ax.set_xlabel("strong violation Σ_k max_m g_m(ζ_k)_+ (mean over seeds)")
    ax.set_ylabel("regret Σ_k f* − f(λ_k) (mean over seeds)")
    ax.set_title(f"{setting}: regret against strong violation (bars: 95% bootstrap intervals)", fontsize=9)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.legend(fontsize=7, loc="best", frameon=False)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def _error(value: float, low: float, high: float) -> Any:
    if any(v is None or not math.isfinite(v) for v in (low, high)):
        return None
    return [[max(value - low, 0.0)], [max(high - value, 0.0)]]


def plot_episodic_study(groups: Sequence[EpisodicRuns], rows: Sequence[dict[str, Any]], folder: str | Path,
                        metadata: dict[str, str] | None = None) -> list[Path]:
    """Write both figures of every setting into ``folder``; return their paths (settings in study order)."""
    folder = Path(folder)
    paths = []
    for setting in dict.fromkeys(group.setting for group in groups):
        mine = [group for group in groups if group.setting == setting and group.runs]
        if not mine:
            continue
        paths.append(save_png(regret_figure(mine, setting), folder / f"{_slug(setting)}-regret.png", metadata))
        paths.append(save_png(frontier_figure([row for row in rows if row["setting"] == setting], setting),
                              folder / f"{_slug(setting)}-frontier.png", metadata))
    return paths

"""An episodic study's summary: one row per configuration, from its run files' per-episode values.

Columns of ``summary.csv`` (one row per configuration, in study order):

``setting, algorithm, label, agent, key``  as in an infinite-horizon summary
``episodes``                               K, the episodes of every run
``seeds``                                  number of runs aggregated
``horizon``                                H, the episode length
``optimum``                                f(λ*) per episode, the known-model optimum
``regret_*``                               Σ_k f(λ*) − f(λ^{π_k}): ``_mean``, ``_std``, ``_ci_low``, ``_ci_high``
``weak_regret_*``                          K f(λ*) − K f((1/K) Σ_k λ^{π_k})
``strong_violation_*``                     Σ_k max_m (g_m(ζ^{π_k}))_+
``weak_violation_*``                       max_m (Σ_k g_m(ζ^{π_k}))_+
``violating_episode_share``                episodes with a positive violation, over all episodes of all runs
``zero_violation_share``                   share of runs whose strong violation is 0
``realised_regret_mean``                   the regret of the sampled trajectories' totals, mean over runs
``realised_violation_mean``                the strong violation of the sampled totals, mean over runs
``slope``                                  least-squares slope of log R(k) against log k, R the mean (over runs)
                                           cumulative regret, at 20 log-spaced k in the last decade [K/10, K]
                                           (NaN where R <= 0): about 0.5 for √K regret, 1 for linear
``wall_time_mean``, ``wall_time_std``      seconds per run

Every value is computed exactly on the true model from the policies played (:mod:`.episodes`). The statistics
are those of the infinite-horizon summary (:mod:`curlopt.experiments.outputs.summary`): mean, sample standard
deviation over seeds, and the 95% percentile-bootstrap interval of the mean (:func:`bootstrap_interval`).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...fileio import atomic_write_text
from .episodic_runs import EpisodicRun
from .summary import BOOTSTRAP_RESAMPLES, bootstrap_interval, mean_std, percent, significant, stat_cell

__all__ = ["EpisodicRuns", "EPISODIC_COLUMNS", "episodic_rows", "episodic_csv_text", "episodic_markdown",
           "write_episodic_summary", "last_decade_slope", "mean_cumulative_regret"]

#: the four metrics summarised with mean, std and interval
STATISTICS = ("regret", "weak_regret", "strong_violation", "weak_violation")
EPISODIC_COLUMNS = (["setting", "algorithm", "label", "agent", "key", "episodes", "seeds", "horizon", "optimum"]
                    + [f"{name}_{part}" for name in STATISTICS for part in ("mean", "std", "ci_low", "ci_high")]
                    + ["violating_episode_share", "zero_violation_share", "realised_regret_mean",
                       "realised_violation_mean", "slope", "wall_time_mean", "wall_time_std"])
#: points of the last-decade slope fit
SLOPE_POINTS = 20


@dataclass
class EpisodicRuns:
    """One configuration's finished runs (sorted by seed), and who it is."""

    setting: str
    algorithm: str
    agent: str
    label: str
    key: str
    runs: list[EpisodicRun]


def mean_cumulative_regret(runs: Sequence[EpisodicRun]) -> np.ndarray:
    """R(k), k = 1..K: the cumulative per-episode regret, averaged over the runs."""
    return np.mean([np.cumsum(run.columns["regret"]) for run in runs], axis=0)


def last_decade_slope(cumulative: np.ndarray) -> float:
    """Least-squares slope of log R(k) against log k over :data:`SLOPE_POINTS` log-spaced k in [K/10, K]; NaN
    when R(k) <= 0 at one of them or K < 10 (no decade to fit)."""
    K = int(cumulative.size)
    if K < 10:
        return math.nan
    ks = np.unique(np.geomspace(max(K // 10, 1), K, SLOPE_POINTS).astype(int))
    values = cumulative[ks - 1]
    if np.any(values <= 0):
        return math.nan
    return float(np.polyfit(np.log(ks), np.log(values), 1)[0])


def _row(group: EpisodicRuns) -> dict[str, Any]:
    runs = group.runs
    summaries = [run.summary for run in runs]
    episodes = {run.episodes for run in runs}
    if len(episodes) > 1:
        from ...errors import CurloptError

        raise CurloptError(f"the runs of {group.label} have different episode counts {sorted(episodes)}.")
    row: dict[str, Any] = {
        "setting": group.setting, "algorithm": group.algorithm, "label": group.label, "agent": group.agent,
        "key": group.key, "episodes": runs[0].episodes, "seeds": len(runs), "horizon": runs[0].meta.get("horizon"),
        "optimum": float(summaries[0]["optimum"]),
    }
    for name in STATISTICS:
        values = [float(s[name]) for s in summaries]
        row[f"{name}_mean"], row[f"{name}_std"] = mean_std(values)
        row[f"{name}_ci_low"], row[f"{name}_ci_high"] = bootstrap_interval(values)
    total = sum(run.episodes for run in runs)
    row["violating_episode_share"] = sum(int(s["violating_episodes"]) for s in summaries) / total
    row["zero_violation_share"] = sum(1 for s in summaries if float(s["strong_violation"]) == 0.0) / len(runs)
    row["realised_regret_mean"] = float(np.mean([float(s["realised_regret"]) for s in summaries]))
    row["realised_violation_mean"] = float(np.mean([float(s["realised_strong_violation"]) for s in summaries]))
    row["slope"] = last_decade_slope(mean_cumulative_regret(runs))
    row["wall_time_mean"], row["wall_time_std"] = mean_std([run.wall_time for run in runs])
    return row


def episodic_rows(groups: Sequence[EpisodicRuns]) -> list[dict[str, Any]]:
    """One row per configuration with at least one run (see the module docstring)."""
    return [_row(group) for group in groups if group.runs]


def _cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value) and column.endswith(("_std", "_ci_low", "_ci_high")):
            return ""  # one seed has no spread and no interval
        return repr(value)
    return str(value)


def episodic_csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """The text of ``summary.csv``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(EPISODIC_COLUMNS)
    for row in rows:
        writer.writerow([_cell(column, row.get(column)) for column in EPISODIC_COLUMNS])
    return buffer.getvalue()


def episodic_markdown(rows: Sequence[dict[str, Any]], title: str = "", description: str = "",
                      notes: Sequence[str] = ()) -> str:
    """``summary.md``: a table per setting (regret, weak regret, strong and weak violation, shares, slope)."""
    lines = [f"# {title}" if title else "# Episodic study", ""]
    if description:
        lines += [description, ""]
    for setting in dict.fromkeys(row["setting"] for row in rows):
        mine = [row for row in rows if row["setting"] == setting]
        first = mine[0]
        lines += [f"## {setting}", "",
                  f"H = {first['horizon']}, K = {first['episodes']:,} episodes, f(λ*) ="
                  f" {significant(first['optimum'], 4)} per episode.", "",
                  "| algorithm | seeds | regret | weak regret | strong violation | weak violation |"
                  " violating episodes | runs without violation | slope | wall s |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for row in mine:
            lines.append(
                f"| {row['label']} | {row['seeds']} | {stat_cell(row, 'regret')} | {stat_cell(row, 'weak_regret')}"
                f" | {stat_cell(row, 'strong_violation')} | {stat_cell(row, 'weak_violation')}"
                f" | {percent(row['violating_episode_share'])} | {percent(row['zero_violation_share'])}"
                f" | {significant(row['slope'], 2)} | {significant(row['wall_time_mean'], 2)} |")
        lines.append("")
    lines += ["Cells are mean ± sample standard deviation [95% bootstrap confidence interval of the mean] over"
              f" seeds (percentile bootstrap of {BOOTSTRAP_RESAMPLES:,} resamples, scipy.stats.bootstrap). Regret"
              " Σ_k f(λ*) − f(λ^{π_k}) and violations are exact per-episode values of the policies played; weak"
              " regret and weak violation are those of the mean occupancy. Slope: log–log slope of the mean"
              " cumulative regret over the last decade of episodes (0.5 for √K, 1 for linear).", ""]
    if notes:
        lines += ["Notes:", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)


def write_episodic_summary(groups: Sequence[EpisodicRuns], out: str | os.PathLike, title: str = "",
                           description: str = "", notes: Sequence[str] = ()) -> tuple[Path, Path, list[dict]]:
    """Write ``summary.csv`` and ``summary.md`` into ``out``; return their paths and the rows."""
    out = Path(out)
    rows = episodic_rows(groups)
    csv_path, md_path = out / "summary.csv", out / "summary.md"
    atomic_write_text(csv_path, episodic_csv_text(rows))
    atomic_write_text(md_path, episodic_markdown(rows, title, description, notes))
    return csv_path, md_path, rows

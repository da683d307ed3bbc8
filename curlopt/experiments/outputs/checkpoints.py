"""The mean curves of a study as a table: ``checkpoints.csv``.

The summary tables hold the final values after T steps; claims about *when* a
curve gets somewhere ("the regret is below 0.05 after 10^5 steps") need the
curves themselves. This table holds them, small enough to commit beside the
summary: one row per (configuration, checkpoint time) with the mean over seeds
of f(λ^(t)), R(t), each g_m(ζ^(t)) and C(t), and the share of seeds with
C(t) = 0.

Columns: ``setting``, ``algorithm``, ``key`` (the configuration), ``label``,
``t``, ``seeds``, ``objective_mean``, ``regret_mean``, ``g<m>_mean`` (m = 1..M),
``violation_mean``, ``zero_violation_share``. A checkpoint where some seed's
value is not finite (e.g. ln 0 before a client was first served) gets the mean
of the finite values and counts only those seeds in ``seeds``.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ...fileio import atomic_write_text
from .runs import ConfigurationRuns

__all__ = ["checkpoint_rows", "write_checkpoint_table"]


def _finite_mean(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 0 of the finite entries, and how many there were."""
    finite = np.isfinite(stack)
    count = finite.sum(axis=0)
    total = np.where(finite, stack, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan), count


def checkpoint_rows(groups: Sequence[ConfigurationRuns]) -> tuple[list[str], list[list]]:
    """The header and rows of ``checkpoints.csv`` (configurations whose runs have different times are skipped)."""
    n_constraints = max((trace.checkpoints["constraints"].shape[1] for g in groups if g is not None for trace in g.traces),
                        default=0)
    header = ["setting", "algorithm", "key", "label", "t", "seeds", "objective_mean", "regret_mean"]
    header += [f"g{m}_mean" for m in range(1, n_constraints + 1)] + ["violation_mean", "zero_violation_share"]
    rows: list[list] = []
    for group in groups:
        if group is None or not group.traces:
            continue
        times = group.traces[0].checkpoints["t"]
        if any(not np.array_equal(trace.checkpoints["t"], times) for trace in group.traces):
            continue
        columns = {name: np.stack([np.asarray(trace.checkpoints[name], dtype=float) for trace in group.traces])
                   for name in ("objective", "regret", "violation", "constraints")}
        objective, seeds = _finite_mean(columns["objective"])
        regret, _ = _finite_mean(columns["regret"])
        violation, _ = _finite_mean(columns["violation"])
        constraints, _ = _finite_mean(columns["constraints"])
        zero = (columns["violation"] <= 0.0).mean(axis=0)
        m = constraints.shape[1] if constraints.ndim == 2 else 0
        for i, t in enumerate(times):
            row = [group.setting.name, group.algorithm, group.key, group.label, int(t), int(seeds[i]),
                   objective[i], regret[i]]
            row += [constraints[i, k] for k in range(m)] + [""] * (n_constraints - m)
            row += [violation[i], zero[i]]
            rows.append(row)
    return header, rows


def write_checkpoint_table(groups: Sequence[ConfigurationRuns], out: str | os.PathLike) -> Path:
    """Write ``checkpoints.csv`` under ``out`` (floats with full precision) and return its path."""
    header, rows = checkpoint_rows(groups)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([repr(float(v)) if isinstance(v, (float, np.floating)) else v for v in row])
    path = Path(out) / "checkpoints.csv"
    atomic_write_text(path, buffer.getvalue())
    return path

"""The mean curves of a study as a table: ``checkpoints.csv``.

The summary tables hold the final values after T steps; claims about *when* a
curve gets somewhere ("the regret is below 0.05 after 10^5 steps") need the
curves themselves. This table holds them, small enough to commit beside the
summary: one row per (configuration, checkpoint time) with the mean over seeds
of f(λ^(t)), R(t), each g_m(ζ^(t)) and C(t), the share of seeds with
C(t) = 0, and the anytime share of steps played under a violating policy.

Columns: ``setting``, ``algorithm``, ``key`` (the configuration), ``label``,
``t``, ``seeds``, ``objective_mean``, ``regret_mean``, ``g<m>_mean`` (m = 1..M),
``violation_mean``, ``zero_violation_share``, ``violating_steps_mean``. A
checkpoint where some seed's value is not finite (e.g. ln 0 before a client was
first served) gets the mean of the finite values and counts only those seeds in
``seeds``.

``violating_steps_mean`` is, for each seed, the share of the steps 1..t played
under an epoch policy that violates a constraint on the true kernel (the largest
of the epoch record's exact g_m is > 0), averaged over seeds
(:func:`violating_step_shares`); epochs without an exact evaluation are left out
of both counts, and a seed with none is left out of the mean (empty when no seed
has one). At t = T it is the summary's ``violating_step_share``.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...fileio import atomic_write_text
from ..simulation.trace import Trace
from .aggregate import step_shares
from .runs import ConfigurationRuns

__all__ = ["checkpoint_rows", "write_checkpoint_table", "violating_step_shares"]


def _finite_mean(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 0 of the finite entries, and how many there were."""
    finite = np.isfinite(stack)
    count = finite.sum(axis=0)
    total = np.where(finite, stack, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan), count


def violating_step_shares(trace: Trace, times: np.ndarray) -> np.ndarray:
    """For each time t, the share of the steps 1..t played under a policy that violates on the true kernel.

    An epoch (``start``, ``length``) covers the steps ``start .. start + length - 1``; it counts as violating
    when the largest of its ``exact_constraints`` is > 0, and is left out (of both counts) when it has no exact
    evaluation (None, or a NaN among the values). NaN at a time before any evaluated step.
    """
    times = np.asarray(times, dtype=float)
    starts, lengths, flags, evaluated = [], [], [], []
    for epoch in trace.epochs:
        values = None if epoch.exact_constraints is None else np.asarray(epoch.exact_constraints, dtype=float)
        known = values is not None and not np.any(np.isnan(values))
        starts.append(float(epoch.start))
        lengths.append(float(max(int(epoch.length), 0)))
        evaluated.append(known)
        flags.append(bool(values is not None and known and values.size and np.max(values) > 0.0))
    return step_shares(times, starts, lengths, flags, evaluated)


def checkpoint_rows(groups: Sequence[ConfigurationRuns]) -> tuple[list[str], list[list]]:
    """The header and rows of ``checkpoints.csv`` (configurations whose runs have different times are skipped)."""
    runs = [group.aggregated() for group in groups if group is not None]
    n_constraints = max((int(count) for r in runs for count in r.constraint_columns), default=0)
    header = ["setting", "algorithm", "key", "label", "t", "seeds", "objective_mean", "regret_mean"]
    header += [f"g{m}_mean" for m in range(1, n_constraints + 1)] + ["violation_mean", "zero_violation_share",
                                                                      "violating_steps_mean"]
    rows: list[list] = []
    for group in groups:
        if group is None or not group.traces:
            continue
        aggregate = group.aggregated()
        if not aggregate.same_times:
            continue
        times = aggregate.times
        columns = aggregate.curves
        objective, seeds = _finite_mean(columns["objective"])
        regret, _ = _finite_mean(columns["regret"])
        violation, _ = _finite_mean(columns["violation"])
        constraints, _ = _finite_mean(columns["constraints"])
        zero = (columns["violation"] <= 0.0).mean(axis=0)
        violating_steps, _ = _finite_mean(aggregate.violating_steps)
        m = constraints.shape[1] if constraints.ndim == 2 else 0
        for i, t in enumerate(times):
            row = [group.setting.name, group.algorithm, group.key, group.label, int(t), int(seeds[i]),
                   objective[i], regret[i]]
            row += [constraints[i, k] for k in range(m)] + [""] * (n_constraints - m)
            row += [violation[i], zero[i], violating_steps[i] if np.isfinite(violating_steps[i]) else ""]
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

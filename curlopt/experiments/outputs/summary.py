"""Summary tables: one row per configuration, statistics over its seeds.

:func:`write_study_summary` writes ``summary.csv`` and ``summary.md`` for a study
(a list of :class:`~curlopt.experiments.outputs.runs.ConfigurationRuns`).

Statistics over seeds
---------------------
For each configuration, a per-seed value is taken from every run (its final
checkpoint, its epoch records), then

* ``*_mean``: the mean over seeds;
* ``*_std``: the sample standard deviation (ddof = 1); empty with one seed;
* ``*_ci_low`` / ``*_ci_high``: a 95% bootstrap confidence interval of the mean
  (:func:`scipy.stats.bootstrap`, percentile method, :data:`BOOTSTRAP_RESAMPLES`
  resamples, a fixed seed :data:`BOOTSTRAP_SEED`, so the output is
  deterministic). Empty with one seed; ``[v, v]`` when every seed gives ``v``
  (e.g. C(T) = 0 on every seed). The percentile method is used throughout
  rather than BCa: BCa is undefined when values tie and unstable with a
  handful of seeds, and one method for every cell keeps the table comparable.

``summary.csv`` columns
-----------------------
==============================  =====================================================================
``setting``                     the model the configuration ran on (its name in directories)
``algorithm``                   algorithm key in the study, e.g. ``uc-curl``
``label``                       display name with the varied options, e.g. ``UC-CURL (K_ε=3)``
``agent``                       registered agent name
``key``                         configuration key (its run directory)
``option.<name>``               one column per option varied by the study's grid (empty for a
                                configuration that does not have the option); strings as they are,
                                numbers with full precision, other values as JSON
``trigger``                     epoch trigger (the agent's own schedule for the baselines)
``backend``                     backend that solved the programs (empty for agents without one)
``steps``                       the horizon T
``seeds``                       number of runs aggregated
``optimum``                     f(λ*), the known-model optimum (empty without one)
``optimum_infeasible``          ``true`` when the setting's constraints are infeasible: ``optimum`` is then
                                the optimum without them, and the regret is measured against it
``objective_*``                 final f(λ^(T)): ``_mean``, ``_std``, ``_ci_low``, ``_ci_high``
``regret_*``                    R(T) = f(λ*) − f(λ^(T)): mean, std, interval
``g<m>_*``                      g_m(ζ^(T)), m = 1..M: mean, std, interval (empty for a setting with
                                fewer constraints; ≤ 0 is satisfied)
``violation_*``                 C(T) = max_m (g_m(ζ^(T)))_+: mean, std, interval
``zero_violation_share``        share of the seeds with C(T) = 0
``violating_runs``              number of seeds whose run ends violating (C(T) > 0)
``fallback_runs``               number of seeds whose run played a fallback policy in at least one epoch
``violating_epoch_share``       share of a run's epochs whose policy violates a constraint on the true
                                kernel (max_m of the epoch's exact g_m > 0), averaged over seeds;
                                epochs without an exact evaluation are left out (empty if none has one)
``violating_step_share``        the same with every epoch weighted by its length (the share of steps
                                played under a violating policy), averaged over seeds
``violating_checkpoint_share``  the anytime view: the share of a run's checkpoints t >= t0 = T/10
                                (:data:`ANYTIME_START_FRACTION`) with C(t) > 0, averaged over seeds; the
                                checkpoints are log-spaced, so this is a share of log-time
``anytime_zero_share``          share of the seeds with C(t) = 0 at every checkpoint t >= t0
``unreached_states``            mean number of states an epoch's plan leaves unreached (no planned
                                occupancy; the agent's ``unreached`` option decides what is played
                                there), over the epochs that record it, averaged over seeds; empty for
                                agents that plan no occupancy
``epochs_mean/_std``            number of epochs
``fallback_epochs_mean/_std``   epochs whose ε-tight program was infeasible (a fallback policy was played)
``failed_epochs_mean/_std``     epochs where the solver failed (previous or uniform policy kept)
``wall_time_mean/_std``         seconds per run (the only columns that change between two summaries of
                                the same seeds: :data:`TIME_COLUMNS`)
==============================  =====================================================================

Floats are written with full precision (``repr``; ``nan`` for a value that is
not defined, e.g. a non-finite objective), empty cells for what does not apply.
``summary.md`` shows the same numbers, one table per setting, with a legend.
Both files are written atomically by :func:`curlopt.fileio.atomic_write_text`.
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import math
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...fileio import atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace
    from .runs import ConfigurationRuns

__all__ = ["write_study_summary", "study_rows", "study_columns", "study_csv_text", "study_markdown", "bootstrap_interval",
           "epoch_violation_shares", "violating_shares", "nan_mean", "anytime_violation", "ANYTIME_START_FRACTION", "mean_unreached", "mean_std",
           "STUDY_COLUMN_DOCS", "TIME_COLUMNS", "BOOTSTRAP_RESAMPLES",
           "BOOTSTRAP_SEED", "CONFIDENCE_LEVEL"]

#: per-seed values: a list, or an array (a configuration's aggregate)
Values = Sequence[float] | np.ndarray

#: columns that measure time (differ between otherwise identical summaries)
TIME_COLUMNS = ("wall_time_mean", "wall_time_std")
#: bootstrap resamples of every confidence interval
BOOTSTRAP_RESAMPLES = 9999
#: seed of the bootstrap's random generator (each interval starts from it afresh)
BOOTSTRAP_SEED = 20240613
CONFIDENCE_LEVEL = 0.95
#: prefix of the columns of the varied options
OPTION_PREFIX = "option."
#: the anytime view looks at the checkpoints t >= t0 = ANYTIME_START_FRACTION · T: late enough that an agent had
#: time to learn (the first epochs of every agent play policies chosen from almost no data), early enough that a
#: violation which lasts for most of a run counts however it ends
ANYTIME_START_FRACTION = 0.1

STUDY_COLUMN_DOCS: dict[str, str] = {
    "setting": "the model the configuration ran on",
    "algorithm": "algorithm key in the study",
    "label": "display name with the varied options",
    "agent": "registered agent name",
    "key": "configuration key (its run directory)",
    "option.<name>": "an option varied by the study's grid",
    "trigger": "epoch trigger (the agent's own schedule for the baselines)",
    "backend": "backend that solved the programs (empty for agents without one)",
    "steps": "horizon T",
    "seeds": "number of runs aggregated",
    "optimum": "f(λ*), the known-model optimum",
    "optimum_infeasible": "the setting's constraints are infeasible: the optimum (and the regret) is without them",
    "objective": "final f(λ^(T)): mean, std, 95% bootstrap interval over seeds",
    "regret": "R(T) = f(λ*) - f(λ^(T)): mean, std, 95% bootstrap interval",
    "g<m>": "g_m(ζ^(T)) for constraint m: mean, std, 95% bootstrap interval",
    "violation": "C(T) = max_m (g_m(ζ^(T)))_+: mean, std, 95% bootstrap interval",
    "zero_violation_share": "share of seeds with C(T) = 0",
    "violating_runs": "number of seeds whose run ends with C(T) > 0",
    "fallback_runs": "number of seeds whose run played a fallback policy in some epoch",
    "violating_epoch_share": "share of epochs whose policy violates a constraint on the true kernel (mean over seeds)",
    "violating_step_share": "share of steps played under such a policy (mean over seeds)",
    "violating_checkpoint_share": "share of the checkpoints t >= T/10 with C(t) > 0 (mean over seeds)",
    "anytime_zero_share": "share of seeds with C(t) = 0 at every checkpoint t >= T/10",
    "unreached_states": "states an epoch's plan leaves unreached (mean over epochs, then over seeds)",
    "epochs": "number of epochs: mean, std",
    "fallback_epochs": "epochs whose ε-tight program was infeasible: mean, std",
    "failed_epochs": "epochs where the solver failed: mean, std",
    "wall_time": "seconds per run: mean, std",
}

_INTERVAL_STATS = ("objective", "regret")  # then g<m>, then violation
_COUNT_STATS = ("epochs", "fallback_epochs", "failed_epochs", "wall_time")
_IDENTITY = ("setting", "algorithm", "label", "agent", "key")
_RUN = ("trigger", "backend", "steps", "seeds", "optimum", "optimum_infeasible")


# -- statistics -----------------------------------------------------------------------------------------------------
def mean_std(values: Values) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1); std NaN for one value, both NaN for none."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return math.nan, math.nan
    mean = float(np.mean(array))
    std = float(np.std(array, ddof=1)) if array.size > 1 else math.nan
    return mean, std


def _bootstrap_keywords() -> dict[str, Any]:
    from scipy import stats

    generator = np.random.default_rng(BOOTSTRAP_SEED)
    # scipy >= 1.15 calls the generator ``rng``; older versions ``random_state`` (both take a Generator).
    name = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    return {name: generator}


def bootstrap_interval(values: Values) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the mean of ``values``.

    NaN, NaN for fewer than two values or a non-finite value; ``(v, v)`` when
    every value is ``v``. Deterministic: the resampling generator starts from
    :data:`BOOTSTRAP_SEED` on every call.
    """
    from scipy import stats

    array = np.asarray(values, dtype=float)
    if array.size < 2 or not np.all(np.isfinite(array)):
        return math.nan, math.nan
    if np.all(array == array[0]):
        return float(array[0]), float(array[0])
    keywords: dict[str, Any] = {"n_resamples": BOOTSTRAP_RESAMPLES}
    if array.size * BOOTSTRAP_RESAMPLES > _DIRECT_BOOTSTRAP_DRAWS:  # the same resamples, a block at a time
        keywords = {"n_resamples": 0, "bootstrap_result": SimpleNamespace(bootstrap_distribution=_resample_means(array))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.bootstrap((array,), np.mean, confidence_level=CONFIDENCE_LEVEL, method="percentile",
                                 vectorized=True, axis=-1, **keywords, **_bootstrap_keywords())
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


#: up to this many resampled values (seeds × resamples) scipy draws them at once (16 bytes each: an index and a
#: value); more seeds are resampled a block of this size at a time (:func:`_resample_means`)
_DIRECT_BOOTSTRAP_DRAWS = 2 ** 20


def _resample_means(values: np.ndarray) -> np.ndarray:
    """The means of :data:`BOOTSTRAP_RESAMPLES` bootstrap resamples of ``values``: the very resamples that
    :func:`scipy.stats.bootstrap` draws from a generator seeded with :data:`BOOTSTRAP_SEED`, a block of rows at a
    time, so a configuration of thousands of seeds does not take gigabytes (scipy draws every resample at once).

    scipy draws the (resamples × n) indices with ``Generator.integers(0, n, ...)``, which for n < 2^32 is
    Lemire's method on the generator's 32-bit words, the low half of each 64-bit output first, a word whose
    product with n has a low half below (2^32 − n) mod n rejected (numpy's ``buffered_bounded_lemire_uint32``).
    The words are drawn here from the same bit generator and filtered the same way, as one stream across the
    blocks (a block ends anywhere in a 64-bit output); each row's mean is taken as scipy takes it. The test suite
    checks the result against scipy's own.
    """
    n = values.size
    bits = np.random.default_rng(BOOTSTRAP_SEED).bit_generator
    low, shift, size = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(n)
    threshold = np.uint64((2 ** 32 - n) % n)
    rows_per_block = max(1, _DIRECT_BOOTSTRAP_DRAWS // n)
    means, queue, done = [], np.zeros(0, dtype=np.int64), 0
    while done < BOOTSTRAP_RESAMPLES:
        rows = min(rows_per_block, BOOTSTRAP_RESAMPLES - done)
        need = rows * n
        while queue.size < need:
            raw = bits.random_raw((need - queue.size) // 2 + 16)
            words = np.empty(2 * raw.size, dtype=np.uint64)
            words[0::2], words[1::2] = raw & low, raw >> shift
            product = words * size
            queue = np.concatenate([queue, (product[(product & low) >= threshold] >> shift).astype(np.int64)])
        means.append(np.mean(values[queue[:need].reshape(rows, n)], axis=-1))
        queue, done = queue[need:], done + rows
    return np.concatenate(means)


def epoch_violation_shares(trace: Trace) -> tuple[float, float]:
    """``(share of epochs, share of steps)`` whose policy violates a constraint on the true kernel.

    An epoch violates when the largest of its exact ``g_m`` (``exact_constraints``)
    is > 0; a setting without constraints never violates. Epochs without an exact
    evaluation (None, or a NaN among the values) are left out; NaN when none has one.
    """
    flags, lengths = [], []
    for epoch in trace.epochs:
        values = epoch.exact_constraints
        if values is None:
            continue
        array = np.asarray(values, dtype=float)
        if np.any(np.isnan(array)):
            continue
        flags.append(bool(array.size and np.max(array) > 0.0))
        lengths.append(max(int(epoch.length), 0))
    if not flags:
        return math.nan, math.nan
    share_epochs = float(np.mean(flags))
    total = sum(lengths)
    share_steps = float(sum(n for n, bad in zip(lengths, flags, strict=True) if bad) / total) if total > 0 else math.nan
    return share_epochs, share_steps


def violating_shares(traces: Sequence[Trace]) -> tuple[float, float]:
    """A configuration's ``violating_epoch_share`` and ``violating_step_share``: each run's
    :func:`epoch_violation_shares`, averaged over its seeds (runs without an exact evaluation left out). The one
    definition the summary, the report and the figures read."""
    shares = [epoch_violation_shares(trace) for trace in traces]
    return nan_mean([share[0] for share in shares]), nan_mean([share[1] for share in shares])


def anytime_violation(trace: Trace, start_fraction: float = ANYTIME_START_FRACTION) -> tuple[float, bool]:
    """``(share, never)`` over the checkpoints ``t >= t0 = start_fraction · T``: the share with ``C(t) > 0``, and
    whether ``C(t) = 0`` at every one of them.

    ``T`` is the run's last checkpoint. A NaN violation (a checkpoint whose costs are not defined) counts as
    not violating, as ``C(t) > 0`` is false for it. ``(NaN, True)`` when no checkpoint is at or after ``t0``
    (never the case for a run's own checkpoints, which end at T).
    """
    times = np.asarray(trace.checkpoints["t"], dtype=float)
    violation = np.asarray(trace.checkpoints["violation"], dtype=float)
    if times.size == 0:
        return math.nan, True
    late = times >= start_fraction * times[-1]
    if not np.any(late):
        return math.nan, True
    violating = violation[late] > 0.0
    return float(np.mean(violating)), not bool(np.any(violating))


def mean_unreached(trace: Trace) -> float:
    """Mean of the epochs' ``unreached`` counts (epochs that do not record one are left out; NaN if none does)."""
    counts = [count for count in (getattr(epoch, "unreached", None) for epoch in trace.epochs) if count is not None]
    return float(np.mean(counts)) if counts else math.nan


def nan_mean(values: Values) -> float:
    """The mean of the values that are not NaN (NaN when none is)."""
    array = np.asarray(values, dtype=float)
    array = array[~np.isnan(array)]
    return float(np.mean(array)) if array.size else math.nan


# -- rows -----------------------------------------------------------------------------------------------------------
def _setting_name(group: ConfigurationRuns) -> str:
    return str(getattr(group.setting, "name", group.setting))


def _groups(groups: Sequence[ConfigurationRuns | None]) -> list[ConfigurationRuns]:
    return [group for group in groups if group is not None]


def _varied_names(groups: Sequence[ConfigurationRuns]) -> list[str]:
    names: list[str] = []
    for group in groups:
        for name in group.varied:
            if name not in names:
                names.append(name)
    return names


def study_columns(n_constraints: int, varied: Sequence[str] = ()) -> list[str]:
    """The CSV header: settings with at most ``n_constraints`` constraints, the varied option names in order."""
    columns = list(_IDENTITY) + [OPTION_PREFIX + name for name in varied] + list(_RUN)
    stats = list(_INTERVAL_STATS) + [f"g{m}" for m in range(1, n_constraints + 1)] + ["violation"]
    for name in stats:
        columns += [f"{name}_mean", f"{name}_std", f"{name}_ci_low", f"{name}_ci_high"]
    columns += ["zero_violation_share", "violating_runs", "fallback_runs", "violating_epoch_share", "violating_step_share", "violating_checkpoint_share",
                "anytime_zero_share", "unreached_states"]
    for name in _COUNT_STATS:
        columns += [f"{name}_mean", f"{name}_std"]
    return columns


def _row(group: ConfigurationRuns) -> dict[str, Any]:
    runs = group.aggregated()
    steps = {int(value) for value in runs.steps}
    if len(steps) > 1:
        from ...errors import CurloptError

        raise CurloptError(f"the runs of {group.label} have different horizons {sorted(steps)}; summarise them apart.")
    seeds = runs.runs
    row: dict[str, Any] = {
        "setting": _setting_name(group),
        "algorithm": group.algorithm,
        "label": group.label,
        "agent": group.agent,
        "key": group.key,
        "trigger": runs.first_meta.get("trigger", group.options.get("trigger", "")) or "",
        "backend": runs.first_meta.get("backend", group.options.get("backend", "")) or "",
        "steps": int(runs.steps[0]) if seeds else None,
        "seeds": seeds,
        "optimum": runs.optimum_value if seeds else None,
        "optimum_infeasible": runs.optimum_infeasible,
    }
    for name, value in group.varied.items():
        row[OPTION_PREFIX + name] = value
    n_constraints = runs.constraints.shape[1] if seeds else 0
    for name, values in [(name, getattr(runs, name)) for name in _INTERVAL_STATS] + [
            (f"g{m + 1}", runs.constraints[:, m]) for m in range(n_constraints)] + [("violation", runs.violation)]:
        row[f"{name}_mean"], row[f"{name}_std"] = mean_std(values)
        row[f"{name}_ci_low"], row[f"{name}_ci_high"] = runs.interval(name)  # the frontier reads the same
    row["zero_violation_share"] = float(np.mean(runs.violation <= 0.0)) if seeds else math.nan
    row["violating_runs"] = int(np.sum(runs.violation > 0.0))
    row["fallback_runs"] = int(np.sum(runs.fallback_epochs > 0))
    row["violating_epoch_share"], row["violating_step_share"] = runs.violating_shares()
    row["violating_checkpoint_share"] = nan_mean(runs.anytime_share)
    row["anytime_zero_share"] = float(np.mean(runs.anytime_never)) if seeds else math.nan
    row["unreached_states"] = nan_mean(runs.unreached)
    for name in _COUNT_STATS:
        row[f"{name}_mean"], row[f"{name}_std"] = mean_std(getattr(runs, name))
    row["_constraints"] = n_constraints
    row["_varied"] = list(group.varied)
    return row


def study_rows(groups: Sequence[ConfigurationRuns]) -> list[dict[str, Any]]:
    """One row per configuration, in the given order, with the columns of :func:`study_columns`.

    Rows also carry two private keys, ``_constraints`` (M of the setting) and
    ``_varied`` (the configuration's varied option names), used by the writers.
    """
    return [_row(group) for group in _groups(groups)]


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, np.generic):
        return _csv_value(value.item())
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except TypeError:
        return str(value)


def _study_csv_value(column: str, value: Any) -> str:
    # A statistic of one seed has no spread and no interval: an empty cell, not "nan".
    if isinstance(value, float) and math.isnan(value) and column.endswith(("_std", "_ci_low", "_ci_high")):
        return ""
    return _csv_value(value)


def study_csv_text(rows: Sequence[dict[str, Any]], groups: Sequence[ConfigurationRuns]) -> str:
    """The text of ``summary.csv`` for ``rows`` (as :func:`study_rows` gives them, private keys included): what
    :func:`write_study_summary` writes, so its hash says whether a file (or a figure) was drawn from these runs."""
    n_constraints = max((row["_constraints"] for row in rows), default=0)
    columns = study_columns(n_constraints, _varied_names(groups))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_study_csv_value(column, row.get(column)) for column in columns])
    return buffer.getvalue()


# -- Markdown -------------------------------------------------------------------------------------------------------
#: significant digits in the Markdown tables: locations (means, interval ends, the optimum) and spreads (std)
LOCATION_DIGITS = 3
SPREAD_DIGITS = 2
DASH = "–"


def significant(value: float | None, digits: int) -> str:
    """``value`` with ``digits`` significant digits, trailing zeros kept (``0.0410``, ``4.47``, ``1230``).

    Plain notation for 1e-4 ≤ |value| < 1e6, scientific otherwise; ``0`` for zero, ``–`` for None or NaN.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0.0:
        return "0"
    rounded = float(f"{value:.{digits - 1}e}")  # rounding can carry into the next decade (9.996 -> 10.0)
    exponent = math.floor(math.log10(abs(rounded)))
    if not -4 <= exponent < 6:
        text = f"{rounded:.{digits - 1}e}"
        mantissa, power = text.split("e")
        return f"{mantissa}e{int(power)}"
    decimals = max(digits - 1 - exponent, 0)
    if decimals == 0:
        text = str(int(round(rounded, digits - 1 - exponent)))
    else:
        text = f"{rounded:.{decimals}f}"
    return text


def stat_cell(row: dict[str, Any], name: str) -> str:
    mean = row.get(f"{name}_mean")
    if mean is None or (isinstance(mean, float) and math.isnan(mean)) or not row["seeds"]:
        return DASH
    text = significant(mean, LOCATION_DIGITS)
    std = row.get(f"{name}_std")
    if std is None or math.isnan(std):
        return text
    text += f" ± {significant(std, SPREAD_DIGITS)}"
    low, high = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" [{significant(low, LOCATION_DIGITS)}, {significant(high, LOCATION_DIGITS)}]"
    return text


def count_cell(row: dict[str, Any], name: str) -> str:
    mean, std = row.get(f"{name}_mean"), row.get(f"{name}_std")
    if mean is None or math.isnan(mean):
        return DASH
    text = significant(mean, LOCATION_DIGITS)
    if std is not None and not math.isnan(std):
        text += f" ± {significant(std, SPREAD_DIGITS)}"
    return text


def percent(share: float | None) -> str:
    """A share as a percentage with one decimal (``0%``, ``<0.1%``, ``12.3%``, ``>99.9%``, ``100%``)."""
    if share is None or math.isnan(share):
        return DASH
    if share <= 0.0:
        return "0%"
    if share >= 1.0:
        return "100%"
    value = 100.0 * share
    if value < 0.05:
        return "<0.1%"
    if value > 99.95:
        return ">99.9%"
    return f"{value:.1f}%"


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


#: a section reference: to a page of docs/ ("docs/math.md §8") or, in labels of older trace files, to the
#: specification the project once kept outside the repository
_SOURCE = r"(?:SPEC|docs/[\w./-]+)"


def clean_label(text: str) -> str:
    """Display text without section references (``(docs/math.md §8)``, or the older external ones).

    Model labels and docstrings point readers to sections of the documentation; tables and figures
    describe settings in their own words.
    """
    text = re.sub(rf"\s*\((?:see\s+)?{_SOURCE}[^)]*§[^)]*\)", "", text or "")
    text = re.sub(rf"\s*\b{_SOURCE}\s*§\s*[\d.]+", "", text)
    return text.strip()


def _constraint_names(setting: Any) -> list[str]:
    try:
        return [clean_label(str(name)) for name in setting.constraint_names()]
    except Exception:  # names are decoration only
        return []


def _range_text(values: Sequence[int], word: str) -> str:
    distinct = sorted(set(values))
    if len(distinct) == 1:
        return plural(distinct[0], word)
    return f"{distinct[0]:,}–{distinct[-1]:,} {word}s"


def study_markdown(groups: Sequence[ConfigurationRuns], rows: Sequence[dict[str, Any]], title: str = "",
                   description: str = "", notes: Sequence[str] = ()) -> str:
    """The summary as Markdown: one table per setting (cells ``mean ± std [95% interval]``) and a legend."""
    groups = _groups(groups)
    lines = [f"# {title or 'Study'}: summary over seeds", ""]
    if description:
        lines += [description.rstrip(".") + ".", ""]
    settings: list[Any] = []
    for group in groups:
        if all(_setting_name(group) != _setting_name_of(s) for s in settings):
            settings.append(group.setting)
    max_constraints = 0
    for setting in settings:
        name = _setting_name_of(setting)
        mine = [row for row in rows if row["setting"] == name]
        if not mine:
            continue
        m = max(row["_constraints"] for row in mine)
        max_constraints = max(max_constraints, m)
        label = clean_label(getattr(setting, "label", "") or "")
        lines += [f"## {name}" + (f": {label}" if label else ""), ""]
        steps = [row["steps"] for row in mine if row["steps"] is not None]
        optimum = next((row["optimum"] for row in mine if row["optimum"] is not None), None)
        backends = sorted({row["backend"] for row in mine if row["backend"]})
        facts = []
        if steps:
            facts.append(f"T = {_range_text(steps, 'step')}")
        facts.append(f"{_range_text([row['seeds'] for row in mine], 'seed')} per configuration")
        if steps:
            facts.append(f"anytime view from t0 = T/10 = {_range_text([_anytime_start(t) for t in steps], 'step')}")
        infeasible = any(row.get("optimum_infeasible") for row in mine)
        if optimum is None:
            facts.append("no known optimum")
        elif infeasible:  # the regret column then compares with the optimum that ignores the constraints
            facts.append(f"the constraints are infeasible: the optimum without them f(λ*) ="
                         f" {significant(optimum, LOCATION_DIGITS)}, and R(T) is measured against it")
        else:
            facts.append(f"optimum f(λ*) = {significant(optimum, LOCATION_DIGITS)}")
        if backends:
            facts.append(("backend " if len(backends) == 1 else "backends ") + ", ".join(backends))
        lines.append(", ".join(facts) + ".")
        names = _constraint_names(setting)
        if names:
            lines.append("")
            lines += [f"- g_{index + 1}: {text}" for index, text in enumerate(names)]
        lines.append("")
        header = ["configuration", "seeds", "f(λ^(T))", "R(T)"] + [f"g_{k}(ζ^(T))" for k in range(1, m + 1)] + [
            "C(T)", "C(T) = 0", "violating epochs", "violating steps", "C(t) > 0 at t ≥ t0", "C(t) = 0 from t0",
            "epochs", "fallback epochs", "runs with fallbacks", "failed epochs", "wall time (s)"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for row in mine:
            seeds = row["seeds"]
            zero = DASH if not seeds else f"{round(row['zero_violation_share'] * seeds)}/{seeds}"
            cells = [row["label"].replace("|", "\\|"), str(seeds), stat_cell(row, "objective"),
                     stat_cell(row, "regret")]
            cells += [stat_cell(row, f"g{k}") if k <= row["_constraints"] else DASH for k in range(1, m + 1)]
            always = DASH if not seeds else f"{round(row['anytime_zero_share'] * seeds)}/{seeds}"
            cells += [stat_cell(row, "violation"), zero, percent(row["violating_epoch_share"]),
                      percent(row["violating_step_share"]), percent(row["violating_checkpoint_share"]), always,
                      count_cell(row, "epochs"),
                      count_cell(row, "fallback_epochs"), DASH if not seeds else f"{row['fallback_runs']}/{seeds}",
                      count_cell(row, "failed_epochs"),
                      count_cell(row, "wall_time")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if notes:
        lines += ["Notes:", ""] + [f"- {note}" for note in notes] + [""]
    lines += _legend(max_constraints)
    return "\n".join(lines)


def _anytime_start(steps: int) -> int:
    """t0 as a whole step (the first checkpoint time that counts is the first ≥ ANYTIME_START_FRACTION · T)."""
    return math.ceil(ANYTIME_START_FRACTION * steps)


def _setting_name_of(setting: Any) -> str:
    return str(getattr(setting, "name", setting))


def _legend(n_constraints: int) -> list[str]:
    lines = [
        "How to read the tables:",
        "",
        f"- Cells are mean ± sample standard deviation [95% bootstrap confidence interval of the mean] over seeds."
        f" The interval is the percentile bootstrap of {BOOTSTRAP_RESAMPLES:,} resamples (scipy.stats.bootstrap,"
        f" fixed seed {BOOTSTRAP_SEED}); when every seed gives the same value v it is [v, v]; with one seed only the"
        " value is shown. Means and interval ends have 3 significant digits, standard deviations 2.",
        "- f(λ^(T)): the objective of the average rewards after T steps; R(T) = f(λ*) − f(λ^(T)) the regret"
        " (negative when the average rewards beat the optimum, which is possible while violating a constraint).",
    ]
    if n_constraints:
        lines.append("- g_m(ζ^(T)): constraint m on the average costs after T steps (≤ 0 is satisfied);"
                     " C(T) = max_m (g_m(ζ^(T)))_+ the violation; \"C(T) = 0\": the seeds without violation, of all"
                     " seeds.")
    else:
        lines.append("- C(T) = max_m (g_m(ζ^(T)))_+, the violation (0 for a setting without constraints);"
                     " \"C(T) = 0\": the seeds without violation, of all seeds.")
    lines += [
        "- Violating epochs: the share of a run's epochs whose policy violates a constraint on the true kernel"
        " (exactly, not sampled: the largest g_m of the policy's long-run average costs is > 0), averaged over seeds;"
        " violating steps: the same share with epochs weighted by their length.",
        "- The anytime view, from t0 = T/10: \"C(t) > 0 at t ≥ t0\" is the share of a run's checkpoints t ≥ t0 where"
        " the running averages violate (C(t) > 0), averaged over seeds; the checkpoints are log-spaced, so it is a"
        " share of log-time. \"C(t) = 0 from t0\": the seeds whose running averages never violate from t0 on.",
        "- Epochs: epochs per run; fallback epochs: the ε-tight program was infeasible and a fallback policy was"
        " played; runs with fallbacks: the seeds whose run played one in at least one epoch, of all seeds;"
        " failed epochs: the solver failed and the previous (or the uniform) policy was kept;"
        " wall time: seconds per run.",
        "- summary.csv has the same numbers with full precision; its columns are documented in"
        " curlopt.experiments.outputs.summary.",
        "",
    ]
    return lines


# -- files ----------------------------------------------------------------------------------------------------------
def write_study_summary(groups: Sequence[ConfigurationRuns], out: str | os.PathLike, title: str = "",
                        description: str = "", notes: Sequence[str] = ()) -> tuple[Path, Path, list[dict[str, Any]]]:
    """Write ``summary.csv`` and ``summary.md`` of a study under ``out``.

    Parameters
    ----------
    groups : list of ConfigurationRuns
        The configurations in study order (any number of settings; a configuration
        without traces gets a row with ``seeds`` 0 and empty statistics; None
        entries are skipped).
    out : path
        Directory of the two files (created if needed).
    title, description : str
        The Markdown heading and the paragraph under it.
    notes : list of str
        Lines listed under "Notes" in the Markdown file.

    Returns
    -------
    (csv_path, md_path, rows)
        ``rows`` are dictionaries keyed by the CSV columns (:func:`study_columns`).
    """
    out = Path(out)
    groups = _groups(groups)
    rows = study_rows(groups)
    csv_path, md_path = out / "summary.csv", out / "summary.md"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(csv_path, study_csv_text(rows, groups))
    atomic_write_text(md_path, study_markdown(groups, rows, title, description, notes))
    return csv_path, md_path, [{k: v for k, v in row.items() if not k.startswith("_")} for row in rows]

"""Summary tables of a sweep: one row per (setting, algorithm), mean and std over seeds.

``summary.csv`` columns (``*_mean`` / ``*_std`` are the mean and the sample
standard deviation, ddof = 1, over the seeds; the std is 0 for a single seed):

==========================  ==================================================================
``setting``                 the model configuration (the traces' ``env``), e.g. ``queue``
``algorithm``               algorithm key, e.g. ``ps-curl-linear``
``label``                   display name, e.g. ``PS-CURL (linear)``
``agent``                   registered agent name
``trigger``                 epoch trigger (the agent's own schedule for the baselines)
``backend``                 backend that solved the programs (empty for agents without one)
``steps``                   the horizon T
``seeds``                   number of runs aggregated
``optimum``                 f(λ*), the known-model optimum
``objective_mean/_std``     final f(λ^(T))
``regret_mean/_std``        R(T) = f(λ*) − f(λ^(T))
``g<m>_mean/_std``          g_m(ζ^(T)), m = 1..M (empty for a setting with fewer constraints)
``violation_mean/_std``     C(T) = max_m (g_m(ζ^(T)))_+
``zero_violation_share``    share of the seeds with C(T) = 0
``epochs_mean/_std``        number of epochs
``fallback_epochs_mean/_std``  epochs whose ε-tight program was infeasible (policy of the program without g rows)
``failed_epochs_mean/_std``    epochs where the solver failed (previous or uniform policy kept)
``wall_time_mean/_std``     seconds per run
==========================  ==================================================================

Floats are written with full precision (``repr``), so two summaries of the
same seeds compare equal apart from the ``wall_time`` columns. ``summary.md``
shows the same numbers as ``mean ± std``, one table per setting.
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .sweep import Experiment, Task
    from .trace import Trace

__all__ = ["summary_rows", "summary_columns", "write_summary", "markdown_summary", "group_traces", "COLUMN_DOCS",
           "TIME_COLUMNS"]

#: columns that measure time (differ between otherwise identical sweeps)
TIME_COLUMNS = ("wall_time_mean", "wall_time_std")

COLUMN_DOCS: dict[str, str] = {
    "setting": "model configuration (the traces' env)",
    "algorithm": "algorithm key (agent and epoch trigger)",
    "label": "display name",
    "agent": "registered agent name",
    "trigger": "epoch trigger (the agent's own schedule for the baselines)",
    "backend": "backend that solved the programs (empty for agents without one)",
    "steps": "horizon T",
    "seeds": "number of runs aggregated",
    "optimum": "f(λ*), the known-model optimum",
    "objective": "final f(λ^(T))",
    "regret": "R(T) = f(λ*) - f(λ^(T))",
    "g<m>": "g_m(ζ^(T)) for constraint m (empty when the setting has fewer constraints)",
    "violation": "C(T) = max_m (g_m(ζ^(T)))_+",
    "zero_violation_share": "share of seeds with C(T) = 0",
    "epochs": "number of epochs",
    "fallback_epochs": "epochs whose ε-tight program was infeasible (policy from the program without g rows)",
    "failed_epochs": "epochs where the solver failed (previous or uniform policy kept)",
    "wall_time": "seconds per run",
}

_STATS = ("objective", "regret")
_TAIL_STATS = ("violation",)
_COUNT_STATS = ("epochs", "fallback_epochs", "failed_epochs", "wall_time")


def group_traces(experiment: "Experiment", traces: Sequence[tuple["Task", "Trace"]]) -> list[tuple[Any, Any, list]]:
    """``[(setting, algorithm, [(task, trace), ...]), ...]`` in the experiment's order, seeds sorted."""
    groups: dict[tuple[str, str], list] = {}
    for task, trace in traces:
        groups.setdefault((task.setting.name, task.algorithm.key), []).append((task, trace))
    ordered = []
    for setting in experiment.settings:
        for algorithm in experiment.algorithms:
            members = groups.get((setting.name, algorithm.key))
            if members:
                ordered.append((setting, algorithm, sorted(members, key=lambda item: item[0].seed)))
    return ordered


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return math.nan, math.nan
    mean = float(np.mean(array))
    std = float(np.std(array, ddof=1)) if array.size > 1 else 0.0
    return mean, std


def summary_columns(n_constraints: int) -> list[str]:
    """The CSV header for a table whose settings have at most ``n_constraints`` constraints."""
    columns = ["setting", "algorithm", "label", "agent", "trigger", "backend", "steps", "seeds", "optimum"]
    for name in _STATS:
        columns += [f"{name}_mean", f"{name}_std"]
    for m in range(1, n_constraints + 1):
        columns += [f"g{m}_mean", f"g{m}_std"]
    columns += ["violation_mean", "violation_std", "zero_violation_share"]
    for name in _COUNT_STATS:
        columns += [f"{name}_mean", f"{name}_std"]
    return columns


def summary_rows(experiment: "Experiment", traces: Sequence[tuple["Task", "Trace"]]) -> list[dict[str, Any]]:
    """One row per (setting, algorithm) with the columns of :func:`summary_columns`."""
    rows = []
    for setting, algorithm, members in group_traces(experiment, traces):
        summaries = [trace.summary() for _, trace in members]
        metas = [trace.meta for _, trace in members]
        optimum = summaries[0]["optimum"]
        row: dict[str, Any] = {
            "setting": setting.name,
            "algorithm": algorithm.key,
            "label": algorithm.label,
            "agent": algorithm.agent,
            "trigger": metas[0].get("trigger", "") or "",
            "backend": metas[0].get("backend", "") or "",
            "steps": summaries[0]["steps"],
            "seeds": len(members),
            "optimum": math.nan if optimum is None else float(optimum),
        }
        for name in _STATS:
            row[f"{name}_mean"], row[f"{name}_std"] = _mean_std([s[name] for s in summaries])
        n_constraints = len(summaries[0]["constraints"])
        for m in range(n_constraints):
            row[f"g{m + 1}_mean"], row[f"g{m + 1}_std"] = _mean_std([s["constraints"][m] for s in summaries])
        row["violation_mean"], row["violation_std"] = _mean_std([s["violation"] for s in summaries])
        row["zero_violation_share"] = float(np.mean([s["violation"] <= 0.0 for s in summaries]))
        for name in _COUNT_STATS:
            row[f"{name}_mean"], row[f"{name}_std"] = _mean_std([s[name] for s in summaries])
        row["_constraints"] = n_constraints
        rows.append(row)
    return rows


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _csv_text(rows: Sequence[dict[str, Any]]) -> str:
    n_constraints = max((row["_constraints"] for row in rows), default=0)
    columns = summary_columns(n_constraints)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_value(row.get(column)) for column in columns])
    return buffer.getvalue()


def _cell(mean: float, std: float, digits: int = 4) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean:.{digits}g} ± {std:.2g}"


def markdown_summary(experiment: "Experiment", rows: Sequence[dict[str, Any]], notes: Sequence[str] = (),
                     constraint_names: dict[str, list[str]] | None = None) -> str:
    """The summary as Markdown: one table per setting, cells ``mean ± std`` over seeds."""
    lines = [f"# {experiment.name}: summary over seeds", ""]
    if experiment.description:
        lines += [experiment.description + ".", ""]
    for setting in experiment.settings:
        mine = [row for row in rows if row["setting"] == setting.name]
        if not mine:
            continue
        first = mine[0]
        m = first["_constraints"]
        lines += [f"## {setting.name}" + (f": {setting.label}" if setting.label else ""), ""]
        lines.append(f"T = {first['steps']:,}, optimum f(λ*) = {first['optimum']:.6g}, backend {first['backend'] or '-'}.")
        names = (constraint_names or {}).get(setting.name) or []
        for index, name in enumerate(names):
            lines.append(f"g_{index + 1}: {name}.")
        lines.append("")
        header = ["algorithm", "seeds", "f(λ^(T))", "R(T)"] + [f"g_{k}(ζ^(T))" for k in range(1, m + 1)] + [
            "C(T)", "C(T) = 0", "epochs", "fallback epochs", "wall time (s)"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for row in mine:
            cells = [row["label"], str(row["seeds"]), _cell(row["objective_mean"], row["objective_std"]),
                     _cell(row["regret_mean"], row["regret_std"])]
            cells += [_cell(row[f"g{k}_mean"], row[f"g{k}_std"]) for k in range(1, m + 1)]
            cells += [_cell(row["violation_mean"], row["violation_std"]), f"{row['zero_violation_share']:.0%}",
                      _cell(row["epochs_mean"], row["epochs_std"], 4), _cell(row["fallback_epochs_mean"], row["fallback_epochs_std"], 3),
                      _cell(row["wall_time_mean"], row["wall_time_std"], 3)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if notes:
        lines += ["Notes:", ""] + [f"- {note}" for note in notes] + [""]
    lines += [
        "Cells are mean ± sample standard deviation over seeds. f(λ^(T)) is the objective of the empirical average",
        "rewards after T steps, R(T) = f(λ*) − f(λ^(T)), g_m(ζ^(T)) the constraint functions of the empirical average",
        "costs (≤ 0 is satisfied), C(T) = max_m (g_m(ζ^(T)))_+ the violation and \"C(T) = 0\" the share of seeds without",
        "violation. Fallback epochs: the ε-tight program was infeasible and the program without constraints was solved.",
        "The columns of summary.csv are documented in curlopt.experiments.summary.",
        "",
    ]
    return "\n".join(lines)


def _write_text(path: Path, text: str) -> None:
    """Atomic write (temporary file, then rename)."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_summary(experiment: "Experiment", traces: Sequence[tuple["Task", "Trace"]], out: str | os.PathLike,
                  notes: Sequence[str] = ()) -> tuple[Path, Path, list[dict[str, Any]]]:
    """Write ``summary.csv`` and ``summary.md`` under ``out``; return their paths and the rows."""
    out = Path(out)
    rows = summary_rows(experiment, traces)
    names: dict[str, list[str]] = {}
    for setting in experiment.settings:
        try:
            names[setting.name] = setting.constraint_names()
        except Exception:  # pragma: no cover - names are decoration only
            names[setting.name] = []
    csv_path, md_path = out / "summary.csv", out / "summary.md"
    _write_text(csv_path, _csv_text(rows))
    _write_text(md_path, markdown_summary(experiment, rows, notes, names))
    return csv_path, md_path, [{k: v for k, v in row.items() if not k.startswith("_")} for row in rows]

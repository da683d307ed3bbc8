"""Grouped tables of the two scale studies (scale-support, scale-min-epoch-length), from their committed summaries.

Each study's summary.csv has one row per model (setting) and configuration: the mean, standard deviation and 95%
bootstrap interval over its seeds. This script groups the models into design and validation sets (the setting
names start with ``design-`` or ``validation-``) and model families (queue, scheduler, random), and prints, per
group and agent:

- the mean R(T) and C(T) of each choice: the mean over the group's models of the per-model means, and an
  interval mean ± 1.96 SE with SE = sqrt(Σ_i sd_i² / n_i) / k over the k models (the seeds' spread, the models
  held fixed: not an interval over models);
- the difference against the reference choice (support "model", min_epoch_length 1), with the same interval
  computed from both choices' spreads (the runs of the two choices are taken as independent);
- on how many models the difference's per-model interval lies above zero, contains it, or lies below it.

So every number quoted from these studies comes from a committed file::

    python studies/scale_tables.py                 # both studies, Markdown on stdout
    python studies/scale_tables.py scale-support   # one
    python studies/scale_tables.py --wide          # one row per model group and agent, the values side by side
    python studies/scale_tables.py --dir results/studies   # from the run outputs, before publishing
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ROOT / "docs" / "studies"
#: the option compared in each study, and its reference value (the agents' default)
COMPARED = {"scale-support": ("support", "model"), "scale-min-epoch-length": ("min_epoch_length", "1")}
Z = 1.96


def _read(name: str, where: Path = STUDIES) -> list[dict[str, str]]:
    path = where / name / "summary.csv"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: publish it with bash studies/publish.sh {name}")
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _group(setting: str) -> tuple[str, str]:
    """(design | validation, queue | scheduler | random) from a setting name such as ``validation-random15-s100``."""
    split, _, rest = setting.partition("-")
    if split not in ("design", "validation"):
        raise SystemExit(f"setting {setting!r} does not start with design- or validation-")
    for family in ("queue", "scheduler", "random"):
        if rest.startswith(family):
            return split, family
    raise SystemExit(f"setting {setting!r}: unknown model family")


def _agent(row: dict[str, str]) -> str:
    radius = row.get("option.radius", "")
    base = {"ps-curl": "PS-CURL", "uc-curl": "UC-CURL", "safe-mode": "safe mode"}.get(row["algorithm"], row["algorithm"])
    return f"{base} ({radius} radius)" if radius else base


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def _pooled(rows: Iterable[dict[str, str]], name: str) -> tuple[float, float]:
    """(mean over models of the per-model means, 1.96 SE of it over seeds, the models held fixed)."""
    rows = list(rows)
    k = len(rows)
    mean = sum(float(r[f"{name}_mean"]) for r in rows) / k
    var = sum(float(r[f"{name}_std"] or 0.0) ** 2 / int(r["seeds"]) for r in rows)
    return mean, Z * math.sqrt(var) / k


def _difference(pairs: list[tuple[dict[str, str], dict[str, str]]], name: str) -> tuple[float, float, str]:
    """Mean over models of (other − reference) with 1.96 SE, and the per-model signs 'above/contains/below'."""
    k = len(pairs)
    diffs, variances = [], []
    for ref, other in pairs:
        diffs.append(float(other[f"{name}_mean"]) - float(ref[f"{name}_mean"]))
        variances.append(sum(float(r[f"{name}_std"] or 0.0) ** 2 / int(r["seeds"]) for r in (ref, other)))
    above = sum(1 for d, v in zip(diffs, variances, strict=True) if d - Z * math.sqrt(v) > 0)
    below = sum(1 for d, v in zip(diffs, variances, strict=True) if d + Z * math.sqrt(v) < 0)
    return sum(diffs) / k, Z * math.sqrt(sum(variances)) / k, f"{above}/{k - above - below}/{below}"


def _zero_runs(rows: list[dict[str, str]]) -> str:
    runs = sum(int(r["seeds"]) for r in rows)
    zero = sum(round(float(r["zero_violation_share"]) * int(r["seeds"])) for r in rows)
    return f"{zero}/{runs}"


Cells = dict[tuple[str, str, str], dict[str, dict[str, dict[str, str]]]]


def _cells(name: str, where: Path) -> tuple[str, str, list[str], Cells, list[str]]:
    """The study's option, reference value, other values, rows by (set, family, agent) → value → setting, and
    the table's opening lines."""
    option, reference = COMPARED[name]
    rows = _read(name, where)
    column = f"option.{option}"
    values: list[str] = []
    for row in rows:
        if row[column] not in values:
            values.append(row[column])
    others = [v for v in values if v != reference]
    cells: Cells = {}
    for row in rows:
        split, family = _group(row["setting"])
        cells.setdefault((split, family, _agent(row)), {}).setdefault(row[column], {})[row["setting"]] = row
    steps, seeds = {r["steps"] for r in rows}, {r["seeds"] for r in rows}
    lines = [f"### {name}: {option} (reference {reference!r})", "",
             f"T = {', '.join(f'{int(s):,}' for s in sorted(steps))}; seeds per model and configuration:"
             f" {', '.join(sorted(seeds))}. Cells: mean over the group's models of the per-model means over seeds,"
             f" ± 1.96 SE (the seeds' spread, the models held fixed). Δ = value − reference; 'Δ>0/?/Δ<0' counts the"
             f" models whose per-model Δ interval lies above zero / contains it / lies below it.", ""]
    return option, reference, others, dict(sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1]))), lines


def wide_table(name: str, where: Path = STUDIES) -> str:
    """One row per (set, model family, agent), the option's values side by side."""
    option, reference, others, cells, lines = _cells(name, where)
    values = [reference, *others]
    short = "L" if option == "min_epoch_length" else option
    header = ("| set | models | agent | " + " | ".join(f"R(T), {short} = {v}" for v in values) + " | "
              + " | ".join(f"Δ R(T), {short} = {v} [Δ>0/?/Δ<0]" for v in others)
              + f" | C(T) ({' / '.join(values)}) | runs with C(T) = 0 | epochs | wall time (s) |")
    lines += [header, "|---|---|---|" + "---:|" * (len(values) + len(others) + 4)]
    for (split, family, agent), by_value in cells.items():
        ref_rows = by_value[reference]
        settings = sorted(ref_rows)
        regret, diffs, violation, zero, epochs, wall = [], [], [], [], [], []
        for value in values:
            members = [by_value[value][s] for s in settings]
            r_mean, r_half = _pooled(members, "regret")
            c_mean, c_half = _pooled(members, "violation")
            regret.append(f"{_fmt(r_mean)} ± {_fmt(r_half)}")
            violation.append(_fmt(c_mean) if c_half == 0 else f"{_fmt(c_mean)} ± {_fmt(c_half)}")
            zero.append(_zero_runs(members))
            epochs.append(f"{sum(float(r['epochs_mean']) for r in members) / len(members):,.0f}")
            wall.append(f"{sum(float(r['wall_time_mean']) for r in members) / len(members):.2f}")
            if value != reference:
                d, h, signs = _difference([(ref_rows[s], by_value[value][s]) for s in settings], "regret")
                diffs.append(f"{_fmt(d)} ± {_fmt(h)} [{signs}]")
        lines.append(f"| {split} | {family} ({len(settings)}) | {agent} | " + " | ".join(regret) + " | "
                     + " | ".join(diffs) + f" | {' / '.join(violation)} | {' / '.join(zero)} | {' / '.join(epochs)} |"
                     f" {' / '.join(wall)} |")
    return "\n".join(lines) + "\n"


def table(name: str, where: Path = STUDIES) -> str:
    """One row per (set, model family, agent, value of the option)."""
    option, reference, others, cells, lines = _cells(name, where)
    header = (f"| set | models | agent | {option} | R(T) | Δ R(T) | Δ>0/?/Δ<0 | C(T) | Δ C(T) | runs with C(T) = 0 |"
              " epochs | wall time (s) |")
    lines += [header, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (split, family, agent), by_value in cells.items():
        ref_rows = by_value.get(reference, {})
        for value in [reference, *others]:
            group = by_value.get(value, {})
            if not group:
                continue
            settings = sorted(group)
            members = [group[s] for s in settings]
            r_mean, r_half = _pooled(members, "regret")
            c_mean, c_half = _pooled(members, "violation")
            epochs = sum(float(r["epochs_mean"]) for r in members) / len(members)
            wall = sum(float(r["wall_time_mean"]) for r in members) / len(members)
            if value == reference:
                dr = dc = signs = "–"
            else:
                pairs = [(ref_rows[s], group[s]) for s in settings if s in ref_rows]
                d, h, signs = _difference(pairs, "regret")
                dr = f"{_fmt(d)} ± {_fmt(h)}"
                d, h, _ = _difference(pairs, "violation")
                dc = f"{_fmt(d)} ± {_fmt(h)}"
            lines.append(f"| {split} | {family} ({len(members)}) | {agent} | {value} | {_fmt(r_mean)} ± {_fmt(r_half)} |"
                         f" {dr} | {signs} | {_fmt(c_mean)} ± {_fmt(c_half)} | {dc} | {_zero_runs(members)} |"
                         f" {epochs:,.0f} | {wall:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(COMPARED), help="studies (default: both)")
    parser.add_argument("--dir", type=Path, default=STUDIES,
                        help="where the studies' folders are (default docs/studies; results/studies before publishing)")
    parser.add_argument("--wide", action="store_true", help="one row per model group and agent, the values side by side")
    args = parser.parse_args(argv)
    for name in args.names:
        if name not in COMPARED:
            raise SystemExit(f"unknown study {name!r}: one of {', '.join(COMPARED)}")
        print((wide_table if args.wide else table)(name, args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The tables of docs/reproduction.md and docs/safe-mode.md, generated from the committed study summaries.

Those pages quote the shipped studies through blocks between markers::

    <!-- table: NAME [time T1,T2,...] -->
    ... generated ...
    <!-- end table -->

``NAME`` is a folder under docs/studies/ (its summary.csv; with ``time``, also its checkpoints.csv for the mean
regret and violation at the listed times; with ``pooled``, one row per configuration over all the study's
models; with ``pooled anytime``, the same with the anytime columns). This script rewrites every block from those files::

    python studies/tables.py            # rewrite the blocks in the pages
    python studies/tables.py --check    # exit 1 if a block differs from what the files give (the test suite runs this)

So every number in those tables comes from a committed output, and a stale table fails a test.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "reproduction.md", ROOT / "docs" / "safe-mode.md")
STUDIES = ROOT / "docs" / "studies"
BLOCK = re.compile(r"(<!-- table: (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- end table -->)", re.S)


def _number(value: str, digits: int = 3) -> str:
    if value in ("", None):
        return "–"
    x = float(value)
    if not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def _count(value: str) -> str:
    """A mean count: whole numbers with thousands separators, one decimal below 100."""
    if value in ("", None) or not math.isfinite(float(value)):
        return "–"
    x = float(value)
    return f"{x:,.0f}" if x >= 100 or x == int(x) else f"{x:.1f}"


def _interval(row: dict[str, str], name: str) -> str:
    mean = _number(row[f"{name}_mean"])
    low, high = row.get(f"{name}_ci_low", ""), row.get(f"{name}_ci_high", "")
    if low == "" or high == "":
        return mean
    return f"{mean} [{_number(low, 2)}, {_number(high, 2)}]"


def _read(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise SystemExit(f"{path.relative_to(ROOT)} is missing: publish it with bash studies/publish.sh {path.parent.name}")
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def summary_table(name: str) -> str:
    """Per configuration: seeds, R(T) and C(T) with intervals, seeds without violation, violating epochs, epochs."""
    rows = _read(STUDIES / name / "summary.csv")
    lines = ["| setting | configuration | seeds | T | R(T) [95% CI] | C(T) [95% CI] | C(T) = 0 | violating epochs | unreached states | epochs | fallback epochs |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        seeds = int(row["seeds"])
        zero = round(float(row["zero_violation_share"]) * seeds) if seeds else 0
        lines.append(
            f"| {row['setting']} | {row['label']} | {seeds} | {int(row['steps']):,} | {_interval(row, 'regret')} |"
            f" {_interval(row, 'violation')} | {zero}/{seeds} | {float(row['violating_epoch_share']):.0%} |"
            f" {_count(row.get('unreached_states', ''))} |"
            f" {_count(row['epochs_mean'])} | {_count(row['fallback_epochs_mean'])} |"
        )
    return "\n".join(lines) + "\n"


def time_table(name: str, times: list[int]) -> str:
    """Mean R(t) and C(t) of every configuration at the listed checkpoint times (the nearest checkpoint ≤ t)."""
    rows = _read(STUDIES / name / "checkpoints.csv")
    by_config: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        by_config.setdefault((row["setting"], row["label"]), []).append(row)
    header = "| setting | configuration | " + " | ".join(f"R / C at t ≈ {t:,}" for t in times) + " |"
    lines = [header, "|---|---|" + "---:|" * len(times)]
    for (setting, label), members in by_config.items():
        cells = []
        for t in times:
            before = [r for r in members if int(r["t"]) <= t]
            if not before:
                cells.append("–")
                continue
            at = max(before, key=lambda r: int(r["t"]))
            cells.append(f"{_number(at['regret_mean'])} / {_number(at['violation_mean'])} (t = {int(at['t']):,})")
        lines.append(f"| {setting} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pooled_table(name: str, anytime: bool = False) -> str:
    """Per configuration, over every model (setting) of the study: runs with C(T) = 0, mean R(T) and C(T) over
    all runs, and the models on which every seed kept C(T) = 0. With ``anytime``, also the share of steps played
    under a policy that violates on the true kernel, the share of checkpoints t >= T/10 with C(t) > 0 (both means
    over runs) and the runs with C(t) = 0 at every checkpoint from T/10 on."""
    rows = _read(STUDIES / name / "summary.csv")
    by_label: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(row)
    lines = ["| configuration | models | runs | T | runs with C(T) = 0 | models with C(T) = 0 on every seed |"
             " mean R(T) | mean C(T) | violating epochs |" + (" violating steps | C(t) > 0 at t ≥ T/10 |"
                                                             " runs with C(t) = 0 from T/10 |" if anytime else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if anytime else "")]
    for label, members in by_label.items():
        seeds = [int(r["seeds"]) for r in members]
        runs = sum(seeds)
        zero = sum(round(float(r["zero_violation_share"]) * n) for r, n in zip(members, seeds, strict=True))
        all_zero = sum(1 for r in members if float(r["zero_violation_share"]) == 1.0)

        def mean(key: str, members: list[dict[str, str]] = members, seeds: list[int] = seeds, runs: int = runs) -> float:
            return sum(float(r[key]) * n for r, n in zip(members, seeds, strict=True)) / runs

        lines.append(
            f"| {label} | {len(members)} | {runs} | {int(members[0]['steps']):,} | {zero}/{runs} ({zero / runs:.0%}) |"
            f" {all_zero}/{len(members)} | {_number(str(mean('regret_mean')))} | {_number(str(mean('violation_mean')))} |"
            f" {mean('violating_epoch_share'):.1%} |"
            + (f" {mean('violating_step_share'):.1%} | {mean('violating_checkpoint_share'):.1%} |"
               f" {sum(round(float(r['anytime_zero_share']) * n) for r, n in zip(members, seeds, strict=True))}/{runs} |"
               if anytime else "")
        )
    return "\n".join(lines) + "\n"


def render(spec: str) -> str:
    words = spec.split()
    name = words[0]
    if len(words) == 3 and words[1] == "time":
        return time_table(name, [int(t) for t in words[2].split(",")])
    if len(words) == 2 and words[1] == "pooled":
        return pooled_table(name)
    if len(words) == 3 and words[1:] == ["pooled", "anytime"]:
        return pooled_table(name, anytime=True)
    if len(words) != 1:
        raise SystemExit(f"cannot read table spec {spec!r}")
    return summary_table(name)


def rewrite(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("spec").strip()) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a table is stale; change nothing")
    args = parser.parse_args(argv)
    stale = 0
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        new = rewrite(text)
        if args.check:
            if new != text:
                print(f"{doc.relative_to(ROOT)}: a table differs from docs/studies/*: run python studies/tables.py",
                      file=sys.stderr)
                stale += 1
            continue
        doc.write_text(new, encoding="utf-8")
        print(f"rewrote {len(BLOCK.findall(text))} tables in {doc.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

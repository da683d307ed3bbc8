"""Prints the tables of docs/episodic.md ("Which episodic agent, when") from the committed summaries of the episodic
comparison studies (docs/studies/episodic-design/summary.csv and docs/studies/episodic-validation/summary.csv).

    python studies/episodic_tables.py            # both studies
    python studies/episodic_tables.py validation # one of them

Per model and agent: mean regret and mean strong violation over the seeds with their 95% bootstrap intervals, the
runs without any violation, the share of violating episodes and the last-decade log–log slope of the mean
cumulative regret; then, per agent over the study's models, the runs without violation, the mean share of
violating episodes and the regret per episode on each model (in the study's model order).
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the algorithms (study keys) in table order: each agent at its defaults, the chosen-constant variants after their agent
ORDER = ("opt-cmdp", "uc-curl", "uc-curl-chosen", "ps-curl", "optpess-lp", "optpess-lp-chosen", "dope",
         "optpess-primal-dual", "conrl", "moma", "moma-program", "triple-q")


def _rows(name: str) -> list[dict[str, str]]:
    with open(ROOT / "docs" / "studies" / f"episodic-{name}" / "summary.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _g(value: str, digits: int = 3) -> str:
    if value in ("", "nan"):
        return "–"
    number = float(value)
    if math.isnan(number):
        return "–"
    return f"{number:.{digits}g}"


def _interval(row: dict[str, str], name: str) -> str:
    return f"{_g(row[name + '_mean'])} [{_g(row[name + '_ci_low'])}, {_g(row[name + '_ci_high'])}]"


def table(name: str) -> str:
    rows = _rows(name)
    lines = []
    for setting in dict.fromkeys(row["setting"] for row in rows):
        mine = sorted((r for r in rows if r["setting"] == setting), key=lambda r: ORDER.index(r["algorithm"]))
        first = mine[0]
        lines += [f"**{setting}** (H = {first['horizon']}, K = {int(first['episodes']):,}, {first['seeds']} seeds,"
                  f" f(λ*) = {_g(first['optimum'], 4)} per episode)", "",
                  "| algorithm | regret | strong violation | runs without violation | violating episodes | slope |",
                  "|---|---:|---:|---:|---:|---:|"]
        for row in mine:
            runs = round(float(row["zero_violation_share"]) * int(row["seeds"]))
            lines.append(f"| {row['algorithm']} | {_interval(row, 'regret')} | {_interval(row, 'strong_violation')} |"
                         f" {runs}/{row['seeds']} | {100 * float(row['violating_episode_share']):.1f}% |"
                         f" {_g(row['slope'], 2)} |")
        lines.append("")
    lines += [f"**All models of the {name} study**", "",
              "| algorithm | runs without violation | violating episodes | regret per episode, each model |",
              "|---|---:|---:|---|"]
    for algorithm in ORDER:
        mine = [r for r in rows if r["algorithm"] == algorithm]
        if not mine:
            continue
        zero = sum(round(float(r["zero_violation_share"]) * int(r["seeds"])) for r in mine)
        total = sum(int(r["seeds"]) for r in mine)
        share = sum(float(r["violating_episode_share"]) for r in mine) / len(mine)
        per_episode = ", ".join(f"{float(r['regret_mean']) / int(r['episodes']):.2f}" for r in mine)
        lines.append(f"| {algorithm} | {zero}/{total} | {100 * share:.1f}% | {per_episode} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for study in sys.argv[1:] or ["design", "validation"]:
        print(f"### {study}\n")
        print(table(study))

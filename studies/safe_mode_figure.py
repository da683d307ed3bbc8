"""The frontier of docs/safe-mode.md: safe mode among the fixed-K_ε configurations on the queue.

Reads two committed summaries — docs/studies/queue-radius-tightness/summary.csv (UC-CURL with both radii
and PS-CURL, K_ε from 0.3 to 100) and docs/studies/safe-mode-queue/summary.csv (same model, T, seeds,
epochs and backend) — and draws one point per configuration at (mean R(T), mean C(T)) with 95% bootstrap
interval bars; filled markers keep C(T) = 0 on every seed. Written to
docs/studies/safe-mode-queue/safe-mode-frontier.png, with the SHA-256 of the safe-mode summary beside it
in the PNG's text (as the study runner does for its own figures)::

    python studies/safe_mode_figure.py
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXED = ROOT / "docs" / "studies" / "queue-radius-tightness" / "summary.csv"
SAFE = ROOT / "docs" / "studies" / "safe-mode-queue" / "summary.csv"
OUT = SAFE.parent / "safe-mode-frontier.png"
#: the text key the study runner uses for the summary a figure was drawn from
HASH_KEY = "curlopt-summary-sha256"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _point(row: dict[str, str]) -> tuple[float, float, list[list[float]], list[list[float]], bool]:
    r, c = float(row["regret_mean"]), float(row["violation_mean"])
    r_err = [[r - float(row["regret_ci_low"])], [float(row["regret_ci_high"]) - r]]
    c_err = [[c - float(row["violation_ci_low"])], [float(row["violation_ci_high"]) - c]]
    return r, c, r_err, c_err, float(row["zero_violation_share"]) == 1.0


def _family(row: dict[str, str]) -> str:
    if row["agent"] == "uc-curl":
        return f"UC-CURL, {row['option.radius']} radius"
    return "PS-CURL"


def _short(row: dict[str, str]) -> str:
    """E.g. ``posterior, penalty 0.3`` — the kernel and the option the study varies."""
    kernel = row["algorithm"].removeprefix("safe-")
    varied = [f"{name} {row['option.' + name]}" for name in ("penalty", "bonus") if row.get("option." + name)]
    return ", ".join([kernel, *varied])


STYLE = {"UC-CURL, analysis radius": ("#1f77b4", "o"), "UC-CURL, experiment radius": ("#ff7f0e", "s"),
         "PS-CURL": ("#2ca02c", "^")}


def draw() -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    seen: set[str] = set()
    for row in _rows(FIXED):
        family = _family(row)
        colour, marker = STYLE[family]
        r, c, r_err, c_err, safe = _point(row)
        ax.errorbar(r, c, xerr=r_err, yerr=c_err, fmt=marker, color=colour, mfc=colour if safe else "white",
                    ms=6, lw=0.8, capsize=2, label=None if family in seen else f"{family} (fixed K_ε)")
        seen.add(family)
        ax.annotate(f"{float(row['option.tightness_constant']):g}", (r, c), xytext=(4, 3), textcoords="offset points",
                    fontsize=7, color=colour)
    for i, row in enumerate(_rows(SAFE)):
        r, c, r_err, c_err, safe = _point(row)
        ax.errorbar(r, c, xerr=r_err, yerr=c_err, fmt="*", color="#d62728", mfc="#d62728" if safe else "white",
                    ms=13, lw=1.0, capsize=3)
        # staggered labels with a leader line: the safe-mode points sit close together on the C(T) = 0 line
        ax.annotate(_short(row), (r, c), xytext=(10, 18 + 14 * (i % 4)), textcoords="offset points", fontsize=8,
                    color="#d62728", arrowprops={"arrowstyle": "-", "color": "#d62728", "lw": 0.5})
    ax.plot([], [], "*", color="#d62728", ms=11, label="safe mode (K_ε = 1)")
    ax.plot([], [], "o", color="0.4", mfc="white", label="hollow: C(T) > 0 on some seed")
    ax.set_xscale("log")
    ax.set_xlabel("regret R(T) (log scale)")
    ax.set_ylabel("constraint violation C(T)")
    ax.set_title("Queue, T = 500,000, 20 seeds, linear epochs: filled = C(T) = 0 on every seed;\n"
                 "numbers are K_ε; bars are 95% bootstrap intervals over seeds", fontsize=9)
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    digest = hashlib.sha256(SAFE.read_bytes()).hexdigest()
    fig.savefig(OUT, metadata={HASH_KEY: digest})
    plt.close(fig)
    return OUT


if __name__ == "__main__":
    print(f"wrote {draw().relative_to(ROOT)}")

"""The shipped queue radius × K_ε study (studies/queue-radius-tightness.toml): its wall time on this machine.

The study as shipped is 18 configurations × 20 seeds × T = 500,000 (360 runs). By default this item runs one
seed of every configuration (18 runs, the same runs as the study's seed 0) with ``--jobs`` workers through
``curlopt sweep`` and extrapolates to the 20 seeds (runs are independent and seed-major, so the study's wall
time is close to 20 × one seed's); ``--full`` runs the whole study. The per-configuration table says where
the time goes (seconds per run, from the traces).
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from _report import load_average, table

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "studies" / "queue-radius-tightness.toml"
TARGET_MINUTES = 10.0


def _study_file(folder: Path, seeds: int | None) -> Path:
    """The shipped study, with fewer seeds when asked (everything else as shipped)."""
    text = STUDY.read_text(encoding="utf-8")
    if seeds is not None:
        shipped = tomllib.loads(text)["study"]["seeds"]
        text = text.replace(f"seeds = {shipped}", f"seeds = {seeds}", 1)
    path = folder / STUDY.name
    path.write_text(text, encoding="utf-8")
    return path


def run_item(say: Callable[[str], None], targets, jobs: int = 2, full: bool = False) -> None:
    shipped_seeds = tomllib.loads(STUDY.read_text(encoding="utf-8"))["study"]["seeds"]
    seeds = None if full else 1
    folder = Path(tempfile.mkdtemp(prefix="curlopt-study-"))
    study = _study_file(folder, seeds)
    exe = Path(sys.executable).with_name("curlopt")
    command = [str(exe) if exe.exists() else "curlopt", "sweep", str(study), "--jobs", str(jobs), "--no-progress",
               "--no-figures", "--out", str(folder / "out")]
    say(f"command: {' '.join(command)}  ({'all' if full else 'one'} of {shipped_seeds} seeds)")
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    say(f"exit code {completed.returncode}; wall time {wall:.1f} s; load average after: {load_average()}")
    if completed.returncode != 0:
        say("stderr tail:\n" + "\n".join(completed.stderr.splitlines()[-15:]))
        return
    with open(folder / "out" / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    per = [[r["label"], r["seeds"], f"{float(r['epochs_mean']):.0f}", f"{float(r['wall_time_mean']):.1f}"] for r in rows]
    total = sum(float(r["wall_time_mean"]) * int(r["seeds"]) for r in rows)
    say(table(["configuration", "seeds", "epochs/run", "s/run"], per, "lrrr"))
    say(f"sum of run times {total:.0f} s; over {jobs} workers {total / jobs:.0f} s if perfectly balanced")
    estimate = wall if full else wall * shipped_seeds
    what = "measured" if full else f"{wall:.0f} s for one seed × {shipped_seeds} seeds"
    targets.add("study", f"queue radius × K_ε study as shipped ({shipped_seeds} seeds, --jobs {jobs})",
                f"{estimate / 60:.1f} min", what, "-", f"<= {TARGET_MINUTES:.0f} min", estimate / 60 <= TARGET_MINUTES,
                f"{estimate / 60 / TARGET_MINUTES:.1f}x the target")

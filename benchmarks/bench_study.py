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


# -- the runner at scale: main-process memory and overhead against the number of runs -------------------------------
#: one measured study in a fresh process: the study file and output folder are argv[1], argv[2]
_SCALE_SCRIPT = """
import json, resource, sys, time
from curlopt.experiments.runner import run_study

started = time.perf_counter()
result = run_study(sys.argv[1], out=sys.argv[2], jobs=int(sys.argv[3]), progress=False, echo=None)
wall = time.perf_counter() - started
own = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
print(json.dumps({"runs": len(result.executed), "failed": len(result.failed), "wall": wall,
                  "vm_hwm_kib": int(status["VmHWM"].split()[0]),
                  "cpu_main": own.ru_utime + own.ru_stime, "cpu_workers": children.ru_utime + children.ru_stime,
                  "cpu_runs": getattr(result, "run_cpu_time", float("nan"))}))
"""

SCALE_TARGET_MIB = 300.0
SCALE_TARGET_OVERHEAD = 0.10


def _scale_study(folder: Path, runs: int, steps: int) -> Path:
    """A study of ``runs`` runs of T = ``steps``: PS-CURL (doubling epochs) on the queue, a grid of ``runs / 10``
    tightness constants x 10 seeds (a large study is many configurations of a few seeds each)."""
    path = folder / f"scale-{runs}.toml"
    values = ", ".join(f"{0.5 + i / 100:.2f}" for i in range(runs // 10))
    path.write_text(f"""
[study]
name = "runner-scale-{runs}"
steps = {steps}
seeds = 10
max_runs = {runs}

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"
label = "PS-CURL"

[grid]
tightness_constant = [{values}]
""", encoding="utf-8")
    return path


def measure_scale(runs: int, steps: int = 10_000, jobs: int = 2, python: str = sys.executable,
                  env: dict | None = None) -> dict:
    """Run a ``runs``-run study in a fresh process; its main process's peak memory and CPU, the workers' CPU and
    the runs' own CPU (as the runs measured it)."""
    import json
    import os

    folder = Path(tempfile.mkdtemp(prefix="curlopt-scale-"))
    study = _scale_study(folder, runs, steps)
    completed = subprocess.run([python, "-c", _SCALE_SCRIPT, str(study), str(folder / "out"), str(jobs)],
                               capture_output=True, text=True, env={**os.environ, **(env or {})})
    if completed.returncode != 0:
        raise RuntimeError("\n".join(completed.stderr.splitlines()[-15:]))
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run_scale_item(say: Callable[[str], None], targets, sizes=(200, 500, 1000), steps: int = 10_000,
                   jobs: int = 2) -> None:
    """Main-process peak memory (VmHWM) and the runner's overhead for studies of growing size.

    Overhead = (CPU of the main process + CPU of the worker processes − the runs' own CPU) / the runs' own CPU:
    everything a study costs beyond its runs (starting the pool, moving tasks and records, writing and reading
    trace files, the summary, figures and report).
    """
    rows = []
    worst_memory, worst_overhead = 0.0, 0.0
    for runs in sizes:
        m = measure_scale(runs, steps, jobs)
        overhead = (m["cpu_main"] + m["cpu_workers"] - m["cpu_runs"]) / m["cpu_runs"]
        memory = m["vm_hwm_kib"] / 1024
        worst_memory, worst_overhead = max(worst_memory, memory), max(worst_overhead, overhead)
        rows.append([f"{runs:,}", f"{m['wall']:.0f}", f"{memory:.0f}", f"{m['cpu_runs']:.0f}", f"{m['cpu_main']:.1f}",
                     f"{m['cpu_workers'] - m['cpu_runs']:.1f}", f"{100 * overhead:.1f}%"])
        say(f"  {runs} runs done (load average {load_average()})")
    say(table(["runs", "wall s", "main peak MiB", "runs CPU s", "main CPU s", "workers' other CPU s", "overhead"],
              rows, "rrrrrrr"))
    targets.add("runner-memory", f"study main process peak, {sizes[-1]:,} runs of T={steps:,}",
                f"{worst_memory:.0f} MiB", "VmHWM", "-", f"<= {SCALE_TARGET_MIB:.0f} MiB",
                worst_memory <= SCALE_TARGET_MIB, "flat in runs" if len(sizes) > 1 else "")
    targets.add("runner-overhead", "study runner overhead / runs' CPU", f"{100 * worst_overhead:.1f}%", "CPU",
                "-", f"<= {100 * SCALE_TARGET_OVERHEAD:.0f}%", worst_overhead <= SCALE_TARGET_OVERHEAD, "")


if __name__ == "__main__":  # python benchmarks/bench_study.py scale 200 500 1000
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("item", choices=["scale"])
    parser.add_argument("sizes", nargs="*", type=int, default=[200, 500, 1000])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    arguments = parser.parse_args()

    class _Print:
        def add(self, *fields) -> None:
            print("target:", " | ".join(str(f) for f in fields))

    run_scale_item(print, _Print(), tuple(arguments.sizes), arguments.steps, arguments.jobs)

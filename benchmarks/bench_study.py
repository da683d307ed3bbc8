"""The shipped queue radius × K_ε study (studies/queue-radius-tightness.toml): its wall time on this machine.

The study as shipped is 18 configurations × 20 seeds × T = 500,000 (360 runs). By default this item runs one
seed of every configuration (18 runs, the same runs as the study's seed 0) with ``--jobs`` workers through
``curlopt sweep`` and extrapolates to the 20 seeds (runs are independent and seed-major, so the study's wall
time is close to 20 × one seed's); ``--full`` runs the whole study. The per-configuration table says where
the time goes (seconds per run, from the traces).
"""

from __future__ import annotations

import csv
import json
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
#: one measured study in a fresh process: the study file, output folder and jobs are argv[1], argv[2], argv[3]
_SCALE_SCRIPT = """
import json, resource, sys, time
from curlopt.experiments.runner import run_study

started = time.perf_counter()
result = run_study(sys.argv[1], out=sys.argv[2], jobs=int(sys.argv[3]), progress=False, echo=None,
                   figures=sys.argv[4] == "1")
wall = time.perf_counter() - started
own = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
print(json.dumps({"runs": len(result.executed), "skipped": len(result.skipped), "failed": len(result.failed),
                  "wall": wall, "vm_hwm_kib": int(status["VmHWM"].split()[0]),
                  "cpu_main": own.ru_utime + own.ru_stime, "cpu_workers": children.ru_utime + children.ru_stime,
                  "cpu_runs": getattr(result, "run_cpu_time", float("nan"))}))
"""

SCALE_TARGET_MIB = 300.0
SCALE_TARGET_OVERHEAD = 0.10
#: the grid axis that makes a scale study's configurations, per agent: (option, first value, step)
SCALE_AXES = {"ps-curl": ("tightness_constant", 0.5, 0.01), "uc-curl": ("tightness_constant", 0.5, 0.01),
              "primal-dual": ("theta", 0.05, 0.0001)}
#: the scale study's default run: primal-dual with 20-step episodes (500 epochs a run at T = 10^4), about 0.11 s
#: of CPU a run on this machine, so 5,000 runs stay near 10 CPU-minutes
SCALE_AGENT, SCALE_OPTIONS = "primal-dual", {"episode_length": 20}


def _scale_study(folder: Path, runs: int, steps: int, configurations: int | None = None, agent: str = "ps-curl",
                 options: dict | None = None) -> Path:
    """A study of ``runs`` runs of T = ``steps`` on the queue: ``agent`` with ``options``, a grid of
    ``configurations`` values of one option (:data:`SCALE_AXES`; default ``runs / 10``) x ``runs / configurations``
    seeds."""
    configurations = configurations or max(1, runs // 10)
    if runs % configurations:
        raise ValueError(f"{runs} runs are not a whole number of seeds of {configurations} configurations")
    name, first, step = SCALE_AXES[agent]
    values = ", ".join(repr(round(first + i * step, 6)) for i in range(configurations))
    fixed = ("options = { " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in options.items()) + " }\n"
             if options else "")
    grid = f"\n[grid]\n{name} = [{values}]\n" if configurations > 1 else ""
    path = folder / f"scale-{runs}.toml"
    path.write_text(f"""
[study]
name = "runner-scale-{runs}"
steps = {steps}
seeds = {runs // configurations}
max_runs = {runs}

[model]
name = "queue"

[[algorithms]]
agent = "{agent}"
{fixed}{grid}""", encoding="utf-8")
    return path


def measure_scale(runs: int, steps: int = 10_000, jobs: int = 2, python: str = sys.executable,
                  env: dict | None = None, configurations: int | None = None, agent: str = "ps-curl",
                  options: dict | None = None, figures: bool = True, folder: Path | None = None) -> dict:
    """Run a ``runs``-run study in a fresh process; its main process's peak memory and CPU, the workers' CPU and
    the runs' own CPU (as the runs measured it). With ``folder`` holding the finished study already, the same
    command only writes the outputs (every run is skipped): what the outputs alone cost."""
    import os

    folder = folder or Path(tempfile.mkdtemp(prefix="curlopt-scale-"))
    study = folder / f"scale-{runs}.toml"
    if not study.exists():
        study = _scale_study(folder, runs, steps, configurations, agent, options)
    completed = subprocess.run([python, "-c", _SCALE_SCRIPT, str(study), str(folder / "out"), str(jobs),
                                "1" if figures else "0"],
                               capture_output=True, text=True, env={**os.environ, **(env or {})})
    if completed.returncode != 0:
        raise RuntimeError("\n".join(completed.stderr.splitlines()[-15:]))
    return {**json.loads(completed.stdout.strip().splitlines()[-1]), "folder": str(folder)}


def run_scale_item(say: Callable[[str], None], targets, sizes=(200, 500, 1000), steps: int = 10_000,
                   jobs: int = 2, configurations: int | None = None, agent: str = "ps-curl",
                   options: dict | None = None, figures: bool = True, outputs_again: bool = False) -> None:
    """Main-process peak memory (VmHWM) and the runner's overhead for studies of growing size.

    Overhead = (CPU of the main process + CPU of the worker processes − the runs' own CPU) / the runs' own CPU:
    everything a study costs beyond its runs (starting the pool, moving tasks and records, writing and reading
    trace files, the summary, figures and report). With ``outputs_again``, the same study is then summarised
    once more from its files (every run skipped): the outputs' own CPU and peak memory.
    """
    rows = []
    worst_memory, worst_overhead = 0.0, 0.0
    for runs in sizes:
        m = measure_scale(runs, steps, jobs, configurations=configurations, agent=agent, options=options,
                          figures=figures)
        overhead_cpu = m["cpu_main"] + m["cpu_workers"] - m["cpu_runs"]
        overhead = overhead_cpu / m["cpu_runs"]
        memory = m["vm_hwm_kib"] / 1024
        worst_memory, worst_overhead = max(worst_memory, memory), max(worst_overhead, overhead)
        count = configurations or max(1, runs // 10)
        rows.append([f"{runs:,}", f"{count:,}", f"{m['wall']:.0f}", f"{memory:.0f}", f"{m['cpu_runs']:.1f}",
                     f"{m['cpu_main']:.1f}", f"{m['cpu_workers'] - m['cpu_runs']:.1f}", f"{overhead_cpu:.1f}",
                     f"{100 * overhead:.1f}%"])
        say(f"  {runs} runs done: {json_line(m)} (load average {load_average()})")
        if outputs_again:
            again = measure_scale(runs, steps, 1, folder=Path(m["folder"]), figures=figures)
            say(f"  outputs of the {runs} runs again from their files (every run skipped): main CPU"
                f" {again['cpu_main']:.1f} s, peak {again['vm_hwm_kib'] / 1024:.0f} MiB, wall {again['wall']:.0f} s")
    say(table(["runs", "configurations", "wall s", "main peak MiB", "runs CPU s", "main CPU s",
               "workers' other CPU s", "overhead CPU s", "overhead"], rows, "rrrrrrrrr"))
    targets.add("runner-memory", f"study main process peak, {sizes[-1]:,} runs of T={steps:,}",
                f"{worst_memory:.0f} MiB", "VmHWM", "-", f"<= {SCALE_TARGET_MIB:.0f} MiB",
                worst_memory <= SCALE_TARGET_MIB, "flat in runs" if len(sizes) > 1 else "")
    targets.add("runner-overhead", "study runner overhead / runs' CPU", f"{100 * worst_overhead:.1f}%", "CPU",
                "-", f"<= {100 * SCALE_TARGET_OVERHEAD:.0f}%", worst_overhead <= SCALE_TARGET_OVERHEAD, "")


def json_line(measured: dict) -> str:
    return json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in measured.items() if k != "folder"})


def _option(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


if __name__ == "__main__":  # python benchmarks/bench_study.py scale 200 500 1000
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("item", choices=["scale"])
    parser.add_argument("sizes", nargs="*", type=int, default=[200, 500, 1000])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--configurations", type=int, default=None,
                        help="configurations of every study (default: runs / 10, i.e. 10 seeds each)")
    parser.add_argument("--agent", default=SCALE_AGENT, choices=sorted(SCALE_AXES))
    parser.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                        help=f"an agent option of every run (default for {SCALE_AGENT}: "
                             + ", ".join(f"{k}={v}" for k, v in SCALE_OPTIONS.items()) + ")")
    parser.add_argument("--no-figures", action="store_true")
    parser.add_argument("--outputs-again", action="store_true",
                        help="then write the outputs once more from the run files alone (every run skipped)")
    arguments = parser.parse_args()
    chosen = dict(_option(text) for text in arguments.option) if arguments.option is not None else (
        dict(SCALE_OPTIONS) if arguments.agent == SCALE_AGENT else {})

    class _Print:
        def add(self, *fields) -> None:
            print("target:", " | ".join(str(f) for f in fields))

    print(f"agent {arguments.agent} {chosen}, T = {arguments.steps:,}, --jobs {arguments.jobs},"
          f" load average {load_average()}", flush=True)
    run_scale_item(lambda text: print(text, flush=True), _Print(), tuple(arguments.sizes), arguments.steps,
                   arguments.jobs, arguments.configurations, arguments.agent, chosen, not arguments.no_figures,
                   arguments.outputs_again)

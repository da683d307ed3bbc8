"""The ``end-to-end`` and ``profile`` items: the full queue reproduction end to end, its memory per worker, and a
profile of its runs.

``end-to-end``
    Runs ``curlopt reproduce queue --full --jobs 2 --out <new temporary folder> --no-progress`` as a
    subprocess (figures included, nothing reused) and reports its wall time. While it runs, every
    process below it is sampled twice a second from ``/proc/<pid>/status``: ``VmHWM`` (the kernel's
    own peak resident set of the process, so nothing between samples is missed) and ``VmRSS``. Pool
    workers are the processes whose command line holds ``multiprocessing.spawn``; the resource tracker
    and the main process are reported apart. As a cross-check, ``getrusage(RUSAGE_CHILDREN).ru_maxrss``
    after the sweep is the largest peak of any waited-for descendant. Per-algorithm seconds per run are
    read from the sweep's ``summary.csv``.
``profile``
    Runs single full-scale tasks of the queue sweep (``T = 500,000``, seed 0; default UCRL-CMDP and
    PS-CURL with linear epochs) in this process under cProfile, prints the top 15 entries by cumulative
    and by total (own) time, and a breakdown of the run into the loop's parts (stepping, checkpoints,
    epoch records, the agent's plan: program update, posterior sample, backend sync, solver, result
    fill), each the cumulative time of the function that does it.
"""

from __future__ import annotations

import cProfile
import csv
import io
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _report import load_average, table

# -- end to end -------------------------------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(root: int) -> list[int]:
    tree, out, stack = _children(), [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(tree.get(pid, []))
    return out


def _status_kib(pid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
    except OSError:
        return None
    try:
        return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])
    except (KeyError, ValueError):
        return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class MemorySampler(threading.Thread):
    """Peak VmHWM / VmRSS of every process under ``root``, sampled every ``interval`` seconds."""

    def __init__(self, root: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peaks: dict[int, dict] = {}
        self.stop = threading.Event()

    def sample(self) -> None:
        for pid in _descendants(self.root):
            status = _status_kib(pid)
            if status is None:
                continue
            hwm, rss = status
            info = self.peaks.get(pid)
            if info is None:
                info = self.peaks[pid] = {"cmd": _cmdline(pid), "hwm": 0, "rss": 0}
            info["hwm"] = max(info["hwm"], hwm)
            info["rss"] = max(info["rss"], rss)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)


def row_role(pid: int, root: int, cmd: str) -> str:
    if pid == root:
        return "main (curlopt CLI)"
    if "resource_tracker" in cmd:
        return "resource tracker"
    if "multiprocessing.spawn" in cmd or "spawn_main" in cmd:
        return "pool worker"
    return "other"


def run_end_to_end(say: Callable[[str], None], targets, jobs: int = 2, keep: bool = False) -> None:
    exe = Path(sys.executable).with_name("curlopt")
    command = [str(exe) if exe.exists() else "curlopt", "reproduce", "queue", "--full", "--jobs", str(jobs),
               "--no-progress"]
    out = Path(tempfile.mkdtemp(prefix="curlopt-e2e-"))
    command += ["--out", str(out / "queue")]
    say(f"command: {' '.join(command)}")
    say(f"load average before: {load_average()}")
    started = time.perf_counter()
    with open(out / "stdout.txt", "w") as stdout, open(out / "stderr.txt", "w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        sampler = MemorySampler(process.pid)
        sampler.start()
        code = process.wait()
        sampler.stop.set()
        sampler.join()
    wall = time.perf_counter() - started
    children_maxrss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    say(f"exit code {code}; wall time {wall:.1f} s ({wall / 60:.2f} min); load average after: {load_average()}")
    text = (out / "stdout.txt").read_text()
    if code != 0:
        say("stderr tail:\n" + "\n".join((out / "stderr.txt").read_text().splitlines()[-20:]))
    for line in text.splitlines():
        if line.startswith(("queue:", "ran ")):
            say(f"  {line}")

    rows, worker_peaks = [], []
    for pid, info in sorted(sampler.peaks.items()):
        role = row_role(pid, process.pid, info["cmd"])
        if role == "pool worker":
            worker_peaks.append(info["hwm"] / 1024)
        rows.append([role, pid, f"{info['hwm'] / 1024:.0f}", f"{info['rss'] / 1024:.0f}"])
    say(table(["process", "pid", "peak RSS MiB (VmHWM)", "largest sampled RSS MiB"], rows, "lrrr"))
    say(f"cross-check: getrusage(RUSAGE_CHILDREN).ru_maxrss = {children_maxrss_mib:.0f} MiB"
        " (largest peak of any descendant of this process so far)")

    summary = out / "queue" / "summary.csv"
    if summary.exists():
        with open(summary, newline="") as handle:
            lines = list(csv.DictReader(handle))
        per = [[r["algorithm"], r["seeds"], f"{float(r['epochs_mean']):.0f}", f"{float(r['wall_time_mean']):.2f}",
                f"{float(r['wall_time_mean']) * int(r['seeds']):.0f}"] for r in lines]
        total = sum(float(r["wall_time_mean"]) * int(r["seeds"]) for r in lines)
        say("\nper algorithm (from summary.csv; seconds per run as measured inside the workers):")
        say(table(["algorithm", "seeds", "epochs/run", "s/run", "s total"], per, "lrrrr"))
        say(f"sum of run times {total:.0f} s over {jobs} workers = {total / jobs:.0f} s if perfectly balanced;"
            f" the rest of the {wall:.0f} s is start-up, planning, summary and figures")

    # the targets: the full queue reproduction in at most 5 minutes on 2 cores, at most 200 MiB per worker
    targets.add("end-to-end", f"curlopt reproduce queue --full --jobs {jobs}", f"{wall / 60:.2f} min", "-", "-",
                "<= 5 min", code == 0 and wall <= 300,
                "" if wall <= 300 else f"{wall / 60 - 5:.1f} min over")
    if worker_peaks:
        peak = max(worker_peaks)
        targets.add("end-to-end", f"peak RSS per pool worker ({len(worker_peaks)} workers, VmHWM)", f"{peak:.0f} MiB",
                    "-", "-", "<= 200 MiB", peak <= 200, "" if peak <= 200 else f"{peak - 200:.0f} MiB over")
    if keep:
        say(f"output kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)


# -- profile ----------------------------------------------------------------------------------------------------------

#: The loop's parts as (label, dotted path of the function, or the tail of a builtin's name in the profile):
#: each is measured by the cumulative time of that function. Paths missing in this version are skipped, and a
#: function reached by two paths (an inherited method) is counted once, under its first label.
PARTS = [
    ("run (total)", "curlopt.experiments.simulation.loop.run"),
    ("  optimum f(λ*) (once per run)", "curlopt.experiments.simulation.loop._optimum"),
    ("  stepping: _fast_epoch", "curlopt.experiments.simulation.loop._fast_epoch"),
    ("  checkpoints: _Recorder.epoch", "curlopt.experiments.simulation.loop._Recorder.epoch"),
    ("  epoch record: _epoch_record", "curlopt.experiments.simulation.loop._epoch_record"),
    ("    exact evaluation, remembered by policy", "curlopt.experiments.simulation.loop._ExactEvaluator.evaluate"),
    ("    stationary_occupancy (on the true P)", "curlopt.models.cmdp.stationary_occupancy"),
    ("  policy tables: _cumulative_rows", "curlopt.experiments.simulation.loop._cumulative_rows"),
    ("  (every ndarray.tolist call: uniform blocks, tables)", "'tolist' of 'numpy.ndarray' objects>"),
    ("  trigger: Agent.limits", "curlopt.agents.base.Agent.limits"),
    ("  learning: Agent.end_epoch", "curlopt.agents.base.Agent.end_epoch"),
    ("  learning: PrimalDual.end_epoch", "curlopt.agents.baselines.PrimalDual.end_epoch"),
    ("  plan: Agent.begin_epoch", "curlopt.agents.base.Agent.begin_epoch"),
    ("    posterior sample: PsCurl.sample_kernel", "curlopt.agents.curl.PsCurl.sample_kernel"),
    ("    OccupancyProgram.update", "curlopt.programs.occupancy.OccupancyProgram.update"),
    ("    JointProgram.update (optimistic, box)", "curlopt.programs.optimistic.JointProgram.update"),
    ("    OptimisticProgram.update", "curlopt.programs.optimistic.OptimisticProgram.update"),
    ("    BoxOptimisticProgram.update", "curlopt.programs.optimistic.BoxOptimisticProgram.update"),
    ("    primal-dual: PrimalDual._update", "curlopt.agents.baselines.PrimalDual._update"),
    ("    compiled.solve", "curlopt.backends.base.CompiledProgram.solve"),
    ("      highs: CompiledHighs._sync (push data)", "curlopt.backends.highs.backend.CompiledHighs._sync"),
    ("      highs: CompiledHighs._run", "curlopt.backends.highs.backend.CompiledHighs._run"),
    ("        Highs.run (the solver itself)", "highspy._core.run>"),
    ("        Highs.getInfo", "highspy._core.getInfo>"),
    ("      Highs.getSolution", "highspy._core.getSolution>"),
    ("      CompiledProgram._fill (SolveResult arrays)", "curlopt.backends.base.CompiledProgram._fill"),
    ("        policy_from_occupancy", "curlopt.programs.policy.policy_from_occupancy"),
]


def _resolve(path: str):
    import importlib

    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            return None
        return target
    return None


def _part_times(stats: pstats.Stats) -> list[tuple[str, float, int]]:
    out, seen = [], set()
    for label, path in PARTS:
        if path.startswith("curlopt."):
            code = getattr(_resolve(path), "__code__", None)
            if code is None:
                continue
            keys = [(code.co_filename, code.co_firstlineno, code.co_name)]
        else:
            keys = [k for k in stats.stats if k[0] == "~" and k[2].endswith(path)]
        keys = [k for k in keys if k in stats.stats and k not in seen]
        if keys:
            seen.update(keys)
            out.append((label, sum(stats.stats[k][3] for k in keys), sum(stats.stats[k][1] for k in keys)))
    return out


def _top(stats: pstats.Stats, key: str, count: int) -> str:
    stream = io.StringIO()
    stats.stream = stream
    stats.sort_stats(key).print_stats(count)
    lines = stream.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(line.replace(str(Path(__file__).resolve().parents[1]) + "/", "")
                     .replace(str(Path(sys.prefix)) + "/lib/", "")
                     for line in lines[start:] if line.strip())


class _solver_clock:
    """Within the block, add the solver's own run time of every solve to ``total[0]``.

    Read from each result (``SolveResult.solver_time``, which every backend fills); the public
    ``CompiledProgram.solve`` is wrapped for the block only, to see the results an agent gets.
    """

    def __init__(self, total: list[float]):
        self.total = total
        self.inner = None

    def __enter__(self):
        from curlopt.backends.base import CompiledProgram

        self.inner = inner = CompiledProgram.solve
        total = self.total

        def timed(compiled, *args, **kwargs):
            result = inner(compiled, *args, **kwargs)
            total[0] += float(result.solver_time or 0.0)
            return result

        CompiledProgram.solve = timed
        return self

    def __exit__(self, *exc):
        from curlopt.backends.base import CompiledProgram

        CompiledProgram.solve = self.inner
        return False


def run_profile(say: Callable[[str], None], targets, algorithms: list[str], steps: int = 500_000,
                seed: int = 0) -> None:
    from curlopt.experiments.presets import execute_task, plan_tasks

    tasks, _notes = plan_tasks("queue", [seed], steps, algorithms=algorithms)
    for task in tasks:
        execute_task(plan_tasks("queue", [seed], 2_000, algorithms=[task.algorithm.key])[0][0])  # warm-up imports
        solver = [0.0]
        t0 = time.perf_counter()
        with _solver_clock(solver):
            execute_task(task)
        plain = time.perf_counter() - t0
        profiler = cProfile.Profile()
        t0 = time.perf_counter()
        profiler.enable()
        trace = execute_task(task)
        profiler.disable()
        profiled = time.perf_counter() - t0
        stats = pstats.Stats(profiler)
        say(f"\n=== {task.key}: {len(trace.epochs)} epochs; {plain:.2f} s without the profiler, {profiled:.2f} s under"
            f" cProfile (load average {load_average()})")
        parts = _part_times(stats)
        total = next((t for label, t, _ in parts if label == "run (total)"), profiled)
        say(table(["part of the run (cumulative time, under cProfile)", "s", "share", "calls"],
                  [[label, f"{t:.2f}", f"{t / total:.0%}", n] for label, t, n in parts], "lrrr"))
        if solver[0] > 0:
            # A bit-identical trace needs the same calls into HiGHS, so its own run time is a floor of the run.
            say(f"the solver's own run time in the run without the profiler: {solver[0]:.2f} s of {plain:.2f} s"
                f" ({solver[0] / plain:.0%}); with identical solver calls the run cannot be more than"
                f" {plain / solver[0]:.2f}x faster")
        say("\ntop 15 by cumulative time:")
        say(_top(stats, "cumulative", 15))
        say("\ntop 15 by total (own) time:")
        say(_top(stats, "tottime", 15))

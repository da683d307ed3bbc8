"""The ``large`` item: larger models — random ergodic CMDPs at (S, A) = (100, 10) and (200, 5).

Per backend and program (the optimistic program, 2·S²·A + S·A variables, and the occupancy program, S·A
variables with S²·A kernel coefficients), in a fresh subprocess each:

compile, first solve, re-solve
    The program is built as an agent builds it (no data; the optimistic one with the experiment radius, as the
    UC-CURL run below uses), compiled once (*compile*) and solved on epoch 0's data (*first solve*, cold); then
    ``program.update`` + ``compiled.solve()`` on a few later epochs (*re-solve*, wall clock, and the solver's
    own reported time). The epoch data follow bench_resolve's convention: a uniform policy played on the true
    kernel with the doubling trigger for ``T = 200,000`` steps (the loop's own fast stepping code); the counts
    at epoch starts evenly spaced in epoch index, ε = tightness(t_e), and for the occupancy program one
    posterior sample ``Dirichlet(1 + n(s,a,·))`` per epoch. Evenly spaced epochs change much more data between
    two solves than consecutive epochs of a run do (the whole UC-CURL run below measures those).
peak memory and where a backend stops
    The subprocess runs under an address-space limit (:data:`MEMORY_LIMIT`) and a time limit per probe; after
    every stage it prints its VmHWM (the kernel's peak resident set, as bench_resolve's memory probe reads
    it). A probe that runs out of either is reported with the stage it reached: that is where the backend stops.
    A backend that stopped at (100, 10) is not tried at (200, 5), whose program is twice as large.

The whole UC-CURL run
    ``make_agent("uc-curl", model, backend=<backend>, radius="experiment", trigger="linear")`` run by
    ``curlopt.experiments.simulation.loop.run`` at (100, 10), seed 0, in a fresh subprocess, once per backend of
    :data:`RUN_BACKENDS` that is asked for: ``highs`` (the whole optimistic LP, hot-started) and ``highs-columns``
    (the same program by column generation, curlopt/backends/highs/columns.py: same optimal value, possibly another
    optimal vertex, so its trajectory differs). The target is 10^6 steps in at most 10 minutes. Each backend
    runs :data:`RUN_STEPS` steps and *extrapolates*: the epoch count at 10^6 steps from (a) the linear trigger
    simulated without solves under the run's last policy, scaled by the measured / simulated count at the
    measured horizon, and (b) a power law ``epochs ∝ t^b`` fitted to the run's own epoch starts over its second
    half; the time per epoch from the run's last half of epochs. A backend whose extrapolation is within
    :data:`REAL_RUN_FACTOR` times the target then runs the 10^6 steps for real (not with ``--quick``).

Optimistic re-solves, highs against highs-columns
    The probe above for both backends on the optimistic program at :data:`COMPARE_SIZES` ((100,10) is shared
    with the table), side by side with their ratio.

Nothing is asserted; the rows go to the targets table (INFO, and PASS/MISS for the 10-minute target).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _report import ms, table

HERE = Path(__file__).resolve().parent
SIZES = ((100, 10), (200, 5))
BACKENDS = ("highs", "highs-columns", "scipy", "cvxpy", "pyomo")
#: the backends of the UC-CURL run (each that is in the run's backend list)
RUN_BACKENDS = ("highs", "highs-columns")
#: a run whose extrapolated 10^6-step time is within this factor of the target is run for real
REAL_RUN_FACTOR = 2.0
#: sizes at which highs and highs-columns re-solve the optimistic program side by side
COMPARE_SIZES = ((100, 10), (60, 10))
PROGRAMS = ("optimistic", "occupancy")
#: address-space limit of each probe (RLIMIT_AS; 23 GiB machine shared with other jobs)
MEMORY_LIMIT = 8 * 2**30
#: epoch data: a uniform-policy run of this many steps with the doubling trigger
DATA_HORIZON = 200_000
#: the UC-CURL run: steps actually run (then extrapolated), and the horizon of the target
RUN_STEPS = 100_000
TARGET_STEPS = 1_000_000
TARGET_MINUTES = 10.0


def probe_limits(kind: str, backend: str, quick: bool) -> tuple[int, float]:
    """(re-solves, time limit in s) of one probe: few re-solves where a solve is an LP/IPM from scratch."""
    if kind == "occupancy":
        return (5, 120.0) if quick else (20, 180.0)
    if backend in ("highs", "highs-columns"):  # the same epochs for both, so that their values can be compared
        return (3, 240.0) if quick else (8, 300.0)
    return (1, 90.0) if quick else (2, 150.0)


# -- epoch data -------------------------------------------------------------------------------------------------------


def epoch_data(model, count: int, horizon: int = DATA_HORIZON, seed: int = 0):
    """``count`` epochs evenly spaced in index of a uniform-policy doubling-trigger run (bench_resolve's data).

    One pass keeps the visited pairs and next states of every step (a few MB) and the epoch start times;
    the counts at the chosen epochs are rebuilt from prefixes, so no (S, A, S) array is stored per epoch.
    """
    import bench_resolve

    from curlopt import tightness
    from curlopt.agents.curl import sample_posterior_kernel
    from curlopt.experiments.simulation.loop import ChainSimulator

    S, A = model.n_states, model.n_actions
    seq_a, seq_s, seq_k = np.random.SeedSequence(seed).spawn(3)
    chain = ChainSimulator(model.kernel, np.random.default_rng(seq_a), np.random.default_rng(seq_s))
    uniform = np.full((S, A), 1.0 / A)
    visits = np.zeros(S * A)
    t, starts, chunks = 1, [], []
    while t <= horizon:
        starts.append(t)
        pairs, nexts = chain.play(uniform, horizon - t + 1, np.maximum(1.0, visits))
        visits += np.bincount(pairs, minlength=S * A)
        chunks.append(pairs * S + nexts)
        t += pairs.size
    triples = np.concatenate(chunks)
    chosen = np.unique(np.linspace(0, len(starts) - 1, count).round().astype(int))
    rng = np.random.default_rng(seq_k)
    times, counts, epsilons, kernels = [], [], [], []
    for index in chosen:
        t_e = starts[index]
        n = np.bincount(triples[: t_e - 1], minlength=S * A * S).reshape(S, A, S).astype(float)
        times.append(t_e)
        counts.append(n)
        epsilons.append(tightness(t_e))
        kernels.append(sample_posterior_kernel(rng, 1.0 + n))
    return bench_resolve.EpochData(model.name, times, counts, epsilons, kernels, len(starts), horizon)


# -- the probe (runs in a fresh subprocess) ---------------------------------------------------------------------------


def _peak() -> int:
    """This process's peak resident set (VmHWM), bytes."""
    with open("/proc/self/status") as handle:
        return int(next(line.split()[1] for line in handle if line.startswith("VmHWM:"))) * 1024


def _emit(**fields: Any) -> None:
    print(json.dumps({**fields, "peak": _peak()}), flush=True)


def probe(kind: str, S: int, A: int, backend: str, resolves: int, budget: float) -> None:
    """Build, compile, solve once and re-solve; one JSON line per stage on stdout (read by :func:`run_probe`).

    Re-solves stop early once ``budget`` seconds of them have passed (a slow backend still reports one).
    """
    import bench_resolve

    from curlopt import OccupancyProgram, OptimisticProgram, get_backend
    from curlopt.models import random_model

    model = random_model(S, A, seed=0)
    data = epoch_data(model, resolves + 1)
    _emit(stage="data", epochs=data.total_epochs, times=data.times)
    started = time.perf_counter()
    if kind == "optimistic":
        program = OptimisticProgram(model, radius="experiment")
    else:
        program = OccupancyProgram(model, kernel=np.full((S, A, S), 1.0 / S))
    _emit(stage="program", seconds=time.perf_counter() - started, n_vars=program.n_vars,
          n_rows=program.linear.n_rows, n_params=program.linear.n_params)
    started = time.perf_counter()
    compiled = get_backend(backend).compile(program)
    _emit(stage="compile", seconds=time.perf_counter() - started)
    own = [0.0]
    inner = compiled._solve

    def timed(with_constraints):  # the solver's own time, summed over attempts (tight, then fallback)
        raw = inner(with_constraints)
        own[0] += float(raw.solver_time or 0.0)
        return raw

    compiled._solve = timed
    resolving = None
    for e in range(len(data)):
        own[0] = 0.0
        started = time.perf_counter()
        bench_resolve.update_program(kind, program, data, e)
        result = compiled.solve()
        wall = time.perf_counter() - started
        _emit(stage="first" if e == 0 else "resolve", seconds=wall, own=own[0], iterations=result.iterations,
              status=result.status.value, variant=result.program.value, objective=float(result.objective),
              rounds=getattr(compiled, "last_rounds", None), blocks=getattr(compiled, "last_blocks", None))
        resolving = resolving or time.perf_counter()
        if e > 0 and time.perf_counter() - resolving > budget:
            break
    _emit(stage="done")


# -- the parent side --------------------------------------------------------------------------------------------------


_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
sys.path.insert(0, {here!r})
import bench_large
bench_large.{call}
"""


def _child(call: str, timeout: float) -> tuple[list[dict], str, float]:
    """Run ``bench_large.<call>`` in a fresh, memory-limited interpreter: its JSON lines, why it stopped, wall."""
    code = _CHILD.format(limit=MEMORY_LIMIT, here=str(HERE), call=call)
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        out, err, why = done.stdout, done.stderr, "" if done.returncode == 0 else f"exit code {done.returncode}"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, why = "", f"time limit ({timeout:.0f} s)"
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if why.startswith("exit"):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        memory = "MemoryError" in err or "bad_alloc" in err or "Cannot allocate" in err
        why = (f"out of memory under the {MEMORY_LIMIT / 2**30:.0f} GiB address-space limit" if memory
               else why) + f" ({tail[:120]})"
    return lines, why, time.perf_counter() - started


def run_probe(kind: str, S: int, A: int, backend: str, quick: bool) -> dict:
    """One probe's figures, and where it stopped (empty when it finished)."""
    resolves, limit = probe_limits(kind, backend, quick)
    budget = min(60.0, limit / 3)
    lines, why, wall = _child(f"probe({kind!r}, {S}, {A}, {backend!r}, {resolves}, {budget})", limit)
    stages = {}
    for line in lines:
        stages.setdefault(line["stage"], []).append(line)
    reached = lines[-1]["stage"] if lines else "start"
    row = {"kind": kind, "S": S, "A": A, "backend": backend, "wall": wall, "reached": reached,
           "peak": max((line["peak"] for line in lines), default=math.nan), "stopped": ""}
    if "program" in stages:
        row.update({k: stages["program"][0][k] for k in ("n_vars", "n_rows", "n_params")})
    row["compile"] = stages["compile"][0]["seconds"] if "compile" in stages else math.nan
    row["first"] = stages["first"][0]["seconds"] if "first" in stages else math.nan
    row["first_own"] = stages["first"][0]["own"] if "first" in stages else math.nan
    again = stages.get("resolve", [])
    row["resolves"] = len(again)
    row["resolve"] = float(np.mean([r["seconds"] for r in again])) if again else math.nan
    row["resolve_own"] = float(np.mean([r["own"] for r in again])) if again else math.nan
    row["iterations"] = [r["iterations"] for r in stages.get("first", []) + again]
    row["statuses"] = sorted({r["status"] for r in stages.get("first", []) + again})
    row["objectives"] = [r["objective"] for r in stages.get("first", []) + again]
    if why:
        following = {"start": "building the model and data", "data": "building the program", "program": "compile",
                     "compile": "the first solve", "first": "re-solve", "resolve": "re-solve"}
        row["stopped"] = f"{why} during {following.get(reached, reached)}"
    return row


# -- the whole UC-CURL run --------------------------------------------------------------------------------------------


def trigger_epochs(model, policy: np.ndarray, horizons: list[int], seed: int = 1) -> list[int]:
    """Epochs the linear trigger makes by each of ``horizons`` when ``policy`` is played throughout (no solves).

    Why: the epoch count at 10^6 steps sets the run's time (one solve per epoch), and simulating the trigger
    alone costs seconds where the run would cost hours.
    """
    from curlopt.agents.triggers import LinearTrigger
    from curlopt.experiments.simulation.loop import ChainSimulator

    S, A = model.n_states, model.n_actions
    seq_a, seq_s = np.random.SeedSequence(seed).spawn(2)
    chain = ChainSimulator(model.kernel, np.random.default_rng(seq_a), np.random.default_rng(seq_s))
    trigger = LinearTrigger()
    visits, previous = np.zeros((S, A)), np.zeros((S, A))
    t, epochs, out = 1, 0, []
    for horizon in sorted(horizons):
        while t <= horizon:
            thresholds, _ = trigger.limits(visits, previous, t)
            pairs, _ = chain.play(policy, horizon - t + 1, thresholds)
            previous = np.bincount(pairs, minlength=S * A).reshape(S, A).astype(float)
            visits += previous
            t += pairs.size
            epochs += 1
        out.append(epochs)
    return out


def uc_run(S: int, A: int, steps: int, backend: str = "highs") -> None:
    """The UC-CURL run at (S, A) for ``steps`` steps; one JSON line on stdout (read by :func:`run_uc`)."""
    from curlopt.agents import make_agent
    from curlopt.envs.tabular import TabularCMDPEnv
    from curlopt.experiments.simulation.loop import run
    from curlopt.models import random_model

    model = random_model(S, A, seed=0)
    started = time.perf_counter()
    agent = make_agent("uc-curl", model, backend=backend, radius="experiment", trigger="linear")
    build = time.perf_counter() - started
    trace = run(agent, TabularCMDPEnv(model), steps, seed=0, progress=False, model=model)
    # the epoch count at the target by simulation (a run of the target's length needs none)
    simulated = trigger_epochs(model, np.asarray(agent.policy), [steps, TARGET_STEPS]) if steps < TARGET_STEPS else [0, 0]
    _emit(stage="done", backend=backend, build=build, wall=trace.wall_time, steps=steps,
          starts=[e.start for e in trace.epochs],
          solve=[e.solve_time for e in trace.epochs], iterations=[e.iterations or 0 for e in trace.epochs],
          sources=[e.source for e in trace.epochs], simulated=simulated)


def extrapolate(line: dict) -> dict:
    """The run's figures and their extrapolation to :data:`TARGET_STEPS` (see the module doc)."""
    starts, solve = np.asarray(line["starts"], float), np.asarray(line["solve"], float)
    epochs, steps = len(starts), line["steps"]
    half = slice(epochs // 2, None)
    # (a) the trigger under the last policy, scaled by how far the run's own count is from it at `steps`
    sim_here, sim_target = line["simulated"]
    by_trigger = sim_target * epochs / max(sim_here, 1)
    # (b) epochs ∝ t^b over the run's second half
    index = np.arange(1, epochs + 1, dtype=float)
    b, a = np.polyfit(np.log(starts[half]), np.log(index[half]), 1)
    by_fit = math.exp(a) * TARGET_STEPS**b
    per_epoch_plan = float(np.mean(solve[1:][epochs // 2:])) if epochs > 2 else math.nan
    other = (line["wall"] - float(solve.sum())) / epochs  # stepping, records, exact evaluation per epoch
    per_epoch = per_epoch_plan + other
    quarters = [float(np.mean(q)) for q in np.array_split(solve[1:], 4)] if epochs > 8 else []
    low, high = sorted((by_trigger, by_fit))
    fixed = line["build"] + float(solve[0])
    return {"epochs": epochs, "steps": steps, "wall": line["wall"], "build": line["build"], "first": float(solve[0]),
            "plan_mean": per_epoch_plan, "other": other, "iterations": float(np.mean(line["iterations"][1:])),
            "sim_here": sim_here, "sim_target": sim_target, "by_trigger": by_trigger, "by_fit": by_fit,
            "exponent": b, "quarters": quarters, "bound": 1 + math.sqrt(2 * 100 * 10 * TARGET_STEPS),
            "low_min": (fixed + low * per_epoch) / 60, "high_min": (fixed + high * per_epoch) / 60,
            "fallbacks": sum(s != "tight" for s in line["sources"]), "peak": line["peak"],
            "backend": line.get("backend", "highs"), "failures": sum(s in ("kept-previous", "uniform")
                                                                     for s in line["sources"])}


def run_uc(quick: bool, backend: str = "highs", steps: int | None = None, timeout: float = 900.0) -> dict:
    """The UC-CURL run in a fresh subprocess, extrapolated; ``{"stopped": why}`` when it did not finish."""
    steps = steps or (RUN_STEPS // 5 if quick else RUN_STEPS)
    lines, why, wall = _child(f"uc_run(100, 10, {steps}, {backend!r})", timeout)
    if why or not lines:
        return {"stopped": why or "no output", "steps": steps, "process": wall, "backend": backend}
    return {**extrapolate(lines[-1]), "process": wall, "stopped": ""}


# -- the item ---------------------------------------------------------------------------------------------------------


def _size_rows(say, quick: bool, backends: list[str]) -> list[dict]:
    """Every probe, in order; a backend + program that stopped at (100, 10) is not tried at (200, 5)."""
    rows, stopped = [], {}
    for S, A in SIZES:
        for kind in PROGRAMS:
            for backend in backends:
                if backend == "highs-columns" and kind != "optimistic":
                    rows.append({"kind": kind, "S": S, "A": A, "backend": backend, "skipped":
                                 "the highs path itself (highs-columns hands this program to it)"})
                    continue
                if (kind, backend) in stopped:
                    rows.append({"kind": kind, "S": S, "A": A, "backend": backend, "skipped":
                                 f"not tried: stopped at {stopped[kind, backend]}"})
                    continue
                row = run_probe(kind, S, A, backend, quick)
                rows.append(row)
                _say_probe(say, row)
                if row["stopped"]:
                    stopped[kind, backend] = f"({S},{A})"
    return rows


def _say_probe(say, row: dict) -> None:
    say(f"  {row['kind']:<10} ({row['S']},{row['A']}) {row['backend']:<6} compile {ms(row['compile'])} ms, first"
        f" {ms(row['first'])} ms, re-solve {ms(row['resolve'])} ms ({row['resolves']}), peak"
        f" {row['peak'] / 2**20:,.0f} MiB, {row['wall']:.0f} s" + (f"; STOPPED: {row['stopped']}" if row["stopped"] else ""))


def compare_rows(say, quick: bool, rows: list[dict]) -> list[dict]:
    """highs and highs-columns on the optimistic program at :data:`COMPARE_SIZES`, reusing the probes already run."""
    done = {(r["S"], r["A"], r["backend"]): r for r in rows if "skipped" not in r and r["kind"] == "optimistic"}
    out = []
    for S, A in COMPARE_SIZES:
        pair = {}
        for backend in ("highs", "highs-columns"):
            row = done.get((S, A, backend))
            if row is None:
                row = run_probe("optimistic", S, A, backend, quick)
                _say_probe(say, row)
            pair[backend] = row
        out.append({"S": S, "A": A, **pair})
    return out


def render_compare(pairs: list[dict]) -> str:
    out = []
    for p in pairs:
        h, c = p["highs"], p["highs-columns"]
        ratio = h["resolve"] / c["resolve"] if c["resolve"] and math.isfinite(c["resolve"]) else math.nan
        same = [abs(a - b) <= 1e-7 * max(1.0, abs(a)) for a, b in zip(h.get("objectives", []), c.get("objectives", []), strict=False)]
        out.append([f"({p['S']},{p['A']})", ms(h["first"]), ms(c["first"]), ms(h["resolve"]), ms(c["resolve"]),
                    f"{ratio:.1f}x", f"{h['resolves']}/{c['resolves']}",
                    f"{sum(same)}/{len(same)}" if same else "-", c["stopped"] or h["stopped"] or ""])
    return table(["(S,A)", "highs 1st ms", "columns 1st ms", "highs re-solve ms", "columns re-solve ms",
                  "speed-up", "n (highs/columns)", "same value (1e-7)", "stopped"], out, "lrrrrrrrl")


def render(rows: list[dict]) -> str:
    out = []
    for r in rows:
        if "skipped" in r:
            out.append([r["kind"], f"({r['S']},{r['A']})", r["backend"]] + ["-"] * 8 + [r["skipped"]])
            continue
        size = f"{r.get('n_vars', 0):,} / {r.get('n_rows', 0):,} / {r.get('n_params', 0):,}" if "n_vars" in r else "-"
        its = r["iterations"]
        out.append([r["kind"], f"({r['S']},{r['A']})", r["backend"], size, ms(r["compile"]), ms(r["first"]),
                    ms(r["resolve"]), ms(r["resolve_own"]), r["resolves"], f"{r['peak'] / 2**20:,.0f}",
                    "/".join(str(i) for i in its[:4]) if its else "-", r["stopped"] or ",".join(r["statuses"])])
    return table(["program", "(S,A)", "backend", "vars / rows / param entries", "compile ms", "1st solve ms",
                  "re-solve ms", "solver own ms", "n", "peak MiB", "iterations (1st/...)", "stopped / status"],
                 out, "lllrrrrrrrll")


def run_item(say: Callable[[str], None], targets, quick: bool = False, backends: list[str] | None = None) -> None:
    from curlopt.backends.registry import backend_class

    backends = [b for b in (backends or BACKENDS) if backend_class(b).is_installed()]
    say(f"random_model(S, A, seed=0); epoch data: uniform policy, doubling trigger, T = {DATA_HORIZON:,}, epochs"
        f" evenly spaced in index; each probe a fresh process under a {MEMORY_LIMIT / 2**30:.0f} GiB address-space"
        " limit and a time limit; times in ms; peak = VmHWM.")
    rows = _size_rows(say, quick, backends)
    say("")
    say(render(rows))
    for r in rows:
        if "skipped" in r:
            continue
        what = f"{r['backend']} {r['kind']} ({r['S']},{r['A']})"
        figure = (f"compile {ms(r['compile'])}, 1st {ms(r['first'])}, re-solve {ms(r['resolve'])} ms,"
                  f" {r['peak'] / 2**20:,.0f} MiB")
        targets.add("large", what, figure, "-", "-", "report", None, r["stopped"])
    if {"highs", "highs-columns"} <= set(backends):
        say("")
        say("Optimistic program, the same epoch data: highs (the whole LP) against highs-columns (column generation)")
        pairs = compare_rows(say, quick, rows)
        say(render_compare(pairs))
        for p in pairs:
            h, c = p["highs"], p["highs-columns"]
            targets.add("large", f"optimistic re-solve ({p['S']},{p['A']}): highs-columns", f"{ms(c['resolve'])} ms",
                        f"highs {ms(h['resolve'])} ms", f"{h['resolve'] / c['resolve']:.1f}x faster"
                        if c["resolve"] else "-", "report", None, c["stopped"] or h["stopped"])
    for backend in [b for b in RUN_BACKENDS if b in backends]:
        say("")
        u = run_uc(quick, backend)
        if u["stopped"]:
            say(f"UC-CURL run ({backend}) stopped: {u['stopped']}")
            targets.add("large", f"UC-CURL {backend} (100,10), 10^6 steps", "-", "-", "-",
                        f"<= {TARGET_MINUTES:g} min", False, u["stopped"])
            continue
        say(render_run(u))
        minutes = (u["low_min"], u["high_min"])
        targets.add("large", f"UC-CURL {backend} linear (100,10), 10^6 steps (EXTRAPOLATED from {u['steps']:,})",
                    f"{minutes[0]:.1f}-{minutes[1]:.1f} min", f"{u['wall']:.0f} s for {u['steps']:,} steps", "-",
                    f"<= {TARGET_MINUTES:g} min", minutes[1] <= TARGET_MINUTES,
                    f"{minutes[0] / TARGET_MINUTES:.2f}-{minutes[1] / TARGET_MINUTES:.2f}x the target")
        if quick or minutes[0] > REAL_RUN_FACTOR * TARGET_MINUTES:
            continue
        say(f"UC-CURL {backend}: the extrapolation is within {REAL_RUN_FACTOR:g}x the target, so {TARGET_STEPS:,} steps"
            " are run for real")
        real = run_uc(quick, backend, steps=TARGET_STEPS, timeout=3 * 60 * TARGET_MINUTES * REAL_RUN_FACTOR)
        if real["stopped"]:
            say(f"UC-CURL run ({backend}, {TARGET_STEPS:,} steps) stopped: {real['stopped']}")
            targets.add("large", f"UC-CURL {backend} (100,10), 10^6 steps MEASURED", "-", "-", "-",
                        f"<= {TARGET_MINUTES:g} min", False, real["stopped"])
            continue
        say(render_run(real, extrapolated=False))
        whole = (real["build"] + real["wall"]) / 60  # agent build + the run (not the process's start)
        targets.add("large", f"UC-CURL {backend} linear (100,10), 10^6 steps MEASURED",
                    f"{whole:.1f} min", f"{real['epochs']:,} epochs, process {real['process']:.0f} s", "-",
                    f"<= {TARGET_MINUTES:g} min", whole <= TARGET_MINUTES, f"{whole / TARGET_MINUTES:.2f}x the target")


def render_run(u: dict, extrapolated: bool = True) -> str:
    """The UC-CURL run's measured figures, then (unless it ran the target's steps) the extrapolation, labelled."""
    lines = [
        f"UC-CURL, {u['backend']}, radius experiment, linear trigger, (100,10), seed 0: {u['steps']:,} steps measured",
        f"  agent build (compile) {u['build']:.1f} s; run wall {u['wall']:.1f} s (process {u['process']:.0f} s);"
        f" {u['epochs']} epochs; first solve {u['first']:.2f} s (zero counts, cold);"
        f" planning per epoch over the last half {1e3 * u['plan_mean']:.1f} ms"
        f" (mean simplex iterations {u['iterations']:.0f}); rest per epoch {1e3 * u['other']:.1f} ms;"
        f" fallback epochs {u['fallbacks']}; solver failures {u['failures']}; peak {u['peak'] / 2**20:,.0f} MiB",
        "  planning per epoch by quarter of the run's epochs (first solve excluded): "
        + ", ".join(f"{1e3 * q:.1f}" for q in u["quarters"]) + " ms",
    ]
    if not extrapolated:
        return "\n".join(lines)
    return "\n".join(lines + [
        f"  EXTRAPOLATION to {TARGET_STEPS:,} steps (not measured):",
        f"    epochs (a) linear trigger under the run's last policy, no solves: {u['sim_here']:,} at {u['steps']:,},"
        f" {u['sim_target']:,} at {TARGET_STEPS:,}; scaled by the run's {u['epochs']}/{u['sim_here']}:"
        f" {u['by_trigger']:,.0f}",
        f"    epochs (b) power law fitted to the run's second half, epochs ∝ t^{u['exponent']:.2f}: {u['by_fit']:,.0f}"
        f"  (the paper's bound 1 + sqrt(2 S A T) = {u['bound']:,.0f})",
        f"    wall = build + first solve + epochs × {1e3 * (u['plan_mean'] + u['other']):.1f} ms:"
        f" {u['low_min']:.1f}-{u['high_min']:.1f} min (target {TARGET_MINUTES:g} min; planning per epoch grows"
        " with the counts, so this is low)",
    ])

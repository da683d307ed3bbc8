"""The ``box`` item: the optimistic programs of UCRL-CMDP and UC-CURL at the paper's sizes, by solver route.

Run alone:  python benchmarks/bench_box.py [--quick] [--repeats R]   (or python benchmarks/run.py --only box)

Three measurements, each side by side in one run, the compared routes taking turns (A, B, A, B, ...) so that a
change of load on the shared machine hits both; medians over the turns, and CPU seconds of this process
(``time.process_time``) next to wall seconds:

* **UCRL-CMDP, whole runs on the queue** (T = 500,000, seed 0; ``--quick``: 100,000): the bare fast loop of T
  steps (``_fast_epoch`` with a fixed uniform policy and no trigger: a plain Python Markov chain), UCRL-CMDP
  with ``highs`` (the whole box LP) and UCRL-CMDP with ``highs-box-columns`` (column generation with the box's
  closed-form inner step, UCRL-CMDP's default). Each run's time is also given as a multiple of the bare loop's.
* **UCRL-CMDP, per epoch on the same data**: the epoch data (counts, epoch start) of one UCRL-CMDP run
  replayed into both backends alternately, each epoch's ``program.update`` + ``compiled.solve()`` timed; the
  largest difference of the optimal values, the share of re-solves that the kept basis answered (no simplex
  iteration, one pricing round), and pricing rounds per epoch.
* **UC-CURL, whole runs** (both radii, linear epochs, seed 0, T = 500,000) on the queue (S, A) = (6, 16) and on
  the scheduler's kernel (16, 2) with a max-min objective (the paper's sum of logs is not an LP, so neither
  ``highs`` nor ``highs-columns`` takes it): ``highs`` against ``highs-columns``;
* **UC-CURL per re-solve, by size**: the epoch data of one UC-CURL run replayed into both backends in turn, on
  those two models and random ones up to (30, 10), both radii. These two are the figures behind UC-CURL's
  ``auto`` choice for the optimistic programs (``curlopt.backends.registry.COLUMNS_FROM_ENTRIES``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _report import Targets, Tee, load_average, ratio, table  # noqa: E402

#: UCRL-CMDP on the queue, within this multiple of the bare Markov-chain loop of the same length
BARE_TARGET = 70.0


def _bare(steps: int, seed: int = 0) -> tuple[float, float]:
    """The bare fast loop on the queue: a uniform policy, no trigger, ``steps`` steps. (CPU s, wall s)."""
    from curlopt.experiments.simulation import UniformStream
    from curlopt.experiments.simulation.loop import _cumulative_rows, _fast_epoch
    from curlopt.models import queue_model

    model = queue_model()
    S, A = model.n_states, model.n_actions
    policy_rows = _cumulative_rows(np.full((S, A), 1.0 / A))
    kernel_rows = _cumulative_rows(model.kernel)
    actions, transitions = UniformStream(np.random.default_rng(seed)), UniformStream(np.random.default_rng(seed + 1))
    cpu, wall = time.process_time(), time.perf_counter()
    pairs, _, _ = _fast_epoch(0, policy_rows, kernel_rows, [math.inf] * (S * A), steps, actions, transitions, A)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert pairs.size == steps
    return cpu, wall


def _agent_run(agent_name: str, model, steps: int, seed: int = 0, **options) -> dict:
    """One whole run on the fast path: CPU and wall seconds, epochs, the trace."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments.simulation import loop

    agent = make_agent(agent_name, model, **options)
    cpu, wall = time.process_time(), time.perf_counter()
    trace = loop.run(agent, make(model), steps, seed=seed, progress=False, model=model)
    return {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "epochs": len(trace.epochs),
            "trace": trace}


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def ucrl_whole_runs(say: Callable[[str], None], targets: Targets, steps: int, repeats: int) -> None:
    from curlopt.models import queue_model

    model = queue_model()
    routes = {"bare": [], "highs": [], "highs-box-columns": []}
    for turn in range(repeats):
        cpu, wall = _bare(steps)
        routes["bare"].append({"cpu": cpu, "wall": wall, "epochs": 0})
        for backend in ("highs", "highs-box-columns"):
            run = _agent_run("ucrl-cmdp", model, steps, horizon=steps, backend=backend)
            run.pop("trace")
            routes[backend].append(run)
        say(f"  turn {turn + 1}/{repeats} done (load average {load_average()})")
    bare_cpu = _median(routes["bare"], "cpu")
    rows = []
    for name, runs in routes.items():
        cpu, wall = _median(runs, "cpu"), _median(runs, "wall")
        per_turn = [run["cpu"] / bare["cpu"] for run, bare in zip(runs, routes["bare"], strict=True)]
        rows.append([name, runs[0]["epochs"] or "-", f"{cpu:.2f}", f"{wall:.2f}", ratio(cpu / bare_cpu),
                     ", ".join(f"{x:.0f}" for x in per_turn) if name != "bare" else "-"])
    say(f"UCRL-CMDP on the queue, T = {steps:,}, seed 0; {repeats} turns of (bare loop, highs, highs-box-columns):")
    say(table(["route", "epochs", "CPU s (median)", "wall s (median)", "CPU / bare loop", "per turn (CPU / bare)"],
              rows, "lrrrrl"))
    box, whole = _median(routes["highs-box-columns"], "cpu"), _median(routes["highs"], "cpu")
    say(f"highs-box-columns against highs: {ratio(whole / box)} less CPU per run")
    multiple = box / bare_cpu
    targets.add("box", f"UCRL-CMDP run (queue, T = {steps:,}, highs-box-columns) / bare loop, CPU",
                f"{box:.2f} s", f"{bare_cpu:.3f} s", f"{multiple:.0f}x", f"<= {BARE_TARGET:.0f}x",
                multiple <= BARE_TARGET, "" if multiple <= BARE_TARGET else f"{multiple / BARE_TARGET:.2f} of the target")
    targets.add("box", f"UCRL-CMDP run (queue, T = {steps:,}): highs / highs-box-columns, CPU", f"{whole:.2f} s",
                f"{box:.2f} s", ratio(whole / box), "report", None)


def _epoch_data(steps: int) -> list[tuple[np.ndarray, int]]:
    """The counts and start of every epoch of a UCRL-CMDP run on the queue (highs-box-columns, seed 0)."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments.simulation import loop
    from curlopt.models import queue_model

    model = queue_model()
    agent = make_agent("ucrl-cmdp", model, horizon=steps)
    data: list[tuple[np.ndarray, int]] = []
    update = agent._update_program

    def recording(start: int, epsilon: float) -> None:
        data.append((agent.counts.copy(), start))
        update(start, epsilon)

    agent._update_program = recording
    loop.run(agent, make(model), steps, seed=0, progress=False, model=model)
    return data


def ucrl_per_epoch(say: Callable[[str], None], targets: Targets, steps: int) -> None:
    from curlopt.backends import get_backend
    from curlopt.models import queue_model
    from curlopt.programs.optimistic import BoxOptimisticProgram

    model = queue_model()
    data = _epoch_data(steps)
    names = ("highs", "highs-box-columns")
    programs = {name: BoxOptimisticProgram(model, steps) for name in names}
    compiled = {name: get_backend(name).compile(programs[name]) for name in names}
    cpu = {name: [] for name in names}
    values = {name: [] for name in names}
    kept, rounds = 0, 0
    for counts, start in data:
        for name in names:
            began = time.process_time()
            programs[name].update(counts=counts, time=start, epsilon=0.0)
            result = compiled[name].solve()
            cpu[name].append(time.process_time() - began)
            values[name].append(result.objective if result.ok else math.nan)
            if name == "highs-box-columns":
                kept += result.iterations == 0 and compiled[name].last_rounds == 1
                rounds += compiled[name].last_rounds
    difference = np.abs(np.subtract(values["highs"], values["highs-box-columns"]))
    gap = float(np.nanmax(difference))
    rows = [[name, f"{1e3 * statistics.median(cpu[name]):.3f}", f"{1e3 * statistics.fmean(cpu[name]):.3f}",
             f"{sum(cpu[name]):.2f}"] for name in names]
    say(f"\nThe epoch data of one UCRL-CMDP run (queue, T = {steps:,}, {len(data)} epochs) replayed into both backends"
        " in turn; CPU per program.update + compiled.solve():")
    say(table(["backend", "median ms", "mean ms", "total s"], rows))
    share = kept / len(data)
    say(f"largest |difference| of the optimal values: {gap:.2g}; re-solves answered by the kept basis (no simplex"
        f" iteration, one pricing round): {share:.0%}; pricing rounds per epoch: {rounds / len(data):.2f}")
    apart = np.flatnonzero(difference > 1e-9)
    if apart.size:  # which one is off: the whole LP solved apart, with feasibility tolerances 10 times tighter
        tight = np.array([_tight_value(BoxOptimisticProgram(model, steps, counts=data[i][0])) for i in apart])
        columns_off = np.max(np.abs(np.asarray(values["highs-box-columns"])[apart] - tight))
        highs_off = np.max(np.abs(np.asarray(values["highs"])[apart] - tight))
        say(f"  {apart.size} epoch(s) differ by more than 1e-9; against the whole LP solved by scipy's linprog with"
            f" feasibility tolerances 1e-10, highs-box-columns is off by at most {columns_off:.2g}, highs by"
            f" {highs_off:.2g} (highs may use its 1e-9 row tolerance on the box rows; a vertex column meets them"
            " exactly)")
    whole, box = sum(cpu["highs"]), sum(cpu["highs-box-columns"])
    targets.add("box", "UCRL-CMDP re-solve (queue, same epoch data): highs / highs-box-columns, CPU",
                f"{1e3 * box / len(data):.3f} ms", f"{1e3 * whole / len(data):.3f} ms", ratio(whole / box), "report",
                None, f"values within {gap:.1g}; kept basis optimal in {share:.0%}")


def _tight_value(program) -> float:
    """The LP optimum of ``program`` by ``scipy.optimize.linprog`` (HiGHS's dual simplex, no presolve) with
    feasibility tolerances 1e-10 (HiGHS's smallest): a reference apart from both backends."""
    from scipy.optimize import linprog

    from curlopt.programs.lp import LPForm

    form = LPForm(program)
    matrix = form.matrix(program.linear.param_values).tocsr()
    equal = form.row_lower == form.row_upper
    upper, lower = ~equal & np.isfinite(form.row_upper), ~equal & np.isfinite(form.row_lower)
    result = linprog(-form.cost, A_ub=sp.vstack([matrix[upper], -matrix[lower]]),
                     b_ub=np.concatenate([form.row_upper[upper], -form.row_lower[lower]]), A_eq=matrix[equal],
                     b_eq=form.row_lower[equal], bounds=list(zip(form.col_lower, form.col_upper, strict=True)),
                     method="highs-ds", options={"presolve": False, "primal_feasibility_tolerance": 1e-10,
                                                 "dual_feasibility_tolerance": 1e-10})
    return -result.fun + form.offset if result.status == 0 else math.nan


def _scheduler_max_min():
    """The scheduler (16, 2) with the max-min objective min(λ1, λ2): an LP, unlike the paper's sum of logs."""
    from curlopt.models import scheduler_model
    from curlopt.models.cmdp import CMDP
    from curlopt.utilities.library import MinOfLinear

    base = scheduler_model()
    return CMDP(base.rewards, base.costs, MinOfLinear.max_min(2), base.constraints, kernel=base.kernel,
                initial=base.initial, name="scheduler (max-min)")


def uc_curl_whole_runs(say: Callable[[str], None], targets: Targets, steps: int, repeats: int) -> None:
    from curlopt.models import queue_model

    models = {"queue (6,16)": queue_model(), "scheduler (16,2), max-min": _scheduler_max_min()}
    names, radii = ("highs", "highs-columns"), ("experiment", "analysis")
    runs: dict[tuple[str, str, str], list[dict]] = {(m, r, n): [] for m in models for r in radii for n in names}
    for _ in range(repeats):
        for (label, radius, name), chosen in runs.items():
            run = _agent_run("uc-curl", models[label], steps, backend=name, trigger="linear", radius=radius)
            run.pop("trace")
            chosen.append(run)
    rows = []
    for label in models:
        for radius in radii:
            whole, columns = (_median(runs[label, radius, name], "cpu") for name in names)
            for name in names:
                chosen = runs[label, radius, name]
                cpu = _median(chosen, "cpu")
                rows.append([label, radius, name, chosen[0]["epochs"], f"{cpu:.2f}", f"{_median(chosen, 'wall'):.2f}",
                             f"{1e3 * cpu / chosen[0]['epochs']:.2f}", ratio(whole / columns) if name != "highs" else ""])
            targets.add("box", f"UC-CURL run ({label}, {radius} radius, T = {steps:,}): highs / highs-columns, CPU",
                        f"{columns:.2f} s", f"{whole:.2f} s", ratio(whole / columns), "report", None)
    say(f"\nUC-CURL (linear epochs, seed 0), T = {steps:,}, {repeats} turn(s) of every (model, radius, backend), medians:")
    say(table(["model", "radius", "backend", "epochs", "CPU s", "wall s", "CPU ms/epoch", "highs / columns"],
              rows, "lllrrrrr"))


def _optimistic_epoch_data(model, steps: int, radius: str) -> list[tuple[np.ndarray, int, float]]:
    """The counts, start and ε of every epoch of a UC-CURL run (highs-columns, linear epochs)."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments.simulation import loop

    agent = make_agent("uc-curl", model, backend="highs-columns", trigger="linear", radius=radius)
    data: list[tuple[np.ndarray, int, float]] = []
    update = agent._update_program

    def recording(start: int, epsilon: float) -> None:
        data.append((agent.counts.copy(), start, epsilon))
        update(start, epsilon)

    agent._update_program = recording
    loop.run(agent, make(model), steps, seed=0, progress=False, model=model)
    return data


def _replay_optimistic(model, data, names, radius: str) -> dict:
    """Each epoch's data pushed into one compiled optimistic program per backend, the backends taking turns: CPU
    per update + solve, and the optimal values."""
    from curlopt.backends import get_backend
    from curlopt.programs.optimistic import OptimisticProgram

    programs = {name: OptimisticProgram(model, radius=radius) for name in names}
    compiled = {name: get_backend(name).compile(programs[name]) for name in names}
    out = {name: {"cpu": [], "value": []} for name in names}
    for counts, start, epsilon in data:
        for name in names:
            began = time.process_time()
            programs[name].update(counts=counts, time=start, epsilon=epsilon)
            result = compiled[name].solve()
            out[name]["cpu"].append(time.process_time() - began)
            out[name]["value"].append(result.objective if result.ok else math.nan)
    return out


def uc_curl_by_size(say: Callable[[str], None], targets: Targets, quick: bool) -> None:
    """UC-CURL's optimistic program per re-solve, highs against highs-columns, from the paper's sizes up."""
    from curlopt.models import queue_model, random_model

    sizes = [("queue (6,16)", queue_model(), 50_000), ("scheduler (16,2), max-min", _scheduler_max_min(), 50_000),
             ("random (10,5)", random_model(10, 5, seed=0), 50_000), ("random (12,8)", random_model(12, 8, seed=0), 50_000),
             ("random (20,5)", random_model(20, 5, seed=0), 50_000), ("random (30,10)", random_model(30, 10, seed=0), 20_000)]
    if quick:
        sizes = [(label, model, steps // 5) for label, model, steps in sizes[:5]]
    names = ("highs", "highs-columns")
    rows = []
    for label, model, steps in sizes:
        for radius in ("experiment", "analysis"):
            data = _optimistic_epoch_data(model, steps, radius)
            out = _replay_optimistic(model, data, names, radius)
            whole, columns = (statistics.fmean(out[name]["cpu"]) for name in names)
            gap = float(np.nanmax(np.abs(np.subtract(out["highs"]["value"], out["highs-columns"]["value"]))))
            rows.append([label, radius, model.n_states ** 2 * model.n_actions, len(data), f"{1e3 * whole:.2f}",
                         f"{1e3 * columns:.2f}", ratio(whole / columns), f"{gap:.1g}"])
    say("\nUC-CURL's optimistic program per re-solve (update + solve, CPU mean over the epochs of one run's data, linear"
        " epochs), the two backends taking turns on the same data:")
    say(table(["model", "radius", "S²·A", "epochs", "highs ms", "highs-columns ms", "highs / columns", "max |Δ value|"],
              rows, "llrrrrrr"))


def run_item(say: Callable[[str], None], targets: Targets, quick: bool = False, repeats: int | None = None) -> None:
    repeats = repeats or (1 if quick else 3)
    ucrl_steps, curl_steps = (100_000, 100_000) if quick else (500_000, 500_000)
    ucrl_whole_runs(say, targets, ucrl_steps, repeats)
    ucrl_per_epoch(say, targets, 50_000 if quick else 100_000)
    uc_curl_whole_runs(say, targets, curl_steps, max(1, repeats - 1))
    uc_curl_by_size(say, targets, quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, one turn")
    parser.add_argument("--repeats", type=int, help="turns of the whole-run comparisons (default 3, quick 1)")
    args = parser.parse_args(argv)
    say, targets = Tee(), Targets()
    say(f"load average at start: {load_average()}")
    run_item(say, targets, quick=args.quick, repeats=args.repeats)
    say("\n" + targets.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())

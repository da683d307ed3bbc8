"""Models at scale, every backend side by side: the optimum of each scale family, and PS-CURL's warm re-solves.

Run:  python benchmarks/bench_scale.py [--quick] [--backends highs,mdp-columns] [--timeout 25] [--full]

The families (docs/math.md, models at scale): the queue with a long buffer (sparse, slowly mixing), the scheduler
with N clients (dense: every entry of its kernel is positive; sum of logs, one SLA row), random dense models (full
support rows; linear objective with the model's own constraint, and a variant whose bound is moved so that it
binds), and a random sparse model (5 successors per row).

Each (family, backend) runs in a fresh interpreter under an address-space limit (:data:`MEMORY_LIMIT`), with the
backend's ``time_limit`` option and a subprocess timeout a little above it: *model* (building the model and the
program), *compile* and *solve* in seconds, the peak resident set (VmHWM) of the process, the status, the objective
and its relative gap to the family's reference, the most accurate answer of the run: HiGHS's for the linear
families (docs: the LP is exact to its 1e-9 tolerances), CVXPY's (Clarabel) for the logarithmic ones, and where
neither finishes the ``mdp-columns`` backend's (its optimality gap is certified, see its module doc; the row says
so). A backend that stops (its time limit, the timeout, the memory limit, a refusal) is reported with why, and is not
tried on the larger members of the same family. Nothing is asserted.

The HiGHS reference of the random dense (1000, 5) model takes ~2 minutes on 2 cores; it gets
:data:`REFERENCE_TIMEOUT` (``--full``: so does every linear family, the binding (1000, 5) one takes ~1.5 minutes
more). ``--quick`` drops the largest members and the long references. ``highs-columns`` is not run: it hands the
occupancy program to the ``highs`` backend's own code.

PS-CURL's epochs: the occupancy program is compiled once, solved on the true kernel, then updated with one posterior
sample ``Dirichlet(1 + n(s,a,·))`` (counts of :data:`POSTERIOR_VISITS` simulated visits per pair) and ε = 0.01 and
solved again (*warm*: the kept policies are re-evaluated on the new kernel); a fresh compile + solve on the same data
(*cold*, the program built beforehand) is the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import Targets, Tee, header_lines, load_average, table  # noqa: E402

#: address-space limit of each probe (RLIMIT_AS; the machine has 23 GiB shared with other jobs)
MEMORY_LIMIT = 8 * 2 ** 30
#: the probes' BLAS runs one thread: on 2 cores shared with other jobs, OpenBLAS's threads wait on each other (a
#: 1024×1024 product measured 20 ms with two threads under load, 0.2 ms with one)
CHILD_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: seconds each (family, backend) may take (the backend's own time limit is 10 s less)
TIMEOUT = 25.0
#: seconds the reference backend (highs) may take on the families of :data:`LONG_REFERENCES` (every linear family
#: with ``--full``)
REFERENCE_TIMEOUT = 300.0
LONG_REFERENCES = ("random dense (1000,5)",)
#: simulated visits per pair behind the posterior sample of the warm-start measurement (an early epoch, a late one)
POSTERIOR_VISITS = (20, 2000)
#: highs-columns is left out: it hands the occupancy program to the highs backend's own code (same run, same figures)
BACKENDS = ("highs", "scipy", "cvxpy", "pyomo", "mdp-columns")

#: (label, group, builder, arguments, linear): a backend that stops in a group skips its later members
FAMILIES: list[tuple[str, str, str, dict[str, Any], bool]] = [
    ("queue buffer=1000", "queue", "queue", {"buffer": 1000}, True),
    ("queue buffer=10000", "queue", "queue", {"buffer": 10000}, True),
    ("scheduler clients=3 sla=0.6", "scheduler", "scheduler", {"clients": 3, "sla": 0.6}, False),
    ("scheduler clients=4 sla=0.6", "scheduler", "scheduler", {"clients": 4, "sla": 0.6}, False),
    ("scheduler clients=5 (sla 0.72)", "scheduler", "scheduler", {"clients": 5}, False),
    ("random dense (300,5)", "random", "random", {"n_states": 300, "n_actions": 5}, True),
    ("random dense (1000,5)", "random", "random", {"n_states": 1000, "n_actions": 5}, True),
    ("random dense (300,5) binding", "binding", "binding", {"n_states": 300, "n_actions": 5}, True),
    ("random dense (1000,5) binding", "binding", "binding", {"n_states": 1000, "n_actions": 5}, True),
    ("random sparse (1000,5) 5 successors", "sparse", "random",
     {"n_states": 1000, "n_actions": 5, "successors": 5}, True),
]
#: the small member of each family a probe solves first (imports and first use are not the backend's solve time)
WARMUP = {"queue": {"buffer": 5}, "scheduler": {"clients": 2}, "random": {"n_states": 5, "n_actions": 2},
          "binding": {"n_states": 5, "n_actions": 2}}
QUICK_SKIP = ("queue buffer=10000", "scheduler clients=5 (sla 0.72)", "random dense (1000,5) binding")


# -- the probe (runs in a fresh interpreter) ------------------------------------------------------------------------


def _peak() -> int:
    """This process's peak resident set (VmHWM), bytes."""
    with open("/proc/self/status") as handle:
        return int(next(line.split()[1] for line in handle if line.startswith("VmHWM:"))) * 1024


def _emit(**fields: Any) -> None:
    print(json.dumps({**fields, "peak": _peak()}), flush=True)


def build(builder: str, arguments: dict[str, Any]):
    """The family's model. ``binding``: random_model with its bound moved 0.05 below the average cost of the
    unconstrained optimum (found by the mdp-columns backend), so that the constraint binds."""
    from curlopt import CMDP, LinearBound, OccupancyProgram, get_backend
    from curlopt.models import build_model, random_model

    if builder != "binding":
        return build_model(builder, **arguments)
    base = random_model(seed=0, **arguments)
    free = CMDP(base.rewards, base.costs, base.objective, [], kernel=base.kernel)
    cost = float(get_backend("mdp-columns").solve(OccupancyProgram(free)).costs[0])
    return CMDP(base.rewards, base.costs, base.objective, [LinearBound([1.0], cost - 0.05)], kernel=base.kernel,
                name=f"{base.name} binding")


def probe(builder: str, arguments: dict[str, Any], backend: str, time_limit: float) -> None:
    """Build, compile and solve once; one JSON line per stage on stdout (read by :func:`run_probe`)."""
    from curlopt import OccupancyProgram, get_backend

    started = time.perf_counter()
    try:  # the backend's imports and first use, on a small member of the family, outside the figures below
        get_backend(backend).solve(OccupancyProgram(build(builder, WARMUP[builder])))
    except Exception:  # a refusal shows again, with its message, on the real model
        pass
    _emit(stage="imports", seconds=time.perf_counter() - started)
    started = time.perf_counter()
    model = build(builder, arguments)
    program = OccupancyProgram(model)
    _emit(stage="model", seconds=time.perf_counter() - started, S=model.n_states, A=model.n_actions, nnz=model.nnz)
    started = time.perf_counter()
    compiled = get_backend(backend, time_limit=time_limit).compile(program)
    _emit(stage="compile", seconds=time.perf_counter() - started)
    started = time.perf_counter()
    result = compiled.solve()
    _emit(stage="solve", seconds=time.perf_counter() - started, status=result.status.value,
          objective=float(result.objective), message=result.message[:300], rounds=getattr(compiled, "last_rounds", None),
          gap=getattr(compiled, "last_gap", None), violation=_violation(model, result))


def _violation(model, result) -> float | None:
    """The largest violation of the result's rows (mass, flow, constraints), or None without a solution."""
    import numpy as np

    if result.occupancy is None:
        return None
    rho = result.occupancy
    inflow = np.asarray(model.transitions.T @ rho.ravel())
    worst = max(abs(rho.sum() - 1.0), float(np.abs(rho.sum(axis=1) - inflow).max()), float(max(0.0, -rho.min())))
    values = result.constraint_values if result.constraint_values is not None else []
    return max([worst] + [float(v) for v in values])


def warm_probe(builder: str, arguments: dict[str, Any], visits: int) -> None:
    """PS-CURL's re-solve after one posterior draw, warm (same compiled program) and cold (fresh compile)."""
    import numpy as np

    from curlopt import OccupancyProgram, get_backend

    model = build(builder, arguments)
    S, A = model.n_states, model.n_actions
    program = OccupancyProgram(model)
    compiled = get_backend("mdp-columns").compile(program)
    started = time.perf_counter()
    first = compiled.solve()
    _emit(stage="first", seconds=time.perf_counter() - started, objective=float(first.objective),
          rounds=compiled.last_rounds)
    rng = np.random.default_rng(1)
    rows = model.kernel.reshape(S * A, S)
    counts = np.array([rng.multinomial(visits, row) for row in rows])
    sample = rng.gamma(1.0 + counts)
    kernel = (sample / sample.sum(axis=1, keepdims=True)).reshape(S, A, S)
    program.update(kernel=kernel, epsilon=0.01)
    started = time.perf_counter()
    warm = compiled.solve()
    _emit(stage="warm", seconds=time.perf_counter() - started, objective=float(warm.objective),
          rounds=compiled.last_rounds, status=warm.status.value, evaluation=compiled.last_evaluation_time)
    again = OccupancyProgram(model, kernel=kernel, epsilon=0.01)  # building the program is not the backend's time
    started = time.perf_counter()
    fresh = get_backend("mdp-columns").compile(again)
    cold = fresh.solve()
    _emit(stage="cold", seconds=time.perf_counter() - started, objective=float(cold.objective),
          rounds=fresh.last_rounds, status=cold.status.value)


# -- the parent side ------------------------------------------------------------------------------------------------

_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
sys.path.insert(0, {here!r})
import bench_scale
bench_scale.{call}
"""


def _child(call: str, timeout: float) -> tuple[list[dict], str]:
    """Run ``bench_scale.<call>`` in a fresh, memory-limited interpreter: its JSON lines, and why it stopped early
    (empty when it did not)."""
    code = _CHILD.format(limit=MEMORY_LIMIT, here=str(HERE), call=call)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **CHILD_ENVIRONMENT})
        out, err, why = done.stdout, done.stderr, "" if done.returncode == 0 else f"exit code {done.returncode}"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, why = "", f"killed at the {timeout:.0f} s timeout"
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if why.startswith("exit"):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        memory = "MemoryError" in err or "bad_alloc" in err or "Cannot allocate" in err
        if "UnsupportedUtilityError" in err:
            why = "refused"
        elif memory:
            why = f"out of memory under the {MEMORY_LIMIT / 2**30:.0f} GiB limit"
        why += f": {tail[:160]}"
    return lines, why


def run_probe(family: tuple, backend: str, timeout: float) -> dict:
    """One (family, backend): its figures by stage, and where it stopped (empty when it solved the program)."""
    label, _, builder, arguments, _ = family
    time_limit = max(1.0, timeout - 10.0)
    lines, why = _child(f"probe({builder!r}, {arguments!r}, {backend!r}, {time_limit!r})", timeout)
    row: dict[str, Any] = {"family": label, "backend": backend, "stopped": why}
    for line in lines:
        row[line["stage"]] = line
        row["peak"] = max(row.get("peak", 0), line["peak"])
    solve = row.get("solve")
    if solve is not None and solve["status"] not in ("optimal", "almost_optimal"):
        row["stopped"] = f"{solve['status']}: {solve['message']}"
    elif solve is None and not why:
        row["stopped"] = "no result"
    return row


def reference_of(rows: list[dict], linear: bool) -> tuple[float | None, str]:
    """The family's most accurate answer among the rows (module doc) and who gave it."""
    order = ("highs", "scipy", "mdp-columns") if linear else ("cvxpy", "pyomo", "mdp-columns")
    for name in order:
        for row in rows:
            if row["backend"] == name and not row["stopped"]:
                note = " (certified gap, no exact solver finished)" if name == "mdp-columns" else ""
                return row["solve"]["objective"], name + note
    return None, "none"


def family_rows(family: tuple, backends: list[str], stopped: dict, timeout: float, long: bool) -> list[dict]:
    """Every backend on one family (skipping those stopped on a smaller member of its group); with ``long``, highs
    (the reference) gets :data:`REFERENCE_TIMEOUT` on a linear family."""
    label, group, _, _, linear = family
    rows = []
    for backend in backends:
        if (group, backend) in stopped:
            rows.append({"family": label, "backend": backend, "stopped": f"skipped: stopped on {stopped[group, backend]}"})
            continue
        reference = linear and backend == "highs" and long
        row = run_probe(family, backend, REFERENCE_TIMEOUT if reference else timeout)
        if row["stopped"]:
            stopped[group, backend] = label
        rows.append(row)
    return rows


def render(rows: list[dict], reference: float | None) -> list[list[object]]:
    out = []
    for r in rows:
        solve = r.get("solve", {})
        objective = solve.get("objective")
        gap = "-" if objective is None or reference is None or r["stopped"] else f"{(objective - reference) / abs(reference):.1e}"
        seconds = [r.get(stage, {}).get("seconds") for stage in ("model", "compile", "solve")]
        out.append([r["backend"], *[f"{s:.2f}" if s is not None else "-" for s in seconds],
                    f"{r['peak'] / 2**20:,.0f}" if r.get("peak") else "-", solve.get("status", "-"),
                    "-" if objective is None or r["stopped"] else f"{objective:.9g}", gap,
                    "-" if solve.get("violation") is None else f"{solve['violation']:.1e}",
                    (r["stopped"] or "")[:110]])
    return out


HEADERS = ["backend", "model s", "compile s", "solve s", "peak MiB", "status", "objective", "rel. gap",
           "worst row", "where it stops, and why"]


def warm_rows(quick: bool) -> list[dict]:
    """PS-CURL's re-solve on the random dense models, warm and cold (module doc)."""
    rows = []
    size = {"n_states": 300 if quick else 1000, "n_actions": 5}
    for builder, visits in (("random", POSTERIOR_VISITS[0]), ("binding", POSTERIOR_VISITS[0]),
                            ("binding", POSTERIOR_VISITS[1])):
        lines, why = _child(f"warm_probe({builder!r}, {size!r}, {visits})", 6 * TIMEOUT)
        row = {line["stage"]: line for line in lines}
        row.update(model=f"{builder} ({size['n_states']},{size['n_actions']}), {visits:,} visits", stopped=why)
        rows.append(row)
    return rows


def add_targets(targets: Targets, results: dict[str, tuple[list[dict], float | None, str]], warm: list[dict]) -> None:
    """The targets of the mdp-columns backend: times and accuracy on the scheduler and the random dense model."""
    def mdp(label: str) -> dict | None:
        rows = results.get(label, ([], None, ""))[0]
        return next((r for r in rows if r["backend"] == "mdp-columns" and not r["stopped"]), None)

    for label, limit in (("scheduler clients=4 sla=0.6", 1.0), ("scheduler clients=5 (sla 0.72)", 10.0),
                         ("random dense (1000,5)", 10.0), ("random dense (1000,5) binding", 10.0)):
        row = mdp(label)
        if label not in results:
            continue
        if row is None:
            targets.add("scale", f"mdp-columns optimum, {label}", "stopped", "-", "-", f"<= {limit:g} s", False)
            continue
        seconds = row["compile"]["seconds"] + row["solve"]["seconds"]
        others = [r for r in results[label][0] if r["backend"] != "mdp-columns" and not r["stopped"]]
        best = min((r["compile"]["seconds"] + r["solve"]["seconds"] for r in others), default=None)
        targets.add("scale", f"mdp-columns compile + solve, {label}", f"{seconds:.2f} s",
                    f"fastest other {best:.1f} s" if best else "no other backend finished",
                    f"{best / seconds:.0f}x" if best else "-", f"<= {limit:g} s", seconds <= limit)
    for label, (_, reference, source) in results.items():
        row = mdp(label)
        if row is None or reference is None or source.startswith("mdp-columns"):
            continue
        gap = abs(row["solve"]["objective"] - reference) / abs(reference)
        targets.add("scale", f"mdp-columns objective, {label}", f"{row['solve']['objective']:.10g}",
                    f"{source} {reference:.10g}", f"{gap:.1e}", "<= 1e-6 relative", gap <= 1e-6)
    for row in warm:
        if row["stopped"] or "warm" not in row:
            continue
        targets.add("scale", f"PS-CURL re-solve after one posterior draw, {row['model']}",
                    f"warm {row['warm']['seconds']:.2f} s", f"cold {row['cold']['seconds']:.2f} s",
                    f"{row['cold']['seconds'] / row['warm']['seconds']:.1f}x", "report", None,
                    f"objectives differ by {abs(row['warm']['objective'] - row['cold']['objective']):.1e}")


def run_item(say, targets: Targets, quick: bool = False, backends: list[str] | None = None,
             timeout: float = TIMEOUT, full: bool = False) -> None:
    """Every family on every backend, then the warm re-solves; the figures go to ``targets``."""
    from curlopt.backends.registry import backend_class

    backends = [b for b in (backends or BACKENDS) if backend_class(b).is_installed()]
    say(f"each (family, backend) in a fresh process: {MEMORY_LIMIT / 2**30:.0f} GiB address space, one BLAS thread,"
        f" backend time_limit"
        f" {timeout - 10:.0f} s, timeout {timeout:.0f} s (highs, the reference, on"
        f" {'every linear family' if full else ', '.join(LONG_REFERENCES)}: {REFERENCE_TIMEOUT:.0f} s); rel. gap to"
        " the family's reference; worst row = largest violation of mass, flow or g rows")
    stopped: dict = {}
    results = {}
    for family in FAMILIES:
        if quick and family[0] in QUICK_SKIP:
            continue
        long = full or (family[0] in LONG_REFERENCES and not quick)
        rows = family_rows(family, backends, stopped, timeout, long)
        reference, source = reference_of(rows, family[4])
        results[family[0]] = (rows, reference, source)
        say("")
        say(f"{family[0]}: reference {source}" + ("" if reference is None else f" = {reference:.10g}"))
        say(table(HEADERS, render(rows, reference), "lrrrrlrrrl"))
    warm = warm_rows(quick) if "mdp-columns" in backends else []
    if warm:
        say("")
        say("PS-CURL re-solve after one posterior draw (mdp-columns): seconds, rounds")
        say(table(["model", "first", "warm", "warm rounds", "cold (compile + solve)", "cold rounds", "|warm - cold|"],
                  [[r["model"], *(f"{r[k]['seconds']:.2f}" if k in r else "-" for k in ("first", "warm")),
                    r.get("warm", {}).get("rounds", "-"), f"{r['cold']['seconds']:.2f}" if "cold" in r else r["stopped"],
                    r.get("cold", {}).get("rounds", "-"),
                    f"{abs(r['warm']['objective'] - r['cold']['objective']):.1e}" if "cold" in r else "-"]
                   for r in warm]))
    add_targets(targets, results, warm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the largest members and the long HiGHS references")
    parser.add_argument("--backends", help=f"comma-separated (default: {','.join(BACKENDS)}, those installed)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per (family, backend)")
    parser.add_argument("--full", action="store_true", help="give highs the reference timeout on every linear family")
    args = parser.parse_args(argv)
    say, targets = Tee(), Targets()
    for line in header_lines():
        say(line)
    say(f"load average at start: {load_average()}")
    started = time.perf_counter()
    run_item(say, targets, quick=args.quick, backends=args.backends.split(",") if args.backends else None,
             timeout=args.timeout, full=args.full)
    say("")
    say(targets.render())
    say(f"\nwall time {time.perf_counter() - started:.0f} s; load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

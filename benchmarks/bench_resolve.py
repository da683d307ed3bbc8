"""The ``resolve`` item: the compiled re-solve per epoch against a naive CVXPY rebuild, on a run's epoch data.

Epoch data (the same for every backend and for the naive reference)
    A fixed stochastic policy (uniform over actions) is played on the model's true kernel with the
    doubling trigger (docs/math.md §5) for ``T`` steps, by the learning loop's own simulator
    (``curlopt.experiments.simulation.loop.ChainSimulator``). The counts ``n(s,a,s')`` and the time ``t_e`` are
    recorded at every epoch start; 200 of the run's epochs, evenly spaced in epoch index (so they span
    the whole run, from the first sparse counts to the last), are the sequence. For the optimistic
    program an epoch's data is ``(counts, t_e, ε = tightness(t_e))``; for the occupancy program it is a
    posterior sample ``P~(·|s,a) ~ Dirichlet(1 + n(s,a,·))`` (drawn once, from a seeded generator, by the
    agents' own sampler) and the same ε. A uniform policy rather than an agent: every pair gets data, and
    the sequence does not depend on a backend.

Compiled (what the agents do)
    The program is built with no data and compiled once (reported as *compile*); then every epoch runs
    ``program.update(...)`` and ``compiled.solve()``, timed together (wall clock). The first solve is
    cold (for ``cvxpy`` it also canonicalises the problem) and is reported apart; the means are over the
    re-solves (epochs 1..n-1).

Naive reference
    Each epoch builds a fresh CVXPY problem from numpy arrays (plain ``cp.Variable``s, data as
    constants, no Parameters) and solves it with the same solver and tolerances: HiGHS for the
    ``highs`` backend, Clarabel for ``cvxpy``. If the ε-tight problem is infeasible the program without
    g rows is built and solved, as the backends do. The wall clock covers build, canonicalisation and
    solve. Large naive builds are time-boxed: they run on an evenly spaced subset of the epochs, and the
    compiled mean is then taken over the same epochs (the column says how many).

``pyomo`` (Ipopt through cyipopt) has no CVXPY counterpart with the same solver, so its reference is
the same compiled model with ``warm_start=False`` (cold Ipopt starts) on the same data; a fresh Pyomo
build per epoch is measured by ``bench_pyomo_warmstart.py`` (reused by the ``pyomo`` item).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _report import ms, ratio, table

# -- epoch data -------------------------------------------------------------------------------------------------------


@dataclass
class EpochData:
    """A run's epochs: start times, counts at each start, ε, and one posterior kernel per epoch."""

    label: str
    times: list[int]
    counts: list[np.ndarray]
    epsilons: list[float]
    kernels: list[np.ndarray]
    total_epochs: int
    horizon: int

    def __len__(self) -> int:
        return len(self.times)


def simulate_epochs(model, horizon: int, count: int, seed: int = 0) -> EpochData:
    """Counts at the epoch starts of a uniform-policy run with the doubling trigger (see the module doc)."""
    from curlopt import tightness
    from curlopt.agents.curl import sample_posterior_kernel
    from curlopt.experiments.simulation.loop import ChainSimulator

    S, A = model.n_states, model.n_actions
    seq_a, seq_s, seq_k = np.random.SeedSequence(seed).spawn(3)
    chain = ChainSimulator(model.kernel, np.random.default_rng(seq_a), np.random.default_rng(seq_s))
    uniform = np.full((S, A), 1.0 / A)
    counts = np.zeros((S, A, S))
    t = 1
    starts: list[tuple[int, np.ndarray]] = []
    while t <= horizon:
        starts.append((t, counts.copy()))
        pairs, nexts = chain.play(uniform, horizon - t + 1, np.maximum(1.0, counts.sum(axis=2)))
        counts += np.bincount(pairs * S + nexts, minlength=S * A * S).reshape(S, A, S)
        t += pairs.size
    chosen = np.unique(np.linspace(0, len(starts) - 1, min(count, len(starts))).round().astype(int))
    rng = np.random.default_rng(seq_k)
    times, snapshots, epsilons, kernels = [], [], [], []
    for index in chosen:
        t_e, n = starts[index]
        times.append(t_e)
        snapshots.append(n)
        epsilons.append(tightness(t_e))
        kernels.append(sample_posterior_kernel(rng, 1.0 + n))
    return EpochData(model.name, times, snapshots, epsilons, kernels, len(starts), horizon)


# -- models -----------------------------------------------------------------------------------------------------------


@dataclass
class Size:
    """One (S, A) of the benchmark: the model each backend gets (highs needs an LP-representable one)."""

    S: int
    A: int
    label: str
    models: dict[str, Any]  # backend -> CMDP ("naive" uses the same model as the backend it is compared with)

    @property
    def key(self) -> str:
        return f"({self.S},{self.A})"


def build_sizes(wanted: list[str] | None = None) -> list[Size]:
    from curlopt import CMDP
    from curlopt.models import queue_model, random_model, scheduler_model
    from curlopt.utilities.library import Linear

    queue = queue_model()
    scheduler = scheduler_model()
    scheduler_linear = CMDP(scheduler.rewards, scheduler.costs, Linear(np.ones(2)), scheduler.constraints,
                            scheduler.kernel, scheduler.initial, name="scheduler-linear")
    r30, r60 = random_model(30, 10, seed=0), random_model(60, 10, seed=0)
    sizes = [
        Size(6, 16, "queue (linear f, 2 linear g)", {"highs": queue, "cvxpy": queue, "pyomo": queue}),
        Size(16, 2, "scheduler: highs with f = λ1+λ2 (linear substitute); cvxpy, pyomo with ln λ1 + ln λ2; SLA g",
             {"highs": scheduler_linear, "cvxpy": scheduler, "pyomo": scheduler}),
        Size(30, 10, "random_model(30, 10, seed=0) (linear f, 1 linear g)", {b: r30 for b in ("highs", "cvxpy", "pyomo")}),
        Size(60, 10, "random_model(60, 10, seed=0) (linear f, 1 linear g)", {b: r60 for b in ("highs", "cvxpy", "pyomo")}),
    ]
    if wanted:
        sizes = [s for s in sizes if s.key.strip("()") in wanted or s.key in wanted]
    return sizes


# -- programs ---------------------------------------------------------------------------------------------------------


def make_program(kind: str, model):
    """The program as an agent builds it: no data yet (zero counts / a uniform kernel)."""
    from curlopt import OccupancyProgram, OptimisticProgram

    S, A = model.n_states, model.n_actions
    if kind == "optimistic":
        return OptimisticProgram(model)
    return OccupancyProgram(model, kernel=np.full((S, A, S), 1.0 / S))


def update_program(kind: str, program, data: EpochData, e: int) -> None:
    if kind == "optimistic":
        program.update(counts=data.counts[e], time=data.times[e], epsilon=data.epsilons[e])
    else:
        program.update(kernel=data.kernels[e], epsilon=data.epsilons[e])


# -- the naive reference ------------------------------------------------------------------------------------------------


def naive_problem(kind: str, model, data: EpochData, e: int, with_constraints: bool):
    """A fresh CVXPY problem from numpy arrays: plain Variables, constants, no Parameters."""
    import cvxpy as cp

    from curlopt.backends.cvxpy import (
        cvxpy_expression,  # the library's expression of each utility, as the backend builds it
    )

    S, A = model.n_states, model.n_actions
    n = S * A
    rho = cp.Variable(n, nonneg=True)
    states_of = np.kron(np.eye(S), np.ones((1, A)))  # (S, n): Σ_a ρ(s,a)
    constraints = [cp.sum(rho) == 1]
    if kind == "optimistic":
        counts = data.counts[e].reshape(n, S)
        visits = counts.sum(axis=1)
        p_hat = counts / np.maximum(1.0, visits)[:, None]
        beta = np.sqrt(14.0 * S * math.log(2.0 * A * data.times[e]) / np.maximum(1.0, visits))
        p = cp.Variable((n, S), nonneg=True)
        alpha = cp.Variable((n, S), nonneg=True)
        rho_rows = cp.reshape(rho, (n, 1), order="C") @ np.ones((1, S))
        constraints += [
            rho == cp.sum(p, axis=1),
            (states_of @ rho)[: S - 1] == cp.sum(p, axis=0)[: S - 1],
            cp.abs(p - cp.multiply(p_hat, rho_rows)) <= alpha,
            cp.sum(alpha, axis=1) <= cp.multiply(beta, rho),
        ]
    else:
        kernel = data.kernels[e].reshape(n, S)
        constraints.append((states_of @ rho)[: S - 1] == (kernel.T @ rho)[: S - 1])
    rewards = model.rewards.reshape(model.n_rewards, n) @ rho
    if with_constraints and model.constraints:
        costs = model.costs.reshape(model.n_costs, n) @ rho
        constraints += [cvxpy_expression(g, costs) <= -data.epsilons[e] for g in model.constraints]
    return cp.Problem(cp.Maximize(cvxpy_expression(model.objective, rewards)), constraints), rho


NAIVE_SOLVER = {
    # the highs backend's tolerances; for cvxpy, the backend's own solver order and options (Clarabel, then SCS)
    "highs": [("HIGHS", {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9})],
    "cvxpy": None,
}


def _naive_solvers(backend: str) -> list[tuple[str, dict]]:
    if NAIVE_SOLVER[backend] is not None:
        return NAIVE_SOLVER[backend]
    import cvxpy as cp

    from curlopt.backends.cvxpy import DEFAULT_SOLVER_OPTIONS, DEFAULT_SOLVERS

    installed = set(cp.installed_solvers())
    return [(s, DEFAULT_SOLVER_OPTIONS.get(s, {})) for s in DEFAULT_SOLVERS if s in installed]


def naive_solve(kind: str, model, data: EpochData, e: int, backend: str) -> dict[str, Any]:
    """Build and solve the naive problem for epoch ``e``.

    Like the backends: when the ε-tight problem is infeasible, the problem without g rows is built and
    solved; for ``cvxpy`` the solvers are tried in the backend's order (Clarabel, then SCS) and a fresh
    problem is built for each attempt.
    """
    import cvxpy as cp

    own = 0.0
    started = time.perf_counter()
    variant, used, status, value, objective = "tight", "", "", None, math.nan
    for with_constraints in (True, False):
        for solver, options in _naive_solvers(backend):
            problem, rho = naive_problem(kind, model, data, e, with_constraints)
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                    warnings.filterwarnings("ignore", category=RuntimeWarning)
                    problem.solve(solver=solver, **options)
            except cp.error.SolverError:
                status = "solver_error"
                continue
            stats = problem.solver_stats
            own += float(stats.solve_time or 0.0) if stats is not None else 0.0
            status, used = problem.status, solver
            if status in (cp.OPTIMAL, cp.INFEASIBLE, cp.UNBOUNDED):
                break
        if status != cp.INFEASIBLE or not model.constraints:
            break
        variant = "fallback"
    if status == cp.OPTIMAL:
        value = rho.value
        objective = float(problem.value)
    wall = time.perf_counter() - started
    return {"wall": wall, "own": own, "status": status, "variant": variant, "solver": used,
            "objective": objective, "ok": value is not None}


# -- the compiled runs ------------------------------------------------------------------------------------------------


@dataclass
class CompiledRun:
    compile: float
    first: float
    wall: list[float] = field(default_factory=list)       # per epoch: update + solve
    update: list[float] = field(default_factory=list)
    sync: list[float] = field(default_factory=list)       # highs only
    own: list[float] = field(default_factory=list)        # solver's own reported time, summed over attempts
    iterations: list[int] = field(default_factory=list)
    objective: list[float] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    variant: list[str] = field(default_factory=list)
    block_updates: int = 0
    error: str = ""
    epochs: list[int] = field(default_factory=list)  # which epochs of the data were solved, in order


def run_compiled(kind: str, model, data: EpochData, backend: str, epochs: int | list[int],
                 attributes: dict | None = None, patch: Callable | None = None, **options) -> CompiledRun:
    """Compile once, then update + solve for ``epochs`` epochs of ``data`` (a count, or a list), timing each part.

    ``attributes`` are set on the compiled instance and ``patch(compiled)`` is called after compiling: what-ifs
    that leave the library unchanged (e.g. highs' block-update switch, cvxpy without DPP).
    """
    from curlopt import get_backend

    program = make_program(kind, model)
    started = time.perf_counter()
    compiled = get_backend(backend, **options).compile(program)
    for key, value in (attributes or {}).items():
        setattr(compiled, key, value)
    if patch is not None:
        patch(compiled)
    out = CompiledRun(compile=time.perf_counter() - started, first=math.nan)
    out.epochs = list(range(epochs)) if isinstance(epochs, int) else list(epochs)

    # The solver's own time comes with each result (SolveResult.solver_time, summed over both attempts). For highs,
    # this instance only (the library is untouched) is instrumented to split out the time spent pushing changed data.
    attempt = {"sync": 0.0, "update": None}
    if hasattr(compiled, "_sync"):
        inner_sync = compiled._sync

        def timed_sync(*args):
            t0 = time.perf_counter()
            try:
                return inner_sync(*args)
            finally:
                attempt["sync"] += time.perf_counter() - t0
                if attempt["update"] is None:  # the first attempt's sync carries the epoch's changes
                    attempt["update"] = getattr(compiled, "last_update", None)

        compiled._sync = timed_sync

    for position, e in enumerate(out.epochs):
        attempt["sync"] = 0.0
        attempt["update"] = None
        t0 = time.perf_counter()
        update_program(kind, program, data, e)
        t1 = time.perf_counter()
        result = compiled.solve()
        t2 = time.perf_counter()
        out.wall.append(t2 - t0)
        out.update.append(t1 - t0)
        out.sync.append(attempt["sync"])
        out.own.append(float(result.solver_time or 0.0))
        out.iterations.append(int(result.iterations or 0))
        out.objective.append(float(result.objective))
        out.status.append(result.status.value)
        out.variant.append(result.program.value)
        out.block_updates += position > 0 and attempt["update"] == "block"
        if position == 0:
            out.first = t2 - t0
        if not result.ok and not out.error:
            out.error = f"epoch {e}: {result.status.value}: {result.message[:160]}"
    return out


# -- the item ---------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    kind: str
    size: Size
    backend: str
    compiled: CompiledRun | None
    naive: list[dict] = field(default_factory=list)
    naive_epochs: list[int] = field(default_factory=list)
    reference_label: str = ""
    cold: CompiledRun | None = None   # pyomo: the same compiled model with warm_start=False
    skipped: str = ""
    what_if: dict[str, CompiledRun] = field(default_factory=dict)  # highs: forced update paths, same epochs
    peak_memory: float = math.nan     # cvxpy: peak RSS (bytes) of a process that compiles and solves once

    # -- figures --
    def compiled_mean(self, epochs: list[int] | None = None, what: str = "wall") -> float:
        values = getattr(self.compiled, what)
        if len(values) < 2:
            return math.nan
        if epochs is None:
            return float(np.mean(values[1:]))
        position = {e: i for i, e in enumerate(self.compiled.epochs)}
        return float(np.mean([values[position[e]] for e in epochs]))

    def reference_mean(self) -> float:
        if self.cold is not None:
            return float(np.mean(self.cold.wall[1:]))
        return float(np.mean([r["wall"] for r in self.naive])) if self.naive else math.nan

    def figure(self) -> float:
        """Compiled mean over the epochs the reference ran on."""
        if self.cold is not None:
            return self.compiled_mean()
        return self.compiled_mean(self.naive_epochs)

    def speedup(self) -> float:
        return self.reference_mean() / self.figure()

    def largest_gap(self) -> float:
        gaps = []
        if self.cold is not None:
            pairs = zip(self.compiled.objective[1:], self.cold.objective[1:], strict=False)
        else:
            position = {e: i for i, e in enumerate(self.compiled.epochs)}
            pairs = ((self.compiled.objective[position[e]], r["objective"])
                     for e, r in zip(self.naive_epochs, self.naive, strict=False) if r["ok"])
        for a, b in pairs:
            if math.isfinite(a) and math.isfinite(b):
                gaps.append(abs(a - b))
        return max(gaps) if gaps else math.nan

    def amortised_speedup(self) -> float:
        """Reference mean over the compiled mean per epoch with the compile and the cold first solve included."""
        c = self.compiled
        return self.reference_mean() / ((c.compile + sum(c.wall)) / len(c.wall))

    def overhead(self) -> float:
        """Wall time per re-solve over the solver's own time (mean over re-solves)."""
        own = np.mean(self.compiled.own[1:])
        return float(np.mean(self.compiled.wall[1:]) / own) if own > 0 else math.nan


def _naive_epochs(n_epochs: int, n_vars: int, quick: bool) -> list[int]:
    """Which re-solve epochs (1..n-1) get a naive reference: all for small programs, a spread for large ones."""
    budget = n_epochs - 1
    if n_vars > 20_000:
        budget = 3 if quick else 10
    elif n_vars > 5_000:
        budget = 5 if quick else 40
    if budget >= n_epochs - 1:
        return list(range(1, n_epochs))
    return sorted(set(np.linspace(1, n_epochs - 1, budget).round().astype(int).tolist()))


#: the cvxpy backend's compile and first (DPP) solve are first run in a child process with this address-space
#: limit; above it the backend is not run in the benchmark's own process (the toolkit's memory budget is 2 GiB)
CVXPY_MEMORY_LIMIT = 3 * 2**30
#: above this many variables the cvxpy backend re-solves only on the reference's epochs (each solve is an
#: interior-point solve from scratch, ~1-2 s at (60,10))
CVXPY_FULL_RUN_MAX_VARS = 20_000

_PEAK_PROBE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
sys.path.insert(0, {here!r})
import bench_resolve as br
from curlopt import get_backend
size = [s for s in br.build_sizes() if s.key == {key!r}][0]
program = br.make_program({kind!r}, size.models["cvxpy"])
result = get_backend("cvxpy").compile(program).solve()
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report the benchmark's own (forked) size
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(result.status.value, int(peak) * 1024)
"""


def cvxpy_peak_memory(kind: str, size: Size) -> tuple[float, str]:
    """Peak resident memory (bytes) of a fresh process that compiles the cvxpy backend and solves once (the DPP
    canonicalisation), under an address-space limit of :data:`CVXPY_MEMORY_LIMIT`; NaN and why when it fails."""
    import subprocess
    import sys
    from pathlib import Path

    code = _PEAK_PROBE.format(limit=CVXPY_MEMORY_LIMIT, here=str(Path(__file__).resolve().parent), key=size.key,
                              kind=kind)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return math.nan, f"the compile failed under a {CVXPY_MEMORY_LIMIT / 2**30:.0f} GiB limit: {last[:160]}"
    status, peak = done.stdout.split()[-2:]
    return float(peak), status


def run_item(say: Callable[[str], None], targets, quick: bool = False, sizes: list[str] | None = None,
             backends: list[str] | None = None, programs: list[str] | None = None) -> list[Row]:
    from curlopt.backends.registry import backend_class

    epochs = 40 if quick else 200
    pyomo_epochs = 10 if quick else 50
    horizon = 500_000
    backends = backends or ["highs", "cvxpy", "pyomo"]
    backends = [b for b in backends if backend_class(b).is_installed()]
    programs = programs or ["optimistic", "occupancy"]
    say(f"Epoch data: a uniform-policy run on each model's true kernel, doubling trigger, T = {horizon:,} steps;"
        f" {epochs} of its epochs, evenly spaced (pyomo: the first {pyomo_epochs} of those, at (6,16) and (16,2) only).")
    say("Times are per epoch, in ms: compiled = program.update + compiled.solve (mean over re-solves, epoch 0 = the cold"
        " first solve excluded); naive = a fresh CVXPY problem built from numpy and solved with the same solver.")
    rows: list[Row] = []
    for size in build_sizes(sizes):
        data_started = time.perf_counter()
        base_model = size.models["highs"]
        data = simulate_epochs(base_model, horizon, epochs)
        say(f"\n{size.key} {size.label}: {data.total_epochs} epochs in the run, {len(data)} used"
            f" (t_e from {data.times[0]} to {data.times[-1]:,}); data in {time.perf_counter() - data_started:.1f} s")
        for kind in programs:
            for backend in backends:
                model = size.models[backend]
                program = make_program(kind, model)
                row = Row(kind, size, backend, None)
                if backend == "pyomo":
                    if size.key not in ("(6,16)", "(16,2)"):
                        row.skipped = "pyomo runs at (6,16) and (16,2) only (time)"
                        rows.append(row)
                        continue
                    n = min(pyomo_epochs, len(data))
                    row.compiled = run_compiled(kind, model, data, backend, n)
                    row.cold = run_compiled(kind, model, data, backend, n, warm_start=False)
                    row.reference_label = "same model, cold Ipopt"
                    rows.append(row)
                    say("  " + _line(row))
                    continue
                if backend == "cvxpy":
                    _cvxpy_rows(say, rows, row, kind, model, data, program, quick)
                    continue
                n = len(data)
                row.compiled = run_compiled(kind, model, data, backend, n)
                if backend == "highs":
                    for label, attributes in FORCED_UPDATES.items():
                        if label == "per-entry" and program.linear.n_params > 20_000:
                            continue  # tens of thousands of changeCoeff calls per epoch: too slow to bother
                        row.what_if[label] = run_compiled(kind, model, data, backend, n, attributes=attributes)
                row.naive_epochs = _naive_epochs(n, program.n_vars, quick)
                row.naive = [naive_solve(kind, model, data, e, backend) for e in row.naive_epochs]
                row.reference_label = "CVXPY rebuild + " + "/".join(n for n, _ in _naive_solvers(backend))
                rows.append(row)
                say("  " + _line(row))
    say("")
    say(render(rows))
    say("")
    say(render_breakdown([r for r in rows if r.backend == "highs" and r.compiled is not None]))
    say("")
    say(render_what_if([r for r in rows if r.what_if]))
    _targets(rows, targets)
    return rows


NO_DPP = "cvxpy no-DPP"
#: the no-DPP what-if's statement holds diag(θ) as a dense J×J constant (8·J² bytes, and as slow to build every
#: solve): not run above this many entries
NO_DPP_MAX_PARAMETERS = 2_000


def _no_dpp(compiled) -> None:
    """What-if: the cvxpy backend re-canonicalising every solve (``ignore_dpp=True``: parameters as constants,
    through ``Problem.solve``; the backend's switch also turns off its Clarabel path)."""
    compiled.ignore_dpp = True


def _cvxpy_rows(say, rows, row, kind, model, data, program, quick) -> None:
    """The cvxpy backend (DPP) and the no-DPP what-if, one naive reference; the DPP compile's peak memory first."""
    row.naive_epochs = _naive_epochs(len(data), program.n_vars, quick)
    row.naive = [naive_solve(kind, model, data, e, "cvxpy") for e in row.naive_epochs]
    row.reference_label = "CVXPY rebuild + " + "/".join(n for n, _ in _naive_solvers("cvxpy"))
    row.peak_memory, why = cvxpy_peak_memory(kind, row.size)
    if not math.isfinite(row.peak_memory):
        row.skipped = f"not run: {why}"
        say(f"  {kind:<10} {row.backend:<6} {row.skipped}")
    else:
        # Each solve starts the interior-point method afresh, so a large program re-solves only on the reference's
        # epochs (after the cold first solve), as the what-if below does.
        epochs = len(data) if program.n_vars <= CVXPY_FULL_RUN_MAX_VARS else [0] + row.naive_epochs
        row.compiled = run_compiled(kind, model, data, "cvxpy", epochs)
        say("  " + _line(row) + f"; DPP compile + first solve peak RSS {row.peak_memory / 2**20:,.0f} MiB")
    rows.append(row)
    # No state carries over between solves without DPP (Clarabel does not warm start), so the what-if runs only
    # on the epochs the naive reference ran on (after the first, cold, solve).
    what_if = Row(kind, row.size, NO_DPP, None, naive=row.naive, naive_epochs=row.naive_epochs,
                  reference_label=row.reference_label)
    if program.linear.n_params > NO_DPP_MAX_PARAMETERS:
        J = program.linear.n_params
        what_if.skipped = f"not run: without DPP diag(θ) is a dense J×J constant ({8 * J**2 / 2**30:.1f} GiB, J = {J:,})"
        say(f"  {kind:<10} {NO_DPP} {what_if.skipped}")
    else:
        what_if.compiled = run_compiled(kind, model, data, "cvxpy", [0] + row.naive_epochs, patch=_no_dpp)
        say("  " + _line(what_if))
    rows.append(what_if)


def _line(row: Row) -> str:
    c = row.compiled
    return (f"{row.kind:<10} {row.backend:<6} compile {ms(c.compile)} ms, first solve {ms(c.first)} ms,"
            f" re-solve {ms(row.compiled_mean())} ms; reference {ms(row.reference_mean())} ms"
            f" ({len(row.naive) if row.cold is None else len(row.cold.wall) - 1} epochs); speedup {ratio(row.speedup())}"
            + (f"; ERROR {c.error}" if c.error else ""))


def render(rows: list[Row]) -> str:
    out = []
    for row in rows:
        if row.compiled is None:
            out.append([row.kind, row.size.key, row.backend, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                        row.skipped])
            continue
        c = row.compiled
        ref_n = len(row.naive) if row.cold is None else len(row.cold.wall) - 1
        fallback = sum(v == "fallback" for v in c.variant[1:])
        failed = sum(s != "optimal" for s in c.status[1:])
        ref_own = (np.mean([r["own"] for r in row.naive]) if row.cold is None and row.naive
                   else (np.mean(row.cold.own[1:]) if row.cold is not None else math.nan))
        notes = []
        if fallback:
            notes.append(f"{fallback} fallback")
        if failed:
            notes.append(f"{failed} failed: {c.error}")
        if row.cold is not None:
            it_w, it_c = np.mean(c.iterations[1:]), np.mean(row.cold.iterations[1:])
            notes.append(f"Ipopt it/epoch warm {it_w:.1f} vs cold {it_c:.1f} ({it_w / it_c:.2f}x)")
        if row.backend == "highs":
            notes.append(f"{c.block_updates} block updates")
        out.append([
            row.kind, row.size.key, row.backend, len(c.wall) - 1, ms(c.compile), ms(c.first),
            ms(row.compiled_mean()), ms(float(np.mean(c.own[1:]))),
            f"{ms(row.figure())} ({ref_n})", ms(row.reference_mean()), ms(ref_own), ratio(row.speedup()),
            ratio(row.amortised_speedup()), f"{row.largest_gap():.1e}", "; ".join(notes) or row.reference_label,
        ])
    return table(["program", "(S,A)", "backend", "re-solves", "compile", "1st solve", "re-solve", "solver own",
                  "re-solve on ref epochs (n)", "reference", "ref solver own", "ref/compiled",
                  "ref/compiled amortised", "max |Δf|", "notes"],
                 out, "lllrrrrrrrrrrrl")


def render_breakdown(rows: list[Row]) -> str:
    """Where a highs re-solve's wall time goes (means over re-solves, ms)."""
    out = []
    for row in rows:
        c = row.compiled
        wall, upd, sync, own = (float(np.mean(x[1:])) for x in (c.wall, c.update, c.sync, c.own))
        rest = wall - upd - sync - own
        out.append([row.kind, row.size.key, ms(wall), ms(upd), ms(sync), ms(own), ms(rest), ratio(wall / own),
                    f"{np.mean(c.iterations[1:]):.0f}"])
    return ("highs re-solve breakdown (ms per re-solve): update = program.update; sync = pushing changed data into HiGHS;"
            " HiGHS = its own run time (all attempts); rest = result read-back, SolveResult fill, Python\n"
            + table(["program", "(S,A)", "wall", "update", "sync", "HiGHS", "rest", "wall/HiGHS", "simplex it"], out,
                    "llrrrrrrr"))


#: highs what-ifs, set on the compiled instance (the library is unchanged): every update through one path.
#: Both spellings of the switch are set (a fixed BULK_THRESHOLD, or BULK_RATIO/BULK_MINIMUM of the cost model).
FORCED_UPDATES = {
    "per-entry": {"BULK_THRESHOLD": 1 << 60, "BULK_RATIO": 1, "BULK_MINIMUM": 1 << 60},
    "block": {"BULK_THRESHOLD": 0, "BULK_RATIO": 1 << 60, "BULK_MINIMUM": 0},
}


def render_what_if(rows: list[Row]) -> str:
    """highs: the default update choice against forcing per-entry changeCoeff calls or block replacement."""
    out = []
    for row in rows:
        c = row.compiled
        n = len(c.wall) - 1
        line = [row.kind, row.size.key, f"{c.block_updates}/{n}", ms(float(np.mean(c.wall[1:]))),
                ms(float(np.mean(c.sync[1:]))), ms(float(np.mean(c.own[1:])))]
        for label in FORCED_UPDATES:
            w = row.what_if.get(label)
            if w is None:
                line += ["not run", "", ""]
                continue
            line += [ms(float(np.mean(w.wall[1:]))), ms(float(np.mean(w.sync[1:]))), ms(float(np.mean(w.own[1:])))]
        out.append(line)
    return ("what-if (highs; switch set on the compiled instance, library unchanged): the default update choice vs"
            " forcing one changeCoeff call per changed entry, or replacing the parameter block (deleteRows/addRows +"
            " setBasis) on every update; ms per re-solve\n"
            + table(["program", "(S,A)", "default: block updates", "wall", "sync", "HiGHS",
                     "per-entry: wall", "sync", "HiGHS", "block: wall", "sync", "HiGHS"], out, "llrrrrrrrrrr"))


def _overhead_target(targets, row: Row, what: str, need: float) -> None:
    """Wall time per re-solve over the solver's own time (means over the re-solves), against ``need``."""
    o = row.overhead()
    own = float(np.mean(row.compiled.own[1:]))
    targets.add("re-solve", f"{what}, {row.kind} {row.size.key}", f"{ms(float(np.mean(row.compiled.wall[1:])))} ms",
                f"{ms(own)} ms", ratio(o), f"<= {need:g}x", o <= need,
                "" if o <= need else f"{(o - need) / need:.0%} over ({o:.2f}x)")


def _targets(rows: list[Row], targets) -> None:
    def find(kind, key, backend):
        for row in rows:
            if row.kind == kind and row.size.key == key and row.backend == backend:
                return row
        return None

    for kind in ("optimistic", "occupancy"):
        for key, need in (("(6,16)", 10.0), ("(60,10)", 20.0)):
            row = find(kind, key, "highs")
            if row is None or row.compiled is None:
                continue
            s = row.speedup()
            ceiling = row.reference_mean() / row.compiled_mean(row.naive_epochs, "own")
            targets.add("re-solve", f"highs vs naive CVXPY+HiGHS, {kind} {key}", f"{ms(row.figure())} ms",
                        f"{ms(row.reference_mean())} ms", ratio(s), f">= {need:g}x faster", s >= need,
                        "" if s >= need else f"{s / need:.2f} of the target; even at zero overhead:"
                        f" naive / HiGHS own = {ceiling:.1f}x")
        row = find(kind, "(60,10)", "highs")
        if row is not None and row.compiled is not None:
            _overhead_target(targets, row, "highs wall / HiGHS own time", 1.3)
        for row in rows:
            if row.kind != kind or row.backend != "cvxpy":
                continue
            if row.compiled is None:
                targets.add("re-solve", f"cvxpy Parameters vs naive CVXPY+Clarabel, {kind} {row.size.key}", "-", "-",
                            "-", ">= 3x faster", False, row.skipped)
                continue
            s = row.speedup()
            ceiling = row.reference_mean() / row.compiled_mean(row.naive_epochs, "own")
            targets.add("re-solve", f"cvxpy Parameters vs naive CVXPY+Clarabel, {kind} {row.size.key}",
                        f"{ms(row.figure())} ms", f"{ms(row.reference_mean())} ms", ratio(s), ">= 3x faster", s >= 3,
                        "" if s >= 3 else f"{s / 3:.2f} of the target; even at zero overhead: naive / solver own"
                        f" = {ceiling:.1f}x")
            _overhead_target(targets, row, "cvxpy wall / solver own time", 1.5)
            if row.size.key == "(60,10)":
                peak = row.peak_memory / 2**30
                targets.add("re-solve", f"cvxpy DPP compile + first solve, peak memory, {kind} (60,10)",
                            f"{peak:.2f} GiB", "-", "-", "<= 2 GiB", peak <= 2, "" if peak <= 2 else f"{peak:.2f} GiB")
        for row in rows:
            if row.kind != kind or row.backend != NO_DPP or row.compiled is None:
                continue
            s = row.speedup()
            targets.add("re-solve", f"what-if: cvxpy backend with ignore_dpp=True vs naive, {kind} {row.size.key}",
                        f"{ms(row.figure())} ms", f"{ms(row.reference_mean())} ms", ratio(s), "(what-if)", None)
        for row in rows:
            if row.kind != kind or row.backend != "pyomo" or row.compiled is None:
                continue
            it_w, it_c = np.mean(row.compiled.iterations[1:]), np.mean(row.cold.iterations[1:])
            targets.add("re-solve", f"pyomo warm vs cold Ipopt (same model), {kind} {row.size.key}",
                        f"{ms(row.figure())} ms, {it_w:.1f} it", f"{ms(row.reference_mean())} ms, {it_c:.1f} it",
                        f"{ratio(row.speedup())} time, {it_c / it_w:.1f}x it", "report", None)

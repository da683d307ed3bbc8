"""The episodic optimum: the occupancy program of a random episodic model, built, compiled and solved on each backend.

Run alone:  python benchmarks/bench_episodic.py [--sizes 50,5,20 200,5,50] [--backends highs,scipy,...]
                                                [--time-limit SECONDS] [--successors K]
            python benchmarks/bench_episodic.py --crossover [--objective linear|logs] [--repeats N]

Random models are built here from numpy: a time-homogeneous Dirichlet(1) kernel over every successor (dense, S²·A
entries), or over K random successors of each pair with ``--successors K`` (stored sparse); rewards and one cost
uniform on [0, 1]; a linear objective and the budget ``ζ <= 0.45·H`` on the cost's per-episode total (it binds:
the unconstrained optimum spends more). Seed 0.

For each size, each backend's time is split into **build** (the program from the model), **compile** and **solve**
(wall seconds, and CPU seconds of this process, which a loaded machine disturbs less), with the status and the
objective's relative difference from a reference: the same LP assembled here with scipy.sparse from the formulas and
solved by ``scipy.optimize.linprog`` (HiGHS through SciPy). The targets are on highs: the whole episodic optimum (build
+ compile + solve) within 0.5 s at (S, A, H) = (50, 5, 20) and 10 s at (200, 5, 50); the agreement target is 1e-7
relative on every backend that takes the program.

Backends default to every installed one (above 2,000,000 kernel entries: highs and scipy; the others build an
expression per nonzero); a backend stopped by ``--time-limit`` (each attempt's limit; compiling is not limited) or
failing says so in its row. Above that size the reference is the optimum of the column generation below instead of
linprog's (too slow there), with its Lagrangian upper bound as the certificate.

Each size also prints the same optimum by column generation over deterministic Markov policies, priced by backward
induction on ``r − y c`` with a two-row linprog master, written here (a second reference, sharing no code with the
``mdp-columns`` backend, which solves the episodic occupancy program by that route). The row ``auto`` is the backend
the registry's rule (``choose_backend``) takes for the program, with the same figures; the targets are checked on
``highs`` (as the issue states them) and on ``auto`` (what a user of ``curlopt optimum`` gets).

``--crossover`` instead times compile + solve (the build is the same for every backend) on ``highs`` and
``mdp-columns`` over a ladder of small and mid-size models (best of ``--repeats``; wall and CPU seconds), and
with ``--objective logs`` a sum of logs of two reward signals on ``cvxpy`` against ``mdp-columns``: the
measurements the ``auto`` rule's episodic threshold is placed from.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _report import Targets, Tee, header_lines, load_average, table  # noqa: E402

#: (S, A, H) -> the target of highs's whole optimum (build + compile + solve), wall seconds
TARGETS = {(50, 5, 20): 0.5, (200, 5, 50): 10.0}
#: objectives agree with the reference within this relative difference
AGREEMENT = 1e-7
BUDGET_SHARE = 0.45
#: above this many kernel entries over the steps, linprog is not the reference (too slow for a benchmark run) and
#: only the backends of LARGE_BACKENDS run unless named
LARGE_ENTRIES = 2_000_000
LARGE_BACKENDS = ("highs", "scipy", "mdp-columns")
#: the ladder of --crossover: (S, A, H), dense kernels
LADDER = ((3, 2, 3), (5, 3, 5), (6, 3, 6), (8, 3, 8), (10, 4, 10), (10, 4, 20), (20, 4, 10), (20, 5, 20), (30, 5, 20), (50, 5, 20))


def random_model(S: int, A: int, H: int, successors: int | None, seed: int = 0, objective: str = "linear"):
    """The random episodic model of the module docstring (``objective="logs"``: a sum of logs of two reward
    signals)."""
    from curlopt.models.episodic import EpisodicCMDP
    from curlopt.utilities.library import Linear, LinearBound, SumOfLogs

    rng = np.random.default_rng(seed)
    if successors is None:
        kernel = rng.dirichlet(np.ones(S), size=(S, A))
    else:
        cols = np.argsort(rng.uniform(size=(S * A, S)), axis=1)[:, :successors]
        values = rng.dirichlet(np.ones(successors), size=S * A)
        kernel = sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), successors), cols.ravel())),
                              shape=(S * A, S))
    rewards = rng.uniform(size=(1 if objective == "linear" else 2, S, A))
    costs = rng.uniform(size=(1, S, A))
    f = Linear([1.0]) if objective == "linear" else SumOfLogs(dim=2)
    return EpisodicCMDP(rewards, costs, f, [LinearBound([1.0], BUDGET_SHARE * H)], kernel=kernel,
                        horizon=H, name=f"random-episodic-{S}-{A}-{H}")


def reference_value(model) -> tuple[float, float]:
    """(the optimum, seconds) of the LP written here: q >= 0 (H·S·A), Σ_a q_0 = μ, Σ_a q_{h+1}(s',a) = Σ P q_h,
    Σ_h c·q_h <= budget; maximise Σ_h r·q_h."""
    from scipy.optimize import linprog

    started = time.perf_counter()
    S, A, H = model.n_states, model.n_actions, model.horizon
    kernel = model.transitions if model.sparse else sp.csr_matrix(model.kernel.reshape(S * A, S))
    flow = sp.csr_matrix(sp.kron(sp.eye(S), np.ones((1, A))))
    moved = -sp.csr_matrix(kernel).T.tocsr()
    blocks = [[None] * H for _ in range(H)]
    blocks[0][0] = flow
    for h in range(H - 1):
        blocks[h + 1][h] = moved
        blocks[h + 1][h + 1] = flow
    A_eq = sp.bmat(blocks, format="csr") if H > 1 else flow
    b_eq = np.concatenate([model.initial, np.zeros((H - 1) * S)])
    c = np.tile(model.rewards[0].ravel(), H)
    A_ub = np.tile(model.costs[0].ravel(), H)[None]
    result = linprog(-c, A_ub=A_ub, b_ub=[BUDGET_SHARE * H], A_eq=A_eq, b_eq=b_eq, method="highs")
    if result.status != 0:
        raise RuntimeError(f"the reference LP failed: {result.message}")
    return float(-result.fun), time.perf_counter() - started


def policy_columns_value(model, tolerance: float = 1e-10) -> tuple[float, float, float, int]:
    """The same optimum by column generation over deterministic Markov policies, written here (a second reference).

    The master ``max Σ_j w_j λ_j`` s.t. ``Σ_j w_j = 1``, ``Σ_j w_j ζ_j <= budget``, ``w >= 0`` (linprog) over the
    per-episode totals of the policies found so far; pricing by backward induction on ``r − y c`` (y the budget
    row's dual), a policy entering while its value beats the mass row's dual. Linear objective, one budget row
    (this benchmark's models). Returns (optimum, its upper bound by weak duality, seconds, pricing rounds)."""
    from scipy.optimize import linprog

    started = time.perf_counter()
    S, A, H = model.n_states, model.n_actions, model.horizon
    kernel = model.transitions if model.sparse else sp.csr_matrix(model.kernel.reshape(S * A, S))
    r, c, mu, budget = model.rewards[0], model.costs[0], model.initial, BUDGET_SHARE * H

    def best(signal: np.ndarray) -> np.ndarray:
        """The greedy policy of backward induction on ``signal``, shape (H, S) of actions."""
        value, policy = np.zeros(S), np.zeros((H, S), dtype=np.int64)
        for h in reversed(range(H)):
            q = signal + (kernel @ value).reshape(S, A) if h < H - 1 else signal
            policy[h] = q.argmax(axis=1)
            value = q[np.arange(S), policy[h]]
        return policy

    def totals(policy: np.ndarray) -> tuple[float, float]:
        d, reward, cost = mu.copy(), 0.0, 0.0
        for h in range(H):
            pairs = np.arange(S) * A + policy[h]
            reward += float(d @ r.ravel()[pairs])
            cost += float(d @ c.ravel()[pairs])
            d = kernel[pairs].T @ d
        return reward, cost

    columns = [totals(best(r)), totals(best(-c))]
    rounds = 0
    while True:
        rounds += 1
        lam, zeta = np.array(columns).T
        res = linprog(-lam, A_ub=zeta[None], b_ub=[budget], A_eq=np.ones((1, lam.size)), b_eq=[1.0], method="highs",
                      options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
        y, y0 = -res.ineqlin.marginals[0], -res.eqlin.marginals[0]   # duals of the maximisation
        policy = best(r - y * c)
        reward, cost = totals(policy)
        known = (reward, cost) in columns   # re-priced: the master's duals are as exact as they get
        if known or reward - y * cost <= y0 + tolerance * max(1.0, abs(y0)) or rounds > 200:
            # weak duality: for any y >= 0, max_π (λ − y ζ) + y·budget bounds the optimum from above
            bound = reward - y * cost + y * budget
            return float(-res.fun), bound, time.perf_counter() - started, rounds
        columns.append((reward, cost))


def _timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def measure(model, backend_name: str, time_limit: float | None) -> dict:
    """Build, compile and solve on one backend (``auto``: the registry's choice for the program, made inside the
    timed build); the row's figures."""
    from curlopt.backends.registry import choose_backend, get_backend
    from curlopt.programs import EpisodicOccupancyProgram

    row: dict = {"backend": backend_name}
    try:
        def build():
            program = EpisodicOccupancyProgram(model)
            chosen = (choose_backend((model.objective, *model.constraints), model, type(program))
                      if backend_name == "auto" else backend_name)
            return program, chosen

        (program, chosen), row["build"], row["build_cpu"] = _timed(build)
        if backend_name == "auto":
            row["backend"] = f"auto ({chosen})"
        backend = get_backend(chosen, time_limit=time_limit)
        compiled, row["compile"], row["compile_cpu"] = _timed(lambda: backend.compile(program))
        result, row["solve"], row["solve_cpu"] = _timed(compiled.solve)
    except Exception as exc:  # a benchmark row, not a crash: say what failed
        row["status"] = f"{type(exc).__name__}: {str(exc)[:80]}"
        return row
    row["status"] = result.status.value + ("" if not result.fell_back else " (fallback)")
    row["objective"] = result.objective
    row["total"] = row["build"] + row["compile"] + row["solve"]
    row["total_cpu"] = row["build_cpu"] + row["compile_cpu"] + row["solve_cpu"]
    return row


def _s(value) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3f}"


def run_item(say, targets: Targets, sizes, backends, time_limit: float | None, successors: int | None) -> None:
    from curlopt.backends import installed_backends

    installed = installed_backends()
    say(f"load average before: {load_average()}")
    for S, A, H in sizes:
        model = random_model(S, A, H, successors)
        entries = (model.transitions.nnz if model.sparse else S * S * A) * (H - 1)
        value, bound, seconds, rounds = policy_columns_value(model)
        columns_line = (f"written here: column generation over deterministic policies (backward-induction"
                        f" pricing, linprog master) {value:.10g} in {seconds:.3f} s wall, {rounds} pricing rounds;"
                        f" Lagrangian upper bound {bound:.10g} (gap {bound - value:.1e})")
        if entries <= LARGE_ENTRIES:
            reference, reference_time = reference_value(model)
            source = f"linprog on the LP written here, {reference_time:.2f} s"
        else:   # the LP is too large for linprog in a benchmark run: the certified column-generation optimum
            reference, source = value, "the column-generation optimum above, certified by its Lagrangian bound"
        say(f"\n(S, A, H) = ({S}, {A}, {H}), kernel {'dense' if successors is None else f'{successors} successors'}:"
            f" {H * S * A:,} variables, {entries:,} kernel entries over the steps")
        say(columns_line)
        say(f"reference {reference:.10g} ({source})")
        rows = []
        chosen = backends if backends is not None else (
            installed if entries <= LARGE_ENTRIES else [n for n in installed if n in LARGE_BACKENDS])
        if backends is None and entries > LARGE_ENTRIES:
            say(f"backends at this size: {', '.join(chosen)} (the others build Python/CVXPY expressions per nonzero,"
                f" {entries:,} of them, gigabytes; pass --backends to run them anyway)")
        for name in [*chosen, "auto"]:
            row = measure(model, name, time_limit)
            name = row["backend"]
            objective = row.get("objective")
            gap = abs(objective - reference) / max(1.0, abs(reference)) if objective is not None else math.nan
            rows.append([name, _s(row.get("build")), _s(row.get("compile")), _s(row.get("solve")), _s(row.get("total")),
                         _s(row.get("total_cpu")), row["status"], "-" if math.isnan(gap) else f"{gap:.1e}"])
            if objective is not None and math.isfinite(objective):
                targets.add("episodic", f"({S},{A},{H}) {name}: objective vs reference", f"{gap:.1e}",
                            f"{reference:.10g}", "-", f"<= {AGREEMENT:g} rel.", gap <= AGREEMENT)
            if (name == "highs" or name.startswith("auto")) and (S, A, H) in TARGETS and successors is None:
                limit = TARGETS[(S, A, H)]
                total = row.get("total", math.inf)
                targets.add("episodic", f"({S},{A},{H}) {name}: build + compile + solve", f"{total:.3f} s",
                            f"CPU {row.get('total_cpu', math.nan):.3f} s", "-", f"<= {limit:g} s", total <= limit,
                            "" if total <= limit else f"{total / limit:.1f}x the target")
        say(table(["backend", "build s", "compile s", "solve s", "total s", "total CPU s", "status", "rel. diff"], rows))
    say(f"load average after: {load_average()}")


def crossover(say, objective: str, repeats: int) -> None:
    """Compile + solve on the LP or conic route and on mdp-columns over :data:`LADDER` (module docstring)."""
    from curlopt.backends.registry import choose_backend, get_backend
    from curlopt.programs import EpisodicOccupancyProgram

    whole = "highs" if objective == "linear" else "cvxpy"
    say(f"load average before: {load_average()}")
    say(f"compile + solve, best of {repeats} (wall and CPU seconds); objective {objective}; dense kernels")
    rows = []
    for S, A, H in LADDER:
        model = random_model(S, A, H, None, objective=objective)
        figures = {}
        for name in (whole, "mdp-columns"):
            best_wall = best_cpu = math.inf
            value = math.nan
            for _ in range(repeats):
                program = EpisodicOccupancyProgram(model)
                backend = get_backend(name)
                result, wall, cpu = _timed(lambda b=backend, p=program: b.compile(p).solve())
                best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
                value = result.objective
            figures[name] = (best_wall, best_cpu, value)
        entries = S * S * A * (H - 1)
        auto = choose_backend((model.objective, *model.constraints), model, EpisodicOccupancyProgram)
        (w0, c0, v0), (w1, c1, v1) = figures[whole], figures["mdp-columns"]
        rows.append([f"({S},{A},{H})", f"{entries:,}", f"{w0:.4f}", f"{c0:.4f}", f"{w1:.4f}", f"{c1:.4f}",
                     f"{c0 / c1:.1f}", f"{abs(v0 - v1) / max(1.0, abs(v0)):.1e}", auto])
    say(table(["(S,A,H)", "kernel entries", f"{whole} wall", f"{whole} CPU", "mdp-columns wall", "mdp-columns CPU",
               "CPU ratio", "rel. diff", "auto takes"], rows))
    say(f"load average after: {load_average()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["50,5,20", "200,5,50"], help="S,A,H triples")
    parser.add_argument("--backends", default=None, help="comma-separated backend names (default: every installed)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="each solve attempt's limit, seconds")
    parser.add_argument("--successors", type=int, default=None, help="sparse kernels with this many successors")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    parser.add_argument("--crossover", action="store_true", help="time the ladder of small models instead")
    parser.add_argument("--objective", choices=("linear", "logs"), default="linear", help="the ladder's objective")
    parser.add_argument("--repeats", type=int, default=3, help="the ladder's repeats (the best is kept)")
    args = parser.parse_args(argv)
    sizes = [tuple(int(v) for v in size.split(",")) for size in args.sizes]
    backends = args.backends.split(",") if args.backends else None
    say = Tee()
    for line in header_lines():
        say(line)
    say(time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    if args.crossover:
        crossover(say, args.objective, args.repeats)
        if args.out:
            Path(args.out).write_text(say.text())
        return 0
    targets = Targets()
    run_item(say, targets, sizes, backends, args.time_limit, args.successors)
    say("")
    say(targets.render())
    if args.out:
        Path(args.out).write_text(say.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

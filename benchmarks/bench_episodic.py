"""The episodic optimum: the occupancy program of a random episodic model, built, compiled and solved on each backend.

Run alone:  python benchmarks/bench_episodic.py [--sizes 50,5,20 200,5,50] [--backends highs,scipy,...]
                                                [--time-limit SECONDS] [--successors K]

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

Backends default to every installed one; a backend stopped by ``--time-limit`` (each attempt's limit; compiling is
not limited) or failing says so in its row.
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


def random_model(S: int, A: int, H: int, successors: int | None, seed: int = 0):
    """The random episodic model of the module docstring."""
    from curlopt.models.episodic import EpisodicCMDP
    from curlopt.utilities.library import Linear, LinearBound

    rng = np.random.default_rng(seed)
    if successors is None:
        kernel = rng.dirichlet(np.ones(S), size=(S, A))
    else:
        cols = np.argsort(rng.uniform(size=(S * A, S)), axis=1)[:, :successors]
        values = rng.dirichlet(np.ones(successors), size=S * A)
        kernel = sp.csr_array((values.ravel(), (np.repeat(np.arange(S * A), successors), cols.ravel())),
                              shape=(S * A, S))
    rewards = rng.uniform(size=(1, S, A))
    costs = rng.uniform(size=(1, S, A))
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], BUDGET_SHARE * H)], kernel=kernel,
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


def _timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def measure(model, backend_name: str, time_limit: float | None) -> dict:
    """Build, compile and solve on one backend; the row's figures."""
    from curlopt.backends.registry import get_backend
    from curlopt.programs import EpisodicOccupancyProgram

    row: dict = {"backend": backend_name}
    try:
        program, row["build"], row["build_cpu"] = _timed(lambda: EpisodicOccupancyProgram(model))
        backend = get_backend(backend_name, time_limit=time_limit)
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
    say(f"load average before: {load_average()}")
    for S, A, H in sizes:
        model = random_model(S, A, H, successors)
        entries = (model.transitions.nnz if model.sparse else S * S * A) * (H - 1)
        reference, reference_time = reference_value(model)
        say(f"\n(S, A, H) = ({S}, {A}, {H}), kernel {'dense' if successors is None else f'{successors} successors'}:"
            f" {H * S * A:,} variables, {entries:,} kernel entries over the steps; reference (linprog) {reference:.10g}"
            f" in {reference_time:.2f} s")
        rows = []
        for name in backends:
            row = measure(model, name, time_limit)
            objective = row.get("objective")
            gap = abs(objective - reference) / max(1.0, abs(reference)) if objective is not None else math.nan
            rows.append([name, _s(row.get("build")), _s(row.get("compile")), _s(row.get("solve")), _s(row.get("total")),
                         _s(row.get("total_cpu")), row["status"], "-" if math.isnan(gap) else f"{gap:.1e}"])
            if objective is not None:
                targets.add("episodic", f"({S},{A},{H}) {name}: objective vs reference", f"{gap:.1e}",
                            f"{reference:.10g}", "-", f"<= {AGREEMENT:g} rel.", gap <= AGREEMENT)
            if name == "highs" and (S, A, H) in TARGETS and successors is None:
                limit = TARGETS[(S, A, H)]
                total = row.get("total", math.inf)
                targets.add("episodic", f"({S},{A},{H}) highs: build + compile + solve", f"{total:.3f} s",
                            f"CPU {row.get('total_cpu', math.nan):.3f} s", "-", f"<= {limit:g} s", total <= limit,
                            "" if total <= limit else f"{total / limit:.1f}x the target")
        say(table(["backend", "build s", "compile s", "solve s", "total s", "total CPU s", "status", "rel. diff"], rows))
    say(f"load average after: {load_average()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["50,5,20", "200,5,50"], help="S,A,H triples")
    parser.add_argument("--backends", default=None, help="comma-separated backend names (default: every installed)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="each solve attempt's limit, seconds")
    parser.add_argument("--successors", type=int, default=None, help="sparse kernels with this many successors")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    from curlopt.backends import installed_backends

    sizes = [tuple(int(v) for v in size.split(",")) for size in args.sizes]
    backends = args.backends.split(",") if args.backends else installed_backends()
    say = Tee()
    for line in header_lines():
        say(line)
    say(time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    targets = Targets()
    run_item(say, targets, sizes, backends, args.time_limit, args.successors)
    say("")
    say(targets.render())
    if args.out:
        Path(args.out).write_text(say.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

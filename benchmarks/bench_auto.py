"""The figures behind ``backend="auto"`` (:func:`curlopt.backends.registry.choose_backend`): each candidate backend on
the programs ``auto`` decides for, by model and size.

Run alone:  python benchmarks/bench_auto.py [--only optimum|optimistic] [--limit SECONDS] [--cases NAME,NAME]
            [--steps N]

The figures in docs/guide/solvers.md ("Which backend auto takes") come from ``--only optimum`` and from
``--only optimistic --steps 60000 --cases random1000x4k5,queue-1000,random600x4k5``.

Two tables, every figure a wall-clock time (``time.perf_counter``) of this process, on whatever else the machine is
running (the figures are for placing thresholds, not for asserting; nothing here is a test):

* **optimum**: ``solve_optimum(model, backend)`` (the occupancy program of the known model, as ``curlopt optimum``
  and ``curlopt run``'s reference optimum solve it): compile + first solve, on the whole program (``highs``, or ``cvxpy``
  for utilities no LP takes) and on ``mdp-columns``, with
  the model's structure next to it (S, A, stored kernel entries, and the *reach depth*: the steps breadth-first
  search from state 0 needs to reach every state, which :func:`curlopt.backends.registry.reach_depth` computes);
* **optimistic**: the planning seconds of each epoch of a UC-CURL run (L1 program, doubling epochs of at least
  1,000 steps) and a UCRL-CMDP run (box program, horizon 10^9: epochs of 1,000 steps) of ``--steps`` steps, on
  ``highs`` against ``highs-columns`` (L1) and ``highs-box-columns`` (box), read from the runs' traces: as the
  counts grow, later epochs can cost far more than the first ones.

In the optimum table every solve gets ``--limit`` seconds (default 300); a solve stopped there prints ``>limit``. The
objectives of both backends are printed too: they must agree (same program, same optimum).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _models() -> dict[str, Callable[[], object]]:
    from curlopt.models import queue_model, random_model, scheduler_model

    cases: dict[str, Callable[[], object]] = {
        "queue": lambda: queue_model(),
        "scheduler": lambda: scheduler_model(),
        "random10x3": lambda: random_model(10, 3, successors=3, seed=0),
        "random20x3": lambda: random_model(20, 3, successors=3, seed=102),
        "queue-300": lambda: queue_model(buffer=300),
        "queue-1000": lambda: queue_model(buffer=1000),
    }
    for n in (100, 300, 600, 1000, 2000, 3000):
        cases[f"random{n}x4k5"] = (lambda n=n: random_model(n, 4, successors=5, seed=0))
    for n in (300, 1000, 3000):
        cases[f"random{n}x4k5log"] = (lambda n=n: random_model(n, 4, successors=5, seed=0, objective="log", n_rewards=2))
    for n in (30, 60):
        cases[f"random{n}x4dense"] = (lambda n=n: random_model(n, 4, seed=0))
    return cases


def _solve(backend_name: str, program, limit: float):
    """(seconds, result) of compiling ``program`` on ``backend_name`` and solving it once."""
    from curlopt.backends import get_backend

    started = time.perf_counter()
    compiled = get_backend(backend_name, time_limit=limit).compile(program)
    result = compiled.solve()
    return time.perf_counter() - started, result, compiled


def _shown(seconds: float, result, limit: float) -> str:
    if result.status.value == "time_limit":
        return f">{limit:g}"
    return f"{seconds:.3g}" if result.ok else f"{seconds:.3g} ({result.status.value})"


def _structure(model) -> str:
    from curlopt.backends.registry import kernel_entries, reach_depth  # noqa: F401

    return f"S={model.n_states} A={model.n_actions} entries={kernel_entries(model)} depth={reach_depth(model)}"


def optimum_table(names: list[str], limit: float) -> None:
    from curlopt.programs import OccupancyProgram

    print(f"\n# optimum: compile + solve of the occupancy program (seconds; limit {limit:g} s)")
    print(f"{'case':18} {'structure':44} {'whole program':>19} {'mdp-columns':>12}  objectives")
    for name in names:
        model = _models()[name]()
        row, values = [], []
        # the whole program on an LP solver (LP-representable utilities) or a conic one (the others)
        whole = "highs" if all(u.is_lp_representable for u in (model.objective, *model.constraints)) else "cvxpy"
        for backend in (whole, "mdp-columns"):
            seconds, result, _ = _solve(backend, OccupancyProgram(model), limit)
            row.append(_shown(seconds, result, limit))
            values.append(f"{result.objective:.8g}" if result.ok else "-")
        print(f"{name:18} {_structure(model):44} {whole + ' ' + row[0]:>19} {row[1]:>12}  {' / '.join(values)}",
              flush=True)


def _epochs(agent_name: str, model, backend: str, steps: int, seed: int = 0) -> list[float]:
    """The planning seconds of each epoch of a run of ``steps`` steps (compile excluded: the agent compiles its
    program when it is built).

    UC-CURL: doubling epochs of at least 1,000 steps, the analysis radius; UCRL-CMDP: horizon 10^9, so epochs of
    1,000 steps."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments import run

    if agent_name == "uc-curl":
        agent = make_agent("uc-curl", model, backend=backend, min_epoch_length=1000, radius="analysis")
    else:
        agent = make_agent("ucrl-cmdp", model, backend=backend, horizon=10 ** 9)
    trace = run(agent, make(model), steps, seed=seed, progress=False, optimum_backend="auto")
    return [e.solve_time for e in trace.epochs]


def optimistic_table(names: list[str], steps: int) -> None:
    print(f"\n# optimistic programs: planning seconds per epoch of a run of {steps:,} steps (epochs: first / mean /"
          " mean of the second half / largest)")
    print(f"{'case':18} {'agent':10} {'highs':>34} {'column generation':>52}")
    for name in names:
        model = _models()[name]()
        for agent, columns in (("uc-curl", "highs-columns"), ("ucrl-cmdp", "highs-box-columns")):
            cells = []
            for backend in ("highs", columns):
                times = _epochs(agent, model, backend, steps)
                late = times[len(times) // 2:]
                cells.append(f"{len(times)}: {times[0]:.3g} / {np.mean(times):.3g} / {np.mean(late):.3g} /"
                             f" {max(times):.3g}")
            print(f"{name:18} {agent:10} {cells[0]:>34} {columns + ' ' + cells[1]:>52}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["optimum", "optimistic"])
    parser.add_argument("--limit", type=float, default=300.0)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--steps", type=int, default=60_000, help="steps of each agent run (optimistic table)")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n] or list(_models())
    if args.only in (None, "optimum"):
        optimum_table(names, args.limit)
    if args.only in (None, "optimistic"):
        optimistic_table(names, args.steps)


if __name__ == "__main__":
    main()

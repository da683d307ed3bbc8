"""Where a PS-CURL or safe-mode run spends its CPU per epoch, measured inside a real run (on its own, not in run.py).

One full-scale queue task per algorithm (``curlopt reproduce queue``'s, T = 500,000, seed 0, the paper profile) is
run in this process by the study's own function (``curlopt.experiments.executors.execute_task``), after a short
warm-up run of the same algorithm (imports, caches). While it runs, the CPU time of this thread
(``time.thread_time``) is summed over each call of:

* ``_update_program`` — the agent's epoch data: the posterior draw (and safe mode's width, weights and margins)
  written into its program;
* ``epsilon`` — the tightness of the epoch;
* ``CompiledProgram.solve`` — the shared solve wrapper with the solver inside;
* ``run_highs`` — HiGHS's own run inside it (``curlopt.backends.highs.backend.run_highs``: the solver);
* ``_plan_from`` — the policy from the solution;
* ``begin_epoch`` — all of the above.

Each is printed per epoch (µs), with the run's CPU seconds (``time.process_time`` around the task). The wrappers
are set on the classes, so the script measures any version of the code that has these methods: run it with
``PYTHONPATH`` on the old code and on the new, in turn, to compare (a figure measured in a run, between HiGHS
solves, is 2-3 times what a loop of the same call alone shows: the run's caches are cold).

    python benchmarks/bench_epoch_updates.py [ALG,ALG ...] [--seed N] [--rounds R]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from typing import Any

PARTS = (("update_program", "_update_program"), ("epsilon", "epsilon"), ("solve", "solve"),
         ("highs_run", "run_highs"), ("plan_from", "_plan_from"), ("begin_epoch", "begin_epoch"))


def _clocked(function: Callable[..., Any], label: str, sums: dict[str, float]) -> Callable[..., Any]:
    @functools.wraps(function)
    def clocked(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            sums[label] = sums.get(label, 0.0) + time.thread_time() - started
    return clocked


def install(sums: dict[str, float]) -> None:
    """Clock every part of :data:`PARTS` on the classes that define it."""
    from curlopt.agents import base, curl, safe
    from curlopt.backends import base as backends
    from curlopt.backends.highs import backend as highs

    owners = {"_update_program": (curl.PsCurl, safe.SafeCurl), "epsilon": (base.ProgramAgent,),
              "solve": (backends.CompiledProgram,), "run_highs": (highs,), "_plan_from": (base.ProgramAgent,),
              "begin_epoch": (base.ProgramAgent,)}
    for label, name in PARTS:
        for owner in owners[name]:
            setattr(owner, name, _clocked(getattr(owner, name), label, sums))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algorithms", nargs="?", default="ps-curl-linear,safe-curl,ps-curl-doubling")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from curlopt.experiments.executors import execute_task
    from curlopt.experiments.presets import plan_tasks

    sums: dict[str, float] = {}
    install(sums)
    for _ in range(args.rounds):
        for algorithm in args.algorithms.split(","):
            execute_task(plan_tasks("queue", [args.seed], 2_000, algorithms=[algorithm])[0][0])  # warm-up
            sums.clear()
            task = plan_tasks("queue", [args.seed], 500_000, algorithms=[algorithm])[0][0]
            started = time.process_time()
            trace = execute_task(task)
            cpu = time.process_time() - started
            epochs = len(trace.epochs)
            per_epoch = {label: round(sums.get(label, 0.0) / epochs * 1e6, 1) for label, _ in PARTS}
            print(f"{algorithm} epochs {epochs} run_cpu_s {cpu:.3f} us_per_epoch {json.dumps(per_epoch)}", flush=True)


if __name__ == "__main__":
    main()

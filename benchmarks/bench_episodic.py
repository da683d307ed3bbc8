"""The known-model optimum of episodic random models: build, compile and solve times per backend.

    python benchmarks/bench_episodic.py                       # (S, A, H) = (50, 5, 20) and (200, 5, 50) on highs
    python benchmarks/bench_episodic.py --backends highs,scipy --repeat 3

Targets: (50, 5, 20) on HiGHS at most 0.5 s, (200, 5, 50) at most 10 s (the whole of ``curlopt.optimum``: the
program built, compiled and solved). The reference printed beside each is backward induction on the same model
without its constraint (an exact O(H S² A) recursion: the floor any LP route stands on). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from curlopt.backends.registry import resolve_backend
from curlopt.models import build_model
from curlopt.models.backward import episode_backward_induction
from curlopt.optimum import known_model_program

TARGETS = {(50, 5, 20): 0.5, (200, 5, 50): 10.0}


def measure(size: tuple[int, int, int], backend: str, options: dict[str, Any]) -> dict[str, Any]:
    S, A, H = size
    model = build_model("random", n_states=S, n_actions=A, seed=0, horizon=H)
    start, cpu = time.perf_counter(), time.process_time()
    program = known_model_program(model)
    built = time.perf_counter()
    compiled = resolve_backend(backend, (model.objective, *model.constraints), **options).compile(program)
    compiled_at = time.perf_counter()
    result = compiled.solve()
    solved, cpu = time.perf_counter(), time.process_time() - cpu
    induction = time.perf_counter()
    episode_backward_induction(model)
    reference = time.perf_counter() - induction
    return {"build": built - start, "compile": compiled_at - built, "solve": solved - compiled_at,
            "total": solved - start, "cpu": cpu, "reference": reference, "objective": float(result.objective or 0.0),
            "status": result.status.value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="highs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--options", default="{}", help="backend options as JSON, e.g. '{\"options\": {\"solver\": \"ipm\"}}'")
    parser.add_argument("--sizes", default="50,5,20;200,5,50")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average {os.getloadavg()}")
    print(f"{'(S, A, H)':>14} {'backend':>8} {'build s':>8} {'compile s':>9} {'solve s':>8} {'total s':>8}"
          f" {'cpu s':>8} {'backward ind. s':>15} {'target':>7} verdict", flush=True)
    options = json.loads(args.options)
    sizes = [tuple(int(n) for n in item.split(",")) for item in args.sizes.split(";")]
    print(f"backend options {options}")
    for size in sizes:
        target = TARGETS.get(size, float("nan"))
        for backend in args.backends.split(","):
            runs = [measure(size, backend, options) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["total"])
            verdict = "PASS" if best["total"] <= target else "MISS"
            totals = ", ".join(f"{run['total']:.3f}" for run in runs)
            print(f"{str(size):>14} {backend:>8} {best['build']:8.3f} {best['compile']:9.3f} {best['solve']:8.3f}"
                  f" {best['total']:8.3f} {best['cpu']:8.3f} {best['reference']:15.4f} {target:7.1f} {verdict} ({best['status']},"
                  f" best of {args.repeat}; totals {totals})", flush=True)


if __name__ == "__main__":
    main()

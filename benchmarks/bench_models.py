"""Models at scale: build time and peak memory of the grown models, the fast path on a sparse kernel, diagnose.

Run:  python benchmarks/bench_models.py [--quick]

Three tables, nothing asserted:

* **build** — ``build_model`` for the queue (buffer 1,000 and 10,000: sparse), the scheduler (4 and 5 clients:
  dense, every entry positive) and the sparse random model (1,000 states, 5 actions, 5 successors a row): wall
  seconds and the peak of traced allocations (``tracemalloc``, which numpy reports to), and the model's nonzeros;
* **simulation** — ``ChainSimulator.play`` of a fixed policy (the uniform one, no trigger) for 10^6 steps on the
  queue with buffer 1,000 stored sparse (the table build included and apart), next to the paper's queue (dense);
* **diagnose** — :func:`curlopt.diagnostics.diagnose` on the same models: wall seconds and what it could not
  compute (its notes). ``--quick`` leaves out the two largest (queue 10,000, scheduler with 5 clients).

Timings are wall clock on a shared machine; with several processes on 2 cores, set ``OPENBLAS_NUM_THREADS=1``
(a dense eigensolver spinning two threads against other processes ran 10× slower when measured).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

MODELS = [
    ("queue", {"buffer": 1000}), ("queue", {"buffer": 10_000}), ("scheduler", {"clients": 4}),
    ("scheduler", {"clients": 5}), ("random", {"n_states": 1000, "n_actions": 5, "successors": 5}),
]
LARGEST = (("queue", {"buffer": 10_000}), ("scheduler", {"clients": 5}))


def _label(name: str, params: dict) -> str:
    return f"{name}(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def build_table(models) -> list[tuple[str, str, str, str, str]]:
    from curlopt.models import build_model

    rows = []
    for name, params in models:
        build_model(name, **params)  # imports and first-use costs out of the measurement
        tracemalloc.start()
        started = time.perf_counter()
        model = build_model(name, **params)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append((_label(name, params), "sparse" if model.sparse else "dense", f"{model.nnz:,}",
                     f"{seconds:.3f}", f"{peak / 2 ** 20:.1f}"))
    return rows


def simulation_table(steps: int) -> list[tuple[str, str, str, str]]:
    from curlopt.experiments.simulation import ChainSimulator
    from curlopt.models import build_model

    rows = []
    for label, model in (("queue(buffer=1000), sparse", build_model("queue", buffer=1000)),
                         ("queue (paper, S=6), dense", build_model("queue"))):
        kernel = model.transitions if model.sparse else model.kernel
        started = time.perf_counter()
        simulator = ChainSimulator(kernel, np.random.default_rng(1), np.random.default_rng(2))
        table_seconds = time.perf_counter() - started
        policy = np.full((model.n_states, model.n_actions), 1.0 / model.n_actions)
        started = time.perf_counter()
        pairs, _ = simulator.play(policy, steps)
        seconds = time.perf_counter() - started
        rows.append((label, f"{table_seconds:.3f}", f"{seconds:.2f}", f"{pairs.size / seconds:,.0f}"))
    return rows


def diagnose_table(models) -> list[tuple[str, str, str, str]]:
    from curlopt.diagnostics import diagnose
    from curlopt.models import build_model

    rows = []
    for name, params in models:
        model = build_model(name, **params)
        started = time.perf_counter()
        report = diagnose(model)
        seconds = time.perf_counter() - started
        relaxation = "-" if report.relaxation_time is None else f"{report.relaxation_time:.4g}"
        rows.append((_label(name, params), f"{seconds:.2f}", f"{relaxation} / {report.slater.backend or '-'}",
                     "; ".join(report.notes) or "-"))
    return rows


def _print(title: str, header: tuple[str, ...], rows) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    for row in (header, *rows):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out the two largest models")
    args = parser.parse_args()
    models = [m for m in MODELS if not (args.quick and m in LARGEST)]
    _print("build_model: wall seconds and peak traced memory", ("model", "storage", "nonzeros", "seconds", "peak MiB"),
           build_table(models))
    _print("ChainSimulator.play: uniform policy, no trigger, 10^6 steps", ("model", "table s", "play s", "steps/s"),
           simulation_table(10 ** 6))
    _print("diagnose: wall seconds, relaxation time / Slater backend, notes", ("model", "seconds", "relax / slater",
                                                                            "notes"), diagnose_table(models))


if __name__ == "__main__":
    main()

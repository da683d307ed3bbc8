"""Warm against cold starts of the ``pyomo`` backend (Ipopt through cyipopt) over a run's epochs.

For each model (the fair scheduler and the queue of docs/math.md §8) a UC-CURL
run is simulated: each epoch solves the optimistic ε-tight program (docs/math.md §3) with
the counts gathered so far and ``ε = tightness(t)`` (docs/math.md §4), plays the
extracted policy on the true kernel until the doubling trigger (docs/math.md §5) fires,
and updates counts and time. One compiled program is re-solved at **every**
epoch (warm: Ipopt starts from the previous epoch's primal point and
multipliers; for the ε-tight program this includes the phase-1 feasibility
solve). At sampled epochs (about ``--compare`` of them, spread geometrically over
the run) the same data is also solved by a **fresh build** (Pyomo model, bridge,
cold start), so the two columns are on identical programs.

The table gives Ipopt iterations and solve seconds of both, side by side, with
ratios; the build time of the fresh model; and |f_warm - f_cold| (they must
agree). Nothing is asserted: this is a benchmark, not a test.

Run: ``python benchmarks/bench_pyomo_warmstart.py [--horizon T] [--compare N] [--seed S]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from curlopt import OptimisticProgram, get_backend, tightness
from curlopt.backends.results import ProgramVariant
from curlopt.experiments.simulation.loop import ChainSimulator
from curlopt.models import queue_model, scheduler_model


def simulate_epoch(chain, policy, visits_before, max_steps):
    """Play ``policy`` on ``chain`` until the doubling trigger fires; return the epoch's counts and its steps."""
    S, A = policy.shape
    pairs, nexts = chain.play(policy, max_steps, np.maximum(1.0, visits_before))
    counts = np.bincount(pairs * S + nexts, minlength=S * A * S).reshape(S, A, S).astype(float)
    return counts, int(pairs.size)


def run(model, horizon, compare, seed):
    """Simulate to ``horizon`` steps; warm-solve every epoch, cold-solve the sampled ones. Returns rows and totals."""
    rng = np.random.default_rng(seed)
    S, A = model.n_states, model.n_actions
    counts = np.zeros((S, A, S))
    t = 1.0
    program = OptimisticProgram(model, counts=counts, time=t, epsilon=tightness(t))
    compiled = get_backend("pyomo").compile(program)
    chain = ChainSimulator(model.kernel, *rng.spawn(2), state=int(rng.integers(S)))
    rows, epoch = [], 0
    totals = dict(epochs=0, warm_it=0, warm_s=0.0, retries=0, fallback=0, failures=0)
    # compare at t in a geometric grid (epochs are short early and long late)
    marks = list(np.unique(np.geomspace(1, horizon, compare).round()))
    while t <= horizon:
        program.update(counts=counts, time=t, epsilon=tightness(t))
        retries = compiled.cold_retries
        warm = compiled.solve()
        totals["epochs"] += 1
        totals["warm_it"] += warm.iterations or 0
        totals["warm_s"] += warm.solve_time
        totals["retries"] += compiled.cold_retries - retries
        totals["fallback"] += warm.program is ProgramVariant.FALLBACK
        totals["failures"] += not warm.ok
        if marks and t >= marks[0]:
            while marks and t >= marks[0]:
                marks.pop(0)
            fresh_program = OptimisticProgram(model, counts=counts, time=t, epsilon=tightness(t))
            started = time.perf_counter()
            fresh = get_backend("pyomo").compile(fresh_program)
            build = time.perf_counter() - started
            cold = fresh.solve()
            rows.append(dict(
                epoch=epoch, t=t, eps=program.epsilon, variant=warm.program.value,
                ok=warm.ok and cold.ok, warm_it=warm.iterations or 0, cold_it=cold.iterations or 0,
                warm_s=warm.solve_time, cold_s=cold.solve_time, build_s=build,
                gap=abs(warm.objective - cold.objective) if warm.ok and cold.ok else float("nan"),
                retried=compiled.cold_retries > retries,
            ))
        policy = warm.policy if warm.ok else np.full((S, A), 1.0 / A)
        new, steps = simulate_epoch(chain, policy, counts.sum(axis=2), horizon)
        counts = counts + new
        t += steps
        epoch += 1
    return rows, totals


def report(name, rows, totals):
    print(f"\n{name}")
    header = (f"{'epoch':>5} {'t':>7} {'eps':>6} {'program':>8} | {'warm it':>7} {'cold it':>7} {'ratio':>5} |"
              f" {'warm s':>6} {'cold s':>6} {'ratio':>5} | {'build s':>7} | {'|Δf|':>7}")
    print(header)
    print("-" * len(header))
    for r in rows:
        it_ratio = r["warm_it"] / r["cold_it"] if r["cold_it"] else float("nan")
        s_ratio = r["warm_s"] / r["cold_s"] if r["cold_s"] else float("nan")
        flag = "*" if r["retried"] else ("!" if not r["ok"] else " ")
        print(f"{r['epoch']:>5} {r['t']:>7.0f} {r['eps']:>6.3f} {r['variant']:>8} | {r['warm_it']:>6}{flag}"
              f" {r['cold_it']:>7} {it_ratio:>5.2f} | {r['warm_s']:>6.3f} {r['cold_s']:>6.3f} {s_ratio:>5.2f} |"
              f" {r['build_s']:>7.3f} | {r['gap']:>7.1e}")
    compared = rows[1:]  # the first warm solve is a cold start too
    w_it = sum(r["warm_it"] for r in compared)
    c_it = sum(r["cold_it"] for r in compared)
    w_s = sum(r["warm_s"] for r in compared)
    c_s = sum(r["cold_s"] for r in compared)
    b_s = sum(r["build_s"] for r in compared)
    print(f"compared epochs ({len(compared)}, first excluded): iterations warm {w_it} / cold {c_it} ="
          f" {w_it / max(c_it, 1):.2f}; solve s warm {w_s:.2f} / cold {c_s:.2f} = {w_s / max(c_s, 1e-12):.2f};"
          f" a fresh build also costs {b_s / max(len(compared), 1):.3f} s per epoch")
    print(f"whole run: {totals['epochs']} epochs, {totals['warm_it']} warm iterations"
          f" ({totals['warm_it'] / max(totals['epochs'], 1):.1f} per epoch), {totals['warm_s']:.1f} s;"
          f" fallback epochs {totals['fallback']}, failed solves {totals['failures']},"
          f" warm starts retried cold {totals['retries']};"
          f" largest |f_warm - f_cold| {np.nanmax([r['gap'] for r in rows] + [0.0]):.1e}")
    print("(* = the warm start failed and was retried cold; ! = a solve without a solution)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=3000, help="steps simulated per model")
    parser.add_argument("--compare", type=int, default=16, help="about how many epochs get a cold comparison")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import cyipopt

    print(f"pyomo backend, Ipopt {'.'.join(map(str, cyipopt.IPOPT_VERSION))} via cyipopt (bridge), doubling trigger,"
          f" ε = sqrt(ln t / t), horizon {args.horizon} steps, seed {args.seed}")
    for name, model in (("scheduler (S=16, A=2: sum of logs, SLA ζ <= 0.3)", scheduler_model()),
                        ("queue (S=6, A=16: linear reward, two linear constraints)", queue_model())):
        report(name, *run(model, args.horizon, args.compare, args.seed))


if __name__ == "__main__":
    main()

"""UC-CURL's optimistic L1 program as the toolkit writes it against a compact formulation with the same optimum:
HiGHS's own run per epoch, on the epochs of a real run, side by side.

The toolkit (``OptimisticProgram``) has variables ρ (S·A), p and α (S·A·S) and rows: mass, link (S·A), flow (S-1),
deviation ± (2·S·A·S), radius (S·A) and the constraints. The compact one writes p = P^ρ + d⁺ - d⁻ with d⁺, d⁻ >= 0
(α = d⁺ + d⁻ loses nothing): rows mass, link Σ_s' (d⁺ - d⁻) = (1 - Σ_s' P^) ρ (S·A), flow (S-1), radius
Σ_s' (d⁺ + d⁻) <= β ρ (S·A), p >= 0 (S·A·S) and the constraints — about 40% fewer rows. Both describe the same set of
(ρ, p), so their optima agree (checked epoch by epoch); the vertices HiGHS reaches may differ, which is why the
toolkit cannot switch without changing its trajectories. The question this answers: would it be faster?

Both programs are replayed in this process from the recorded (counts, time, ε) of every epoch of one run, each on
its own warm-started HiGHS object, timing ``Highs.run`` only (the updates' cost is left out of both).

    python benchmarks/bench_optimistic_formulation.py [--steps 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import highspy
import numpy as np

import curlopt.backends.highs.backend as highs_backend
from curlopt.agents import make_agent
from curlopt.agents.curl import UcCurl
from curlopt.backends import get_backend
from curlopt.envs import make
from curlopt.experiments.simulation.loop import run
from curlopt.models import build_model
from curlopt.programs.optimistic import OptimisticProgram, l1_radius

#: the reproduce preset's UC-CURL (linear) options
AGENT_OPTIONS = {"backend": "highs", "trigger": "linear", "radius": "experiment", "tightness_constant": 1.0,
                 "unreached": "uniform"}


def record_epochs(model, steps: int, seed: int) -> list[tuple[np.ndarray, float, float]]:
    """(counts, time, ε) of every epoch of a UC-CURL run (the program update's arguments)."""
    records: list[tuple[np.ndarray, float, float]] = []
    update = UcCurl._update_program

    def recording(agent, t, epsilon):
        records.append((np.array(agent.counts, dtype=float), float(t), float(epsilon)))
        return update(agent, t, epsilon)

    UcCurl._update_program = recording
    try:
        run(make_agent("uc-curl", model, **AGENT_OPTIONS), make(model), steps, seed=seed, checkpoints=10, model=model)
    finally:
        UcCurl._update_program = update
    return records


def toolkit_replay(model, records) -> tuple[list[float], list[float]]:
    """HiGHS's run time and the objective of the toolkit's program at each recorded epoch."""
    times: list[float] = []
    run_highs = highs_backend.run_highs

    def timed(highs, left):
        start = time.perf_counter()
        out = run_highs(highs, left)
        times.append(time.perf_counter() - start)
        return out

    program = OptimisticProgram(model, radius="experiment")
    compiled = get_backend("highs").compile(program)
    objectives = []
    highs_backend.run_highs = timed
    try:
        for counts, t, epsilon in records:
            program.update(counts=counts, time=t, epsilon=epsilon)
            result = compiled.solve(fallback=False)
            objectives.append(result.objective if result.status.value == "optimal" else np.nan)
    finally:
        highs_backend.run_highs = run_highs
    return times, objectives


def compact_lp(model, counts: np.ndarray, t: float, epsilon: float) -> highspy.HighsLp:
    """The compact program at one epoch's data, as a HiGHS LP (minimising the negated objective)."""
    S, A = model.n_states, model.n_actions
    SA, N = S * A, S * A * S
    visits = counts.sum(axis=2)
    p_hat = (counts / np.maximum(1.0, visits)[:, :, None]).reshape(SA, S)
    beta = l1_radius(visits, t, S, A, "experiment").ravel()
    rho, d_plus, d_minus = np.arange(SA), SA + np.arange(N).reshape(SA, S), SA + N + np.arange(N).reshape(SA, S)
    rows, cols, vals, lower, upper = [], [], [], [], []

    def add_row(columns, values, lo, up):
        rows.extend([len(lower)] * len(columns))
        cols.extend(columns)
        vals.extend(values)
        lower.append(lo)
        upper.append(up)

    add_row(list(rho), [1.0] * SA, 1.0, 1.0)
    for k in range(SA):
        add_row([rho[k], *d_plus[k], *d_minus[k]], [-(1.0 - p_hat[k].sum())] + [1.0] * S + [-1.0] * S, 0.0, 0.0)
    for s in range(S - 1):  # Σ_a ρ(s,a) - Σ_{s'',a} p(s'',a,s) = 0
        coefficient = -p_hat[:, s].copy()
        coefficient[s * A:(s + 1) * A] += 1.0
        nonzero = np.flatnonzero(coefficient)
        add_row([*rho[nonzero], *d_plus[:, s], *d_minus[:, s]],
                [*coefficient[nonzero]] + [-1.0] * SA + [1.0] * SA, 0.0, 0.0)
    for k in range(SA):
        add_row([rho[k], *d_plus[k], *d_minus[k]], [-beta[k]] + [1.0] * 2 * S, -np.inf, 0.0)
    for k in range(SA):
        for s in range(S):
            add_row([rho[k], d_plus[k, s], d_minus[k, s]], [p_hat[k, s], 1.0, -1.0], 0.0, np.inf)
    costs = model.costs.reshape(model.costs.shape[0], SA)
    for constraint in model.constraints:  # g(ζ) = w·ζ - bound <= -ε
        coefficient = np.asarray(constraint.weights) @ costs
        nonzero = np.flatnonzero(coefficient)
        add_row(list(rho[nonzero]), list(coefficient[nonzero]), -np.inf, constraint.bound - epsilon)
    n_cols = SA + 2 * N
    order = np.lexsort((np.array(rows), np.array(cols)))
    col, row, val = np.array(cols)[order], np.array(rows)[order], np.array(vals)[order]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_cols, len(lower)
    lp.col_cost_ = np.concatenate([-model.objective.weights[0] * model.rewards[0].ravel(), np.zeros(2 * N)])
    lp.col_lower_, lp.col_upper_ = np.zeros(n_cols), np.full(n_cols, highspy.kHighsInf)
    inf = highspy.kHighsInf
    lp.row_lower_ = np.where(np.isinf(lower), -inf, lower)
    lp.row_upper_ = np.where(np.isinf(upper), inf, upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(col, np.arange(n_cols + 1)).astype(np.int32)
    lp.a_matrix_.index_ = row.astype(np.int32)
    lp.a_matrix_.value_ = val
    return lp


def compact_replay(model, records) -> tuple[list[float], list[float]]:
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("presolve", "off")  # as the toolkit's warm-started solves
    times, objectives, basis = [], [], None
    for counts, t, epsilon in records:
        highs.passModel(compact_lp(model, counts, t, epsilon))
        if basis is not None:
            highs.setBasis(basis)
        start = time.perf_counter()
        highs.run()
        times.append(time.perf_counter() - start)
        optimal = highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
        objectives.append(-highs.getInfo().objective_function_value if optimal else np.nan)
        basis = highs.getBasis()
    return times, objectives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model = build_model("queue")
    records = record_epochs(model, args.steps, args.seed)
    toolkit_times, toolkit_objectives = toolkit_replay(model, records)
    compact_times, compact_objectives = compact_replay(model, records)
    a, b = np.array(toolkit_objectives), np.array(compact_objectives)
    both = ~np.isnan(a) & ~np.isnan(b)
    gap = float(np.max(np.abs(a[both] - b[both]) / np.maximum(1.0, np.abs(a[both])))) if both.any() else np.nan
    print(f"queue, UC-CURL (linear) as the reproduce preset runs it, T = {args.steps:,}, seed {args.seed}: "
          f"{len(records):,} epochs replayed")
    print(f"{'program':<10} {'rows':>6} {'HiGHS run per epoch: median':>28} {'mean':>10} {'total':>9}")
    S, A = model.n_states, model.n_actions
    sizes = {"toolkit": 1 + S * A + (S - 1) + 2 * S * A * S + S * A + model.n_constraints,
             "compact": 1 + S * A + (S - 1) + S * A + S * A * S + model.n_constraints}
    for name, times in (("toolkit", toolkit_times), ("compact", compact_times)):
        print(f"{name:<10} {sizes[name]:>6} {np.median(times) * 1e3:>25.3f} ms {np.mean(times) * 1e3:>7.3f} ms "
              f"{np.sum(times):>7.2f} s")
    print(f"objectives: both optimal at {int(both.sum()):,} of {len(records):,} epochs; largest relative difference "
          f"{gap:.1e}")


if __name__ == "__main__":
    main()

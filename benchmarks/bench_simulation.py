"""The ``simulation`` item: simulation speed, the fast tabular path against the generic Gymnasium path.

Two measurements, each side by side in one run:

* **the agent's run** — PS-CURL (highs backend, doubling trigger, K_ε = 1) on the queue for
  T = 2,000,000 steps (200,000 with ``--quick``), the same
  agent options and seed on both paths (``curlopt.experiments.run(..., path="fast" | "generic")``);
  the traces must be identical. Reported: steps per second of the whole run (solves, epoch records
  and checkpoints included) and of the stepping alone (time inside ``_fast_epoch`` /
  ``_generic_epoch``, measured by wrapping those two module functions for the duration of the run);
* **the bare inner loop** — ``_fast_epoch`` with a fixed policy (uniform) and no trigger (every
  threshold infinite, the epoch ends at its cap), against ``_generic_epoch`` with the same policy and
  no trigger on the queue's Gymnasium environment;
* **the whole run at T = 200,000** (target: ≥ 1,000,000 steps/s): the same PS-CURL run on
  the fast path, best of three, with the seconds outside stepping split into planning (the agent's
  ``begin_epoch``: posterior sample, program update, solve, policy extraction) and the loop's own
  bookkeeping (checkpoints, epoch records with the exact evaluation, counts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from _report import ratio, table


def _rate(steps: int, seconds: float) -> str:
    return f"{steps / seconds:,.0f}" if seconds > 0 else "-"


def _timed_run(path: str, steps: int, seed: int):
    """One PS-CURL run on the queue; returns the trace, wall seconds and seconds spent stepping."""
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments.simulation import loop
    from curlopt.models import queue_model

    model = queue_model()
    agent = make_agent("ps-curl", model, backend="highs", trigger="doubling", tightness_constant=1.0)
    env = make(model)
    name = "_fast_epoch" if path == "fast" else "_generic_epoch"
    inner = getattr(loop, name)
    spent = [0.0]

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0

    setattr(loop, name, timed)
    try:
        started = time.perf_counter()
        trace = loop.run(agent, env, steps, seed=seed, path=path, progress=False, model=model)
        wall = time.perf_counter() - started
    finally:
        setattr(loop, name, inner)
    return trace, wall, spent[0]


def _whole_at(steps: int, seed: int, repeats: int = 3) -> tuple[float, float, float, int]:
    """Best of ``repeats`` fast PS-CURL runs: (wall s, stepping s, planning s, epochs)."""
    from curlopt.agents.base import Agent

    inner = Agent.begin_epoch
    planning = [0.0]

    def timed(self, time_):
        t0 = time.perf_counter()
        try:
            return inner(self, time_)
        finally:
            planning[0] += time.perf_counter() - t0

    best = None
    Agent.begin_epoch = timed
    try:
        for _ in range(repeats):
            planning[0] = 0.0
            trace, wall, stepping = _timed_run("fast", steps, seed)
            if best is None or wall < best[0]:
                best = (wall, stepping, planning[0], len(trace.epochs))
    finally:
        Agent.begin_epoch = inner
    return best


def _bare(steps_fast: int, steps_generic: int, seed: int = 0):
    """The bare loops: a fixed uniform policy, no trigger. Returns (fast seconds, generic seconds)."""
    from curlopt.envs import make
    from curlopt.experiments.simulation.loop import _cumulative_rows, _fast_epoch, _generic_epoch
    from curlopt.experiments.simulation.streams import UniformStream
    from curlopt.models import queue_model

    model = queue_model()
    S, A = model.n_states, model.n_actions
    policy_rows = _cumulative_rows(np.full((S, A), 1.0 / A))
    kernel_rows = _cumulative_rows(model.kernel)
    never = [math.inf] * (S * A)

    actions = UniformStream(np.random.default_rng(seed))
    transitions = UniformStream(np.random.default_rng(seed + 1))
    t0 = time.perf_counter()
    pairs, _, _ = _fast_epoch(0, policy_rows, kernel_rows, never, steps_fast, actions, transitions, A)
    fast = time.perf_counter() - t0
    assert pairs.size == steps_fast

    env = make(model)
    state, _ = env.reset(seed=seed)
    actions = UniformStream(np.random.default_rng(seed))
    t0 = time.perf_counter()
    pairs, _, _ = _generic_epoch(env, int(state), policy_rows, never, steps_generic, actions, A, model)
    generic = time.perf_counter() - t0
    assert pairs.size == steps_generic
    return fast, generic


def run_item(say: Callable[[str], None], targets, quick: bool = False) -> None:
    # Long enough that stepping dominates the fast run (epochs grow geometrically: ~360 of them either way).
    steps = 200_000 if quick else 2_000_000
    seed = 0
    for path in ("fast", "generic"):  # warm-up: imports, first HiGHS model, caches (not measured)
        _timed_run(path, 2_000, seed)
    fast_trace, fast_wall, fast_step = _timed_run("fast", steps, seed)
    generic_trace, generic_wall, generic_step = _timed_run("generic", steps, seed)
    same = (np.array_equal(fast_trace.checkpoints["t"], generic_trace.checkpoints["t"])
            and all(np.array_equal(fast_trace.checkpoints[k], generic_trace.checkpoints[k], equal_nan=True)
                    for k in ("rewards", "costs")))
    epochs = len(fast_trace.epochs)
    solve = sum(e.solve_time for e in fast_trace.epochs)

    bare_fast_steps = 500_000 if quick else 2_000_000
    bare_generic_steps = 50_000 if quick else 200_000
    bare_fast, bare_generic = _bare(bare_fast_steps, bare_generic_steps)
    bare_fast_rate = bare_fast_steps / bare_fast
    bare_generic_rate = bare_generic_steps / bare_generic

    say(f"PS-CURL (highs, doubling, K_ε = 1) on the queue, T = {steps:,}, seed {seed}: {epochs} epochs;"
        f" trajectories identical on both paths: {'yes' if same else 'NO'}")
    rows = [
        ["PS-CURL run, whole (solves, records, checkpoints)", f"{fast_wall:.2f}", _rate(steps, fast_wall),
         f"{generic_wall:.2f}", _rate(steps, generic_wall), ratio(generic_wall / fast_wall)],
        ["PS-CURL run, stepping only (in _fast/_generic_epoch)", f"{fast_step:.2f}", _rate(steps, fast_step),
         f"{generic_step:.2f}", _rate(steps, generic_step), ratio(generic_step / fast_step)],
        ["PS-CURL run, outside stepping", f"{fast_wall - fast_step:.2f}", "", f"{generic_wall - generic_step:.2f}", "",
         ""],
        [f"bare loop, uniform policy, no trigger ({bare_fast_steps:,} / {bare_generic_steps:,} steps)",
         f"{bare_fast:.2f}", f"{bare_fast_rate:,.0f}", f"{bare_generic:.2f}", f"{bare_generic_rate:,.0f}",
         ratio(bare_fast_rate / bare_generic_rate)],
    ]
    say(table(["measurement", "fast s", "fast steps/s", "generic s", "generic steps/s", "fast/generic"], rows,
              "lrrrrr"))
    say(f"(of the fast run's {fast_wall:.2f} s: {solve:.2f} s in compiled.solve over {epochs} epochs, as recorded in"
        f" the trace)")
    short = 200_000
    wall_short, step_short, plan_short, epochs_short = _whole_at(short, seed)
    rest = wall_short - step_short - plan_short
    say(f"\nwhole run at T = {short:,} (best of 3): {wall_short:.3f} s = {short / wall_short:,.0f} steps/s over"
        f" {epochs_short} epochs; stepping {step_short:.3f} s ({short / step_short:,.0f} steps/s), planning"
        f" (begin_epoch) {plan_short:.3f} s, the loop's bookkeeping {rest:.3f} s")

    whole = steps / fast_wall
    speedup = generic_wall / fast_wall
    targets.add("simulation", f"fast path, whole PS-CURL run (queue), T = {steps:,}", f"{whole:,.0f} steps/s", "-",
                "-", ">= 1,000,000 steps/s", whole >= 1e6, "" if whole >= 1e6 else f"{whole / 1e6:.2f} of the target")
    whole_short = short / wall_short
    if steps != short:  # with --quick the first row is already this run's length
        targets.add("simulation", f"fast path, whole PS-CURL run (queue), T = {short:,}", f"{whole_short:,.0f} steps/s",
                    "-", "-", ">= 1,000,000 steps/s", whole_short >= 1e6,
                    "" if whole_short >= 1e6 else f"{whole_short / 1e6:.2f} of the target")
    targets.add("simulation", "fast vs generic path, whole PS-CURL run", f"{whole:,.0f} steps/s",
                f"{steps / generic_wall:,.0f} steps/s", ratio(speedup), ">= 20x", speedup >= 20,
                "" if speedup >= 20 else f"{speedup / 20:.2f} of the target")
    step_rate = steps / fast_step
    targets.add("simulation", "fast path, stepping only within the run", f"{step_rate:,.0f} steps/s",
                f"{steps / generic_step:,.0f} steps/s", ratio(generic_step / fast_step), ">= 1,000,000 steps/s",
                step_rate >= 1e6, "" if step_rate >= 1e6 else f"{step_rate / 1e6:.2f} of the target")
    targets.add("simulation", "bare _fast_epoch, fixed policy, no trigger", f"{bare_fast_rate:,.0f} steps/s",
                f"{bare_generic_rate:,.0f} steps/s", ratio(bare_fast_rate / bare_generic_rate),
                ">= 1,000,000 steps/s", bare_fast_rate >= 1e6,
                "" if bare_fast_rate >= 1e6 else f"{bare_fast_rate / 1e6:.2f} of the target")

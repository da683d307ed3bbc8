"""The episodic agents: wall time of K episodes, and the zero-violation and sublinear-regret claims, measured.

Models: ``episodic_benchmark_model(S, A, H, seed)`` — the kernel, rewards and costs of
``curlopt.models.random_model(S, A, seed=seed)`` (per-step signals in [0, 1)) with a horizon H; the declared safe
policy plays the cheapest action in every state; the budget is ``τ = C_b + ½ (C_u − C_b)`` with ``C_b`` the safe
policy's per-episode cost and ``C_u`` that of the unconstrained reward-optimal policy (backward induction), so the
constraint binds and the slack is ``Δ = τ − C_b``.

Two items:

* ``time``: each agent (opt-cmdp, optpess-lp, dope, uc-curl, ps-curl) for K episodes (10^4 by default) on the
  (10, 4, 10) model of seed 0, seed 0; wall and CPU seconds (this process's: HiGHS runs in it) and per episode,
  the backend, regret, strong violation, sources and the load after the run.
* ``claims``: the zero-violation agents (optpess-lp, dope, uc-curl) on models of seeds ``--models`` with run seeds
  ``--seeds``: strong violation (must be 0 on every run) and the log–log slope of the cumulative regret over the
  last decade [K/10, K] (sublinear target: <= 0.75), at the papers' constants and with any ``--option`` given.

Usage::

    PYTHONPATH=. python benchmarks/bench_episodic_agents.py time --episodes 10000
    PYTHONPATH=. python benchmarks/bench_episodic_agents.py claims --episodes 10000 --models 1 2 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

import numpy as np

AGENTS = ("opt-cmdp", "optpess-lp", "dope", "uc-curl", "ps-curl")
ZERO_VIOLATION = ("optpess-lp", "dope", "uc-curl")


def _best_policy_cost(kernel: np.ndarray, rewards: np.ndarray, costs: np.ndarray, initial: np.ndarray,
                      horizon: int) -> float:
    """The per-episode cost of the reward-optimal policy (backward induction on the rewards, ties to the first
    action), evaluated forward."""
    S, A = rewards.shape
    value = np.zeros(S)
    policy = np.zeros((horizon, S), dtype=int)
    for h in reversed(range(horizon)):
        q = rewards + kernel @ value
        policy[h] = q.argmax(axis=1)
        value = q.max(axis=1)
    d, total = initial.copy(), 0.0
    for h in range(horizon):
        a = policy[h]
        total += float(d @ costs[np.arange(S), a])
        d = d @ kernel[np.arange(S), a]
    return total


def episodic_benchmark_model(S: int, A: int, H: int, seed: int):
    """The benchmark's episodic model (module docstring)."""
    from curlopt.models import random_model
    from curlopt.models.episodic import EpisodicCMDP, episode_values
    from curlopt.utilities.library import Linear, LinearBound

    base = random_model(S, A, seed=seed)
    kernel, rewards, costs = base.kernel, base.rewards[0], base.costs[0]
    initial = np.asarray(base.initial, dtype=float)
    safe = np.zeros((S, A))
    safe[np.arange(S), costs.argmin(axis=1)] = 1.0
    probe = EpisodicCMDP(rewards, costs, Linear([1.0]), [], kernel=kernel, initial=initial, horizon=H)
    c_b = float(episode_values(probe, safe)[1][0])
    c_u = _best_policy_cost(kernel, rewards, costs, initial, H)
    tau = c_b + 0.5 * max(c_u - c_b, 0.1)
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], tau)], kernel=kernel, initial=initial,
                        horizon=H, safe_policy=safe, name=f"episodic-random-{S}x{A}x{H}-seed{seed}")


def last_decade_slope(cumulative: np.ndarray) -> float:
    """Least-squares slope of log R(k) against log k over 20 log-spaced k in [K/10, K] (NaN if R is 0 there)."""
    K = cumulative.size
    ks = np.unique(np.geomspace(max(K // 10, 1), K, 20).astype(int))
    values = cumulative[ks - 1]
    if np.any(values <= 0):
        return math.nan
    return float(np.polyfit(np.log(ks), np.log(values), 1)[0])


def _describe(model: Any) -> str:
    """The budget, the safe policy's cost and slack, and the optimum of a benchmark model."""
    from curlopt.agents.episodic import require_safe_policy
    from curlopt.experiments.simulation.episodes import episodic_optimum

    safe = require_safe_policy(model, "benchmark")
    return (f"budget τ = {model.constraints[0].bound:.4g}, safe policy's cost C_b = {safe.costs[0]:.4g}, slack Δ ="
            f" {safe.slack:.4g}, optimum f(λ*) = {episodic_optimum(model):.4g}")


def _run(name: str, model: Any, episodes: int, seed: int, options: dict[str, Any]):
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import episodic_optimum, run_episodes

    optimum = episodic_optimum(model)
    agent = make_episodic_agent(name, model, **options)
    start, cpu = time.perf_counter(), time.process_time()
    trace = run_episodes(model, agent, episodes=episodes, seed=seed, optimum=optimum)
    trace.meta["cpu_seconds"] = time.process_time() - cpu   # this process's CPU time (HiGHS runs in it)
    return trace, time.perf_counter() - start, agent


def _options(items: list[str]) -> dict[str, dict[str, Any]]:
    """``agent:key=value`` strings as {agent: {key: value}} (values read as Python literals when they parse)."""
    import ast

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        agent, _, pair = item.partition(":")
        key, _, text = pair.partition("=")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        out.setdefault(agent, {})[key] = value
    return out


def _header() -> None:
    import curlopt

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, curlopt {curlopt.__version__},"
          f" Python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} cores, load {load}")


def time_item(args: argparse.Namespace) -> None:
    model = episodic_benchmark_model(args.states, args.actions, args.horizon, args.model)
    options = _options(args.option or [])
    print(f"model {model.name}: {_describe(model)}; K = {args.episodes}")
    print(f"{'agent':12} {'wall s':>8} {'ms/ep':>7} {'CPU s':>7} {'CPU ms/ep':>9} {'solve s':>8} {'regret':>10}"
          f" {'strong viol':>12} {'weak viol':>10}  backend  sources")
    for name in args.agents:
        trace, wall, agent = _run(name, model, args.episodes, args.seed, options.get(name, {}))
        s = trace.summary
        cpu = trace.meta["cpu_seconds"]
        backend = getattr(getattr(agent, "backend", None), "name", "-")
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{name:12} {wall:8.1f} {1000 * wall / args.episodes:7.2f} {cpu:7.1f} {1000 * cpu / args.episodes:9.2f}"
              f" {s['solve_time']:8.1f} {s['regret']:10.2f} {s['strong_violation']:12.4g} {s['weak_violation']:10.4g}"
              f"  {backend}  {s['sources']}  (load after: {load})", flush=True)


def claims_item(args: argparse.Namespace) -> None:
    options = _options(args.option or [])
    print(f"K = {args.episodes}; zero violation: strong violation 0 on every run; sublinear: last-decade slope <= 0.75")
    print(f"{'agent':12} {'model':>5} {'seed':>4} {'regret':>10} {'slope':>6} {'strong viol':>12} {'viol eps':>8}"
          f" {'wall s':>7}  sources")
    for name in args.agents:
        for m in args.models:
            model = episodic_benchmark_model(args.states, args.actions, args.horizon, m)
            print(f"# model {model.name}: {_describe(model)}", flush=True)
            for seed in args.seeds:
                trace, wall, _ = _run(name, model, args.episodes, seed, options.get(name, {}))
                s = trace.summary
                slope = last_decade_slope(trace.columns["cumulative_regret"])
                print(f"{name:12} {m:5d} {seed:4d} {s['regret']:10.2f} {slope:6.3f} {s['strong_violation']:12.4g}"
                      f" {s['violating_episodes']:8d} {wall:7.1f}  {s['sources']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("item", choices=("time", "claims"))
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--states", type=int, default=10)
    parser.add_argument("--actions", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=10)
    parser.add_argument("--model", type=int, default=0, help="model seed of the time item")
    parser.add_argument("--seed", type=int, default=0, help="run seed of the time item")
    parser.add_argument("--models", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--agents", nargs="+", default=None)
    parser.add_argument("--option", action="append", help="agent:key=value, e.g. dope:warmup_episodes=100")
    args = parser.parse_args()
    if args.agents is None:
        args.agents = list(AGENTS if args.item == "time" else ZERO_VIOLATION)
    _header()
    (time_item if args.item == "time" else claims_item)(args)


if __name__ == "__main__":
    main()

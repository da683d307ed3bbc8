"""The concave-utility episodic agents (conrl, moma, moma-program): time per episode, both regrets, both violations.

Models: ``concave_benchmark_model(S, A, H, seed)`` — the kernel and signals of
``curlopt.models.random_model(S, A, n_rewards=2, n_costs=1, seed=seed)`` (per-step signals in [0, 1)) with a horizon
H, the objective ``f(λ) = log λ_1 + log λ_2`` and one budget ``ζ <= τ``, ``τ`` half-way between the smallest
per-episode cost of any policy and the cost of the known-model unconstrained optimum of f (so the budget binds).
f(λ*) is the known-model optimum (cvxpy). Nothing here was tuned on these models: every agent runs at its
defaults (the papers' constants, docs/math.md).

Four items:

* ``time``: each agent for K episodes on the (10, 4, 10) model of seed 0 (``--episodes``, one value per agent).
* ``claims``: each agent on the models of ``--models`` (size ``--size``) with run seeds ``--seeds``: regret
  ``Σ_k f* − f(λ_k)``, the weaker ``K f* − K f(mean λ)``, strong and weak violation, and the log–log slope of both
  cumulative regrets and of the weak violation over the last decade [K/10, K].
* ``budget-row``: conrl and moma-program for K episodes (``--episodes``) on the (6, 3, H=6) model of seed 1, then
  the visits per pair, the bonus per step and how many of the next program's shifted costs ``max(c − b, 0)`` are
  still above 0 (none: the budget row is vacuous and the program is the unconstrained one).
* ``hash``: the sha256 of each run's per-episode arrays (the wall-clock ``solve_time`` left out) for the three agents
  with known signals, 2 seeds × ``--episodes`` on the (4, 2, H=4) model of seed 1: equal before and after a change
  means the known path is unchanged bit for bit.

Usage::

    PYTHONPATH=. python benchmarks/bench_concave_episodic.py time --agents conrl moma-program moma \
        --episodes 1000 1000 10000
    PYTHONPATH=. python benchmarks/bench_concave_episodic.py claims --episodes 2000 --size 6 3 6 --models 1 2 \
        --seeds 0 1 2 [--option bonus_scale=0.05] [--option rewards=learned --signals bernoulli]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

AGENTS = ("conrl", "moma", "moma-program")


def concave_benchmark_model(S: int, A: int, H: int, seed: int):
    """The benchmark's model (module docstring) and its f(λ*)."""
    from curlopt.backends import resolve_backend
    from curlopt.experiments.simulation.episodes import episodic_optimum
    from curlopt.models import random_model
    from curlopt.models.episodic import EpisodicCMDP
    from curlopt.programs import EpisodicOccupancyProgram
    from curlopt.utilities.library import Linear, LinearBound, SumOfLogs

    base = random_model(S, A, n_rewards=2, n_costs=1, seed=seed)
    free = EpisodicCMDP(base.rewards, base.costs, SumOfLogs(2), [], kernel=base.kernel, horizon=H)
    unconstrained = resolve_backend("auto", (free.objective,)).compile(EpisodicOccupancyProgram(free)).solve()
    cheapest = EpisodicCMDP(base.costs, base.costs, Linear([-1.0]), [], kernel=base.kernel, horizon=H)
    least = -episodic_optimum(cheapest)
    budget = least + 0.5 * (float(unconstrained.costs[0]) - least)
    model = EpisodicCMDP(base.rewards, base.costs, SumOfLogs(2), [LinearBound([1.0], budget)], kernel=base.kernel,
                         horizon=H, name=f"concave-{S}x{A}xH{H}-seed{seed}")
    return model, episodic_optimum(model, "auto")


def slope(cumulative: np.ndarray) -> float:
    """Least-squares slope of log cumulative regret against log k over the last decade [K/10, K]."""
    K = cumulative.size
    k = np.arange(max(K // 10, 1), K + 1)
    values = cumulative[k - 1]
    if np.any(values <= 0):
        return math.nan
    return float(np.polyfit(np.log(k), np.log(values), 1)[0])


def weak_regret_curve(rewards: np.ndarray, optimum: float) -> np.ndarray:
    """``k f* − k f(mean of λ_1..λ_k)`` for every k."""
    means = np.cumsum(rewards, axis=0) / np.arange(1, rewards.shape[0] + 1)[:, None]
    k = np.arange(1, rewards.shape[0] + 1)
    return k * optimum - k * np.log(means).sum(axis=1)


def weak_violation_curve(costs: np.ndarray, model) -> np.ndarray:
    """``max_m (Σ_{j<=k} g_m(ζ_j))_+`` for every k: the weak violation after each episode."""
    values = np.array([model.constraint_values(c) for c in costs]).reshape(costs.shape[0], -1)
    return np.maximum(np.cumsum(values, axis=0).max(axis=1), 0.0)


def one_run(agent_name: str, model, optimum: float, K: int, seed: int, options: dict | None = None,
            signals: str = "mean") -> dict:
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    agent = make_episodic_agent(agent_name, model, **(options or {}))
    started, cpu = time.perf_counter(), time.process_time()
    trace = run_episodes(model, agent, K, seed=seed, optimum=optimum, signals=signals)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    s = trace.summary
    return {"agent": agent_name, "model": model.name, "seed": seed, "K": K, "wall_s": wall,
            "ms_per_episode": 1e3 * wall / K,
            "cpu_s": cpu, "cpu_ms_per_episode": 1e3 * cpu / K,
            "backend": getattr(getattr(agent, "backend", None), "name", "-"), "regret": s["regret"], "weak_regret": s["weak_regret"],
            "strong_violation": s["strong_violation"], "weak_violation": s["weak_violation"],
            "violating_episodes": s["violating_episodes"],
            "slope_regret": slope(np.cumsum(trace.columns["regret"])),
            "slope_weak_violation": slope(weak_violation_curve(trace.columns["costs"], model)),
            "slope_weak_regret": slope(weak_regret_curve(trace.columns["rewards"], optimum)),
            "sources": s["sources"]}


def show(row: dict) -> None:
    print(f"{row['agent']:13s} {row['model']:24s} seed {row['seed']} K={row['K']:6d}"
          f"  {row['ms_per_episode']:8.2f} ms/ep  wall {row['wall_s']:7.1f} s"
          f"  CPU {row['cpu_ms_per_episode']:6.2f} ms/ep ({row['cpu_s']:.1f} s, {row['backend']})"
          f"  regret {row['regret']:9.2f} (slope {row['slope_regret']:.2f})"
          f"  weak {row['weak_regret']:9.2f} (slope {row['slope_weak_regret']:.2f})"
          f"  strong viol {row['strong_violation']:8.3f} ({row['violating_episodes']} ep)"
          f"  weak viol {row['weak_violation']:8.3f} (slope {row['slope_weak_violation']:.2f})  {row['sources']}",
          flush=True)


def budget_row(K: int) -> None:
    """The ``budget-row`` item (module docstring)."""
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    model, optimum = concave_benchmark_model(6, 3, 6, 1)
    for name in ("conrl", "moma-program"):
        agent = make_episodic_agent(name, model)
        run_episodes(model, agent, K, seed=0, optimum=optimum)
        bonus = agent.bonus(K + 1) if name == "conrl" else agent.bonus()
        _, costs = agent.planning_signals(K + 1) if name == "conrl" else agent.planning_signals()
        N = agent.counts.visits[0]
        print(f"{name:13s} K={K}: visits per pair min {N.min():.0f} median {np.median(N):.0f} max {N.max():.0f};"
              f" bonus per step min {bonus.min():.3f} max {bonus.max():.3f}; largest per-step cost"
              f" {model.step_costs.max():.3f}; shifted costs > 0: {np.count_nonzero(costs)} of {costs.size}",
              flush=True)


def known_path_hashes(K: int) -> None:
    """The ``hash`` item (module docstring)."""
    import hashlib

    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    model, optimum = concave_benchmark_model(4, 2, 4, 1)
    for name in AGENTS:
        for seed in (0, 1):
            trace = run_episodes(model, make_episodic_agent(name, model), K, seed=seed, optimum=optimum)
            digest = hashlib.sha256()
            for column in sorted(trace.columns):
                values = np.asarray(trace.columns[column])
                if values.dtype.kind in "fiub" and column != "solve_time":
                    digest.update(column.encode())
                    digest.update(np.ascontiguousarray(values).tobytes())
            print(f"{name:13s} seed {seed} K={K}: {digest.hexdigest()}", flush=True)


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("item", choices=("time", "claims", "budget-row", "hash"))
    parser.add_argument("--agents", nargs="+", default=list(AGENTS))
    parser.add_argument("--episodes", nargs="+", type=int, default=[1000])
    parser.add_argument("--size", nargs=3, type=int, default=None, help="S A H")
    parser.add_argument("--models", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an agent option (e.g. bonus_scale=0.1, rewards=learned, backend=highs); default none")
    parser.add_argument("--signals", default="mean", choices=("mean", "bernoulli", "gaussian"),
                        help="what the agent observes (reaches only agents with rewards=learned)")
    args = parser.parse_args()
    options = {key: _number_or_text(value) for key, value in (item.split("=", 1) for item in args.option)}
    if options:
        print(f"agent options (not the defaults): {options}")
    if args.signals != "mean":
        print(f"signals: {args.signals}")
    if args.item == "budget-row":
        budget_row(args.episodes[0])
        return
    if args.item == "hash":
        known_path_hashes(args.episodes[0])
        return
    if args.item == "time":
        S, A, H = args.size or (10, 4, 10)
        model, optimum = concave_benchmark_model(S, A, H, 0)
        print(f"model {model.name}: f* = {optimum:.6f}, budget {model.constraints[0]!r}")
        episodes = args.episodes if len(args.episodes) == len(args.agents) else args.episodes[:1] * len(args.agents)
        for name, K in zip(args.agents, episodes, strict=True):
            show(one_run(name, model, optimum, K, 0, options, args.signals))
        return
    S, A, H = args.size or (6, 3, 6)
    for seed_model in args.models:
        model, optimum = concave_benchmark_model(S, A, H, seed_model)
        print(f"model {model.name}: f* = {optimum:.6f}, budget {model.constraints[0]!r}", flush=True)
        for name in args.agents:
            for seed in args.seeds:
                show(one_run(name, model, optimum, args.episodes[0], seed, options, args.signals))


if __name__ == "__main__":
    main()

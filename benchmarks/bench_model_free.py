"""The model-free agents: steps (or episodes) per second, and the zero-violation claim after the warm-up, measured.

* ``speed``: triple-qa on the queue (``build_model("queue")``) for T steps (10^6 by default) through the learning
  loop's fast path: wall seconds and steps per second (target >= 200,000); and triple-q on the benchmark's random
  episodic (10, 4, H=10) model for K episodes (10^5 by default) through the episode loop: wall seconds.
* ``claims``: each agent at the paper's constants on its validation models and run seeds: the strong violation
  (episodic: Σ_k max_m (g_m(ζ^{π_k}))_+, exact per episode; infinite horizon: the long-run average cost's violation
  C(T), and per frame after the first, the frame's realised average constraint values), and the violation left after
  the first frame (the paper's warm-up begins with one frame played at Z = 0).

Usage::

    PYTHONPATH=. python benchmarks/bench_model_free.py speed --steps 1000000 --episodes 100000
    PYTHONPATH=. python benchmarks/bench_model_free.py claims --steps 1000000 --episodes 100000 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))


def speed_ih(steps: int, seed: int = 0) -> dict:
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments.simulation.loop import run
    from curlopt.models import build_model

    model = build_model("queue")
    agent = make_agent("triple-qa", model, horizon=steps)
    env = make("queue")
    started = time.perf_counter()
    trace = run(agent, env, steps, seed=seed, progress=False)
    wall = time.perf_counter() - started
    return {"steps": steps, "wall": wall, "steps_per_second": steps / wall, "frames": len(trace.epochs),
            "violation": float(trace.checkpoints["violation"][-1]), "regret": float(trace.checkpoints["regret"][-1])}


def speed_episodic(episodes: int, seed: int = 0) -> dict:
    from bench_episodic_agents import episodic_benchmark_model

    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    model = episodic_benchmark_model(10, 4, 10, 0)
    agent = make_episodic_agent("triple-q", model)
    started = time.perf_counter()
    trace = run_episodes(model, agent, episodes, seed=seed)
    wall = time.perf_counter() - started
    return {"episodes": episodes, "wall": wall, "episodes_per_second": episodes / wall,
            "strong_violation": trace.summary["strong_violation"], "regret": trace.summary["regret"]}


def claims_episodic(model, name: str, episodes: int, seeds: list[int]) -> None:
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    for seed in seeds:
        agent = make_episodic_agent("triple-q", model)
        trace = run_episodes(model, agent, episodes, seed=seed)
        violation = trace.columns["violation"]
        after = violation[agent.frame:]
        bad = np.nonzero(violation > 1e-9)[0]
        print(f"triple-q  {name:34s} seed {seed}: K={episodes} frame={agent.frame} strong violation"
              f" {trace.summary['strong_violation']:.4g} (after the first frame {after.sum():.4g},"
              f" {np.count_nonzero(after > 1e-9)} episodes), last violating episode"
              f" {int(bad[-1]) + 1 if bad.size else None}, regret {trace.summary['regret']:.4g},"
              f" Z after frames 1..3 {[np.round(z, 1).tolist() for z in agent.queue_history[:3]]},"
              f" wall {trace.summary['wall_time']:.1f}s", flush=True)


def claims_ih(model, env_name: str, steps: int, seeds: list[int]) -> None:
    from curlopt.agents import make_agent
    from curlopt.envs import TabularCMDPEnv
    from curlopt.experiments.simulation.loop import run

    for seed in seeds:
        agent = make_agent("triple-qa", model, horizon=steps)
        trace = run(agent, TabularCMDPEnv(model), steps, seed=seed, progress=False)
        # per frame: the realised average costs' constraint values, max over the constraints
        per_frame = np.array([model.constraint_values(z).max() for z in agent.frame_costs])
        later = per_frame[1:]
        bad = np.nonzero(per_frame > 1e-9)[0]
        print(f"triple-qa {env_name:34s} seed {seed}: T={steps} frame={agent.frame} C(T)="
              f"{trace.checkpoints['violation'][-1]:.4g} R(T)={trace.checkpoints['regret'][-1]:.4g};"
              f" frames violating (realised frame average) {np.count_nonzero(later > 1e-9)} of {later.size} after"
              f" the first, last violating frame {int(bad[-1]) + 1 if bad.size else None}, worst"
              f" {later.max() if later.size else float('nan'):.4g}; Z after frames 1..3"
              f" {[np.round(z, 1).tolist() for z in agent.queue_history[:3]]}, wall {trace.wall_time:.1f}s",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("item", choices=("speed", "claims"))
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if args.item == "speed":
        ih = speed_ih(args.steps)
        print(f"triple-qa on the queue: {ih['steps']:,} steps in {ih['wall']:.2f} s = {ih['steps_per_second']:,.0f}"
              f" steps/s ({ih['frames']} frames), C(T)={ih['violation']:.4g}, R(T)={ih['regret']:.4g}", flush=True)
        ep = speed_episodic(args.episodes)
        print(f"triple-q on episodic-random-10x4x10-seed0: {ep['episodes']:,} episodes in {ep['wall']:.2f} s ="
              f" {ep['episodes_per_second']:,.0f} episodes/s, strong violation {ep['strong_violation']:.4g},"
              f" regret {ep['regret']:.4g}", flush=True)
        return
    from bench_episodic_agents import episodic_benchmark_model

    from curlopt.models import build_model, random_model
    from curlopt.models.gridworld import gridworld_model

    claims_episodic(episodic_benchmark_model(10, 4, 10, 1), "episodic-random-10x4x10-seed1", args.episodes,
                    args.seeds)
    grid = gridworld_model("4x4", horizon=10)
    claims_episodic(grid, "gridworld(4x4, H=10)", args.episodes, args.seeds)
    claims_ih(build_model("queue"), "queue", args.steps, args.seeds)
    claims_ih(random_model(10, 4, seed=1), "random(10, 4, seed 1)", args.steps, args.seeds)


if __name__ == "__main__":
    main()

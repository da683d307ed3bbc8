"""The model-free agents: steps (or episodes) per second, and the zero-violation claim after the warm-up, measured.

* ``speed``: triple-qa on the queue (``build_model("queue")``) for T steps (10^6 by default) through the learning
  loop's fast path: wall seconds and steps per second (target >= 200,000); and triple-q on the benchmark's random
  episodic (10, 4, H=10) model for K episodes (10^5 by default) through the episode loop: wall seconds.
* ``claims``: each agent at the paper's constants on its validation models and run seeds: the strong violation
  (episodic: Σ_k max_m (g_m(ζ^{π_k}))_+, exact per episode; infinite horizon: the long-run average cost's violation
  C(T), and per frame after the first, the frame's realised average constraint values), and the violation left after
  the first frame (the paper's warm-up begins with one frame played at Z = 0).

* ``warmup``: the zero-violation target. Per model: Slater's gap δ of the papers' form (an independent computation:
  backward induction, or the stationary LP, on the utility alone), the warm-up the paper's theorem asks for (the
  smallest K, or T, with its condition met, computed from its formula), then runs at the given options (JSON,
  several allowed; ``{}`` = the paper's constants) on the design models and seeds and on validation ones: strong
  and weak violation, the episodes (frames) that violate and the last one (the measured warm-up), the regret and
  its slope on the last decade; for triple-qa also how many monotone updates the frames accepted (Q̂ < H).

Usage::

    PYTHONPATH=. python benchmarks/bench_model_free.py speed --steps 1000000 --episodes 100000
    PYTHONPATH=. python benchmarks/bench_model_free.py claims --steps 1000000 --episodes 100000 --seeds 0 1 2
    PYTHONPATH=. python benchmarks/bench_model_free.py warmup --agent triple-q --episodes 20000 --options '{}'
    PYTHONPATH=. python benchmarks/bench_model_free.py warmup --agent triple-qa --steps 1000000 --options '{}'
"""

from __future__ import annotations

import argparse
import json
import math
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


def episodic_slater_gap(agent, model) -> float:
    """δ = min_m (max_π E[Σ_h g_{m,h}] − ρ_m) in the papers' units, by backward induction on each utility alone."""
    H, S = model.horizon, model.n_states
    gaps = []
    for m in range(agent.utilities.shape[0]):
        value = np.zeros(S)
        for h in reversed(range(H)):
            value = (agent.utilities[m, h] + (model.step_kernel_dense(h) @ value if h < H - 1 else 0.0)).max(axis=1)
        gaps.append(float(np.asarray(model.initial, dtype=float) @ value - agent.thresholds[m]))
    return min(gaps)


def average_slater_gap(agent, model) -> float:
    """δ = min_m (max over stationary occupancies of the average utility m − ρ_m): the LP (4)-(8) of the paper."""
    from scipy.optimize import linprog

    S, A = model.n_states, model.n_actions
    kernel = model.kernel.toarray() if hasattr(model.kernel, "toarray") else np.asarray(model.kernel)
    flow = np.zeros((S + 1, S * A))
    for s in range(S):
        flow[s, s * A:(s + 1) * A] = 1.0
    flow[:S] -= kernel.reshape(S * A, S).T
    flow[S] = 1.0
    rhs = np.zeros(S + 1)
    rhs[S] = 1.0
    gaps = []
    for utility, rho in zip(agent._utilities, agent.thresholds, strict=True):
        result = linprog(-np.asarray(utility), A_eq=flow, b_eq=rhs, bounds=(0, None), method="highs")
        gaps.append(float(-result.fun - rho))
    return min(gaps)


def triple_q_paper_warmup(S: int, A: int, H: int, delta: float) -> float:
    """The smallest K with the paper's ε = 8 sqrt(S A H⁶ ι³)/K^0.2 <= δ/2, ι = 128 ln(sqrt(2 S A H) K) (log10 K)."""
    log_k = 1.0
    for _ in range(200):   # K = (16 sqrt(S A H⁶ ι³)/δ)^5 with ι depending on K: a fixed point, reached fast
        iota = 128.0 * (math.log(math.sqrt(2.0 * S * A * H)) + log_k * math.log(10))
        log_k = 5 * math.log10(16.0 * math.sqrt(S * A * H ** 6 * iota ** 3) / delta)
    return log_k


def triple_qa_paper_warmup(S: int, A: int, kappa: float, delta: float) -> float:
    """The smallest T with the theorem's T >= (18 κ sqrt(S A ι)/δ)^6, ι = 8 ln(sqrt 2 T) (log10 T), and its
    lemma's H = T^(1/6) >= 6κ/δ."""
    log_t = 1.0
    for _ in range(200):
        iota = 8.0 * (math.log(math.sqrt(2.0)) + log_t * math.log(10))
        log_t = 6 * math.log10(18.0 * kappa * math.sqrt(S * A * iota) / delta)
    return max(log_t, 6 * math.log10(6.0 * kappa / delta))


def _record_frame_estimates(agent) -> list[float]:
    """Wrap ``agent.end_episode`` to record, at each frame's end, the queue update's estimate ``C̄_1 / K^α``."""
    estimates: list[float] = []
    end_episode = agent.end_episode

    def recording(states, actions) -> None:
        # C̄ at the frame's end is the sum so far plus this episode's start value C_1(s_1, a_1) (read before the
        # episode's updates, as the agent reads it)
        estimate = (agent.utility_sum[0] + agent.c[0, 0, int(states[0]), int(actions[0])]) / agent.frame
        end_episode(states, actions)
        if agent.episode % agent.frame == 0:
            estimates.append(float(estimate))

    agent.end_episode = recording  # type: ignore[method-assign]
    return estimates


def _queue_estimate_bias(agent, model, costs: np.ndarray, estimates: list[float]) -> np.ndarray:
    """Per frame: the queue's estimate C̄/K^α minus the mean exact utility (papers' units) of the frame's policies."""
    weights = np.asarray(model.constraints[0].weights, dtype=float)
    per_step = -np.einsum("k,hksa->hsa", weights, np.asarray(model.step_costs))
    low, high = float(per_step.min()), float(per_step.max())
    span = high - low if high > low else 1.0
    utility = (-(costs @ weights) - model.horizon * low) / span       # Σ_h g_1,h of each episode's policy, exact
    frames = len(estimates)
    played = utility[:frames * agent.frame].reshape(frames, agent.frame).mean(axis=1)
    return np.asarray(estimates) - played


def warmup_episodic(models, episodes: int, options: dict, seeds: list[int], role: str) -> None:
    from bench_episodic_agents import last_decade_slope

    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    for name, model in models:
        probe = make_episodic_agent("triple-q", model)
        delta = episodic_slater_gap(probe, model)
        paper = triple_q_paper_warmup(model.n_states, model.n_actions, model.horizon, delta)
        for seed in seeds:
            agent = make_episodic_agent("triple-q", model, **options)
            estimates = _record_frame_estimates(agent)
            trace = run_episodes(model, agent, episodes, seed=seed)
            bias = _queue_estimate_bias(agent, model, trace.columns["costs"], estimates)
            violation = trace.columns["violation"]
            bad = np.nonzero(violation > 1e-9)[0]
            print(f"triple-q {role:10s} {name:30s} δ={delta:.3f} ρ={probe.thresholds.round(3).tolist()} paper warm-up"
                  f" K >= 10^{paper:.1f}; options {json.dumps(options)} seed {seed}: K={episodes} frame={agent.frame}"
                  f" ε={agent.epsilon:.4g}: strong violation {trace.summary['strong_violation']:.4g}, weak"
                  f" {trace.summary['weak_violation']:.4g}, {bad.size} episodes violate"
                  f" ({np.count_nonzero(violation[episodes // 2:] > 1e-9)} in the second half), last"
                  f" {int(bad[-1]) + 1 if bad.size else 0}; regret {trace.summary['regret']:.4g}, slope"
                  f" {last_decade_slope(trace.columns['cumulative_regret']):.2f}; the queue's estimate C̄/K^α minus"
                  f" the exact utility of the frame's policies: first frame {bias[0]:.2f}, mean {bias.mean():.2f},"
                  f" last frame {bias[-1]:.2f}; last Z"
                  f" {np.round(agent.queues, 2).tolist()}; wall {trace.summary['wall_time']:.1f}s", flush=True)


def _count_moved_cells(agent) -> list[int]:
    """Wrap ``agent._end_frame`` to record, at each frame's end, how many cells of Q̂ are below H (moved)."""
    counts: list[int] = []
    end_frame = agent._end_frame

    def counting() -> None:
        counts.append(sum(value < agent.discount_horizon for value in agent.q_hat))
        end_frame()

    agent._end_frame = counting
    return counts


def warmup_average(models, steps: int, options: dict, seeds: list[int], role: str) -> None:
    from curlopt.agents import make_agent
    from curlopt.envs import TabularCMDPEnv
    from curlopt.experiments.simulation.loop import run
    from curlopt.models.cmdp import stationary_occupancy

    for name, model in models:
        probe = make_agent("triple-qa", model, horizon=steps, **options)
        delta = average_slater_gap(probe, model)
        paper = triple_qa_paper_warmup(model.n_states, model.n_actions, probe.kappa, delta)
        # the policy uniform over every action, evaluated exactly: what the agent plays while its tables stay at H
        uniform = np.full((model.n_states, model.n_actions), 1.0 / model.n_actions)
        occupancy = stationary_occupancy(model.kernel, uniform, np.asarray(model.initial, dtype=float))
        uniform_reward = float(model.objective.value(np.einsum("sa,ksa->k", occupancy, np.asarray(model.rewards))))
        uniform_constraint = float(model.constraint_values(np.einsum("sa,ksa->k", occupancy,
                                                                      np.asarray(model.costs))).max())
        for seed in seeds:
            agent = make_agent("triple-qa", model, horizon=steps, **options)
            accepted = _count_moved_cells(agent)
            trace = run(agent, TabularCMDPEnv(model), steps, seed=seed, progress=False)
            per_frame = np.array([model.constraint_values(z).max() for z in agent.frame_costs])
            bad = np.nonzero(per_frame > 1e-9)[0]
            print(f"triple-qa {role:10s} {name:24s} δ={delta:.3f} ρ={np.round(probe.thresholds, 3).tolist()} paper"
                  f" warm-up T >= 10^{paper:.1f}; options {json.dumps(options)} seed {seed}: T={steps}"
                  f" frame={agent.frame} ε={agent.epsilon:.4g}: C(T)={trace.checkpoints['violation'][-1]:.4g}"
                  f" R(T)={trace.checkpoints['regret'][-1]:.4g} (optimum {trace.optimum['objective']:.4g}; the uniform"
                  f" policy, exact: regret {trace.optimum['objective'] - uniform_reward:.4g}, constraint"
                  f" {uniform_constraint:+.4g});"
                  f" {bad.size} of {per_frame.size} frames violate (realised frame average), last"
                  f" {int(bad[-1]) + 1 if bad.size else 0}; Q̂ cells below H at the frames' ends: {sum(accepted)} of"
                  f" {len(agent.q_hat) * per_frame.size}; last Z {[round(z, 2) for z in agent.queues]};"
                  f" wall {trace.wall_time:.1f}s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("item", choices=("speed", "claims", "warmup"))
    parser.add_argument("--agent", choices=("triple-q", "triple-qa"), default="triple-q")
    parser.add_argument("--options", nargs="+", default=["{}"], help="agent options as JSON ({} = the paper's)")
    parser.add_argument("--role", choices=("design", "validation", "both"), default="both")
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

    if args.item == "warmup":
        roles = ("design", "validation") if args.role == "both" else (args.role,)
        for options in map(json.loads, args.options):
            for role in roles:
                if args.agent == "triple-q":
                    # design: the claims' models and seeds; validation: other models and other seeds
                    models = ([("episodic-random-10x4x10-seed1", episodic_benchmark_model(10, 4, 10, 1))]
                              if role == "design" else
                              [("episodic-random-10x4x10-seed2", episodic_benchmark_model(10, 4, 10, 2)),
                               ("gridworld(4x4, H=10)", gridworld_model("4x4", horizon=10))])
                    warmup_episodic(models, args.episodes, options, args.seeds if role == "design" else [7], role)
                else:
                    models = ([("queue", build_model("queue")), ("random(10, 4, seed 1)", random_model(10, 4, seed=1))]
                              if role == "design" else
                              [("random(10, 4, seed 2)", random_model(10, 4, seed=2)),
                               ("random(10, 4, seed 3)", random_model(10, 4, seed=3))])
                    warmup_average(models, args.steps, options, args.seeds if role == "design" else [7, 8], role)
        return

    claims_episodic(episodic_benchmark_model(10, 4, 10, 1), "episodic-random-10x4x10-seed1", args.episodes,
                    args.seeds)
    grid = gridworld_model("4x4", horizon=10)
    claims_episodic(grid, "gridworld(4x4, H=10)", args.episodes, args.seeds)
    claims_ih(build_model("queue"), "queue", args.steps, args.seeds)
    claims_ih(random_model(10, 4, seed=1), "random(10, 4, seed 1)", args.steps, args.seeds)


if __name__ == "__main__":
    main()

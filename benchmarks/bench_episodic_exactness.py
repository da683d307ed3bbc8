"""The episodic agents' trajectories, hashed: a change to their solve path must leave every trajectory as it was.

For each model-based episodic agent (and moma) and each run seed, ``record`` runs K episodes (200 by default) and
keeps, per run, the sha256 of the actions and states played, of the per-episode exact reward and cost totals
(``trace.columns["rewards"]``, ``["costs"]``), regret and violation, and of the sources; ``check`` runs the same
again and compares. Where a hash differs it prints the largest difference of the per-episode values against the
arrays ``record`` saved next to the hashes (``--arrays``), so a change that is exact only up to the solver's
tolerance shows how far it moved.

Runs: the linear benchmark model of ``bench_episodic_agents.py`` at (S, A, H) = (6, 3, 6), model seed 0, every
agent at its defaults except DOPE and OptPess-LP, whose warm-up and bonuses at the papers' constants never leave the
safe policy in 200 episodes: ``dope`` with ``warmup_episodes=0, bonus_scale=0.01`` (its program mostly infeasible),
``dope-small-bonus`` with ``bonus_scale=0.0001``, ``dope-large-bonus`` with 0.3 (infeasible at first), ``optpess-lp`` with ``bonus_scale=0.003``; and
conrl and moma-program on the sum-of-logs model of ``bench_concave_episodic.py`` at (4, 2, 4) (the conic path); and
the agents whose ``auto`` backend may depend on the model's size again on the time benchmark's (10, 4, 10) model.

Usage::

    PYTHONPATH=. python benchmarks/bench_episodic_exactness.py record --out benchmarks/episodic-trajectories.json
    PYTHONPATH=. python benchmarks/bench_episodic_exactness.py check --out benchmarks/episodic-trajectories.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (label, agent, options, model kind)
RUNS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("opt-cmdp", "opt-cmdp", {}, "linear"),
    ("uc-curl", "uc-curl", {}, "linear"),
    ("ps-curl", "ps-curl", {}, "linear"),
    ("dope", "dope", {"warmup_episodes": 0, "bonus_scale": 0.01}, "linear"),
    ("dope-small-bonus", "dope", {"warmup_episodes": 0, "bonus_scale": 0.0001}, "linear"),
    ("dope-large-bonus", "dope", {"warmup_episodes": 0, "bonus_scale": 0.3}, "linear"),
    ("optpess-lp", "optpess-lp", {"bonus_scale": 0.003}, "linear"),
    ("conrl", "conrl", {}, "linear"),
    ("moma", "moma", {}, "linear"),
    ("moma-program", "moma-program", {}, "linear"),
    ("conrl-concave", "conrl", {}, "concave"),
    ("moma-program-concave", "moma-program", {}, "concave"),
    ("opt-cmdp-10x4x10", "opt-cmdp", {}, "benchmark"),
    ("uc-curl-10x4x10", "uc-curl", {}, "benchmark"),
    ("ps-curl-10x4x10", "ps-curl", {}, "benchmark"),
    ("optpess-lp-10x4x10", "optpess-lp", {"bonus_scale": 0.003}, "benchmark"),
    ("conrl-10x4x10", "conrl", {}, "benchmark"),
    ("moma-program-10x4x10", "moma-program", {}, "benchmark"),
)
ARRAYS = ("rewards", "costs", "regret", "violation")


def _models() -> dict[str, tuple[Any, float]]:
    from bench_concave_episodic import concave_benchmark_model
    from bench_episodic_agents import episodic_benchmark_model

    from curlopt.experiments.simulation.episodes import episodic_optimum

    linear = episodic_benchmark_model(6, 3, 6, 0)
    benchmark = episodic_benchmark_model(10, 4, 10, 0)
    return {"linear": (linear, episodic_optimum(linear)), "concave": concave_benchmark_model(4, 2, 4, 0),
            "benchmark": (benchmark, episodic_optimum(benchmark))}


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def one_run(agent_name: str, options: dict[str, Any], model: Any, optimum: float, episodes: int,
            seed: int) -> tuple[dict[str, str], dict[str, np.ndarray], float, dict[str, int]]:
    """Hashes, arrays, CPU seconds and sources of one run."""
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.experiments.simulation.episodes import run_episodes

    agent = make_episodic_agent(agent_name, model, **options)
    played: list[np.ndarray] = []
    learn = agent.end_episode

    def recording(states: np.ndarray, actions: np.ndarray) -> None:
        played.append(np.stack([np.asarray(states, dtype=np.int64), np.asarray(actions, dtype=np.int64)]))
        learn(states, actions)

    agent.end_episode = recording  # type: ignore[method-assign]
    started = time.process_time()
    trace = run_episodes(model, agent, episodes=episodes, seed=seed, optimum=optimum)
    cpu = time.process_time() - started
    arrays = {name: np.asarray(trace.columns[name], dtype=float) for name in ARRAYS}
    arrays["trajectory"] = np.stack(played)
    hashes = {name: _digest(value) for name, value in arrays.items()}
    hashes["sources"] = hashlib.sha256(json.dumps(trace.summary["sources"], sort_keys=True).encode()).hexdigest()[:16]
    return hashes, arrays, cpu, dict(trace.summary["sources"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("item", choices=("record", "check"))
    parser.add_argument("--out", default="benchmarks/episodic-trajectories.json")
    parser.add_argument("--arrays", default="/tmp/episodic-trajectories.npz",
                        help="where record saves the per-episode arrays and check reads them")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--runs", nargs="+", default=None, help="labels of RUNS (default all)")
    args = parser.parse_args()
    models = _models()
    chosen = [run for run in RUNS if args.runs is None or run[0] in args.runs]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load {load}; K = {args.episodes},"
          f" seeds {args.seeds}")
    stored = json.loads(Path(args.out).read_text()) if args.item == "check" else {"episodes": args.episodes,
                                                                                  "runs": {}}
    saved = dict(np.load(args.arrays)) if args.item == "check" and Path(args.arrays).exists() else {}
    arrays_out: dict[str, np.ndarray] = {}
    mismatches = 0
    for label, agent_name, options, kind in chosen:
        model, optimum = models[kind]
        for seed in args.seeds:
            key = f"{label}/seed{seed}"
            hashes, arrays, cpu, sources = one_run(agent_name, options, model, optimum, args.episodes, seed)
            if args.item == "record":
                stored["runs"][key] = hashes
                arrays_out.update({f"{key}/{name}": value for name, value in arrays.items()})
                print(f"{key:30s} cpu {cpu:6.2f} s  {sources}", flush=True)
                continue
            expected = stored["runs"].get(key)
            if expected is None:
                print(f"{key:30s} not recorded", flush=True)
                continue
            differ = [name for name in hashes if hashes[name] != expected.get(name)]
            mismatches += bool(differ)
            detail = ""
            for name in differ:
                before = saved.get(f"{key}/{name}")
                if before is not None and before.shape == arrays.get(name, np.zeros(0)).shape:
                    detail += f" max|Δ{name}| = {float(np.max(np.abs(before - arrays[name]))):.3g};"
            verdict = "identical" if not differ else f"DIFFERS in {differ}:{detail}"
            print(f"{key:30s} cpu {cpu:6.2f} s  {verdict}  {sources}", flush=True)
    if args.item == "record":
        Path(args.out).write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        np.savez(args.arrays, **arrays_out)
        print(f"recorded {len(stored['runs'])} runs in {args.out} (arrays in {args.arrays})")
    else:
        print(f"{mismatches} run(s) differ")
        if mismatches:
            sys.exit(1)


if __name__ == "__main__":
    main()

"""Learned rewards and costs on the paper's queue: C(T) and the regret cost of learning them against known.

For each seed, one agent is run twice on the queue (buffer 5, the options of studies/safe-compare-queue.toml:
highs, the linear trigger, K_ε = 1): told the rewards and costs, observing their means (the default), and learning
them from Bernoulli signals (``rewards="learned"``, ``signals="bernoulli"``). The transitions and actions of a seed
are drawn from the same streams in both runs. Prints one line per run and a summary per agent.

    python benchmarks/learned_signals_queue.py --agent ps-curl --steps 200000 --seeds 10-19
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from curlopt.agents import make_agent
from curlopt.envs import TabularCMDPEnv
from curlopt.experiments.simulation.loop import run
from curlopt.models import queue_model

#: each agent's options in studies/safe-compare-queue.toml ("safe" and "ps-paper")
OPTIONS = {
    "ps-curl": {"backend": "highs", "trigger": "linear"},
    "safe-curl": {"backend": "highs", "trigger": "linear", "bonus": 0.1, "penalty": 0.0, "sizing": "range",
                  "margin": "range"},
    "cmdp-psrl": {"backend": "highs"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="ps-curl", choices=sorted(OPTIONS))
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--seeds", default="10-19", help="first-last")
    parser.add_argument("--signals", default="bernoulli", choices=("bernoulli", "gaussian"))
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    model = queue_model(buffer=5)
    rows = []
    for seed in range(first, last + 1):
        out = {}
        for rewards, signals in (("known", "mean"), ("learned", args.signals)):
            started = time.perf_counter()
            agent = make_agent(args.agent, model, rewards=rewards, **OPTIONS[args.agent])
            trace = run(agent, TabularCMDPEnv(model), args.steps, seed=seed, signals=signals, progress=False)
            summary = trace.summary()
            out[rewards] = summary
            print(f"{args.agent} seed={seed} rewards={rewards} signals={signals}: regret={summary['regret']:.4f}"
                  f" C(T)={summary['violation']:.4f} constraints={np.round(summary['constraints'], 4).tolist()}"
                  f" epochs={summary['epochs']} fallback={summary['fallback_epochs']}"
                  f" wall={time.perf_counter() - started:.1f}s", flush=True)
        rows.append(out)
    known = np.array([r["known"]["regret"] for r in rows])
    learned = np.array([r["learned"]["regret"] for r in rows])
    violations = [r["learned"]["violation"] for r in rows]
    print(f"{args.agent}, T={args.steps}, seeds {first}-{last}: regret known {known.mean():.4f} ± {known.std():.4f},"
          f" learned {learned.mean():.4f} ± {learned.std():.4f}, cost of learning {np.mean(learned - known):.4f};"
          f" C(T) learned = 0 on {sum(v == 0 for v in violations)} of {len(rows)} seeds (max {max(violations):.4f});"
          f" known C(T) max {max(r['known']['violation'] for r in rows):.4f}")


if __name__ == "__main__":
    main()

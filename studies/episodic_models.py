"""Writes the random episodic models of the episodic comparison studies (studies/episodic-*.toml) as model files.

Each is ``episodic_benchmark_model(6, 3, 6, seed)`` of benchmarks/bench_episodic_agents.py: the kernel, rewards and
costs of ``random_model(6, 3, seed=seed)`` with horizon 6, a declared safe policy (the cheapest action in every
state) and a budget halfway between the safe policy's per-episode cost and the reward-optimal policy's, so the
constraint binds. Model seeds 1 and 2 are the design study's, 3 and 4 the validation study's.

    PYTHONPATH=. python studies/episodic_models.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

from bench_episodic_agents import episodic_benchmark_model  # noqa: E402

from curlopt.models.files import save_model  # noqa: E402

if __name__ == "__main__":
    for seed in (1, 2, 3, 4):
        path = HERE / "models" / f"episodic-random-6x3x6-seed{seed}.json"
        save_model(episodic_benchmark_model(6, 3, 6, seed), path)
        print(f"wrote {path}")

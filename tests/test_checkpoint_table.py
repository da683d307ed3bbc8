"""checkpoints.csv: the mean curves of a study, checked against means written out by hand."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np

from curlopt.experiments.outputs.checkpoints import write_checkpoint_table
from curlopt.experiments.outputs.runs import ConfigurationRuns
from curlopt.experiments.simulation.trace import Trace


@dataclass(frozen=True)
class Setting:
    name: str = "toy"
    label: str = ""


def trace(seed: int, objective, constraints) -> Trace:
    t = np.array([1, 10, 100])
    objective = np.asarray(objective, dtype=float)
    g = np.asarray(constraints, dtype=float).reshape(3, 1)
    checkpoints = {"t": t, "rewards": objective[:, None], "costs": g, "objective": objective, "constraints": g,
                   "regret": 2.0 - objective, "violation": np.maximum(g[:, 0], 0.0)}
    return Trace({"seed": seed}, {"objective": 2.0}, checkpoints, [], 0.0)


def test_means_per_checkpoint_by_hand(tmp_path):
    runs = [trace(0, [0.5, 1.0, 1.5], [0.2, -0.1, -0.3]), trace(1, [math.nan, 1.2, 1.9], [0.4, 0.1, -0.1])]
    group = ConfigurationRuns(Setting(), "uc-curl", "uc-curl", "UC-CURL", "k", {}, {}, runs)
    path = write_checkpoint_table([group, None], tmp_path)
    rows = list(csv.DictReader(path.open()))
    assert [int(r["t"]) for r in rows] == [1, 10, 100]
    # t = 1: one seed's objective is NaN, so the mean is over the finite one (0.5) and seeds counts 1.
    assert int(rows[0]["seeds"]) == 1 and float(rows[0]["objective_mean"]) == 0.5
    assert float(rows[1]["objective_mean"]) == (1.0 + 1.2) / 2
    assert float(rows[2]["regret_mean"]) == ((2.0 - 1.5) + (2.0 - 1.9)) / 2
    assert float(rows[1]["g1_mean"]) == (-0.1 + 0.1) / 2
    assert float(rows[1]["violation_mean"]) == (0.0 + 0.1) / 2
    assert [float(r["zero_violation_share"]) for r in rows] == [0.0, 0.5, 1.0]

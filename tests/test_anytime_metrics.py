"""The anytime view of a study: violations of the running averages after t0 = T/10, and steps under violating policies.

Every expected number is worked out by hand below from a short hand-built trace (two seeds, seven checkpoints,
four epochs), not by calling the code under test.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np
import pytest

from curlopt.experiments.outputs import summary as S
from curlopt.experiments.outputs.checkpoints import violating_step_shares, write_checkpoint_table
from curlopt.experiments.outputs.runs import ConfigurationRuns
from curlopt.experiments.simulation.trace import EpochRecord, Trace

TIMES = np.array([1, 2, 5, 10, 20, 50, 100])  # T = 100, so t0 = T/10 = 10


@dataclass(frozen=True)
class Setting:
    name: str = "toy"
    label: str = ""
    n_constraints: int = 1

    def constraint_names(self) -> list[str]:
        return ["ζ_1 ≤ 0.5"]


def epoch(index: int, start: int, length: int, exact) -> EpochRecord:
    return EpochRecord(index, start, length, 0.01, "tight", "optimal", 0.0, exact_constraints=exact)


#: epochs of seed 0: steps 1-4 violate; 5-10 do not; 11-50 have no exact evaluation (left out); 51-100 violate
EPOCHS_0 = [epoch(0, 1, 4, [0.1]), epoch(1, 5, 6, [-0.2]), epoch(2, 11, 40, None), epoch(3, 51, 50, [0.3])]
#: epochs of seed 1: steps 1-10 violate (max g = 0 is not a violation in the second), then none
EPOCHS_1 = [epoch(0, 1, 10, [0.2]), epoch(1, 11, 90, [0.0])]


def trace(seed: int, violation, epochs) -> Trace:
    violation = np.asarray(violation, dtype=float)
    g = violation.reshape(-1, 1) - 0.01 * (violation == 0).reshape(-1, 1)  # g < 0 exactly where C(t) = 0
    objective = np.linspace(0.0, 1.0, len(TIMES))
    checkpoints = {"t": TIMES, "rewards": objective[:, None], "costs": g + 0.5, "objective": objective,
                   "constraints": g, "regret": 1.0 - objective, "violation": violation}
    meta = {"seed": seed, "env": "toy", "agent": "ps-curl", "trigger": "linear", "backend": "highs", "steps": 100}
    return Trace(meta, {"objective": 1.0}, checkpoints, list(epochs), 1.0)


#: C(t) at the checkpoints; from t0 = 10 on: seed 0 violates at t = 10 and 50 (2 of 4), seed 1 never (0 of 4)
RUNS = [trace(0, [0.3, 0.0, 0.1, 0.2, 0.0, 0.05, 0.0], EPOCHS_0), trace(1, [0.5, 0.4, 0.3, 0.0, 0.0, 0.0, 0.0], EPOCHS_1)]


def runs() -> ConfigurationRuns:
    return ConfigurationRuns(Setting(), "ps-curl", "ps-curl", "PS-CURL", "ps", {"trigger": "linear"}, {}, list(RUNS))


def test_share_of_violating_checkpoints_from_t0_by_hand():
    assert S.ANYTIME_START_FRACTION == 0.1
    assert S.anytime_violation(RUNS[0]) == (2 / 4, False)
    assert S.anytime_violation(RUNS[1]) == (0.0, True)
    # from t0 = 50 (half of T): seed 0 violates at t = 50 only, one of two checkpoints
    assert S.anytime_violation(RUNS[0], start_fraction=0.5) == (1 / 2, False)
    # from the first step every run has violated at some checkpoint
    assert S.anytime_violation(RUNS[1], start_fraction=0.0) == (3 / 7, False)


def test_share_of_steps_under_violating_policies_by_hand():
    # seed 0 at t = 1: 1 bad of 1; t = 5: steps 1-4 bad, step 5 not; t = 10: 4 of 10; t = 20: the epoch 11-50 is
    # left out, 4 of 10; t = 100: 4 + 50 bad of 4 + 6 + 50 evaluated steps
    by_hand = [1.0, 1.0, 4 / 5, 4 / 10, 4 / 10, 4 / 10, 54 / 60]
    np.testing.assert_allclose(violating_step_shares(RUNS[0], TIMES), by_hand, rtol=0, atol=1e-15)
    # seed 1: all of the first 10 steps are bad, none after
    np.testing.assert_allclose(violating_step_shares(RUNS[1], TIMES), [1, 1, 1, 1, 10 / 20, 10 / 50, 10 / 100],
                               rtol=0, atol=1e-15)
    # the summary's whole-run share is the same number at t = T
    assert S.epoch_violation_shares(RUNS[0])[1] == pytest.approx(54 / 60)
    empty = Trace({}, None, RUNS[0].checkpoints, [], 0.0)
    assert np.all(np.isnan(violating_step_shares(empty, TIMES)))


def test_summary_columns_and_markdown(tmp_path):
    csv_path, md_path, rows = S.write_study_summary([runs()], tmp_path)
    row = rows[0]
    assert row["violating_checkpoint_share"] == pytest.approx((2 / 4 + 0.0) / 2)
    assert row["anytime_zero_share"] == 0.5  # seed 1 never violates from t0 on, seed 0 does
    assert row["violating_step_share"] == pytest.approx((54 / 60 + 10 / 100) / 2)
    with open(csv_path, newline="", encoding="utf-8") as handle:
        written = next(csv.DictReader(handle))
    assert float(written["violating_checkpoint_share"]) == pytest.approx(0.25)
    assert float(written["anytime_zero_share"]) == 0.5
    text = md_path.read_text(encoding="utf-8")
    assert "anytime view from t0 = T/10 = 10 steps" in text
    line = next(line for line in text.splitlines() if line.startswith("| PS-CURL"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    header = next(line for line in text.splitlines() if line.startswith("| configuration"))
    names = [cell.strip() for cell in header.strip("|").split("|")]
    assert cells[names.index("C(t) > 0 at t ≥ t0")] == "25.0%"
    assert cells[names.index("C(t) = 0 from t0")] == "1/2"
    assert cells[names.index("violating steps")] == "50.0%"


def test_checkpoint_table_has_the_mean_anytime_curve(tmp_path):
    path = write_checkpoint_table([runs()], tmp_path)
    with open(path, newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    seed_0 = [1.0, 1.0, 4 / 5, 4 / 10, 4 / 10, 4 / 10, 54 / 60]
    seed_1 = [1.0, 1.0, 1.0, 1.0, 10 / 20, 10 / 50, 10 / 100]
    expected = [(a + b) / 2 for a, b in zip(seed_0, seed_1, strict=True)]
    assert [int(row["t"]) for row in table] == TIMES.tolist()
    np.testing.assert_allclose([float(row["violating_steps_mean"]) for row in table], expected, rtol=0, atol=1e-15)
    # a run without any exact evaluation leaves the column empty rather than inventing a share
    blind = ConfigurationRuns(Setting(), "ps-curl", "ps-curl", "PS-CURL", "ps", {}, {},
                              [Trace({"seed": 0}, None, RUNS[0].checkpoints, [epoch(0, 1, 100, None)], 0.0)])
    path = write_checkpoint_table([blind], tmp_path)
    with open(path, newline="", encoding="utf-8") as handle:
        assert all(row["violating_steps_mean"] == "" for row in csv.DictReader(handle))
    assert math.isnan(S.anytime_violation(Trace({}, None, {"t": np.array([]), "violation": np.array([])}, [], 0.0))[0])

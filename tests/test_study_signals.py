"""The ``[study] signals`` key: what every run's agent observes (known means, Bernoulli or Gaussian draws).

Absent (or ``known``) it leaves a study as it was: the same tasks, identities and ``study.json``; a noisy kind is
recorded in each run's identity and reaches the learning loop, whose trace says which signals it drew.
"""

from __future__ import annotations

import numpy as np
import pytest

from curlopt.experiments.executors import execute_task
from curlopt.experiments.study.planning import plan_study
from curlopt.experiments.study.reader import study_from_dict
from curlopt.experiments.study.spec import StudyError, loop_signals


def _study(signals: str | None = None, options: dict | None = None) -> dict:
    head = {"name": "tiny", "steps": 300, "seeds": 1, **({"signals": signals} if signals is not None else {})}
    return {"study": head, "model": {"name": "queue"}, "options": {"backend": "highs", **(options or {})},
            "algorithms": [{"agent": "ps-curl"}]}


def test_absent_and_known_signals_plan_the_same_runs_as_before():
    absent = plan_study(study_from_dict(_study()))
    known = plan_study(study_from_dict(_study("known")))
    assert absent.study.signals == known.study.signals == "known"
    assert [t.identity() for t in absent.tasks] == [t.identity() for t in known.tasks]
    assert all("signals" not in t.identity() for t in absent.tasks)
    assert "signals" not in absent.study.describe()
    assert [t.relative_path for t in absent.tasks] == [t.relative_path for t in known.tasks]


@pytest.mark.parametrize("kind", ["bernoulli", "gaussian"])
def test_a_noisy_kind_enters_the_identity_and_the_study_record(kind):
    plan = plan_study(study_from_dict(_study(kind)))
    assert {t.identity()["signals"] for t in plan.tasks} == {kind}
    assert plan.study.describe()["signals"] == kind
    assert loop_signals(kind) == kind and loop_signals("known") == "mean"


def test_a_bad_value_is_refused_in_one_line():
    with pytest.raises(StudyError) as caught:
        study_from_dict(_study("noisy"), source="s.toml")
    message = str(caught.value)
    assert "\n" not in message
    assert message == "s.toml: [study] signals: must be one of known, bernoulli, gaussian, got 'noisy'."
    with pytest.raises(StudyError, match=r"\[study\] signals: must be a string, got an integer 3"):
        study_from_dict({**_study(), "study": {**_study()["study"], "signals": 3}})


def test_the_run_draws_the_study_signals_and_a_learning_agent_reads_them():
    known = execute_task(plan_study(study_from_dict(_study(options={"rewards": "learned"}))).tasks[0])
    noisy = execute_task(plan_study(study_from_dict(_study("bernoulli", {"rewards": "learned"}))).tasks[0])
    assert "signals" not in known.meta and noisy.meta["signals"] == "bernoulli"
    assert noisy.meta["sweep"]["signals"] == "bernoulli" and "signals" not in known.meta["sweep"]
    # the same seed's trajectory, but a learning agent that saw other signals plans otherwise at some point
    assert not np.array_equal(known.checkpoints["rewards"], noisy.checkpoints["rewards"])

"""Study sizes are counted before anything is expanded, and a study above its run limit is refused with its counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke
from hypothesis import given
from hypothesis import strategies as st

from curlopt.experiments.study import (
    DEFAULT_MAX_RUNS,
    MAX_SEEDS,
    StudyError,
    load_study,
    plan_study,
    planning,
    study_from_dict,
    study_size,
)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _huge_grid(tmp_path: Path, values: int = 1000, seeds: int = 3) -> Path:
    """Two axes of ``values`` values each: what a typo in a 3-value axis can give."""
    constants = ", ".join(f"{0.5 + i / 1000:.4f}" for i in range(values))
    bounds = ", ".join(str(i + 1) for i in range(values))
    return _write(tmp_path / "huge.toml", f"""
[study]
name = "huge"
steps = 1000
seeds = {seeds}
out = "{tmp_path / 'out'}"

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"

[grid]
tightness_constant = [{constants}]
horizon_lower_bound = [{bounds}]
""")


@pytest.fixture
def no_expansion(monkeypatch):
    """Make any expansion of a grid (or any configuration's check) fail loudly."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("the grid was expanded")

    monkeypatch.setattr(planning, "_combinations", refuse)
    monkeypatch.setattr(planning, "_setting_configurations", refuse)


def test_a_huge_grid_is_refused_by_dry_run_before_anything_is_expanded(tmp_path, capsys, no_expansion):
    study = _huge_grid(tmp_path)
    code, out, err = invoke(["sweep", str(study), "--dry-run"], capsys)
    configurations, runs = 1000 * 1000, 1000 * 1000 * 3  # the two axes' product, times the seeds
    assert code == 2 and out == "" and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: {study}: the study is {runs:,} runs ({configurations:,} configurations x 3 seeds),"
                          f" more than the default limit of {DEFAULT_MAX_RUNS:,} runs;")
    assert "[grid] tightness_constant: 1,000 values" in err and "[grid] horizon_lower_bound: 1,000 values" in err
    assert f"--max-runs {runs}" in err and f"max_runs = {runs} in [study]" in err
    assert not (tmp_path / "out").exists()

    # The same refusal without --dry-run, and from the Python API with a larger --max-runs that is still too small.
    code, _, err = invoke(["sweep", str(study), "--max-runs", str(runs - 1)], capsys)
    assert code == 2 and f"more than the --max-runs {runs - 1:,} given" in err
    with pytest.raises(StudyError, match=r"3,000,000 runs"):
        plan_study(load_study(study))
    assert not (tmp_path / "out").exists()


def test_the_limit_is_exact_and_both_ways_of_allowing_more_work(tmp_path, capsys):
    # 2 configurations x 3 seeds = 6 runs: allowed at 6, refused at 5, in the file or on the command line.
    text = """
[study]
name = "six"
steps = 50
seeds = 3
{limit}

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"

[grid]
tightness_constant = [1, 2]
"""
    study = _write(tmp_path / "six.toml", text.format(limit="max_runs = 6"))
    plan = plan_study(load_study(study))
    assert len(plan.configurations) == 2 and len(plan.tasks) == 6
    with pytest.raises(StudyError, match=r"the study is 6 runs \(2 configurations x 3 seeds\), more than its"
                                         r" max_runs = 5;"):
        plan_study(load_study(_write(tmp_path / "five.toml", text.format(limit="max_runs = 5"))))
    assert len(plan_study(load_study(study), max_runs=6).tasks) == 6  # the argument overrides the file
    with pytest.raises(StudyError, match="more than the --max-runs 5 given"):
        plan_study(load_study(study), max_runs=5)

    code, out, err = invoke(["sweep", str(tmp_path / "five.toml"), "--dry-run", "--max-runs", "6"], capsys)
    assert code == 0 and "6 runs" in out and "dry run" in out, err
    code, _, err = invoke(["sweep", str(study), "--dry-run", "--max-runs", "0"], capsys)
    assert code == 2  # the command line's own range check

    with pytest.raises(StudyError, match=r"\[study\] max_runs: must be an integer >= 1, got an integer 0"):
        load_study(_write(tmp_path / "zero.toml", text.format(limit="max_runs = 0")))


def test_a_huge_seed_count_is_refused_when_read_and_by_reproduce(tmp_path, no_expansion):
    text = '[study]\nname = "s"\nsteps = 10\nseeds = {seeds}\n[model]\nname = "queue"\n[[algorithms]]\nagent = "ps-curl"\n'
    with pytest.raises(StudyError, match=rf"\[study\] seeds: a count of seeds must be at most {MAX_SEEDS:,}"):
        load_study(_write(tmp_path / "s.toml", text.format(seeds=10 ** 12)))

    from curlopt.errors import CurloptError
    from curlopt.experiments.presets import reproduce

    with pytest.raises(CurloptError, match=f"at most {MAX_SEEDS:,}"):
        reproduce("queue", seeds=10 ** 12, out=tmp_path / "r", echo=None)
    # every algorithm of the preset x 1,000 seeds: counted and refused before anything is expanded; the message
    # gives the option
    from curlopt.experiments.presets import EXPERIMENTS

    n = len(EXPERIMENTS["queue"].algorithms)
    with pytest.raises(StudyError, match=rf"{n},000 runs \({n} configurations x 1,000 seeds\).* --max-runs {n}000\.$"):
        reproduce("queue", seeds=1000, out=tmp_path / "r", echo=None)
    assert not (tmp_path / "r").exists()


def test_an_axis_of_many_values_is_read_in_one_pass_and_duplicates_still_refused(tmp_path):
    values = ", ".join(str(i) for i in range(1, 20_001))  # every value a valid prior (each is checked when read)
    study = load_study(_write(tmp_path / "long.toml", f"""
[study]
name = "long"
steps = 10
seeds = 1
[model]
name = "queue"
[[algorithms]]
agent = "ps-curl"
[grid]
prior = [{values}]
"""))
    assert study_size(study).configurations == 20_000
    base = {"study": {"name": "d", "steps": 10, "seeds": 1}, "model": {"name": "queue"},
            "algorithms": [{"agent": "ps-curl"}]}
    with pytest.raises(StudyError, match=r"\[grid\] prior: the value 3.0 appears twice"):
        study_from_dict({**base, "grid": {"prior": [1, 3, 3.0]}})
    with pytest.raises(StudyError, match=r"the value \{'a': 1, 'b': 2\} appears twice"):
        study_from_dict({**base, "grid": {"prior": [{"b": 2, "a": 1}, {"a": 1, "b": 2}]}})
    # 1 and true are equal in Python but different options: both stay (an option no agent declares, whose values
    # the reader cannot check: the planner refuses it later).
    assert dict(study_from_dict({**base, "grid": {"flavour": [1, True]}}).grid)["flavour"] == (1, True)


# -- the counts are the products of the axis lengths -------------------------------------------------------------------
_AXIS = st.integers(min_value=1, max_value=3)


@given(constants=_AXIS, triggers=st.integers(min_value=1, max_value=2), priors=_AXIS, scales=st.integers(1, 2),
       fixed_trigger=st.booleans(), settings=st.integers(min_value=1, max_value=2),
       seeds=st.integers(min_value=1, max_value=3))
def test_counts_are_the_products_of_the_axis_lengths(constants, triggers, priors, scales, fixed_trigger, settings,
                                                     seeds):
    data = {
        "study": {"name": "p", "steps": 10, "seeds": seeds},
        "models": [{"name": "queue", "params": {"buffer": 2 + i}, "setting": f"queue-{i}"} for i in range(settings)],
        "grid": {"tightness_constant": [1 + i for i in range(constants)],
                 "trigger": ["doubling", "linear"][:triggers]},
        "algorithms": [
            {"agent": "ps-curl", "grid": {"prior": [1 + i for i in range(priors)]},
             **({"options": {"trigger": "linear"}} if fixed_trigger else {})},
            # the baseline takes none of the study's axes: only its own
            {"agent": "primal-dual", "grid": {"scale": [True, False][:scales]}},
        ],
    }
    # The rule of the study format: an algorithm expands the study axes its agent takes and its options do not fix,
    # and its own axes; the configurations are summed over algorithms, times the settings.
    ps_curl = constants * (1 if fixed_trigger else triggers) * priors
    expected = (ps_curl + scales) * settings
    study = study_from_dict(data)
    size = study_size(study)
    assert (size.configurations, size.runs, size.seeds) == (expected, expected * seeds, seeds)
    plan = plan_study(study)  # the expansion itself agrees with the counts made without it
    assert len(plan.configurations) == expected and len(plan.tasks) == expected * seeds

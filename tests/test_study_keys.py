"""Study keys read through the agents' declarations, and ``[study] optimum_backend``.

* the reader checks every ``[[algorithms]]`` option and grid value (and every ``[options]``/``[grid]`` value of an
  option an algorithm's agent declares) with :func:`curlopt.agents.check_agent_options`, when the file is read: a
  bad value is one line naming its key, before anything is planned or built;
* the planner's list of what an agent takes is the agent's declaration;
* ``optimum_backend`` (a backend name or ``"auto"``) reaches each run and is part of its identity, so runs solved
  with another optimum backend are not reused; a study that does not set it keeps its identity.
"""

from __future__ import annotations

import pytest

from curlopt.agents import agent_options
from curlopt.experiments.runner import run_study
from curlopt.experiments.simulation.trace import load_trace
from curlopt.experiments.study import StudyError, agent_parameters, load_study, plan_study

STUDY = """
[study]
name = "keys"
steps = 60
seeds = 1
{head}

[model]
name = "queue"
params = {{ buffer = 2 }}

[[algorithms]]
agent = "ps-curl"
{algorithm}
"""


def _write(tmp_path, head: str = "", algorithm: str = "", name: str = "keys.toml"):
    path = tmp_path / name
    path.write_text(STUDY.format(head=head, algorithm=algorithm), encoding="utf-8")
    return path


@pytest.mark.parametrize("algorithm, key, words", [
    ("options = { prior = -1 }", "algorithms[1].options.prior", "prior"),
    ("grid = { prior = [1, 0] }", "algorithms[1].grid.prior", "prior"),
    ("options = { support = \"sometimes\" }", "algorithms[1].options.support", "support"),
    ("grid = { trigger = [\"doubling\", \"never\"] }", "algorithms[1].grid.trigger", "trigger"),
])
def test_the_reader_checks_agent_options_by_their_declaration(tmp_path, algorithm, key, words):
    with pytest.raises(StudyError) as caught:
        load_study(_write(tmp_path, algorithm=algorithm))  # read only: nothing planned or built
    message = str(caught.value)
    assert f": {key}: " in message and words in message and "\n" not in message


def test_study_options_are_checked_for_the_agents_that_declare_them(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(head="", algorithm="") + "\n[grid]\ntightness_constant = [1, -2]\n", encoding="utf-8")
    with pytest.raises(StudyError, match=r"\[grid\] tightness_constant \(for ps-curl\)"):
        load_study(path)


def test_what_an_agent_takes_is_its_declaration():
    for agent in ("uc-curl", "ps-curl", "safe-curl", "ucrl-cmdp", "primal-dual"):
        declared = agent_options(agent)
        assert agent_parameters(agent) == declared
        assert all(hasattr(option, "default") for option in declared.values())


def test_a_bad_optimum_backend_is_refused_when_read(tmp_path):
    with pytest.raises(StudyError, match=r"\[study\] optimum_backend: must be a backend name or 'auto'"):
        load_study(_write(tmp_path, head='optimum_backend = "gurobi"'))


def test_the_optimum_backend_is_part_of_a_runs_identity_only_when_set(tmp_path):
    plain = plan_study(load_study(_write(tmp_path, name="plain.toml")))
    chosen = plan_study(load_study(_write(tmp_path, head='optimum_backend = "scipy"', name="chosen.toml")))
    assert "optimum_backend" not in plain.tasks[0].identity()
    assert chosen.tasks[0].identity() == {**plain.tasks[0].identity(), "optimum_backend": "scipy"}
    assert "optimum_backend" not in plain.study.describe()
    assert chosen.study.describe()["optimum_backend"] == "scipy"


def test_runs_solved_with_another_optimum_backend_are_not_reused(tmp_path):
    out = tmp_path / "out"
    quiet = dict(jobs=1, progress=False, figures=False, echo=None, out=out)
    first = run_study(_write(tmp_path, name="plain.toml"), **quiet)
    assert len(first.executed) == 1
    path = out / first.tasks[0].relative_path
    assert load_trace(path).optimum["backend"] == "highs"   # ps-curl's default backend solves the optimum
    again = run_study(_write(tmp_path, name="plain.toml"), **quiet)
    assert len(again.skipped) == 1 and not again.executed   # the same study reuses its run
    other = run_study(_write(tmp_path, head='optimum_backend = "scipy"', name="plain.toml"), **quiet)
    assert len(other.executed) == 1 and not other.skipped
    assert load_trace(path).optimum["backend"] == "scipy"
    assert load_trace(path).meta["sweep"]["optimum_backend"] == "scipy"

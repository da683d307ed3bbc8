"""Inputs a hostile test tried on the episodic and discounted surfaces, each refused with one line (or answered
honestly) instead of a traceback, a false ``optimal`` or a silent guess."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, invoke

from curlopt import build_model
from curlopt.backends.base import RawSolution
from curlopt.backends.registry import get_backend
from curlopt.backends.results import Status
from curlopt.errors import ModelError
from curlopt.models.episodic import EpisodicCMDP
from curlopt.models.files import load_model, save_model
from curlopt.programs import EpisodicOccupancyProgram
from curlopt.utilities.library import Entropy, SumOfLogs, onto_domain

# -- sizes that would allocate gigabytes are refused before allocation -----------------------------------------------


@pytest.mark.parametrize(("name", "params", "words"), [
    ("gridworld", {"layout": "random", "size": 100}, "S=10,000 states"),  # a 3 GiB dense kernel
    ("media-streaming", {"levels": 10_000}, "S=10,000 states"),  # a 1.5 GiB kernel and a 15 GiB program
    ("boxpushing", {"layout": "/".join(["." * 30] * 29 + ["S" + "." * 27 + "XG"])}, "S=810,000 states"),
])
def test_models_too_large_are_refused_before_they_are_built(name, params, words):
    with pytest.raises(ModelError, match="GiB") as error:
        build_model(name, horizon=3, **params)
    assert words in str(error.value)


def test_a_model_within_the_limit_is_still_built():
    model = build_model("gridworld", layout="random", size=8, horizon=4)
    assert model.n_states == 64 and model.horizon == 4


# -- an episodic run applies or refuses the long-run run's flags, never drops them -----------------------------------


@pytest.mark.parametrize(("args", "words"), [
    (["--path", "fast"], "drop --path fast"),
    (["--option", "episodes=10"], "drop --option episodes=10"),
    (["--optimum-backend", "bogus"], "unknown backend 'bogus'"),
])
def test_an_episodic_run_refuses_flags_it_would_ignore(args, words, capsys):
    code, _, err = invoke(["run", "factored-cmdp", "--param", "horizon=4", "--agent", "opt-cmdp", "--steps", "2",
                           *args], capsys)
    assert_one_line_error(code, err, words)


def test_an_episodic_run_uses_the_optimum_backend_it_is_given(capsys, monkeypatch):
    import curlopt.experiments.simulation.episodes as episodes

    asked = []
    original = episodes.episodic_optimum
    monkeypatch.setattr(episodes, "episodic_optimum", lambda model, backend="auto": asked.append(backend) or
                        original(model, backend))
    code, out, err = invoke(["run", "factored-cmdp", "--param", "horizon=4", "--agent", "opt-cmdp", "--steps", "2",
                             "--optimum-backend", "scipy", "--option", "episodes=2", "--json"], capsys)
    assert code == 0, err
    assert asked == ["scipy"]
    # by hand: H = 4, budget 2 moves per episode; three moves from state 0 earn 1/3 + 2/3 + 1 = 2 at cost 3, so the
    # best mixture plays them with probability 2/3 (cost 2) and stays otherwise: f* = 4/3
    assert json.loads(out)["summary"]["optimum"] == pytest.approx(4.0 / 3.0, abs=1e-9)


# -- model files: a criterion only in version 3 ----------------------------------------------------------------------


@pytest.mark.parametrize(("criterion", "version"), [({"discount": 0.5}, 1), ({"discount": 0.5}, 2),
                                                    ({"horizon": 3}, 2), ({"horizon": 3, "safe_policy": None}, 1)])
def test_a_criterion_in_an_older_version_is_refused(tmp_path, criterion, version, capsys):
    document = json.loads(save_model(build_model("factored-cmdp"), tmp_path / "m.json").read_text())
    document.update(criterion, version=version)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelError, match='needs "version": 3'):
        load_model(path)
    code, _, err = invoke(["optimum", str(path)], capsys)
    assert_one_line_error(code, err, 'needs "version": 3')


def test_a_version_3_file_keeps_its_criterion(tmp_path):
    model = load_model(save_model(build_model("factored-cmdp", horizon=4), tmp_path / "m.json"))
    assert isinstance(model, EpisodicCMDP) and model.horizon == 4


# -- totals a hair outside a closed domain are on its bound ----------------------------------------------------------


def test_onto_domain_moves_only_entries_within_the_tolerance():
    entropy = Entropy(4)
    moved = onto_domain(entropy, [-5e-11, -1e-3, 0.2, 0.0], 1e-7)
    assert moved.tolist() == [0.0, -1e-3, 0.2, 0.0]
    assert onto_domain(SumOfLogs(weights=[1.0, 1.0], shift=0.5), [-0.5 - 1e-9, 1.0], 1e-7).tolist() == [-0.5, 1.0]


def _unreachable_entropy_model() -> EpisodicCMDP:
    """State 1 is never reached (state 0 is absorbing and every episode starts there); one indicator signal per
    pair, and the entropy of the per-episode totals as the objective (no constraints)."""
    S, A, H = 2, 2, 3
    kernel = np.zeros((S, A, S))
    kernel[0, :, 0] = kernel[1, :, 1] = 1.0
    rewards = np.eye(S * A).reshape(S * A, S, A)
    return EpisodicCMDP(rewards, objective=Entropy(S * A), kernel=kernel, initial=[1.0, 0.0], horizon=H)


def test_a_solver_point_a_hair_below_an_entropy_domain_is_judged_on_its_bound():
    model = _unreachable_entropy_model()
    program = EpisodicOccupancyProgram(model)
    q = np.zeros((3, 2, 2))
    q[:, 0, :] = 0.5  # the uniform policy: totals (1.5, 1.5) on state 0's pairs, 0 on state 1's
    x = program._point(q)
    x[program.blocks["reward_totals"].slice][2:] = -5e-11  # as a solver leaves them
    compiled = get_backend("cvxpy").compile(program)
    compiled._solve = lambda with_constraints: RawSolution(Status.OPTIMAL, x=x.copy(), solver="fake")
    result = compiled.solve()
    assert result.status is Status.OPTIMAL, result.message
    assert result.objective == pytest.approx(-2 * 1.5 * math.log(1.5), abs=1e-9)  # the entropy of (1.5, 1.5, 0, 0)


def test_a_total_far_below_the_domain_is_still_refused():
    model = _unreachable_entropy_model()
    program = EpisodicOccupancyProgram(model)
    q = np.zeros((3, 2, 2))
    q[:, 0, :] = 0.5
    x = program._point(q)
    x[program.blocks["reward_totals"].slice][2:] = -1e-3  # a row residual of 1e-3: not a rounding
    compiled = get_backend("cvxpy").compile(program)
    compiled._solve = lambda with_constraints: RawSolution(Status.OPTIMAL, x=x.copy(), solver="fake")
    assert compiled.solve().status is Status.NUMERICAL_ERROR


# -- an infinite gradient gives no certificate -----------------------------------------------------------------------


def test_column_generation_does_not_certify_with_a_nan_bound():
    pytest.importorskip("cvxpy")
    result = get_backend("mdp-columns").compile(EpisodicOccupancyProgram(build_model("maxent", horizon=5))).solve()
    # pairs no policy reaches in 5 steps make the entropy's gradient infinite there: the bound is NaN, not a proof
    assert result.status is Status.NUMERICAL_ERROR
    assert "no optimum is certified" in result.message


def test_a_nan_bound_is_said_once_by_the_status_not_by_numpy_warnings():
    pytest.importorskip("cvxpy")
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = get_backend("mdp-columns").compile(EpisodicOccupancyProgram(build_model("maxent", horizon=3))).solve()
    assert result.status is Status.NUMERICAL_ERROR
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_pyomo_says_why_an_episodic_entropy_cannot_start(capsys):
    pytest.importorskip("cyipopt")
    code, out, _ = invoke(["optimum", "maxent", "--horizon", "5", "--backend", "pyomo"], capsys)
    assert code == 1
    assert "16 of the 96 totals" in out and "every feasible point" in out


# -- run_episodes: a given optimum is a finite number ----------------------------------------------------------------


@pytest.mark.parametrize("optimum", [float("nan"), float("inf"), "x", True])
def test_run_episodes_refuses_an_optimum_that_is_not_a_finite_number(optimum):
    from curlopt.agents.episodic import make_episodic_agent
    from curlopt.errors import CurloptError
    from curlopt.experiments.simulation.episodes import run_episodes

    model = build_model("factored-cmdp", horizon=3)
    with pytest.raises(CurloptError, match="optimum must be a finite number"):
        run_episodes(model, make_episodic_agent("opt-cmdp", model), episodes=1, optimum=optimum)


# -- an infeasible budget: the run says so and what the agent played -------------------------------------------------


def test_an_episodic_run_on_infeasible_constraints_says_so(capsys):
    code, out, err = invoke(["run", "factored-cmdp", "--param", "horizon=4", "--param", "budgets=-1", "--agent",
                             "opt-cmdp", "--steps", "2"], capsys)
    assert code == 0, err
    # by hand: without the constraint, move at every step from state 0: 1/3 + 2/3 + 1 + 1/3 = 7/3
    assert "optimum without the constraints, which are infeasible: f(λ*) = 2.33333 per episode" in out
    assert "against the optimum without constraints" in out
    assert "policies     {'fallback': 2}" in out
    assert "no policy satisfies the constraints" in err and "Traceback" not in err


def test_an_episodic_run_on_feasible_constraints_prints_as_before(capsys):
    code, out, _ = invoke(["run", "factored-cmdp", "--param", "horizon=4", "--agent", "opt-cmdp", "--steps", "2"],
                          capsys)
    assert code == 0
    assert "optimum      f(λ*) = 1.33333 per episode" in out and "infeasible" not in out


@pytest.mark.parametrize("seed", [-1, 2.5, "1", True])
def test_an_episodic_environment_refuses_a_bad_seed_in_one_line(seed):
    from curlopt.envs.episodic import EpisodicCMDPEnv
    from curlopt.errors import EnvError

    env = EpisodicCMDPEnv(build_model("factored-cmdp", horizon=3))
    with pytest.raises(EnvError, match="seed must be None or an integer >= 0"):
        env.reset(seed=seed)
    assert env.reset(seed=0)[0] == 0  # the factored CMDP starts in state 0


def test_too_many_episodes_name_the_flag(capsys):
    code, _, err = invoke(["run", "factored-cmdp", "--param", "horizon=4", "--agent", "opt-cmdp", "--steps",
                           "1000000001"], capsys)
    assert_one_line_error(code, err, "--steps counts episodes", "1,000,000,001")


def test_a_bad_sparse_step_kernel_names_its_step(tmp_path):
    base = build_model("queue", buffer=3, storage="sparse")
    model = EpisodicCMDP(base.rewards, base.costs, base.objective, base.constraints, [base.transitions] * 2,
                         initial=base.initial, horizon=3)
    document = json.loads(save_model(model, tmp_path / "m.json").read_text())
    document["step_kernels"][1]["shape"] = [4, 4]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelError, match=r"the kernel of step 2 \(step_kernels\[1\]\): kernel.indptr"):
        load_model(path)


@pytest.mark.parametrize("document", ["episodic", "discounted"])
def test_diagnose_refuses_a_model_of_another_criterion(tmp_path, document, capsys):
    model = build_model("factored-cmdp", **({"horizon": 4} if document == "episodic" else {"discount": 0.5}))
    path = save_model(model, tmp_path / "m.json")
    code, _, err = invoke(["diagnose", str(path)], capsys)
    assert_one_line_error(code, err, f"is {document}", "long-run average criterion")

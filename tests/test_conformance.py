"""The shipped conformance suite (curlopt.testing) on every installed backend, and checks of the suite itself.

* every installed backend passes :func:`curlopt.testing.run_conformance` (one test per backend and family
  of checks, so a failure names both);
* the suite is not vacuous: a backend refusing everything, one ignoring updates and one that never falls
  back all fail it, with a report naming the check;
* the reference it compares against is checked in turn against closed forms (box program without data);
* the ``scipy`` example backend is registered like the others but never chosen by ``auto``;
* ``curlopt.testing`` imports no Hypothesis, pytest or solver, and its reference imports nothing of curlopt.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import backend_or_skip
from hypothesis import HealthCheck, assume, given, settings
from test_import import heavy_in, loaded_after

from curlopt import Linear, LinearBound, SumOfLogs, build_model, get_backend
from curlopt.backends.highs.backend import HighsBackend
from curlopt.backends.registry import auto_candidates, backend_names, choose_backend, installed_backends
from curlopt.backends.results import ProgramVariant, Status
from curlopt.backends.scipy import CompiledScipy, ScipyBackend
from curlopt.errors import BackendOptionError
from curlopt.testing import CHECK_NAMES, ConformanceError, run_conformance
from curlopt.testing import reference as ref
from curlopt.testing.conformance import check_solution
from curlopt.testing.strategies import cases

FAMILIES = ["closed-form", "optimum/", "fallback/", "update/", "contract/"]


# ----------------------------------------------------------------------------
# every installed backend conforms
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_installed_backend_passes_the_conformance_suite(backend_name, family):
    report = run_conformance(backend_name, checks=[family], raise_on_failure=False)
    assert report.ok, str(report)
    # the minimum: the required checks ran and passed (they are never skipped)
    required = {n for n in CHECK_NAMES if n.startswith(family)
                and (n.endswith("/linear") or n == "closed-form" or n.startswith("contract/"))}
    assert required and {r.name for r in report.passed} >= required


def test_the_core_backends_are_always_checked():
    # the conformance test above runs on installed backends only; highs and scipy need nothing beyond the core
    # dependencies, so they are never left out (cvxpy and pyomo are checked when their extras are installed)
    assert {"highs", "scipy"} <= set(installed_backends())


# ----------------------------------------------------------------------------
# the suite catches broken backends
# ----------------------------------------------------------------------------


class RefusesEverything(ScipyBackend):
    name = "refuses-everything"

    @classmethod
    def accepts(cls, utility):
        return False


class IgnoresUpdates(ScipyBackend):
    """Keeps the parameter values it was compiled with: re-solves after ``program.update`` see stale data."""

    name = "ignores-updates"

    def _compile(self, program):
        class Stale(CompiledScipy):
            def __init__(self, backend, program):
                super().__init__(backend, program)
                self.frozen = program.linear.param_values.copy()

            def parameter_values(self):
                return self.frozen

        return Stale(self, program)


class NeverFallsBack(ScipyBackend):
    name = "never-falls-back"

    def _compile(self, program):
        class Stubborn(CompiledScipy):
            def _solve(self, with_constraints):
                return super()._solve(True)

        return Stubborn(self, program)


class ClaimsTooMuch(ScipyBackend):
    """Says it takes a logarithm, then cannot compile one."""

    name = "claims-too-much"

    @classmethod
    def accepts(cls, utility):
        return True


def test_a_backend_refusing_everything_cannot_pass():
    with pytest.raises(ConformanceError, match="every backend must accept linear utilities") as info:
        run_conformance(RefusesEverything())
    report = info.value.report
    assert not report.ok and [r.name for r in report.failed] == ["declaration"]


class IgnoresTheTimeLimit(ScipyBackend):
    """Solves to the end whatever its time_limit says."""

    name = "ignores-the-time-limit"

    def _compile(self, program):
        class Unhurried(CompiledScipy):
            def time_left(self):
                return None

        return Unhurried(self, program)


class MapsToWords(ScipyBackend):
    """Maps its solver's statuses to words, not to Status members."""

    name = "maps-to-words"
    STATUS_MAP = {0: "optimal", 2: "infeasible"}


class ForgetsUnknownKeywords(ScipyBackend):
    """Swallows any keyword it does not know."""

    name = "forgets-unknown-keywords"

    def __init__(self, **options):
        super().__init__(**{k: v for k, v in options.items() if k in self.declared_options()})


@pytest.mark.parametrize("backend, failing", [
    (IgnoresUpdates(), "update/"),
    (NeverFallsBack(), "fallback/"),
    (ClaimsTooMuch(), "optimum/occupancy/log"),
    (IgnoresTheTimeLimit(), "contract/time-limit"),
    (MapsToWords(), "contract/statuses"),
    (ForgetsUnknownKeywords(), "contract/options"),
])
def test_the_suite_names_the_check_a_broken_backend_fails(backend, failing):
    report = run_conformance(backend, checks=[failing], raise_on_failure=False)
    assert not report.ok
    assert report.failed and all(r.name.startswith(failing) for r in report.failed), str(report)
    detail = report.failed[0].detail
    if failing.startswith("contract/"):  # a contract check names what it saw
        assert detail and "Case(seed=" not in detail, detail
    else:
        assert "Case(seed=" in detail or "raised" in detail
    assert "re-run one check with run_conformance" in str(report)


def test_run_conformance_takes_a_name_a_class_or_an_instance_and_refuses_unknown_checks():
    for backend in ("scipy", ScipyBackend, ScipyBackend()):
        report = run_conformance(backend, checks=["optimum/occupancy/linear"], examples=1)
        assert [r.name for r in report.results] == ["declaration", "optimum/occupancy/linear"]
    with pytest.raises(ValueError, match="no conformance check is named 'optimum/nope'"):
        run_conformance("scipy", checks=["optimum/nope"])


# ----------------------------------------------------------------------------
# the reference checked against closed forms and against itself
# ----------------------------------------------------------------------------


def test_box_reference_without_data_allows_any_kernel():
    # No visits: P^ = 0 and b = 1 (T >= 2), so any implied kernel is allowed: the optimum of a linear reward
    # is its largest entry (stay forever in the best pair).
    rng = np.random.default_rng(3)
    rewards = rng.uniform(-1, 1, size=(1, 3, 2))
    poly = ref.box_polytope(np.zeros((3, 2, 3)), horizon=10)
    result = ref.solve_reference(poly, rewards, np.zeros((1, 3, 2)), ref.LinearObjective(np.array([1.0])))
    assert result.value == pytest.approx(rewards.max(), abs=1e-9)


def test_box_reference_closes_on_the_true_kernel_with_much_data():
    # With n = P·N for huge N the box shrinks to P^ = P: the box optimum tends to the occupancy optimum.
    model = build_model("queue")
    counts = model.kernel * 1e12
    objective = ref.LinearObjective(np.array([1.0]))
    pieces = [(np.array([[-1.0, 0.0]]), np.array([0.0])), (np.array([[0.0, -1.0]]), np.array([0.0]))]
    box = ref.solve_reference(ref.box_polytope(counts, 1e6), model.rewards, model.costs, objective, pieces)
    assert box.value == pytest.approx(ref.model_optimum(model).value, abs=1e-4)


def test_piecewise_reference_with_one_piece_is_the_linear_one():
    model = build_model("queue")
    poly = ref.occupancy_polytope(model.kernel)
    linear = ref.solve_reference(poly, model.rewards, model.costs, ref.LinearObjective(np.array([1.0]), 0.5))
    # min(λ + 0.5, λ + 7) = λ + 0.5
    pieces = ref.PiecewiseObjective(np.array([[1.0], [1.0]]), np.array([0.5, 7.0]))
    assert ref.solve_reference(poly, model.rewards, model.costs, pieces).value == pytest.approx(linear.value, abs=1e-9)


def test_closed_form_problems_agree_with_the_reference_lp():
    """The hand-solved two-state cases of the suite and the reference LPs check each other."""
    empty = np.zeros((2, 2, 2))
    polytopes = {"occupancy": ref.occupancy_polytope(ref.TWO_STATE_KERNEL),
                 "optimistic": ref.optimistic_polytope(empty, 1), "box-optimistic": ref.box_polytope(empty, 10)}
    for problem in ref.two_state_problems():
        args = (polytopes[problem.kind], ref.TWO_STATE_REWARDS[None], ref.TWO_STATE_COSTS[None],
                ref.LinearObjective(np.array([1.0])), [(np.array([[1.0]]), np.array([problem.bound]))], problem.epsilon)
        assert ref.solve_reference(*args).feasible is problem.feasible
        found = ref.solve_reference(*args, with_constraints=problem.feasible)
        assert found.value == pytest.approx(problem.value, abs=1e-9), problem
        if problem.occupancy is not None:
            np.testing.assert_allclose(found.occupancy, problem.occupancy, atol=1e-9)


def test_model_optimum_refuses_a_utility_without_pieces():
    model = build_model("scheduler")
    with pytest.raises(ValueError, match="LP-representable"):
        ref.model_optimum(model)


# ----------------------------------------------------------------------------
# Hypothesis over the shipped strategies: piecewise utilities on the box program
# ----------------------------------------------------------------------------


#: how far below the optimum Ipopt (pyomo backend) may stop on the box program with kinked utilities: the known
#: gap tracked strictly by test_piecewise_box_optimum_with_an_unplayed_action_is_found (6e-6 there; up to 4.7e-5
#: among the 40 examples of the "dev" Hypothesis profile, 2026-11-23), with room. Never above the optimum: the point
#: must stay feasible.
PYOMO_BOX_GAP = 1e-4


# derandomized: the same examples run every time (the profile decides how many)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], derandomize=True)
@given(case=cases(objective="piecewise", max_pieces=3, max_states=4, max_actions=3))
def test_piecewise_box_program_matches_reference(backend_name, case):
    margin = case.tightness_margin("box-optimistic")
    assume(abs(margin) > 1e-6)
    result = backend_or_skip(backend_name, case.program("box-optimistic")).solve()
    tight = margin > 0
    expected = case.reference("box-optimistic", with_constraints=tight)
    assert result.status.has_solution, result.message
    assert result.program is (ProgramVariant.TIGHT if tight else ProgramVariant.FALLBACK)
    if backend_name == "pyomo":  # the known Ipopt gap (see PYOMO_BOX_GAP): close below, never above
        assert expected.value - PYOMO_BOX_GAP <= result.objective <= expected.value + 1e-7, result.objective
    else:
        assert result.objective == pytest.approx(expected.value, rel=1e-6, abs=1e-7)
    check_solution(case, "box-optimistic", result, tight)


#: a case the test above found (seed 4352580): S = 1, A = 2, a two-piece objective and a three-piece
#: constraint on the box program. Ipopt (pyomo backend) reported Solve_Succeeded at ρ(0,0) = 1.5e-5
#: instead of 0, 6e-6 below the optimum, until its complementarity tolerance was tightened.
REGRESSION_CASE = dict(
    kernel=np.ones((1, 2, 1)), rewards=np.array([[[0.90400579, -0.34838936]]]),
    costs=np.array([[[0.44021477, 0.48162849]]]), objective_kind="piecewise", objective_weights=np.zeros(1),
    objective_shift=0.0,
    constraint_pieces=[(np.array([[-2.36590248], [0.47891406], [0.11806202]]),
                        np.array([-1.13092975, 0.31930528, 0.11734734]))],
    counts=np.array([[[5], [0]]]), time=447, epsilon=0.0, seed=4352580, horizon=14925.0,
    objective_pieces=(np.array([[-0.34208691], [-1.13886999]]), np.array([-0.11775232, -0.06038228])),
)


def test_piecewise_box_regression_case(backend_name):
    """Ipopt used to stop here 6e-6 short of the optimum (complementarity tolerance 1e-4); with 1e-12 it finds it."""
    from curlopt.testing import Case

    case = Case(**REGRESSION_CASE)
    result = backend_or_skip(backend_name, case.program("box-optimistic")).solve()
    expected = case.reference("box-optimistic")
    assert result.status.has_solution and result.program is ProgramVariant.TIGHT, result.message
    assert result.objective == pytest.approx(expected.value, rel=1e-6, abs=1e-7)


# ----------------------------------------------------------------------------
# the scipy example backend
# ----------------------------------------------------------------------------


def test_scipy_is_registered_but_never_the_auto_choice(monkeypatch):
    assert "scipy" in backend_names() and "scipy" not in auto_candidates()
    assert choose_backend([Linear([1.0]), LinearBound([1.0], 0.5)]) == "highs"
    # even without HiGHS, auto does not fall to scipy for an LP
    monkeypatch.setattr(HighsBackend, "is_installed", classmethod(lambda cls: False))
    assert "scipy" not in auto_candidates()
    try:
        assert choose_backend([Linear([1.0])]) != "scipy"
    except Exception as exc:  # no other installed backend takes it: a refusal, never scipy
        assert "no installed backend" in str(exc)


def test_scipy_refuses_what_it_cannot_express_and_names_who_can():
    from curlopt import OccupancyProgram
    from curlopt.errors import UnsupportedUtilityError

    model = build_model("scheduler")  # a sum of logs
    assert not ScipyBackend.accepts(SumOfLogs(dim=2))
    with pytest.raises(UnsupportedUtilityError, match="scipy backend cannot express the objective"):
        get_backend("scipy").compile(OccupancyProgram(model))


def test_scipy_options_are_checked_when_the_backend_is_built():
    with pytest.raises(BackendOptionError, match="'bogus'") as info:
        get_backend("scipy", options={"bogus": 1})
    assert info.value.unknown == ["bogus"]
    with pytest.raises(BackendOptionError, match="refused"):
        get_backend("scipy", options={"time_limit": "soon"})


def test_scipy_iteration_limit_is_a_status():
    from curlopt import OccupancyProgram

    assert set(ScipyBackend.STATUS_MAP) == {0, 1, 2, 3, 4}  # every code linprog documents
    result = get_backend("scipy", options={"maxiter": 1, "presolve": False}).solve(OccupancyProgram(build_model("queue")))
    assert result.status is Status.ITERATION_LIMIT and not result.ok
    assert "linprog status 1" in result.message


def test_cli_lists_the_scipy_backend(capsys):
    from cli_helpers import invoke

    code, output, _ = invoke(["backends"], capsys)
    assert code == 0
    assert any(line.startswith("scipy") and "installed" in line for line in output.splitlines()), output


def test_cli_backend_list_stays_aligned_with_a_long_name(capsys):
    from cli_helpers import invoke

    code, output, _ = invoke(["backends"], capsys)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 0 and any(line.startswith("highs-columns ") for line in lines), output
    # the state column starts at the same place on every line, whatever the longest registered name
    assert len({re.match(r"\S+\s+", line).end() for line in lines}) == 1, output


# ----------------------------------------------------------------------------
# import hygiene of curlopt.testing
# ----------------------------------------------------------------------------


def test_curlopt_testing_imports_no_hypothesis_pytest_or_solver():
    modules = loaded_after("import curlopt.testing, curlopt.testing.conformance, curlopt.testing.cases,"
                           " curlopt.testing.reference\nfrom curlopt.testing import run_conformance")
    assert heavy_in(modules) == []
    assert not {"hypothesis", "pytest"} & {m.split(".")[0] for m in modules}


def test_the_reference_imports_nothing_of_curlopt():
    modules = loaded_after("import curlopt.testing.reference")
    assert sorted(m for m in modules if m.startswith("curlopt.")) == ["curlopt.testing", "curlopt.testing.reference"]


# ----------------------------------------------------------------------------
# docs/extending.md stays true
# ----------------------------------------------------------------------------


def test_extending_guide_examples_run():
    """Every ``python`` block of docs/extending.md runs (in a fresh process: the examples register an agent and a
    model, which must not leak into the registries of this test session)."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)
    assert len(blocks) == 4
    script = "\n".join(f"exec(compile({block!r}, 'docs/extending.md block {i}', 'exec'), {{'__name__': 'guide'}})"
                       for i, block in enumerate(blocks))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "0.5875" in done.stdout and "0.8095" in done.stdout, done.stdout

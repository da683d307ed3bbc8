"""Issue 14, the solver half: bounded ε and K_ε, checked options, user-code errors, Pyomo solvers by name,
clean ``--json``, compile errors, and the compare-solvers checks. Each test failed before the fix."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from curlopt import CMDP, build_model
from curlopt.agents import PsCurl, UcCurl
from curlopt.backends import get_backend, installed_backends
from curlopt.backends.registry import backend_class
from curlopt.errors import (AgentError, BackendError, BackendOptionError, CurloptError, ProgramError,
                            UtilityCodeError)
from curlopt.optimum import solve_optimum
from curlopt.programs.tightness import EPSILON_MAX, TIGHTNESS_CONSTANT_MAX, tightness
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import OptimisticProgram
from curlopt.backends.results import ProgramVariant, Status
from curlopt.utilities.library import AlphaFairness, CustomUtility, LinearBound, Linear, SumOfLogs

HAS = set(installed_backends())
needs_cvxpy = pytest.mark.skipif("cvxpy" not in HAS, reason="cvxpy backend not installed")
needs_pyomo = pytest.mark.skipif("pyomo" not in HAS, reason="pyomo backend not installed")


def cli(*args: str, code: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m curlopt.cli ARGS`` in a fresh process (or ``python -c CODE``)."""
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "curlopt.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def one_policy_model(reward: float = 1.0, objective=None) -> CMDP:
    """S = A = 1: the only policy has cost 1, and the constraint asks for at most 0.5."""
    return CMDP(rewards=np.full((1, 1, 1), reward), costs=np.ones((1, 1, 1)),
                objective=objective or Linear([1.0]), constraints=[LinearBound([1.0], 0.5)],
                kernel=np.ones((1, 1, 1)))


# -- item 1: ε and K_ε are bounded to what every backend represents ------------------------------------------


def test_the_bounds_are_consistent():
    # max over τ >= 1 of sqrt(ln τ / τ) is 1/sqrt(e) (at τ = e): every ε of the schedule stays <= EPSILON_MAX
    taus = np.linspace(1.0, 50.0, 200_001)
    assert np.max(np.sqrt(np.log(taus) / taus)) == pytest.approx(1 / math.sqrt(math.e), rel=1e-9)
    assert TIGHTNESS_CONSTANT_MAX / math.sqrt(math.e) <= EPSILON_MAX
    assert tightness(1.0, TIGHTNESS_CONSTANT_MAX, horizon_lower_bound=math.e) <= EPSILON_MAX
    assert EPSILON_MAX * (1 - 1e-6) < TIGHTNESS_CONSTANT_MAX / math.sqrt(math.e)  # derived, not arbitrary


def test_epsilon_beyond_the_bound_is_refused_before_any_backend_sees_it():
    model = build_model("queue")
    for bad in (EPSILON_MAX * 1.5, 1e20, 1e25):
        with pytest.raises(ProgramError, match=r"epsilon must be at most 1e\+06"):
            OccupancyProgram(model, epsilon=bad)
        with pytest.raises(ProgramError, match="epsilon must be at most"):
            solve_optimum(model, "highs", epsilon=bad)
    program = OccupancyProgram(model)
    compiled = get_backend("highs").compile(program)
    with pytest.raises(ProgramError, match="epsilon must be at most"):
        program.update(epsilon=1e20)
    assert program.epsilon == 0.0 and compiled.solve().program is ProgramVariant.TIGHT  # nothing changed
    with pytest.raises(ProgramError, match="tightness constant must be at most 1648721"):
        tightness(10.0, 1e21)
    for agent in (UcCurl, PsCurl):
        with pytest.raises(AgentError, match=r"tightness_constant \(K_ε\) must be at most 1648721"):
            agent(model, tightness_constant=1e21)
        agent(model, tightness_constant=TIGHTNESS_CONSTANT_MAX)  # the bound itself is fine


def test_cli_refuses_a_huge_epsilon_instead_of_crashing():
    # before: HiGHS read the row bound -1e20 as -inf and the process aborted (heap corruption, exit 134)
    done = cli("optimum", "queue", "--epsilon", "1e20")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: epsilon must be at most 1e+06")
    done = cli("run", "queue", "--tightness", "1e21", "--steps", "50")
    assert done.returncode == 2 and "tightness_constant (K_ε) must be at most" in done.stderr


def test_highs_refuses_a_bound_it_would_read_as_infinite():
    # a constraint constant beyond -1e20 reached HiGHS as a -inf row bound, as ε = 1e20 did (in a subprocess:
    # before the fix HiGHS aborted the process, "munmap_chunk(): invalid pointer")
    code = textwrap.dedent("""
        import numpy as np
        from curlopt import CMDP, build_model
        from curlopt.errors import BackendError
        from curlopt.optimum import solve_optimum
        from curlopt.utilities.library import LinearBound
        queue = build_model("queue")
        model = CMDP(queue.rewards, queue.costs, queue.objective, [LinearBound(np.ones(queue.n_costs), -1e25)],
                     queue.kernel)
        try:
            result = solve_optimum(model, "highs")
            print("solved:", result.status.value, result.program.value)
        except BackendError as exc:
            print("refused:", exc)
    """)
    done = cli(code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: the highs backend cannot represent the program")
    assert "which HiGHS reads as infinite" in done.stdout


@pytest.mark.parametrize("name", sorted(HAS))
def test_every_backend_falls_back_correctly_at_the_largest_epsilon(name):
    # with bounded costs the ε-tight program at ε = EPSILON_MAX cannot hold: each solver of each backend
    # must say so (infeasible), fall back, and label the result
    model = one_policy_model()
    for label, options in backend_class(name).solver_variants():
        result = get_backend(name, **options).compile(OccupancyProgram(model, epsilon=EPSILON_MAX)).solve()
        assert result.tight_status is Status.INFEASIBLE, (label, result.message)
        assert result.status is Status.OPTIMAL and result.program is ProgramVariant.FALLBACK, (label, result.message)
        assert result.epsilon == EPSILON_MAX and "is infeasible" in result.message
        assert result.constraint_values[0] == pytest.approx(0.5, abs=1e-6)


# -- item 6: misconfiguration is an error when the backend is built ------------------------------------------


def test_highs_options_are_checked_when_the_backend_is_built():
    with pytest.raises(BackendOptionError, match=r"unknown option\(s\) no_such_option.*time_limit='ten'"):
        get_backend("highs", options={"no_such_option": 1, "time_limit": "ten"})
    with pytest.raises(BackendOptionError, match="presolve='offf'"):
        get_backend("highs", options={"presolve": "offf"})
    assert get_backend("highs", options={"time_limit": 10, "solver": "ipm"}).options["time_limit"] == 10


@needs_cvxpy
def test_cvxpy_solver_settings_are_checked_when_the_backend_is_built():
    with pytest.raises(BackendOptionError, match="CLARABEL settings are refused: unknown setting 'tol_feass'"):
        get_backend("cvxpy", solver_options={"CLARABEL": {"tol_feass": 1e-9}})
    with pytest.raises(BackendOptionError, match="CLARABEL.*max_iter='many'"):
        get_backend("cvxpy", solver_options={"CLARABEL": {"max_iter": "many"}})
    with pytest.raises(BackendOptionError, match="SCS settings are refused.*max_iter"):
        get_backend("cvxpy", solver_options={"SCS": {"max_iter": 10}})  # SCS calls it max_iters
    with pytest.raises(BackendOptionError, match="does not run"):
        get_backend("cvxpy", solvers=["CLARABEL"], solver_options={"SCS": {"max_iters": 10}})
    with pytest.raises(BackendOptionError, match="set by the cvxpy backend itself"):
        get_backend("cvxpy", solver_options={"CLARABEL": {"warm_start": False}})
    get_backend("cvxpy", solver_options={"CLARABEL": {"max_iter": 50}, "SCS": {"max_iters": 10, "verbose": False}})
    # before: a mistyped setting made every epoch of a run fail with no error
    with pytest.raises(BackendOptionError, match="tol_feass"):
        UcCurl(build_model("scheduler"), backend="cvxpy", solver_options={"CLARABEL": {"tol_feass": 1e-9}})


@needs_pyomo
def test_ipopt_options_are_checked_when_the_backend_is_built():
    with pytest.raises(BackendOptionError, match="no_such_option=1 .*not a valid option"):
        get_backend("pyomo", options={"no_such_option": 1})
    with pytest.raises(BackendOptionError, match=r"tol=-1.0 .*valid: 0 <"):
        get_backend("pyomo", options={"tol": -1.0})
    with pytest.raises(BackendOptionError, match="mu_strategy='fast'.*valid settings: monotone, adaptive"):
        get_backend("pyomo", warm_start_options={"mu_strategy": "fast"})
    get_backend("pyomo", options={"max_iter": 50, "tol": 1e-8, "print_level": 0})


@pytest.mark.parametrize("name", sorted(HAS))
def test_a_wrong_keyword_is_a_backend_error_naming_it(name):
    with pytest.raises(BackendOptionError, match=f"the {name} backend does not take option\\(s\\) 'bogus'"):
        get_backend(name, bogus=1)
    with pytest.raises(AgentError, match=r"uc-curl does not take option\(s\) \['bogus'\]"):
        UcCurl(build_model("queue"), backend=name, bogus=1)


def scheduler_with(objective) -> CMDP:
    base = build_model("scheduler")
    return CMDP(base.rewards, base.costs, objective, base.constraints, base.kernel, name="scheduler")


def broken_gradient(y):
    return undefined_name * y  # noqa: F821 — the user's bug


@needs_pyomo
def test_an_exception_in_a_users_gradient_names_the_utility_and_stops_the_run():
    logs = SumOfLogs(dim=2)
    objective = CustomUtility(2, "concave", value=logs.value, gradient=broken_gradient, hessian=logs.hessian,
                              name="MyUtility")
    model = scheduler_with(objective)
    with pytest.raises(UtilityCodeError, match=r"the objective MyUtility\(dim=2, concave\) raised NameError in its"
                                               r" gradient: name 'undefined_name' is not defined") as info:
        solve_optimum(model, "pyomo")
    assert isinstance(info.value.__cause__, NameError)
    # before: every epoch was solver_error and the run "succeeded"
    from curlopt.envs import make
    from curlopt.experiments import run

    with pytest.raises(UtilityCodeError, match="MyUtility"):
        run(PsCurl(model, backend="pyomo"), make(model), 20, seed=0, progress=False)


@needs_cvxpy
def test_an_exception_in_a_users_expression_names_the_utility():
    objective = CustomUtility(2, "concave", value=SumOfLogs(dim=2).value,
                              cvxpy=lambda y: broken_gradient(y), name="MyUtility")
    with pytest.raises(UtilityCodeError, match=r"the objective MyUtility.*NameError in its cvxpy_expr"):
        solve_optimum(scheduler_with(objective), "cvxpy")


def test_the_solver_guard_still_turns_solver_faults_into_statuses():
    from tests.conftest import FailingHighs

    result = FailingHighs({1}).compile(OccupancyProgram(build_model("queue"))).solve()
    assert result.status is Status.NUMERICAL_ERROR  # a solver outcome stays a status


# -- item 5: compile errors on valid utilities ----------------------------------------------------------------


@needs_cvxpy
def test_a_utility_cvxpy_cannot_represent_is_a_backend_error_naming_both():
    model = scheduler_with(AlphaFairness(1e6, 2))  # valid; cp.power's rational approximation divides by zero
    with pytest.raises(BackendError, match=r"the cvxpy backend cannot build the objective AlphaFairness\(alpha=1000000"):
        solve_optimum(model, "cvxpy")


@needs_pyomo
def test_solve_optimum_with_a_bogus_pyomo_option():
    with pytest.raises(BackendOptionError, match="the pyomo backend does not take option.*'bogus'"):
        solve_optimum(build_model("queue"), "pyomo", bogus=1)


# -- item 7: Pyomo solvers by name in a fresh process -----------------------------------------------------------


@needs_pyomo
def test_a_pyomo_solver_by_name_works_in_a_fresh_process():
    done = cli("run", "queue", "--backend", "pyomo", "--option", "solver=appsi_highs", "--steps", "5", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["meta"]["backend"] == "pyomo"
    assert "knows no solver" not in done.stderr and "Traceback" not in done.stdout + done.stderr
    # ipopt: found if installed, else "not available" — never "knows no solver", never a traceback on stdout
    done = cli("run", "queue", "--backend", "pyomo", "--option", "solver=ipopt", "--steps", "5", "--json")
    assert "knows no solver" not in done.stderr and "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0 or (done.returncode == 2 and "is not available on this machine" in done.stderr
                                    and done.stdout == "")


@needs_pyomo
def test_pyomo_messages_are_one_line_on_stderr():
    code = textwrap.dedent("""
        import logging
        from curlopt.errors import BackendError
        from curlopt.backends import get_backend
        try:
            get_backend("pyomo", solver="no_such_solver")  # Pyomo logged a warning and a traceback on stdout
        except BackendError as exc:
            print("refused:", exc)
        from curlopt.backends.pyomo.solvers import pyomo_messages
        with pyomo_messages():
            try:
                raise RuntimeError("inner")
            except RuntimeError:
                logging.getLogger("pyomo.core").warning("a Pyomo warning\\nover two lines", exc_info=True)
    """)
    done = cli(code=code)
    assert done.stdout.strip() == "refused: Pyomo knows no solver named 'no_such_solver'; the default solver is" \
                                  " 'cyipopt-bridge'."
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "Pyomo: a Pyomo warning over two lines (RuntimeError: inner)"


# -- item 8: --json is JSON, and exit codes agree ----------------------------------------------------------------


NOISY = textwrap.dedent("""
    import os, sys
    from curlopt.backends import register_backend
    from curlopt.backends.base import RawSolution
    from curlopt.backends.highs.backend import CompiledHighs, HighsBackend
    from curlopt.backends.results import Status

    class Noisy(HighsBackend):
        name = "noisy"
        def _compile(self, program):
            print("python-level solver chatter")
            os.write(1, b"C-level solver chatter\\n")
            class Compiled(CompiledHighs):
                def _solve(self, with_constraints):
                    os.write(1, b"C-level iteration log\\n")
                    if {fail}:
                        return RawSolution(Status.NUMERICAL_ERROR, message="injected")
                    return super()._solve(with_constraints)
            return Compiled(self, program)

    register_backend("noisy", Noisy)
    from curlopt.cli import main
    main({argv})
""")


@pytest.mark.parametrize("fail", [False, True])
def test_optimum_json_is_json_and_exit_codes_agree(fail):
    codes = {}
    for as_json in (True, False):
        argv = ["optimum", "queue", "--backend", "noisy"] + (["--json"] if as_json else [])
        done = cli(code=NOISY.format(fail=fail, argv=argv))
        codes[as_json] = done.returncode
        assert "chatter" in done.stderr and "iteration log" in done.stderr  # solver output went to stderr
        assert "chatter" not in done.stdout and "iteration log" not in done.stdout
        if as_json:
            data = json.loads(done.stdout)  # the whole of stdout
            assert data["status"] == ("numerical_error" if fail else "optimal")
    assert codes[True] == codes[False] == (1 if fail else 0)


# -- item 11: compare-solvers ---------------------------------------------------------------------------------


def test_compare_solvers_refuses_a_tolerance_that_disables_the_check(capsys):
    from curlopt.cli import main
    from curlopt.experiments.compare import compare_solvers

    for bad in (math.nan, -1e-3, math.inf):
        with pytest.raises(CurloptError, match="tolerance must be a finite number >= 0"):
            compare_solvers(build_model("queue"), program="optimum", tolerance=bad, backends=["highs"])
    with pytest.raises(SystemExit) as done:
        main(["compare-solvers", "queue", "--tolerance", "nan"])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("error: --tolerance must be a finite number >= 0")


@needs_cvxpy
def test_cvxpy_says_why_the_fallback_is_infeasible():
    # the only policy violates the constraint and earns reward 0, where log is -inf: CVXPY keeps λ in the
    # objective's domain, so the program without constraint rows is infeasible although its rows hold
    model = one_policy_model(reward=0.0, objective=SumOfLogs(1))
    result = get_backend("cvxpy", solvers=["SCS"]).compile(OptimisticProgram(model)).solve()
    assert result.program is ProgramVariant.FALLBACK and result.status is Status.INFEASIBLE
    assert "its rows hold (checked), but the objective SumOfLogs" in result.message
    assert "-inf at every point" in result.message
    # a fallback whose rows cannot hold (no confidence radius, nothing visited) is told apart
    result = get_backend("cvxpy", solvers=["SCS"]).compile(OptimisticProgram(model, radius_scale=0.0)).solve()
    assert result.status is Status.INFEASIBLE and "its linear rows themselves cannot hold" in result.message


@needs_pyomo
def test_pyomo_never_sees_an_epsilon_beyond_the_bound():
    # before: ε = 1e25 reached Ipopt, which ended in solver_error instead of a fallback
    with pytest.raises(ProgramError, match="epsilon must be at most"):
        solve_optimum(one_policy_model(), "pyomo", epsilon=1e25)

"""A backend's options are checked when the backend is built, not at its first solve: unknown options and
settings, wrong values and wrong keywords are a BackendOptionError naming them."""

from __future__ import annotations

import pytest

from curlopt import build_model
from curlopt.agents import UcCurl
from curlopt.backends import get_backend, installed_backends
from curlopt.errors import AgentError, BackendOptionError
from curlopt.optimum import solve_optimum

HAS = set(installed_backends())
needs_cvxpy = pytest.mark.skipif("cvxpy" not in HAS, reason="cvxpy backend not installed")
needs_pyomo = pytest.mark.skipif("pyomo" not in HAS, reason="pyomo backend not installed")


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


@needs_pyomo
def test_solve_optimum_with_a_bogus_pyomo_option():
    with pytest.raises(BackendOptionError, match="the pyomo backend does not take option.*'bogus'"):
        solve_optimum(build_model("queue"), "pyomo", bogus=1)


@pytest.mark.parametrize("key, value", [("solvers", []), ("solvers", [""]), ("solvers", ["CLARABEL", 3]),
                                        ("solver_options", {"CLARABEL": 5})])
def test_mdp_columns_refuses_the_cvxpy_settings_the_cvxpy_backend_refuses(key, value):
    # mdp-columns hands these to the cvxpy backend (its conic master): both judge them by the same rule, at once
    for name in ("cvxpy", "mdp-columns"):
        if name not in installed_backends():
            continue
        with pytest.raises(BackendOptionError, match=f"option {key}="):
            get_backend(name, **{key: value})

"""The backend contract declared once: options, the backend-neutral time limit and verbosity, versions, form tables.

Every registered backend takes its keywords from one declaration (``OPTIONS`` plus ``time_limit`` and ``verbose``)
checked in one place; honours ``time_limit`` (status ``time_limit``, never a fallback) and ``verbose``; reports the
versions of the packages behind it in results and traces; and says, for every form class of
curlopt.utilities.forms, whether it compiles it or why it refuses it (docs/extending.md, "Adding a backend").
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import math
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import installed_backend_names, registered_backends
from hypothesis import given
from hypothesis import strategies as st

from curlopt import CustomUtility, Linear, SumOfLogs, build_model
from curlopt.backends import base as backend_base
from curlopt.backends import get_backend
from curlopt.backends.base import Backend
from curlopt.backends.form_table import FormTable
from curlopt.backends.options import Option
from curlopt.backends.registry import auto_candidates, backend_class
from curlopt.backends.results import ProgramVariant, Status
from curlopt.backends.scipy import CompiledScipy, ScipyBackend
from curlopt.errors import BackendOptionError, UnsupportedUtilityError
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import OptimisticProgram
from curlopt.utilities import forms
from curlopt.utilities.augmented import AugmentedUtility

HAS = set(installed_backend_names())
needs = {name: pytest.mark.skipif(name not in HAS, reason=f"the {name} backend is not installed")
         for name in ("cvxpy", "pyomo")}

#: every public form class curlopt.utilities.forms defines (the vocabulary each backend's table must cover)
FORM_CLASSES = sorted(
    (value for value in vars(forms).values()
     if isinstance(value, type) and issubclass(value, forms.Form) and value is not forms.Form
     and value.__module__ == forms.__name__ and not value.__name__.startswith("_")),
    key=lambda c: c.__name__)


def test_the_form_classes_are_found():
    names = {c.__name__ for c in FORM_CLASSES}
    assert names == {"AffinePieces", "Logs", "Powers", "Entropy", "Quadratic", "Norm", "Of", "Sum", "HeadPlusLinear",
                     "Negated", "Minimum", "Maximum"}
    assert names <= set(forms.__all__)


# ----------------------------------------------------------------------------
# Options: one declaration, one check
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", registered_backends())
def test_every_backend_declares_its_options_once(name):
    cls = backend_class(name)
    declared = cls.declared_options()
    own = [option.name for option in cls.OPTIONS]
    assert list(declared) == own + ["time_limit", "verbose"]  # every backend takes the common two
    for option in declared.values():
        assert isinstance(option, Option) and option.doc and option.expects, (name, option.name)
        assert option.problem(option.default) is None, f"{name}: the default of {option.name} fails its own check"
    if "__init__" not in vars(cls):  # the signature shows the declaration (help(), the registry's keyword check)
        parameters = inspect.signature(cls).parameters
        assert list(parameters) == list(declared)
        assert all(parameters[key].default is declared[key].default for key in declared)


@pytest.mark.parametrize("name", registered_backends())
def test_a_value_of_the_wrong_type_names_the_option_the_backend_and_what_it_takes(name):
    cls = backend_class(name)
    declared = cls.declared_options()
    for key, option in declared.items():
        with pytest.raises(BackendOptionError) as info:
            cls(**{key: object()})  # no option takes an arbitrary object
        message = str(info.value)
        assert f"the {name} backend's option {key}=" in message and option.expects in message, message
        assert all(other in message for other in declared), message  # the names it takes


@pytest.mark.parametrize("name", registered_backends())
def test_an_unknown_keyword_is_refused_with_the_names_the_backend_takes(name):
    cls = backend_class(name)
    with pytest.raises(BackendOptionError) as info:
        cls(no_such_option=1)
    assert info.value.unknown == ["no_such_option"]
    assert all(repr(key) in str(info.value) for key in cls.declared_options())


def test_warm_start_options_of_the_wrong_type_is_a_backend_option_error():
    from curlopt.backends.pyomo.backend import PyomoBackend  # importing the class imports neither Pyomo nor Ipopt

    with pytest.raises(BackendOptionError, match=r"pyomo backend's option warm_start_options=\['a'\].*a dict of Ipopt"):
        PyomoBackend(warm_start_options=["a"])
    with pytest.raises(BackendOptionError, match="derivatives='numeric'.*'auto' or 'pyomo'"):
        PyomoBackend(derivatives="numeric")


def test_options_by_position_follow_the_declaration():
    assert ScipyBackend({"maxiter": 7}).options["maxiter"] == 7
    with pytest.raises(BackendOptionError, match="at most 1 option"):
        ScipyBackend({}, {})
    with pytest.raises(BackendOptionError, match="options twice"):
        ScipyBackend({}, options={})


def _accepted_time_limit(value) -> bool:
    """The rule, written again: None, or a real number (not a bool) that is finite and above 0."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return math.isfinite(float(value)) and float(value) > 0


@given(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=3), st.lists(st.floats(), max_size=2)))
def test_time_limit_takes_seconds_above_zero_or_none(value):
    if _accepted_time_limit(value):
        backend = ScipyBackend(time_limit=value)
        assert backend.time_limit == (None if value is None else float(value))
    else:
        with pytest.raises(BackendOptionError, match="the scipy backend's option time_limit=.*seconds above 0"):
            ScipyBackend(time_limit=value)


def test_verbose_is_a_bool():
    with pytest.raises(BackendOptionError, match="option verbose=1 .*True or False"):
        ScipyBackend(verbose=1)


# The neutral options and the solvers' own settings of the same thing: one of them, never both.
CONFLICTS = [
    ("highs", dict(time_limit=1.0, options={"time_limit": 2.0}), r"time_limit=\.\.\. and options\['time_limit'\]"),
    ("highs", dict(verbose=True, options={"output_flag": False}), r"options\['output_flag'\]"),
    ("highs-columns", dict(time_limit=1.0, options={"time_limit": 2.0}), r"options\['time_limit'\]"),
    ("scipy", dict(time_limit=1.0, options={"time_limit": 2.0}), r"options\['time_limit'\]"),
    ("scipy", dict(verbose=True, options={"disp": False}), r"options\['disp'\]"),
    pytest.param("cvxpy", dict(time_limit=1.0, solver_options={"SCS": {"time_limit_secs": 3.0}}),
                 "time_limit_secs", marks=needs["cvxpy"]),
    pytest.param("cvxpy", dict(verbose=True, solver_options={"CLARABEL": {"verbose": False}}), "verbose",
                 marks=needs["cvxpy"]),
    pytest.param("cvxpy", dict(time_limit=1.0, solvers=["SCIPY"]), "cannot give the solver.*SCIPY a time limit",
                 marks=needs["cvxpy"]),
    pytest.param("pyomo", dict(time_limit=1.0, options={"max_cpu_time": 3.0}), "max_cpu_time", marks=needs["pyomo"]),
    pytest.param("pyomo", dict(verbose=True, options={"print_level": 0}), "print_level", marks=needs["pyomo"]),
    pytest.param("pyomo", dict(time_limit=1.0, solver="appsi_highs"), "knows no time-limit option",
                 marks=needs["pyomo"]),
]


@pytest.mark.parametrize("name, options, message", CONFLICTS)
def test_a_setting_given_twice_or_unknown_to_the_solver_is_refused(name, options, message):
    with pytest.raises(BackendOptionError, match=message):
        get_backend(name, **options)


# ----------------------------------------------------------------------------
# time_limit
# ----------------------------------------------------------------------------


@pytest.fixture
def still_clock(monkeypatch):
    """Time stands still for the time limits: a solver gets the whole limit, however long the code before it takes."""
    monkeypatch.setattr(backend_base, "_clock", lambda: 0.0)


def _queue_occupancy() -> OccupancyProgram:
    return OccupancyProgram(build_model("queue"))


def _optimistic(seed: int = 0) -> OptimisticProgram:
    model = build_model("queue")
    counts = np.random.default_rng(seed).integers(0, 4, size=(model.n_states, model.n_actions, model.n_states))
    return OptimisticProgram(model, counts=counts.astype(float), time=200)


def _log_occupancy() -> OccupancyProgram:
    return OccupancyProgram(build_model("random", n_states=8, n_actions=3, n_rewards=2, seed=1, objective="log"))


def _assert_stopped_by_time(result):
    assert result.status is Status.TIME_LIMIT and not result.ok, result.message
    assert result.x is None and result.policy is None
    assert "time limit" in result.message, result.message
    assert result.program is ProgramVariant.TIGHT  # a time limit is a failure, never a reason to fall back


# Each solver, given a nanosecond (its own limit: the clock stands still in between), stops at it: no solver's
# iteration takes less.
TIMED = [
    ("highs", {}, _queue_occupancy),
    ("highs", {"options": {"solver": "ipm"}}, _queue_occupancy),
    ("scipy", {}, _queue_occupancy),
    ("highs-columns", {}, _optimistic),
    pytest.param("cvxpy", {"solvers": ["CLARABEL"]}, _log_occupancy, marks=needs["cvxpy"]),
    pytest.param("cvxpy", {"solvers": ["SCS"]}, _log_occupancy, marks=needs["cvxpy"]),
    pytest.param("pyomo", {}, _log_occupancy, marks=needs["pyomo"]),  # its phase 1 is stopped
    pytest.param("pyomo", {"feasibility_check": False}, _queue_occupancy, marks=needs["pyomo"]),
]


@pytest.mark.parametrize("name, options, program", TIMED)
def test_each_solver_stops_at_a_tiny_time_limit(name, options, program, still_clock):
    _assert_stopped_by_time(get_backend(name, time_limit=1e-9, **options).solve(program()))


OWN_LIMITS = [
    ("highs", {"options": {"time_limit": 1e-9}}, _queue_occupancy),
    ("scipy", {"options": {"time_limit": 1e-9}}, _queue_occupancy),
    pytest.param("cvxpy", {"solver_options": {"CLARABEL": {"time_limit": 1e-9}}, "solvers": ["CLARABEL"]},
                 _log_occupancy, marks=needs["cvxpy"]),
    pytest.param("cvxpy", {"solver_options": {"SCS": {"time_limit_secs": 1e-9}}, "solvers": ["SCS"]},
                 _log_occupancy, marks=needs["cvxpy"]),
    pytest.param("pyomo", {"options": {"max_wall_time": 1e-9}, "feasibility_check": False}, _queue_occupancy,
                 marks=needs["pyomo"]),
]


@pytest.mark.parametrize("name, options, program", OWN_LIMITS)
def test_a_time_limit_in_the_solvers_own_options_is_a_time_limit_too(name, options, program):
    result = get_backend(name, **options).solve(program())
    _assert_stopped_by_time(result)


@pytest.mark.parametrize("name", sorted(HAS))
def test_every_installed_backend_honours_the_time_limit(name, still_clock):
    _assert_stopped_by_time(get_backend(name, time_limit=1e-9).solve(_queue_occupancy()))


@pytest.mark.parametrize("name", sorted(HAS))
def test_a_generous_time_limit_changes_nothing(name):
    program = _queue_occupancy()
    free = get_backend(name).solve(program)
    timed = get_backend(name, time_limit=600.0).solve(program)
    assert free.ok and timed.ok and timed.status is free.status
    assert timed.objective == pytest.approx(free.objective, abs=1e-6)


def test_highs_gives_each_solve_the_whole_limit_on_its_run_clock(still_clock):
    # HiGHS's own time_limit counts its run time over every solve of the object; each solve() gets the limit anew
    program = _queue_occupancy()
    compiled = get_backend("highs", time_limit=5.0).compile(program)
    for epsilon in (0.0, 0.01, 0.02):
        program.update(epsilon=epsilon)
        before = compiled.highs.getRunTime()
        assert compiled.solve().ok
        assert compiled.highs.getOptionValue("time_limit")[1] == pytest.approx(before + 5.0)


def test_column_generation_stops_between_rounds_when_the_time_is_up(monkeypatch):
    from curlopt.backends.highs.columns import CompiledColumns

    now = [0.0]
    monkeypatch.setattr(backend_base, "_clock", lambda: now[0])
    price, calls = CompiledColumns._price, []

    def price_then_late(self, phase):
        calls.append(phase)
        now[0] = 100.0  # the first round took all the time
        return price(self, phase)

    monkeypatch.setattr(CompiledColumns, "_price", price_then_late)
    result = get_backend("highs-columns", time_limit=10.0).solve(_optimistic(seed=3))
    _assert_stopped_by_time(result)
    assert len(calls) == 1 and "after 1 pricing round(s) of column generation" in result.message


class _Scripted(CompiledScipy):
    """Attempts that end as scripted; each may move the clock on."""

    def __init__(self, backend, program, outcomes, clock):
        super().__init__(backend, program)
        self.outcomes, self.clock, self.attempts = list(outcomes), clock, []

    def _solve(self, with_constraints):
        self.attempts.append(with_constraints)
        status, seconds = self.outcomes.pop(0)
        self.clock[0] += seconds
        return backend_base.RawSolution(status, message=f"scripted {status.value}")


def test_a_time_limit_never_leads_to_the_fallback(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(backend_base, "_clock", lambda: clock[0])
    compiled = _Scripted(ScipyBackend(time_limit=10.0), _queue_occupancy(), [(Status.TIME_LIMIT, 1.0)], clock)
    result = compiled.solve()
    assert compiled.attempts == [True]
    assert result.status is Status.TIME_LIMIT and result.tight_status is Status.TIME_LIMIT
    assert result.program is ProgramVariant.TIGHT and "the time limit of 10 s was reached" in result.message


def test_the_fallback_is_not_started_once_the_time_is_used_up(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(backend_base, "_clock", lambda: clock[0])
    program = _queue_occupancy()
    assert program.constraints  # so an infeasible ε-tight program has a fallback
    compiled = _Scripted(ScipyBackend(time_limit=10.0), program, [(Status.INFEASIBLE, 11.0)], clock)
    result = compiled.solve()
    assert compiled.attempts == [True]  # the fallback was never run
    assert result.tight_status is Status.INFEASIBLE and result.program is ProgramVariant.FALLBACK
    assert result.status is Status.TIME_LIMIT and "reached before this attempt started" in result.message
    # with time left, the same infeasible attempt is followed by the fallback
    compiled = _Scripted(ScipyBackend(time_limit=10.0), program, [(Status.INFEASIBLE, 1.0), (Status.TIME_LIMIT, 1.0)],
                         clock)
    assert compiled.solve().program is ProgramVariant.FALLBACK and compiled.attempts == [True, False]


# ----------------------------------------------------------------------------
# verbose
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HAS))
def test_verbose_lets_the_solver_print_and_quiet_is_quiet(name, capfd):
    program = _queue_occupancy()
    assert get_backend(name).solve(program).ok
    quiet = capfd.readouterr().out
    assert get_backend(name, verbose=True).solve(program).ok
    loud = capfd.readouterr().out
    assert quiet == "" and len(loud.strip().splitlines()) >= 3, (quiet, loud)


# ----------------------------------------------------------------------------
# auto_choice and versions
# ----------------------------------------------------------------------------


def test_auto_choice_is_declared_on_the_base_class():
    assert "auto_choice" in vars(Backend) and Backend.auto_choice is True
    assert backend_class("scipy").auto_choice is False and backend_class("highs-columns").auto_choice is False
    assert set(auto_candidates()) == {name for name in HAS if backend_class(name).auto_choice}


def _distribution_version(module: str) -> str:
    """The installed version of the distribution providing the import name ``module`` (read independently)."""
    names = [module] + importlib.metadata.packages_distributions().get(module, [])
    for distribution in names:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise AssertionError(f"{module} is not installed")


@pytest.mark.parametrize("name", sorted(HAS))
def test_version_names_the_packages_behind_the_backend(name):
    cls = backend_class(name)
    version = cls.version()
    assert isinstance(version, str)
    for module in cls.requires:
        assert _distribution_version(module) in version, (module, version)
    if name == "cvxpy" and importlib.util.find_spec("clarabel") is not None:
        assert f"clarabel {_distribution_version('clarabel')}" in version
    if name == "pyomo":
        import cyipopt

        assert "Ipopt " + ".".join(map(str, cyipopt.IPOPT_VERSION)) in version


def test_results_carry_the_backend_and_its_version():
    result = get_backend("highs").solve(_queue_occupancy())
    assert result.backend == "highs" and result.solver_version == f"highspy {_distribution_version('highspy')}"
    assert result.to_dict(arrays=False)["solver_version"] == result.solver_version


def test_the_trace_header_and_the_report_carry_the_version():
    from curlopt.agents import make_agent
    from curlopt.envs import make
    from curlopt.experiments import run
    from curlopt.experiments.outputs.report import _versions

    model = build_model("queue")
    trace = run(make_agent("uc-curl", model, backend="highs"), make(model), 50, seed=0, progress=False)
    version = f"highspy {_distribution_version('highspy')}"
    keys = list(trace.meta)
    assert trace.meta["backend_version"] == version and keys.index("backend_version") == keys.index("backend") + 1
    assert trace.optimum["solver_version"] == version
    assert ("backend highs", version) in _versions(["highs"]) and ("backend highs", version) not in _versions()


# ----------------------------------------------------------------------------
# Form tables: every form class compiled or refused, by every backend
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("form_class", FORM_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", registered_backends())
def test_every_backend_compiles_or_refuses_every_form(name, form_class):
    table = backend_class(name).FORMS
    assert isinstance(table, FormTable), f"the {name} backend declares no form table (FORMS)"
    assert table.declares(form_class), (
        f"the {name} backend neither compiles nor refuses the form {form_class.__name__}: add it to its FORMS")
    if form_class in table.refused:
        assert table.refused[form_class].strip(), f"the {name} backend refuses {form_class.__name__} without a reason"


@dataclass(frozen=True, eq=False)
class Cube(forms.Form):
    """A form no backend knows: ``Σ y_k³``."""

    dim: int


@pytest.mark.parametrize("name", registered_backends())
def test_a_form_no_table_knows_is_refused_never_compiled(name):
    cls = backend_class(name)
    utility = CustomUtility(2, "convex", value=lambda y: float(np.sum(y ** 3)), form=Cube(2), name="Cube")
    assert cls.FORMS.refusal(Cube(2)) == f"Cube is not a form the {cls.FORMS.backend} backend knows"
    with pytest.raises(NotImplementedError, match="Cube"):
        cls.FORMS.compile(Cube(2), None)
    assert not cls.accepts(utility)


def test_a_refusal_says_why_in_the_error():
    model = build_model("scheduler")  # a sum of logarithms
    with pytest.raises(UnsupportedUtilityError, match=r"Logs: a logarithm is not piecewise linear\); use the"):
        get_backend("highs").compile(OccupancyProgram(model))


@needs["pyomo"]
def test_pyomo_names_the_kink_it_refuses():
    from curlopt.backends.pyomo.expressions import pyomo_expression

    utility = CustomUtility(2, "convex", value=lambda y: 0.0, form=forms.Norm(np.zeros(2), 1.0, 1), name="L1")
    assert not backend_class("pyomo").accepts(utility)  # smooth by declaration, no derivatives, a kinked form
    with pytest.raises(NotImplementedError, match="Norm: the 1-norm has kinks"):
        pyomo_expression(utility, [0.0, 0.0])


# Forms and what they are; the expressions each backend compiles are checked against numpy below.
SAMPLES = {
    "affine": (forms.AffinePieces(np.array([[1.0, -2.0]]), np.array([0.3])), "affine"),
    "min pieces": (forms.AffinePieces(np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([0.0, 0.1]), "min"), "concave"),
    "logs": (forms.Logs(np.array([1.0, 2.0]), 0.1), "concave"),
    "powers": (forms.Powers(np.array([1.0, 0.5]), 0.5, 0.01), "concave"),
    "entropy": (forms.Entropy(2, 0.05), "concave"),
    "quadratic": (forms.Quadratic(np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([0.1, -0.2]), -0.3), "convex"),
    "2-norm": (forms.Norm(np.array([0.1, 0.2]), 0.5, 2), "convex"),
    "1-norm": (forms.Norm(np.array([0.1, 0.2]), 0.5, 1), "convex"),
    "inf-norm": (forms.Norm(np.array([0.1, 0.2]), 0.5, math.inf), "convex"),
    "of": (forms.Of(SumOfLogs(weights=[1.0, 3.0])), "concave"),
    "sum": (forms.Sum((forms.Logs(np.ones(2)), forms.AffinePieces(np.array([[0.5, 0.5]]), np.array([0.1])))),
            "concave"),
    "sum of minima": (forms.Sum((forms.AffinePieces(np.eye(2), np.zeros(2), "min"),
                                 forms.AffinePieces(np.array([[1.0, 1.0], [0.5, 0.0]]), np.array([0.0, 1.0]), "min"))),
                      "concave"),
    "minimum": (forms.Minimum((forms.Logs(np.ones(2)), forms.AffinePieces(np.array([[1.0, 0.0]]), np.zeros(1)))),
                "concave"),
    "minimum of one": (forms.Minimum((forms.Logs(np.array([1.0, 2.0])),)), "concave"),
    "maximum": (forms.Maximum((forms.Quadratic(np.eye(2), np.zeros(2)), forms.Norm(np.zeros(2), 0.1, 2))), "convex"),
    "negated": (forms.Negated(forms.Entropy(2)), "convex"),
    "head plus linear": (forms.HeadPlusLinear(forms.Powers(np.array([1.0]), -1.0), np.array([2.0])), "concave"),
}


def numpy_value(form: forms.Form, y: np.ndarray) -> float:
    """The value of ``form`` at ``y``, from the definitions in curlopt.utilities.forms (independent of any backend)."""
    if isinstance(form, forms.AffinePieces):
        values = form.matrix @ y + form.offset
        return float({"affine": values[0], "min": values.min(), "max": values.max()}[form.combine])
    if isinstance(form, forms.Logs):
        return float(form.weights @ np.log(y + form.shift))
    if isinstance(form, forms.Powers):
        return float(form.weights @ (y + form.shift) ** form.exponent / form.exponent)
    if isinstance(form, forms.Entropy):
        return float(-(y * np.log(y + form.shift)).sum())
    if isinstance(form, forms.Quadratic):
        return float(y @ form.matrix @ y + form.linear @ y + form.constant)
    if isinstance(form, forms.Norm):
        return float(np.linalg.norm(y - form.center, form.ord) - form.radius)
    if isinstance(form, forms.Of):
        return float(form.utility.value(y))
    if isinstance(form, forms.HeadPlusLinear):
        n = form.head.dim
        return numpy_value(form.head, y[:n]) + float(form.coefficients @ y[n:])
    if isinstance(form, forms.Negated):
        return -numpy_value(form.inner, y)
    values = [numpy_value(term, y) for term in form.terms]
    return float({forms.Sum: sum, forms.Minimum: min, forms.Maximum: max}[type(form)](values))


def _lp_value(pieces, curvature: str, y: np.ndarray) -> float:
    w, c = pieces
    values = w @ y + c
    return float(values.max() if curvature == "convex" else values.min())


def _cvxpy_value(form, y):
    import cvxpy as cp

    return float(backend_class("cvxpy").FORMS.compile(form, cp.Constant(y)).value)


def _pyomo_value(form, y):
    import pyomo.environ as pe

    m = pe.ConcreteModel()
    m.y = pe.Var(range(y.size), initialize=dict(enumerate(y.tolist())))
    return float(pe.value(backend_class("pyomo").FORMS.compile(form, [m.y[i] for i in range(y.size)])))


EVALUATORS = {"highs": None, "scipy": None, "highs-columns": None, "cvxpy": _cvxpy_value, "pyomo": _pyomo_value}


@pytest.mark.parametrize("name", [n for n in EVALUATORS if n in HAS])
@given(point=st.lists(st.floats(0.05, 3.0), min_size=2, max_size=2))
def test_every_compiled_form_has_the_forms_value(name, point):
    cls = backend_class(name)
    y = np.array(point)
    for label, (form, curvature) in SAMPLES.items():
        if not cls.FORMS.can(form):
            continue
        expected = numpy_value(form, y)
        if EVALUATORS[name] is None:  # an LP backend compiles a form to its affine pieces
            got = _lp_value(cls.FORMS.compile(form, None), curvature, y)
        else:
            got = EVALUATORS[name](form, y)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), (name, label)


@pytest.mark.parametrize("name", registered_backends())
def test_a_backend_accepts_a_form_only_utility_exactly_when_its_table_compiles_the_form(name):
    cls = backend_class(name)
    if name not in ("highs", "scipy", "highs-columns", "cvxpy", "pyomo"):
        pytest.skip(f"{name} may accept utilities by other means than their form")
    for label, (form, curvature) in SAMPLES.items():
        # a value only: no derivatives, no expressions of its own, so the form is all a backend can go by
        utility = CustomUtility(form.dim, curvature, value=lambda y, f=form: numpy_value(f, np.asarray(y)), form=form,
                                name=label)
        assert cls.accepts(utility) == cls.FORMS.can(form), (name, label, cls.FORMS.refusal(form))


def test_the_tables_agree_on_what_is_lp():
    # the LP backends compile exactly the piecewise-linear samples; every smooth nonlinear one is refused
    lp = {label for label, (form, _) in SAMPLES.items() if backend_class("highs").FORMS.can(form)}
    assert lp == {"affine", "min pieces", "1-norm", "inf-norm", "sum of minima"}
    for name in ("scipy", "highs-columns"):
        assert {label for label, (form, _) in SAMPLES.items() if backend_class(name).FORMS.can(form)} == lp


def test_augmented_and_linear_utilities_compile_through_the_tables():
    augmented = AugmentedUtility(Linear([1.0, 2.0]), [0.5])
    for name in sorted(HAS & {"highs", "scipy", "highs-columns", "cvxpy", "pyomo"}):
        assert backend_class(name).accepts(augmented), name
        assert backend_class(name).FORMS.can(augmented.describe()), name

"""The backend conformance suite: :func:`run_conformance` checks one backend against the reference.

A backend written outside this repository calls it from its own tests, the way
MathOptInterface's ``MOI.Test.runtests`` or CVXPY's ``solver_test_helpers`` are
used::

    from curlopt.testing import run_conformance

    def test_my_backend_conforms():
        run_conformance(MyBackend())          # raises ConformanceError naming each failed check

What is checked (each a named check in the report, see :data:`CHECK_NAMES`):

``declaration``
    The backend is a :class:`~curlopt.backends.base.Backend` with a name, is installed, and accepts the
    linear utilities ``Linear`` and ``LinearBound`` — the minimum every backend must take, so that a
    backend refusing everything cannot pass.
``closed-form``
    A two-state model solved by hand (no LP involved): the optimum, the variant and, where it is unique,
    the occupancy, on all three programs.
``optimum/<program>/<objective>``
    Random small CMDPs (seeded, reproducible): the result has a solution (status ``optimal``, or
    ``almost_optimal`` kept by the shared rule), and its program variant (ε-tight or
    fallback) and objective equal those of the independent reference (:mod:`curlopt.testing.reference`),
    and every row of the program holds at the returned solution (checked with numpy from the formulas of
    docs/math.md, not with ``program.residuals``).
``fallback/<program>/<objective>``
    ε beyond the largest feasible tightness: the labelled fallback, optimal for the program without
    constraint rows.
``update/<program>/<objective>``
    Compile once, then change the data (kernel or counts, time, ε) with ``program.update`` and re-solve:
    each re-solve matches the reference on the new data.
``sparse-optimum/<program>/<objective>``, ``sparse-update/<program>/<objective>``
    The same on *sparse* cases (:mod:`curlopt.testing.cases`): the model stores its kernel sparse, so each
    program is built on the kernel's support (its joint variables only there), and kernels and counts are
    handed over as scipy sparse matrices; the reference keeps every ``p(s,a,s')`` with ``p = 0`` off the
    support.

Programs: ``occupancy`` (section 2 of docs/math.md), ``optimistic`` (section 3) and ``box-optimistic``
(UCRL-CMDP's box program, section 9). Objectives: ``linear`` (required), ``piecewise`` (a min of several
affine pieces and constraints with several pieces: the epigraph paths) and ``log``. A backend may refuse
``piecewise`` and ``log`` utilities (through its ``accepts``); those checks are then skipped, never passed.
"""

from __future__ import annotations

import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from . import reference as ref
from .cases import OBJECTIVE_KINDS, PROGRAM_KINDS, UPDATE_FIELDS, Case, draw_case, next_data
from .episodic_cases import episodic_checks

if TYPE_CHECKING:
    from ..backends.base import Backend, CompiledProgram
    from ..programs.blocks import Program
    from ..programs.occupancy import OccupancyProgram
    from ..programs.optimistic import JointProgram

__all__ = [
    "run_conformance", "ConformanceReport", "ConformanceError", "CheckResult", "Tolerances", "CHECK_NAMES",
    "check_solution", "PASSED", "FAILED", "SKIPPED",
]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Tolerances:
    """How close a backend must come to the reference.

    Attributes
    ----------
    objective_rel, objective_abs : float
        The objective must be within ``max(objective_abs, objective_rel·|reference|)``.
    feasibility : float
        Every row (mass, flow, confidence, constraint) holds to this.
    margin : float
        A case whose ε lies within this of the largest feasible tightness is razor-thin: whether
        its ε-tight program is feasible depends on solver tolerances, so it is replaced by another draw.
    """

    objective_rel: float = 1e-6
    objective_abs: float = 1e-7
    feasibility: float = 1e-7
    margin: float = 1e-6

    def slack(self, value: float) -> float:
        return max(self.objective_abs, self.objective_rel * abs(value))


@dataclass
class CheckResult:
    """The outcome of one named check: :data:`PASSED`, :data:`FAILED` or :data:`SKIPPED`, with why."""

    name: str
    outcome: str
    detail: str = ""


@dataclass
class ConformanceReport:
    """Every check run on one backend.

    ``ok`` is True when no check failed. A required check (``declaration``, ``closed-form`` and every
    ``*/linear`` one) cannot be skipped, so a backend refusing everything is never ok.
    """

    backend: str
    results: list[CheckResult] = field(default_factory=list)
    seed: int = 0
    examples: int = 2

    def _with(self, outcome: str) -> list[CheckResult]:
        return [r for r in self.results if r.outcome == outcome]

    @property
    def passed(self) -> list[CheckResult]:
        return self._with(PASSED)

    @property
    def failed(self) -> list[CheckResult]:
        return self._with(FAILED)

    @property
    def skipped(self) -> list[CheckResult]:
        return self._with(SKIPPED)

    @property
    def ok(self) -> bool:
        return not self.failed and bool(self.passed)

    def __str__(self) -> str:
        lines = [f"conformance of the {self.backend} backend: {len(self.passed)} passed, {len(self.failed)} failed,"
                 f" {len(self.skipped)} skipped"]
        lines += [f"  FAILED  {r.name}: {r.detail}" for r in self.failed]
        lines += [f"  skipped {r.name}: {r.detail}" for r in self.skipped]
        if self.failed:
            lines.append(f"  (re-run one check with run_conformance(backend, checks=[name], seed={self.seed},"
                         f" examples={self.examples}))")
        return "\n".join(lines)

    def raise_if_failed(self) -> ConformanceReport:
        """Raise :class:`ConformanceError` unless :attr:`ok`; return the report otherwise."""
        if not self.ok:
            raise ConformanceError(self)
        return self


class ConformanceError(AssertionError):
    """A backend failed the conformance suite; ``report`` holds every check (the message lists the failures)."""

    def __init__(self, report: ConformanceReport):
        super().__init__(str(report))
        self.report = report


class _Skip(Exception):
    """The check does not apply: the backend declines an optional utility."""


# ----------------------------------------------------------------------------
# Checks of one solution, written from the formulas (numpy only)
# ----------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _check_joint(case: Case, kind: str, rho: np.ndarray, p: np.ndarray | None, tol: float) -> None:
    """The rows of the optimistic and box programs over ``p(s,a,s')`` (docs/math.md sections 3 and 9)."""
    S, A = case.n_states, case.n_actions
    if case.support is not None and p is not None:  # a sparse program's p: one value per support entry
        nnz = int(case.support.sum())
        _require(np.shape(p) == (nnz,), f"joint probabilities of shape {np.shape(p)}, not ({nnz},) (the support)")
        dense = np.zeros(S * A * S)
        dense[np.flatnonzero(case.support.ravel())] = p
        p = dense.reshape(S, A, S)
    if p is None:
        raise AssertionError("no joint probabilities (the result's joint is None)")
    _require(np.shape(p) == (S, A, S), f"joint probabilities of shape {np.shape(p)}, not (S, A, S)")
    _require(bool(np.all(np.isfinite(p))) and p.min() >= -tol, f"joint probabilities not finite or negative ({p.min()!r})")
    rho_p = p.sum(axis=2)
    link = float(np.abs(rho - rho_p).max())
    _require(link <= tol, f"occupancy differs from Σ_s' p by {link:.3g}")
    flow = np.abs(p.sum(axis=(1, 2)) - p.sum(axis=(0, 1)))  # out of s vs into s, every s
    _require(flow.max() <= tol, f"flow balance violated by {flow.max():.3g} at state {int(flow.argmax())}")
    counts = case.require_counts()
    P_hat = ref.empirical_kernel(counts)
    gap = np.abs(p - P_hat * rho_p[:, :, None])
    if kind == "optimistic":
        excess = gap.sum(axis=2) - ref.l1_radius(counts, case.time) * rho_p
        what = "L1 confidence row"
    else:
        excess = (gap - (ref.box_radius(counts, case.horizon) * rho_p)[:, :, None]).max(axis=2)
        what = "box confidence row"
    where = np.unravel_index(int(excess.argmax()), excess.shape)
    _require(excess.max() <= tol, f"{what} violated by {excess.max():.3g} at (s,a)={tuple(map(int, where))}")


def check_solution(case: Case, kind: str, result: Any, tight: bool, tol: float = 1e-7) -> None:
    """Raise AssertionError unless ``result`` is a feasible solution of the ``kind`` program of ``case``.

    ``tight`` asks for the constraint rows ``g_m(ζ) <= -ε`` too (the ε-tight program); a fallback
    result is checked without them. What the result reports about itself (rewards, costs, constraint
    values, objective, policy) must agree with its occupancy.
    """
    S, A = case.n_states, case.n_actions
    rho = np.asarray(result.occupancy, dtype=float)
    _require(rho.shape == (S, A) and bool(np.all(np.isfinite(rho))), f"occupancy of shape {rho.shape} or not finite")
    _require(rho.min() >= -tol, f"negative occupancy {rho.min()!r}")
    _require(abs(rho.sum() - 1.0) <= tol, f"total mass {rho.sum()!r}, not 1")
    if kind == "occupancy":
        flow = np.abs(rho.sum(axis=1) - np.einsum("sa,sat->t", rho, case.kernel))  # all S rows
        _require(flow.max() <= tol, f"flow balance violated by {flow.max():.3g} at state {int(flow.argmax())}")
    else:
        _check_joint(case, kind, rho, None if result.joint is None else np.asarray(result.joint, dtype=float), tol)
    lam = np.einsum("ksa,sa->k", case.rewards, rho)
    zeta = np.einsum("dsa,sa->d", case.costs, rho)
    g = np.array([ref.constraint_value(pieces, zeta) for pieces in case.constraint_pieces])
    if tight and g.size:
        worst = float((g + case.epsilon).max())
        _require(worst <= tol, f"g_m(ζ) <= -ε violated by {worst:.3g} (g={g}, ε={case.epsilon})")
    for name, reported, expected in (("rewards", result.rewards, lam), ("costs", result.costs, zeta),
                                      ("constraint values", result.constraint_values, g)):
        _require(np.allclose(reported, expected, rtol=0, atol=1e-9), f"reported {name} {reported} != {expected}")
    f = case.reference_objective().value(lam)
    _require(abs(result.objective - f) <= 1e-9 * max(1.0, abs(f)), f"reported objective {result.objective!r} != f(λ) {f!r}")
    policy = np.asarray(result.policy, dtype=float)
    _require(policy.shape == (S, A) and bool(np.all(np.isfinite(policy))) and policy.min() >= 0,
             "the policy is not a finite non-negative (S, A) array")
    _require(np.abs(policy.sum(axis=1) - 1.0).max() <= 1e-9, "a policy row does not sum to 1")


def _check_objective(result: Any, expected: ref.Reference, tol: Tolerances, where: str) -> None:
    slack = tol.slack(expected.value)
    _require(expected.lower - slack <= result.objective <= expected.upper + slack,
             f"{where}objective {result.objective!r} != reference {expected.value!r}"
             f" (difference {result.objective - expected.value:.3g}, allowed {slack:.3g})")


def _check_result(case: Case, kind: str, result: Any, backend: Any, tol: Tolerances, where: str = "") -> None:
    """The result of solving ``case``'s ``kind`` program equals the reference's (variant, status, optimum)."""
    from ..backends.results import ProgramVariant, SolveResult, Status

    _require(isinstance(result, SolveResult), f"{where}solve() returned a {type(result).__name__}, not a SolveResult")
    _require(result.backend == backend.name, f"{where}result.backend is {result.backend!r}, not {backend.name!r}")
    _require(result.epsilon == case.epsilon, f"{where}result.epsilon {result.epsilon!r} != ε {case.epsilon!r}")
    tight = case.tightness_margin(kind) > 0
    expected = case.reference(kind, with_constraints=tight)
    _require(expected.feasible, f"{where}the reference found the program infeasible (a suite bug)")
    _require(result.status.has_solution, f"{where}status {result.status.value}: {result.message}")
    variant = ProgramVariant.TIGHT if tight else ProgramVariant.FALLBACK
    _require(result.program is variant, f"{where}{result.program.value} program, the reference says {variant.value}"
             f" ({result.message})")
    _require(result.tight_status is (Status.OPTIMAL if tight else Status.INFEASIBLE),
             f"{where}tight_status {result.tight_status.value}")
    _check_objective(result, expected, tol, where)
    check_solution(case, kind, result, tight, tol.feasibility)


# ----------------------------------------------------------------------------
# The checks
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    examples: int
    seed: int
    tol: Tolerances


def _seed(settings: _Settings, name: str, example: int) -> int:
    """A seed per (check, example): checks draw different cases, and one check's draws do not move another's."""
    return (settings.seed * 1_000_003 + zlib.crc32(name.encode()) * 101 + example) % 2**32


def _compile(backend: Any, case: Case, kind: str,
             required: bool) -> tuple[OccupancyProgram | JointProgram, CompiledProgram]:
    """``backend.compile`` of the case's program; a declined optional utility skips the check."""
    from ..errors import UnsupportedUtilityError

    program = case.program(kind)
    utilities = [program.objective, *program.constraints]
    declines = [u for u in utilities if not backend.accepts(u)]
    try:
        compiled = backend.compile(program)
    except UnsupportedUtilityError as exc:
        if declines and not required:
            raise _Skip(f"the backend declines {type(declines[0]).__name__} (accepts() is False)") from exc
        if not declines:
            raise AssertionError(f"accepts() takes every utility of {case!r} but compile() refused: {exc}") from exc
        raise AssertionError(f"every backend must accept linear utilities; compile() refused {case!r}: {exc}") from exc
    if declines:
        raise AssertionError(f"accepts() declines {declines[0]!r} but compile() took it")
    return program, compiled


def _clear_case(settings: _Settings, name: str, example: int, objective: str, kind: str, **draw: Any) -> Case:
    """The example's case, redrawn (new seeds) while its ε is razor-thin (see :class:`Tolerances`); ``draw``
    goes to :func:`~curlopt.testing.cases.draw_case` (e.g. ``sparse=True``)."""
    pieces = 1 if objective == "linear" else (3 if objective == "piecewise" else 2)
    for attempt in range(50):
        case = draw_case(_seed(settings, name, example * 50 + attempt), objective, max_pieces=pieces, **draw)
        if abs(case.tightness_margin(kind)) > settings.tol.margin:
            return case
    raise AssertionError(f"no case clear of the feasibility boundary in 50 draws (a suite bug); last {case!r}")


def _optimum(backend: Any, settings: _Settings, name: str, kind: str, objective: str, sparse: bool = False) -> str:
    for example in range(settings.examples):
        case = _clear_case(settings, name, example, objective, kind, sparse=sparse)
        _, compiled = _compile(backend, case, kind, objective == "linear")
        _check_result(case, kind, compiled.solve(), backend, settings.tol, f"{case!r}: ")
    return f"{settings.examples} random cases"


def _fallback(backend: Any, settings: _Settings, name: str, kind: str, objective: str) -> str:
    from ..backends.results import ProgramVariant

    for example in range(settings.examples):
        case = draw_case(_seed(settings, name, example), objective, min_constraints=1,
                         max_pieces=1 if objective == "linear" else 2)
        epsilon_max = ref.max_tightness(case.polytope(kind), case.costs, case.constraint_pieces)
        excess = float(np.random.default_rng(case.seed).uniform(1e-3, 0.5))
        case = case.with_data(epsilon=max(0.0, epsilon_max) + excess)
        _, compiled = _compile(backend, case, kind, objective == "linear")
        result = compiled.solve()
        where = f"{case!r} (ε_max {epsilon_max:.6g}): "
        _check_result(case, kind, result, backend, settings.tol, where)
        _require(result.program is ProgramVariant.FALLBACK and result.fell_back and "infeasible" in result.message,
                 f"{where}the fallback is not labelled: fell_back={result.fell_back}, message {result.message!r}")
    return f"{settings.examples} random cases"


def _update(backend: Any, settings: _Settings, name: str, kind: str, objective: str, sparse: bool = False) -> str:
    steps = 2
    for example in range(settings.examples):
        case = _clear_case(settings, name, example, objective, kind, sparse=sparse)
        program, compiled = _compile(backend, case, kind, objective == "linear")
        compiled.solve()  # the first solve leaves state (basis, warm start) that the updates must not corrupt
        rng = np.random.default_rng(case.seed)
        for step in range(1, steps + 1):
            fields = [f for f in UPDATE_FIELDS[kind] if rng.uniform() < 0.6] or [UPDATE_FIELDS[kind][0]]
            for _ in range(50):  # redraw razor-thin data
                new = next_data(rng, case, fields)
                if abs(new.tightness_margin(kind)) > settings.tol.margin:
                    break
            case = new
            program.update(**case.update_data(kind, fields))
            where = f"{case!r}, after update {step} of {', '.join(fields)}: "
            _check_result(case, kind, compiled.solve(), backend, settings.tol, where)
    return f"{settings.examples} random cases, {steps} updates each"


def _closed_form(backend: Any, settings: _Settings, name: str) -> str:
    """The two-state model solved by hand (:func:`curlopt.testing.reference.two_state_problems`): no LP involved."""
    from ..backends.results import ProgramVariant
    from ..models.cmdp import CMDP
    from ..programs.occupancy import OccupancyProgram
    from ..programs.optimistic import BoxOptimisticProgram, OptimisticProgram
    from ..utilities.library import Linear, LinearBound

    problems = ref.two_state_problems()
    for problem in problems:
        model = CMDP(ref.TWO_STATE_REWARDS[None], ref.TWO_STATE_COSTS[None], Linear([1.0]),
                     [LinearBound([1.0], problem.bound)], kernel=ref.TWO_STATE_KERNEL, name="two-state")
        empty = np.zeros((2, 2, 2))
        # partial binds this problem's model and ε now, so only the chosen kind's program is built
        builders: dict[str, Callable[[], Program]] = {
            "occupancy": partial(OccupancyProgram, model, epsilon=problem.epsilon),
            "optimistic": partial(OptimisticProgram, model, counts=empty, time=1, epsilon=problem.epsilon),
            "box-optimistic": partial(BoxOptimisticProgram, model, 10, counts=empty, epsilon=problem.epsilon),
        }
        program = builders[problem.kind]()
        result = backend.compile(program).solve()
        where = f"the two-state {problem.kind} program with B={problem.bound}, ε={problem.epsilon}: "
        variant = ProgramVariant.TIGHT if problem.feasible else ProgramVariant.FALLBACK
        _require(result.status.has_solution, f"{where}status {result.status.value}: {result.message}")
        _require(result.program is variant, f"{where}{result.program.value} program, not {variant.value}")
        _check_objective(result, ref.Reference(True, problem.value, problem.value, problem.value), settings.tol, where)
        rho = np.asarray(result.occupancy, dtype=float)
        if problem.occupancy is not None:
            gap = float(np.abs(rho - problem.occupancy).max())
            _require(gap <= settings.tol.feasibility, f"{where}occupancy {rho.tolist()} differs from the unique"
                     f" optimum {problem.occupancy.tolist()} by {gap:.3g}")
        else:  # λ* = 1 needs every unit of mass in state 1
            _require(float(np.abs(rho[0]).max()) <= settings.tol.feasibility, f"{where}ρ(0,·) = {rho[0]}, not 0")
    return f"{len(problems)} programs solved by hand"


def _declaration(backend: Any, settings: _Settings, name: str) -> str:
    from ..backends.base import Backend
    from ..utilities.library import Linear, LinearBound

    _require(isinstance(backend, Backend), f"{backend!r} is not a curlopt.backends.Backend")
    _require(isinstance(backend.name, str) and bool(backend.name), f"the backend's name is {backend.name!r}")
    _require(backend.is_installed(), f"the {backend.name} backend is not installed (requires {backend.requires})")
    for utility in (Linear([1.0, -0.5], offset=0.25), LinearBound([1.0], 0.5)):
        _require(backend.accepts(utility) is True, f"every backend must accept linear utilities; accepts({utility!r})"
                 " is not True")
    return "a named, installed Backend accepting linear utilities"


def _all_checks() -> dict[str, Callable[..., str]]:
    checks: dict[str, Callable[..., str]] = {"declaration": _declaration, "closed-form": _closed_form}
    for family, function in (("optimum", _optimum), ("fallback", _fallback), ("update", _update)):
        for kind in PROGRAM_KINDS:
            for objective in OBJECTIVE_KINDS:
                checks[f"{family}/{kind}/{objective}"] = (
                    lambda backend, settings, name, f=function, k=kind, o=objective: f(backend, settings, name, k, o))
    for family, function in (("sparse-optimum", _optimum), ("sparse-update", _update)):
        for kind in PROGRAM_KINDS:
            for objective in OBJECTIVE_KINDS:
                checks[f"{family}/{kind}/{objective}"] = (
                    lambda backend, settings, name, f=function, k=kind, o=objective: f(backend, settings, name, k, o,
                                                                                         sparse=True))
    checks.update(episodic_checks(_seed, _Skip))  # the episodic and discounted programs: .episodic_cases
    return checks


_CHECKS = _all_checks()
#: the name of every check, in the order they run
CHECK_NAMES: tuple[str, ...] = tuple(_CHECKS)


def _required(name: str) -> bool:
    return name in ("declaration", "closed-form") or name.endswith("/linear")


def _run_check(backend: Any, settings: _Settings, name: str) -> CheckResult:
    try:
        detail = _CHECKS[name](backend, settings, name)
    except _Skip as exc:
        if _required(name):
            return CheckResult(name, FAILED, f"a required check cannot be skipped: {exc}")
        return CheckResult(name, SKIPPED, str(exc))
    except AssertionError as exc:
        return CheckResult(name, FAILED, str(exc))
    except Exception as exc:  # anything else the backend raised is a failure of the check, reported with where
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return CheckResult(name, FAILED, f"raised {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    return CheckResult(name, PASSED, detail)


def _as_backend(backend: Any) -> Backend:
    """A backend instance from a registry name, a Backend subclass (built without options) or an instance."""
    from ..backends.base import Backend
    from ..backends.registry import get_backend

    if isinstance(backend, str):
        return get_backend(backend)
    if isinstance(backend, type) and issubclass(backend, Backend):
        return backend()
    return backend


def run_conformance(backend: Any, *, examples: int = 2, seed: int = 0, checks: Any = None,
                    tolerances: Tolerances | None = None, raise_on_failure: bool = True) -> ConformanceReport:
    """Run the conformance suite on ``backend`` and report every check.

    Parameters
    ----------
    backend : str, Backend subclass or Backend instance
        A registry name (``"highs"``), a class (built without options) or an instance (with your options).
    examples : int, default 2
        Random cases per check; more is slower and more thorough.
    seed : int, default 0
        Every case is drawn from it: the same seed reproduces the same cases (a failure names its case).
    checks : iterable of str, optional
        Run only these checks (names from :data:`CHECK_NAMES`, or prefixes such as ``"optimum/"``); the
        ``declaration`` check always runs.
    tolerances : Tolerances, optional
        How close to the reference a backend must come (default :class:`Tolerances`).
    raise_on_failure : bool, default True
        Raise :class:`ConformanceError` when a check failed (the message lists each failure and its case).

    Returns
    -------
    ConformanceReport
        Every check's outcome; ``report.ok`` is True when none failed.

    Raises
    ------
    ConformanceError
        When ``raise_on_failure`` and a check failed.
    ValueError
        For a check name that matches no check, or ``examples < 1``.
    """
    if not isinstance(examples, int) or examples < 1:
        raise ValueError(f"examples must be an integer >= 1, got {examples!r}.")
    names = list(CHECK_NAMES)
    if checks is not None:
        wanted = [checks] if isinstance(checks, str) else list(checks)
        unmatched = [w for w in wanted if not any(n == w or n.startswith(w) for n in names)]
        if unmatched:
            raise ValueError(f"no conformance check is named {', '.join(map(repr, unmatched))}; see CHECK_NAMES.")
        names = ["declaration"] + [n for n in names if n != "declaration" and any(n == w or n.startswith(w) for w in wanted)]
    instance = _as_backend(backend)
    settings = _Settings(examples, seed, tolerances or Tolerances())
    report = ConformanceReport(str(getattr(instance, "name", instance)), seed=seed, examples=examples)
    report.results.append(_run_check(instance, settings, "declaration"))
    if report.results[0].outcome == PASSED:  # nothing else can be trusted of a backend that fails its declaration
        report.results += [_run_check(instance, settings, name) for name in names if name != "declaration"]
    if raise_on_failure:
        report.raise_if_failed()
    return report

"""Each backend and solver of a comparison: the plan, a backend's refusals known before anything is built, and one
row run in this process (the program compiled once, then re-solved on every instance, as an agent would)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, cast

from ...backends.base import Backend
from ...backends.registry import backend_class, check_keywords
from ...backends.results import SolveResult
from ...errors import (
    BackendNotInstalledError,
    BackendOptionError,
    CurloptError,
    ProgramError,
    UnsupportedUtilityError,
    UtilityCodeError,
)
from ...models.cmdp import CMDP
from ...programs.blocks import Program
from .rows import SolverRow

_Step = tuple[str, str, dict, type[Backend] | None, str]


def _plan(names: list[str]) -> list[_Step]:
    """``(backend, solver, options, class, why not installed)`` for every solver of every backend named."""
    plan: list[_Step] = []
    for name in names:
        cls = backend_class(name)
        if not cls.is_installed():
            plan.append((name, name, {}, None, _not_installed(name, cls)))
            continue
        for label, options in cls.solver_variants():
            plan.append((name, label, options, cls, ""))
    return plan


def _not_installed(name: str, cls: type[Backend]) -> str:
    command = f"pip install 'curlopt[{cls.extra}]'" if cls.extra else f"pip install {' '.join(cls.requires)}"
    return f"the {name} backend needs {', '.join(cls.requires)}: {command}."


class _Utilities:
    """What :meth:`Backend.check` reads of a program: its objective and constraints (the model's, for every
    program compared here), so that a backend's refusal is known before the program is built."""

    def __init__(self, model: CMDP):
        self.objective = model.objective
        self.constraints = model.constraints


def _refusal(name: str, factory: type[Backend] | None, options: dict, time_limit: float | None, model: CMDP) -> str:
    """The row's error when the backend refuses its options or the model's utilities (checked here, before any
    program is built or child started), else ``""``: anything else is left to the run, which reports it."""
    if factory is None:
        return ""
    try:
        backend = _make_backend(name, factory, options, time_limit)
    except BackendOptionError as exc:  # e.g. a solver whose time limit the backend cannot set
        return f"option refused: {exc}"
    except CurloptError:
        return ""
    try:
        backend.check(cast(Program, _Utilities(model)))
    except UnsupportedUtilityError as exc:
        return f"refused: {exc}"
    except CurloptError:
        return ""
    return _linear_only_refusal(name, options, model)


#: solvers a backend hands linear programs only, with what says so: the backend takes the model's utilities with its
#: other solvers, but this one would fail on the compiled program (a solver error that is really a refusal)
LINEAR_ONLY_SOLVERS: dict[tuple[str, str], str] = {
    ("cvxpy", "HIGHS"): "CVXPY hands HiGHS linear (and quadratic) programs only",
    ("pyomo", "appsi_highs"): "Pyomo's appsi_highs interface takes linear expressions only",
}


def _variant_solver(name: str, options: dict) -> str:
    """The solver a variant's options name (``solvers=[...]`` for cvxpy, ``solver=...`` for pyomo), or ``""``."""
    solvers = options.get("solvers")
    if isinstance(solvers, (list, tuple)) and len(solvers) == 1:
        return str(solvers[0])
    solver = options.get("solver")
    return str(solver) if isinstance(solver, str) else ""


def _linear_only_refusal(name: str, options: dict, model: CMDP) -> str:
    """``refused: ...`` when the variant's solver takes linear programs only and one of the model's utilities is not
    LP-representable (as the highs backend, an LP backend, judges it), else ``""``."""
    why = LINEAR_ONLY_SOLVERS.get((name, _variant_solver(name, options)))
    if why is None:
        return ""
    lp = backend_class("highs")
    roles = [("objective", model.objective)] + [(f"constraint {m}", g) for m, g in enumerate(model.constraints)]
    for role, utility in roles:
        if not lp.accepts(utility):
            return (f"refused: {why}, and the {role} {utility!r} is not LP-representable; compare the backend's"
                    " other solvers.")
    return ""


def _make_backend(name: str, factory: type[Backend], options: dict, time_limit: float | None) -> Backend:
    """The backend ``factory`` with ``options`` (and ``time_limit``), checked as :func:`get_backend` checks them."""
    options = dict(options) if time_limit is None else {**options, "time_limit": time_limit}
    check_keywords(name, factory, options)
    return factory(**options)


def _run_variant(row: SolverRow, name: str, factory: type[Backend], options: dict, time_limit: float | None,
                 cls: type, model: CMDP, instances: list[dict[str, Any]],
                 event: Callable[[str, SolverRow], None] | None = None) -> SolverRow:
    """Compile the program once for one backend and solver, then solve every instance in turn (as an agent would).

    ``event(stage, row)`` is called as each stage starts (``compile``, ``solve <i>``) and when the row ends
    (``done``): a child process reports through it.
    """
    def tell(stage: str) -> None:
        if event is not None:
            event(stage, row)

    tell("compile")
    started = time.perf_counter()
    try:
        backend = _make_backend(name, factory, options, time_limit)
    except BackendOptionError as exc:  # e.g. a solver whose time limit the backend cannot set
        row.error = f"option refused: {exc}"
        return row
    try:
        program = cls(model, **instances[0])
    except ProgramError as exc:  # before building anything (the size check) or on the instance's data
        row.error = f"program refused: {exc}"
        return row
    except CurloptError as exc:
        row.error = str(exc)
        return row
    except MemoryError:
        row.error = "stopped: out of memory (MemoryError) while building the program"
        return row
    try:
        compiled = backend.compile(program)
    except UnsupportedUtilityError as exc:
        row.error = f"refused: {exc}"
        return row
    except BackendNotInstalledError as exc:
        row.error = f"not installed: {exc}"
        return row
    except CurloptError as exc:
        row.error = str(exc)
        return row
    except MemoryError:
        row.error = "stopped: out of memory (MemoryError) while compiling"
        return row
    row.compile_time = time.perf_counter() - started
    for i, data in enumerate(instances):
        tell(f"solve {i}")
        compiled.program.update(**data)
        started = time.perf_counter()
        try:
            result = compiled.solve()
        except UtilityCodeError as exc:  # the utility's own code failed: no solver can help
            row.error = str(exc)
            break
        except MemoryError:
            row.error = f"stopped: out of memory (MemoryError) while solving instance {i}"
            break
        row.times.append(time.perf_counter() - started)
        row.statuses.append(result.status.value)
        row.programs.append(result.program.value)
        row.objectives.append(result.objective)
        row.iterations.append(result.iterations or 0)
        row.residuals.append(_residual(compiled.program, result))
        row.violations.append(_violation(compiled.program, result))
        if not row.solved_by:
            row.solved_by = result.solver
        if not result.status.has_solution and not row.failure:
            row.failure = f"{result.status.value}: {result.message}"
        if not result.status.has_solution and _out_of_memory(result.message):
            row.error = f"stopped: out of memory while solving instance {i} ({result.message})"
            break
    return row


#: words a solver's message uses when it could not allocate memory (SCS: "ScsWork allocation error!"; numpy:
#: "Unable to allocate ..."; a MemoryError turned into a message by the backend)
_OUT_OF_MEMORY = ("out of memory", "memoryerror", "allocation error", "unable to allocate", "failed to allocate",
                  "could not allocate", "insufficient memory", "not enough memory")


def _out_of_memory(message: str) -> bool:
    """Whether a failed solve's message says the solver ran out of memory (the row is then *stopped*, as a
    MemoryError stops it, not an error of the solver's)."""
    text = message.lower()
    return any(words in text for words in _OUT_OF_MEMORY)


def _residual(program: Program, result: SolveResult) -> float:
    """The largest residual of the program asked at the result's point, its constraint rows included: a fallback
    point (solved without them) is measured against the program it does not answer, so its violation shows."""
    if not result.status.has_solution or result.x is None:
        return math.nan
    return max(program.residuals(result.x, include_constraints=True).values())



def _violation(program: Program, result: SolveResult) -> float:
    """The largest constraint value ``max_m g_m(ζ)`` at the result's point (NaN without a point or constraints)."""
    if not result.status.has_solution or result.x is None or not program.constraints:
        return math.nan
    costs = program.cost_map @ result.x
    return float(max(g.value(costs) for g in program.constraints))

"""Each backend and solver of a comparison: the plan, a backend's refusals known before anything is built, and one
row run in this process (the program compiled once, then re-solved on every instance, as an agent would)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, cast

from ...backends.base import Backend
from ...backends.registry import backend_class, check_keywords
from ...backends.results import ProgramVariant, SolveResult
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
        row.objectives.append(result.objective)
        row.iterations.append(result.iterations or 0)
        row.residuals.append(_residual(compiled.program, result))
        if not row.solved_by:
            row.solved_by = result.solver
        if not result.status.has_solution and not row.failure:
            row.failure = f"{result.status.value}: {result.message}"
    return row


def _residual(program: Program, result: SolveResult) -> float:
    if not result.status.has_solution or result.x is None:
        return math.nan
    residuals = program.residuals(result.x, include_constraints=result.program is ProgramVariant.TIGHT)
    return max(residuals.values())

"""Compare every installed backend and solver on the same program instances.

The instances come from one simulated run on the model's true kernel (the learning
loop's simulator): a fixed random policy is played, and the counts are taken at
``epochs`` log-spaced times.

``optimum``
    the occupancy program on the true kernel with ε = 0 (one instance);
``optimistic``
    the optimistic program (docs/math.md §3) on each snapshot of the counts, with ``ε = tightness(t)``;
``sampled``
    the occupancy program on one Dirichlet posterior sample per snapshot, as PS-CURL solves it.

A model that stores its kernel sparse keeps it sparse here: the counts are a CSR matrix on its pattern, and the
posterior samples are drawn over each pair's allowed successors (as PS-CURL draws them on a sparse support).

Each backend and solver compiles its own copy of the program once and re-solves it
after every update, as an agent would.

What the report compares:

* a solver the backend does not offer for the program (the backend refuses it
  when compiling: it cannot express a utility) is *refused*, not failed, and
  left out of the comparison; so is one whose compilation failed (*error*), one
  whose program the size checks refused before building it (*program refused*:
  the same for every backend, so it is built once), one whose backend refuses an
  option (*option refused*, e.g. a solver whose time limit it cannot set), one not
  installed, one stopped (*stopped*: out of memory, or in a child process a crash
  or a kill, see below), and one that solved no instance at all (listed as such);
  a backend's refusals are checked before anything is built or a child started;
* the mean objective is taken over the instances **every** compared solver
  solved, the same instances for every row, so the means can be compared; the
  instances left out are listed with the solvers that did not solve them;
* objectives disagree on an instance when ``high - low > tolerance * max(1, |high|)``
  over the solvers that solved it (relative, default 1e-5); each disagreement
  is listed, and the report says when there is none;
* the *gap* of a row is ``|objective - reference| / max(1, |reference|)``, the largest over the instances it and
  the reference solved; the reference is the consensus of the exact solvers (every one but
  :data:`APPROXIMATE_SOLVERS`): the row the most other exact rows agree with within :data:`CONSENSUS_TOLERANCE`,
  a vertex (simplex or crossover) solver before an interior-point one (:data:`INTERIOR_POINT_SOLVERS`) on a tie,
  then the most instances solved and the smallest residual (an approximate one only when no exact one finished,
  and the report says so);
* a solve that answered the *fallback* program (the ε-tight program was infeasible, so the backend solved it
  without the constraint rows) is counted apart (``fallback k/n`` in the status), left out of the means, the
  agreement check and the gaps, and said with how far its point violates the constraints; residuals are those
  of the program asked, constraint rows included;
* a solver a backend hands linear programs only (:data:`~.solvers.LINEAR_ONLY_SOLVERS`) is refused for a model
  whose utilities are not LP-representable, and a solve that ran out of memory stops its row (*stopped*);
* when fewer instances run than were asked (the ``optimum`` program has one;
  snapshot times that coincide give fewer), the report says so and why.

At scale (``isolate``; by default for a model with ``S·A >= 5,000`` or ``>= 100,000`` kernel entries, see
:func:`isolation_default`) each backend and solver runs in its own child process (``multiprocessing``, spawn
context): its row gets the child's peak resident set, and a child that crashes, runs out of memory or is killed
becomes a row *stopped* with the reason. With a ``time_limit`` (the backend-neutral option every backend takes,
per solve), a wall-clock guard kills a child whose current stage (compiling, or one solve) runs more than
:func:`guard_margin` seconds past the limit.

The parts: :mod:`.instances` (the program instances), :mod:`.checks` (the options), :mod:`.solvers` (the plan, a
backend's refusals, a row run in this process), :mod:`.isolation` (a row run in a child process), :mod:`.rows` and
:mod:`.report` (the outcome). The comparison itself, and a child's work, are here.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...backends.registry import installed_backends
from ...models.cmdp import CMDP
from .checks import check_backends, check_time_limit, check_tolerance
from .instances import MAX_INSTANCES, PROGRAMS, instance_count, program_instances
from .isolation import (
    GUARD_SECONDS,
    ISOLATE_ENTRIES,
    ISOLATE_PAIRS,
    STARTUP_SECONDS,
    _run_isolated,
    _Task,
    guard_margin,
    isolation_default,
    peak_memory,
)
from .report import (
    APPROXIMATE_SOLVERS,
    CONSENSUS_TOLERANCE,
    INTERIOR_POINT_SOLVERS,
    ComparisonReport,
    _common_instances,
    _disagreements,
    _fewer_instances,
)
from .rows import SolverRow, _ended
from .solvers import _plan, _refusal, _run_variant, _Step

__all__ = ["PROGRAMS", "MAX_INSTANCES", "ISOLATE_PAIRS", "ISOLATE_ENTRIES", "APPROXIMATE_SOLVERS",
           "INTERIOR_POINT_SOLVERS", "CONSENSUS_TOLERANCE", "SolverRow",
           "ComparisonReport", "compare_solvers", "program_instances", "instance_count", "check_tolerance",
           "check_time_limit", "check_backends", "isolation_default", "guard_margin", "peak_memory",
           "GUARD_SECONDS", "STARTUP_SECONDS"]

#: a progress callback: one line of text
Progress = Callable[[str], None]


def compare_solvers(model: CMDP, program: str = "optimistic", epochs: int = 10, seed: int = 0,
                    tolerance: float = 1e-5, backends: list[str] | None = None, time_limit: float | None = None,
                    isolate: bool | None = None, progress: Progress | None = None,
                    margin: float | None = None) -> ComparisonReport:
    """Run every installed backend and solver on the same instances and compare them.

    Parameters
    ----------
    model : CMDP
        A model with a known kernel.
    program : {"optimum", "optimistic", "sampled"}
    epochs : int
        Number of instances asked for, at most :data:`MAX_INSTANCES` (``optimum`` has one; the report's
        ``notes`` say when fewer run).
    seed : int
        Seed of the simulated run and the posterior samples.
    tolerance : float
        Relative tolerance beyond which objectives are reported as disagreeing.
    backends : list of str, optional
        Restrict to these registered backends (default: every installed one; one that cannot express the
        model's utilities shows as refused). A named backend that is not installed is a row *not installed*.
    time_limit : float, optional
        Seconds per solve, given to every backend as its ``time_limit`` option (a solve that reaches it has
        status ``time_limit``).
    isolate : bool, optional
        Run each backend and solver in its own child process (peak memory, crashes and kills become rows);
        default :func:`isolation_default` (yes for a large model).
    progress : callable, optional
        Called with one line of text as each backend and solver starts and ends.
    margin : float, optional
        The wall-clock guard's margin past ``time_limit`` (isolated runs; default :func:`guard_margin`).

    Returns
    -------
    ComparisonReport
        Means over the instances every compared solver solved (the others listed as dropped), the
        disagreements beyond ``tolerance``, and each row's gap to the most accurate answer.

    Raises
    ------
    CurloptError
        For a tolerance that is not a finite number >= 0 (NaN would silence every disagreement), a time limit or
        margin that is not a finite number > 0, a number of instances out of range, or an unknown backend name.
    """
    tolerance = check_tolerance(tolerance)
    time_limit = check_time_limit(time_limit)
    names = check_backends(backends)
    if margin is not None:
        margin = check_time_limit(margin, "margin")
    isolate, isolation = _where(model, isolate)
    margin = None if time_limit is None or not isolate else (margin if margin is not None else guard_margin(time_limit))
    run = _Run(model, program, epochs, seed, time_limit, isolate, margin)
    if isolate:
        count = instance_count(model, program, epochs)
    else:
        run.cls, run.instances = program_instances(model, program, epochs, seed)
        count = len(run.instances)
    plan = _plan(installed_backends() if names is None else names)
    rows: list[SolverRow] = []
    for number, step in enumerate(plan, start=1):
        say = _say(progress, f"[{number}/{len(plan)}] {step[0]}/{step[1]}")
        row = _row(run, step, say)
        say(_ended(row))
        rows.append(row)
    common, dropped = _common_instances(rows, count)
    return ComparisonReport(program, count, rows, tolerance, _disagreements(rows, count, tolerance),
                            requested=epochs, common=common, dropped=dropped,
                            notes=_fewer_instances(program, epochs, count), isolated=isolate, isolation=isolation,
                            time_limit=time_limit, margin=margin)


def _where(model: CMDP, isolate: bool | None) -> tuple[bool, str]:
    """Whether the rows run in child processes, and the report's line saying why (asked, or the model's size)."""
    if isolate is None:
        isolate, why = isolation_default(model)
        return isolate, (("each backend and solver ran in its own child process (" if isolate else
                          "every backend and solver ran in this process (") + why + ")")
    return isolate, ("each backend and solver ran in its own child process (asked)" if isolate else
                     "every backend and solver ran in this process (asked)")


@dataclass
class _Run:
    """What every row of one comparison shares: the model and program, the options, the instances (built here
    when the rows run in this process), the program refusal once one row met it, and the children's warnings."""

    model: CMDP
    program: str
    epochs: int
    seed: int
    time_limit: float | None
    isolate: bool
    margin: float | None
    cls: type | None = None
    instances: list[dict[str, Any]] = field(default_factory=list)
    #: the program is built before any backend sees it: once its size check refused it, it refuses every row
    refused_program: str = ""
    #: the warnings registry shared by the children's warnings, each shown once
    caught: dict = field(default_factory=dict)


def _row(run: _Run, step: _Step, say: Progress) -> SolverRow:
    """One backend and solver: refused before any work if it must be, else run here or in a child process."""
    name, label, options, factory, missing = step
    row = SolverRow(name, label, isolated=run.isolate)
    refusal = "" if missing or run.refused_program else _refusal(name, factory, options, run.time_limit, run.model)
    if missing:
        row.error = f"not installed: {missing}"
    elif run.refused_program:
        row.error = run.refused_program
    elif refusal:
        row.error = refusal
    else:
        say("started" + (" in a child process" if run.isolate else ""))
        started = time.perf_counter()
        if run.isolate:
            task = _Task(run.model, run.program, run.epochs, run.seed, name, label, factory, options, run.time_limit,
                         os.getpid())
            row, found = _run_isolated(task, run.margin, _child_main)
            _reissue(found, run.caught)
        else:
            assert run.cls is not None and factory is not None  # a row with a class is installed
            _run_variant(row, name, factory, options, run.time_limit, run.cls, run.model, run.instances)
        row.wall_time = time.perf_counter() - started
        if row.error.startswith("program refused"):
            run.refused_program = row.error
    return row


def _child_main(connection: Any, task: _Task) -> None:
    """A child process's work: the instances, then :func:`_run_variant`, each stage reported on ``connection``.

    Messages are dicts: ``kind`` (``compile``, ``solve <i>``, ``done``, ``failed``), ``row`` (the row so far),
    ``peak`` (:func:`peak_memory`), and with ``done`` the warnings raised (each once), with ``failed`` the error.
    """
    from ..executors import _die_with_parent, _picklable  # the study workers' own: die with the parent; warnings

    _die_with_parent(task.parent)
    found: dict[tuple, tuple] = {}

    def collect(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
                line: Any = None) -> None:  # warnings.showwarning's signature
        found.setdefault((str(message), category, filename, lineno), (
            str(message), category if _picklable(category) else UserWarning, filename, lineno,
            os.path.splitext(os.path.basename(filename))[0]))

    def send(kind: str, row: SolverRow | None, **extra: Any) -> None:
        connection.send({"kind": kind, "row": row, "peak": peak_memory(), **extra})

    row = SolverRow(task.backend, task.solver, isolated=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = collect
            assert task.factory is not None
            cls, instances = program_instances(task.model, task.program, task.epochs, task.seed)
            _run_variant(row, task.backend, task.factory, task.options, task.time_limit, cls, task.model, instances,
                         event=send)
        send("done", row, warnings=list(found.values()))
    except BaseException as exc:  # anything: the parent turns it into a row that says what happened (no traceback)
        send("failed", row, error=f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()


def _reissue(found: list, registry: dict) -> None:
    """Raise a child's warnings again here, each once across the comparison (``registry`` is shared)."""
    from ..executors import reissue_warnings

    reissue_warnings(found, registry)


def _say(progress: Progress | None, prefix: str) -> Progress:
    def say(text: str) -> None:
        if progress is not None:
            progress(f"{prefix}: {text}")

    return say

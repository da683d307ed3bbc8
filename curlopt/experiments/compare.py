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

Each backend and solver compiles its own copy of the program once and re-solves it
after every update, as an agent would.

What the report compares:

* a solver the backend does not offer for the program (the backend refuses it
  when compiling: it cannot express a utility) is *refused*, not failed, and
  left out of the comparison; so is one whose compilation failed (*error*), and
  one that solved no instance at all (listed as such);
* the mean objective is taken over the instances **every** compared solver
  solved, the same instances for every row, so the means can be compared; the
  instances left out are listed with the solvers that did not solve them;
* objectives disagree on an instance when ``high - low > tolerance * max(1, |high|)``
  over the solvers that solved it (relative, default 1e-5); each disagreement
  is listed, and the report says when there is none;
* when fewer instances run than were asked (the ``optimum`` program has one;
  snapshot times that coincide give fewer), the report says so and why.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.registry import backend_class, get_backend, installed_backends
from ..backends.results import ProgramVariant, SolveResult, Status
from ..errors import CurloptError, UnsupportedUtilityError, UtilityCodeError
from ..models.cmdp import CMDP
from ..programs.blocks import Program
from ..programs.occupancy import OccupancyProgram
from ..programs.optimistic import OptimisticProgram
from ..programs.tightness import tightness
from .simulation.loop import ChainSimulator

__all__ = ["PROGRAMS", "MAX_INSTANCES", "SolverRow", "ComparisonReport", "compare_solvers", "program_instances",
           "check_tolerance"]

PROGRAMS = ("optimum", "optimistic", "sampled")
#: the most instances a comparison takes (each one is 2,000 more simulated steps and a solve per solver)
MAX_INSTANCES = 1_000
#: simulated steps per instance asked
_STEPS_PER_INSTANCE = 2_000


@dataclass
class SolverRow:
    """The outcome of one backend and solver over all instances."""

    backend: str
    solver: str
    statuses: list[str] = field(default_factory=list)
    objectives: list[float] = field(default_factory=list)
    residuals: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    error: str = ""
    #: the first message of a non-optimal solve, if any
    failure: str = ""

    @property
    def refused(self) -> bool:
        """The backend does not take the program with this solver (it said so when compiling)."""
        return self.error.startswith("refused")

    @property
    def ran(self) -> bool:
        """The row ran every instance (it was neither refused nor stopped by an error)."""
        return not self.error

    @property
    def compared(self) -> bool:
        """The row ran every instance and solved at least one: its objectives enter the comparison."""
        return self.ran and any(self.solved(i) for i in range(len(self.statuses)))

    def solved(self, instance: int) -> bool:
        """Whether this solver solved ``instance`` (a status with a solution and a finite objective)."""
        return (instance < len(self.statuses) and Status(self.statuses[instance]).has_solution
                and math.isfinite(self.objectives[instance]))

    def status_summary(self) -> str:
        if self.error:
            return "refused" if self.refused else "error"
        counts: dict[str, int] = {}
        for status in self.statuses:
            counts[status] = counts.get(status, 0) + 1
        return ", ".join(f"{k} {v}/{len(self.statuses)}" for k, v in counts.items())

    def to_dict(self) -> dict[str, Any]:
        finite = [r for r in self.residuals if math.isfinite(r)]
        return {
            "backend": self.backend, "solver": self.solver, "status": self.status_summary(),
            "statuses": self.statuses, "objectives": [None if not math.isfinite(o) else o for o in self.objectives],
            "max_residual": max(finite) if finite else None,
            "mean_time": float(np.mean(self.times)) if self.times else None,
            "max_time": float(np.max(self.times)) if self.times else None,
            "mean_iterations": float(np.mean(self.iterations)) if self.iterations else None,
            "error": self.error, "failure": self.failure,
        }


@dataclass
class ComparisonReport:
    """All rows; the instances every compared solver solved; disagreements beyond the tolerance; notes.

    Attributes
    ----------
    program : str
    instances : int
        Instances run.
    rows : list of SolverRow
    tolerance : float
        Relative objective tolerance of the agreement check.
    disagreements : list of str
        One line per instance whose objectives differ beyond the tolerance.
    requested : int
        Instances asked for (``--instances``); see ``notes`` when more than ``instances``.
    common : list of int
        The instances every compared solver (not refused, no error) solved: the means are over these.
    dropped : list of str
        One line per instance left out of the means, naming the solvers that did not solve it and how they ended.
    notes : list of str
        Why fewer instances ran than were asked.
    """

    program: str
    instances: int
    rows: list[SolverRow]
    tolerance: float
    disagreements: list[str]
    requested: int = 0
    common: list[int] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for row in self.rows:
            entry = row.to_dict()
            entry["mean_objective"] = self.mean_objective(row)
            rows.append(entry)
        return {"program": self.program, "instances": self.instances, "requested": self.requested,
                "tolerance": self.tolerance, "compared_instances": self.common, "dropped": self.dropped,
                "notes": self.notes, "rows": rows, "disagreements": self.disagreements}

    def mean_objective(self, row: SolverRow) -> float | None:
        """The row's mean objective over :attr:`common` (None when it is not compared or nothing is common)."""
        if not row.compared or not self.common:
            return None
        return float(np.mean([row.objectives[i] for i in self.common]))

    def table(self) -> str:
        header = ("backend", "solver", "status", "mean objective", "max residual", "mean time", "max time", "iterations")
        lines = []
        for row in self.rows:
            d = row.to_dict()
            mean = self.mean_objective(row)
            lines.append((
                row.backend, row.solver, d["status"],
                f"{mean:.9g}" if mean is not None else "-",
                f"{d['max_residual']:.1e}" if d["max_residual"] is not None else "-",
                f"{1e3 * d['mean_time']:.2f} ms" if d["mean_time"] is not None else "-",
                f"{1e3 * d['max_time']:.2f} ms" if d["max_time"] is not None else "-",
                f"{d['mean_iterations']:.1f}" if d["mean_iterations"] is not None else "-",
            ))
        widths = [max(len(str(x)) for x in column) for column in zip(header, *lines, strict=True)]
        out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths, strict=True))]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)) for line in lines]
        return "\n".join(out + self.explanation())

    def explanation(self) -> list[str]:
        """The lines under the table: what the means are over, agreement, notes, and each row's trouble."""
        out = [self._means_line()] + [f"  dropped {line}" for line in self.dropped]
        idle = [f"{r.backend}/{r.solver}" for r in self.rows if r.ran and not r.compared]
        if idle:
            out.append(f"left out of the means: {', '.join(idle)} (solved no instance).")
        if self.disagreements:
            out.append(f"DISAGREEMENT beyond {self.tolerance:g} (relative) on {len(self.disagreements)} instance(s):")
            out += [f"  {line}" for line in self.disagreements]
        elif sum(1 for r in self.rows if r.compared) >= 2:
            out.append(f"agreement: on every instance, the solvers that solved it agree within {self.tolerance:g}"
                       " (relative: high - low <= tolerance * max(1, |high|)).")
        out += [f"note: {note}" for note in self.notes]
        for row in self.rows:
            if row.error or row.failure:
                out.append(f"{row.backend}/{row.solver}: {row.error or row.failure}")
        return out

    def _means_line(self) -> str:
        compared = [r for r in self.rows if r.compared]
        if not compared:
            return "mean objective: none, no solver solved any instance (see below)."
        if not self.common:
            return (f"mean objective: none, no instance of the {self.instances} was solved by every compared solver"
                    f" ({len(compared)}); see below.")
        which = ", ".join(map(str, self.common)) if len(self.common) <= 10 else f"{len(self.common)} instances"
        return (f"mean objective: over the {len(self.common)} of {self.instances} instance(s) every compared solver"
                f" solved ({which})" + (f"; {len(self.dropped)} dropped:" if self.dropped else "."))


def _simulate_counts(model: CMDP, steps: int, snapshots: int, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """Counts of a fixed random policy's run, taken at ``snapshots`` log-spaced times.

    The run is the learning loop's own simulator (:class:`~curlopt.experiments.simulation.loop.ChainSimulator`),
    with action and transition streams spawned from ``rng``.
    """
    S, A = model.n_states, model.n_actions
    policy = rng.dirichlet(np.ones(A), size=S)
    actions, transitions = rng.spawn(2)
    simulator = ChainSimulator(model.transitions if model.sparse else model.kernel, actions, transitions)
    start = max(10, S * A)  # about one visit per pair
    times = np.unique(np.geomspace(start, max(steps, 10 * start), snapshots).astype(int))
    counts = np.zeros(S * A * S)
    out = []
    done = 0
    for t in times:
        pairs, nexts = simulator.play(policy, int(t) - done)
        counts += np.bincount(pairs * S + nexts, minlength=S * A * S)
        done = int(t)
        out.append((done + 1, counts.reshape(S, A, S).copy()))
    return out


def program_instances(model: CMDP, program: str, epochs: int, seed: int = 0) -> tuple[type, list[dict[str, Any]]]:
    """The program class and the list of ``update`` keyword sets defining each instance."""
    if program not in PROGRAMS:
        raise CurloptError(f"program must be one of {', '.join(PROGRAMS)}, got {program!r}.")
    if not model.has_kernel:
        raise CurloptError(f"model {model.name!r} has no kernel to simulate from.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= MAX_INSTANCES:
        raise CurloptError(f"the number of instances must be an integer between 1 and {MAX_INSTANCES:,}, got"
                           f" {epochs!r}.")
    if program == "optimum":
        return OccupancyProgram, [{"kernel": model.kernel, "epsilon": 0.0}]
    rng = np.random.default_rng(seed)
    snapshots = _simulate_counts(model, steps=_STEPS_PER_INSTANCE * epochs, snapshots=epochs, rng=rng)
    if program == "optimistic":
        return OptimisticProgram, [{"counts": n, "time": t, "epsilon": tightness(t)} for t, n in snapshots]
    return OccupancyProgram, [{"kernel": _dirichlet(rng, n), "epsilon": tightness(t)} for t, n in snapshots]


def _dirichlet(rng: np.random.Generator, counts: np.ndarray) -> np.ndarray:
    from ..agents.curl import sample_posterior_kernel  # the agents' own sampler, so the instances are PS-CURL's

    return sample_posterior_kernel(rng, 1.0 + counts)


def check_tolerance(tolerance: Any, name: str = "tolerance") -> float:
    """``tolerance`` as a float, or a CurloptError unless it is a finite number >= 0.

    Objectives disagree when ``high - low > tolerance * max(1, |high|)``; with NaN that test is never
    true, so a NaN tolerance would silently turn the check off.
    """
    ok = isinstance(tolerance, (int, float, np.integer, np.floating)) and not isinstance(tolerance, bool)
    value = float(tolerance) if ok else math.nan
    if not (math.isfinite(value) and value >= 0):
        raise CurloptError(f"{name} must be a finite number >= 0 (relative objective tolerance), got {tolerance!r}.")
    return value


def compare_solvers(model: CMDP, program: str = "optimistic", epochs: int = 10, seed: int = 0,
                    tolerance: float = 1e-5, backends: list[str] | None = None) -> ComparisonReport:
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
        Restrict to these backends (default: every installed one).

    Returns
    -------
    ComparisonReport
        Means over the instances every compared solver solved (the others listed as dropped), and the
        disagreements beyond ``tolerance``.

    Raises
    ------
    CurloptError
        For a tolerance that is not a finite number >= 0 (NaN would silence every disagreement), or a number of
        instances out of range.
    """
    tolerance = check_tolerance(tolerance)
    cls, instances = program_instances(model, program, epochs, seed)
    names = installed_backends() if backends is None else backends
    rows: list[SolverRow] = []
    for name in names:
        for label, options in backend_class(name).solver_variants():
            rows.append(_run_variant(SolverRow(name, label), name, options, cls, model, instances))
    common, dropped = _common_instances(rows, len(instances))
    return ComparisonReport(program, len(instances), rows, tolerance, _disagreements(rows, len(instances), tolerance),
                            requested=epochs, common=common, dropped=dropped,
                            notes=_fewer_instances(program, epochs, len(instances)))


def _run_variant(row: SolverRow, name: str, options: dict, cls: type, model: CMDP,
                 instances: list[dict[str, Any]]) -> SolverRow:
    """Compile the program once for one backend and solver, then solve every instance in turn (as an agent would)."""
    try:
        compiled = get_backend(name, **options).compile(cls(model, **instances[0]))
    except UnsupportedUtilityError as exc:
        row.error = f"refused: {exc}"
        return row
    except CurloptError as exc:
        row.error = str(exc)
        return row
    for data in instances:
        compiled.program.update(**data)
        started = time.perf_counter()
        try:
            result = compiled.solve()
        except UtilityCodeError as exc:  # the utility's own code failed: no solver can help
            row.error = str(exc)
            break
        row.times.append(time.perf_counter() - started)
        row.statuses.append(result.status.value)
        row.objectives.append(result.objective)
        row.iterations.append(result.iterations or 0)
        row.residuals.append(_residual(compiled.program, result))
        if not result.status.has_solution and not row.failure:
            row.failure = f"{result.status.value}: {result.message}"
    return row


def _common_instances(rows: list[SolverRow], count: int) -> tuple[list[int], list[str]]:
    """The instances every compared row solved, and a line per other instance naming who did not solve it."""
    compared = [r for r in rows if r.compared]
    common, dropped = [], []
    for i in range(count):
        missing = [f"{r.backend}/{r.solver} {r.statuses[i] if i < len(r.statuses) else 'not run'}"
                   for r in compared if not r.solved(i)]
        if missing:
            dropped.append(f"instance {i}: not solved by " + ", ".join(missing))
        else:
            common.append(i)
    return (common, dropped) if compared else ([], [])


def _fewer_instances(program: str, requested: int, ran: int) -> list[str]:
    """Why fewer instances ran than were asked for (empty when as many ran)."""
    if ran >= requested:
        return []
    if program == "optimum":
        return [f"{requested} instances were asked for, but the optimum program has one (the true kernel, ε = 0)."]
    return [f"{requested} instances were asked for, but {ran} ran: some log-spaced snapshot times of the simulated run"
            f" coincide after rounding to whole steps."]


def _residual(program: Program, result: SolveResult) -> float:
    if not result.status.has_solution or result.x is None:
        return math.nan
    residuals = program.residuals(result.x, include_constraints=result.program is ProgramVariant.TIGHT)
    return max(residuals.values())


def _disagreements(rows: list[SolverRow], count: int, tolerance: float) -> list[str]:
    """One line per instance where the objectives of the solvers that solved it differ beyond the tolerance."""
    out = []
    for i in range(count):
        values = {(r.backend, r.solver): r.objectives[i] for r in rows if r.compared and r.solved(i)}
        if len(values) < 2:
            continue
        low, high = min(values.values()), max(values.values())
        if high - low > tolerance * max(1.0, abs(high)):
            spread = ", ".join(f"{b}/{s}={v:.9g}" for (b, s), v in values.items())
            out.append(f"instance {i}: objectives differ by {high - low:.2e} ({spread})")
    return out

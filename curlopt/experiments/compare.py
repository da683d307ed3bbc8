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
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.registry import backend_class, get_backend, installed_backends
from ..errors import CurloptError, UnsupportedUtilityError, UtilityCodeError
from ..models.cmdp import CMDP
from ..programs.occupancy import OccupancyProgram
from ..programs.optimistic import OptimisticProgram
from ..programs.blocks import Program
from ..programs.tightness import tightness
from ..backends.results import ProgramVariant, Status
from .simulation.loop import ChainSimulator

__all__ = ["PROGRAMS", "SolverRow", "ComparisonReport", "compare_solvers", "program_instances", "check_tolerance"]

PROGRAMS = ("optimum", "optimistic", "sampled")


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

    def status_summary(self) -> str:
        if self.error:
            return "refused" if self.error.startswith("refused") else "error"
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
    """All rows, and the instances on which solvers disagree beyond the tolerance."""

    program: str
    instances: int
    rows: list[SolverRow]
    tolerance: float
    disagreements: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "instances": self.instances, "tolerance": self.tolerance,
                "rows": [r.to_dict() for r in self.rows], "disagreements": self.disagreements}

    def table(self) -> str:
        header = ("backend", "solver", "status", "mean objective", "max residual", "mean time", "max time", "iterations")
        lines = []
        for row in self.rows:
            d = row.to_dict()
            ok = [o for o, s in zip(row.objectives, row.statuses) if Status(s).has_solution and math.isfinite(o)]
            lines.append((
                row.backend, row.solver, d["status"],
                f"{np.mean(ok):.9g}" if ok else "-",
                f"{d['max_residual']:.1e}" if d["max_residual"] is not None else "-",
                f"{1e3 * d['mean_time']:.2f} ms" if d["mean_time"] is not None else "-",
                f"{1e3 * d['max_time']:.2f} ms" if d["max_time"] is not None else "-",
                f"{d['mean_iterations']:.1f}" if d["mean_iterations"] is not None else "-",
            ))
        widths = [max(len(str(x)) for x in column) for column in zip(header, *lines)]
        out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths))]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in lines]
        for row in self.rows:
            if row.error or row.failure:
                out.append(f"{row.backend}/{row.solver}: {row.error or row.failure}")
        return "\n".join(out)


def _simulate_counts(model: CMDP, steps: int, snapshots: int, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """Counts of a fixed random policy's run, taken at ``snapshots`` log-spaced times.

    The run is the learning loop's own simulator (:class:`~curlopt.experiments.simulation.loop.ChainSimulator`),
    with action and transition streams spawned from ``rng``.
    """
    S, A = model.n_states, model.n_actions
    policy = rng.dirichlet(np.ones(A), size=S)
    simulator = ChainSimulator(model.kernel, *rng.spawn(2))
    times = np.unique(np.geomspace(max(10, S * A), steps, snapshots).astype(int))
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
    if model.kernel is None:
        raise CurloptError(f"model {model.name!r} has no kernel to simulate from.")
    if not isinstance(epochs, int) or epochs < 1:
        raise CurloptError(f"epochs must be an integer >= 1, got {epochs!r}.")
    if program == "optimum":
        return OccupancyProgram, [{"kernel": model.kernel, "epsilon": 0.0}]
    rng = np.random.default_rng(seed)
    snapshots = _simulate_counts(model, steps=2_000 * epochs, snapshots=epochs, rng=rng)
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
        Number of instances (``optimum`` has one).
    seed : int
        Seed of the simulated run and the posterior samples.
    tolerance : float
        Relative tolerance beyond which objectives are reported as disagreeing.
    backends : list of str, optional
        Restrict to these backends (default: every installed one).

    Raises
    ------
    CurloptError
        For a tolerance that is not a finite number >= 0 (NaN would silence every disagreement).
    """
    tolerance = check_tolerance(tolerance)
    cls, instances = program_instances(model, program, epochs, seed)
    names = installed_backends() if backends is None else backends
    rows: list[SolverRow] = []
    for name in names:
        for label, options in backend_class(name).solver_variants():
            row = SolverRow(name, label)
            rows.append(row)
            try:
                compiled = get_backend(name, **options).compile(cls(model, **instances[0]))
            except UnsupportedUtilityError as exc:
                row.error = f"refused: {exc}"
                continue
            except CurloptError as exc:
                row.error = str(exc)
                continue
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
    return ComparisonReport(program, len(instances), rows, tolerance, _disagreements(rows, len(instances), tolerance))


def _residual(program: Program, result) -> float:
    if not result.status.has_solution or result.x is None:
        return math.nan
    residuals = program.residuals(result.x, include_constraints=result.program is ProgramVariant.TIGHT)
    return max(residuals.values())


def _disagreements(rows: list[SolverRow], count: int, tolerance: float) -> list[str]:
    out = []
    for i in range(count):
        values = {(r.backend, r.solver): r.objectives[i] for r in rows
                  if not r.error and Status(r.statuses[i]).has_solution and math.isfinite(r.objectives[i])}
        if len(values) < 2:
            continue
        low, high = min(values.values()), max(values.values())
        if high - low > tolerance * max(1.0, abs(high)):
            spread = ", ".join(f"{b}/{s}={v:.9g}" for (b, s), v in values.items())
            out.append(f"instance {i}: objectives differ by {high - low:.2e} ({spread})")
    return out

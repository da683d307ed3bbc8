"""The comparison's report: the rows side by side, the instances every compared solver solved, the disagreements
beyond the tolerance, each row's gap to the most accurate answer, and the table with its explanation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .rows import SolverRow, _memory

__all__ = ["APPROXIMATE_SOLVERS", "INTERIOR_POINT_SOLVERS", "CONSENSUS_TOLERANCE", "ComparisonReport"]

#: solvers whose answer is accurate to a tolerance well above the exact solvers' (never the gap's reference while
#: an exact one finished), with why
APPROXIMATE_SOLVERS: dict[tuple[str, str], str] = {
    ("cvxpy", "SCS"): "a first-order conic solver (SCS), accurate to its ~1e-4..1e-6 tolerances",
    ("mdp-columns", "mdp-columns"): "column generation, stopped at a certified optimality gap (1e-8 relative by"
                                    " default)",
}

#: exact solvers that stop at an interior point (no crossover to a vertex): accurate to their own tolerances
#: (measured: Ipopt 1e-11..1e-5 below the optimum where simplex solvers agree to 1e-15), so one is the reference
#: only when no vertex solver agrees with more of the others
INTERIOR_POINT_SOLVERS: dict[tuple[str, str], str] = {
    ("cvxpy", "CLARABEL"): "an interior-point conic solver (Clarabel)",
    ("pyomo", "cyipopt-bridge"): "an interior-point nonlinear solver (Ipopt)",
}

#: two exact solvers agree when their objectives differ by at most this, relative (``max(1, |objective|)``), on
#: every instance both solved: the reference is the answer the most others agree with
CONSENSUS_TOLERANCE = 1e-9


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
    isolated : bool
        Each row ran in its own child process.
    isolation : str
        Why the rows ran where they did (asked, or the size that decided it).
    time_limit : float or None
        Seconds per solve given to every backend (its ``time_limit`` option).
    margin : float or None
        The wall-clock guard's margin past ``time_limit`` (isolated runs with a time limit only).
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
    isolated: bool = False
    isolation: str = ""
    time_limit: float | None = None
    margin: float | None = None

    def to_dict(self) -> dict[str, Any]:
        reference, why = self.reference()
        rows = []
        for row in self.rows:
            entry = row.to_dict()
            entry["mean_objective"] = self.mean_objective(row)
            entry["gap"] = self.gap(row)
            rows.append(entry)
        return {"program": self.program, "instances": self.instances, "requested": self.requested,
                "tolerance": self.tolerance, "compared_instances": self.common, "dropped": self.dropped,
                "notes": self.notes, "isolated": self.isolated, "isolation": self.isolation,
                "time_limit": self.time_limit, "guard_margin": self.margin,
                "reference": None if reference is None else {
                    "backend": reference.backend, "solver": reference.solver,
                    "max_residual": reference.max_residual(),
                    "approximate": APPROXIMATE_SOLVERS.get((reference.backend, reference.solver)), "why": why},
                "rows": rows, "disagreements": self.disagreements, "answered": self.answered_any(),
                "fallbacks": self._fallback_lines()}

    def mean_objective(self, row: SolverRow) -> float | None:
        """The row's mean objective over :attr:`common` (None when it is not compared or nothing is common)."""
        if not row.compared or not self.common:
            return None
        return float(np.mean([row.objectives[i] for i in self.common]))

    def reference(self) -> tuple[SolverRow | None, str]:
        """The row whose answers the gaps are measured against, and why it was chosen (the package doc).

        The consensus of the exact solvers: among the compared rows not in :data:`APPROXIMATE_SOLVERS`, the one
        the most other exact rows agree with (within :data:`CONSENSUS_TOLERANCE`, relative, on every instance both
        solved); on a tie a vertex (simplex, or interior point with crossover) solver before one in
        :data:`INTERIOR_POINT_SOLVERS`, then the row that solved the most instances, then the smallest residual,
        then the first in the table. An interior-point answer is therefore never the reference over simplex ones
        that agree with each other. An approximate row only when no exact one finished. None when no row was
        compared.
        """
        compared = [r for r in self.rows if r.compared]
        exact = [r for r in compared if (r.backend, r.solver) not in APPROXIMATE_SOLVERS]
        pool = exact or compared
        if not pool:
            return None, "no solver solved an instance"
        agreeing = {id(r): [o for o in pool if o is not r and _agree(r, o)] for r in pool}

        def rank(row: SolverRow) -> tuple:
            residual = row.max_residual()
            return (-len(agreeing[id(row)]), _interior(row), -_solved_count(row),
                    math.inf if residual is None else residual)

        best = min(pool, key=rank)  # min keeps the first of equal ranks: the table's order
        residual = best.max_residual()
        said = f"residual {residual:.1e}" if residual is not None else "no residual"
        if not exact:
            why = APPROXIMATE_SOLVERS[(best.backend, best.solver)]
            return best, f"no exact solver finished; {best.backend}/{best.solver} is approximate: {why} ({said})"
        kind = "an interior-point solver" if _interior(best) else "a vertex (simplex or crossover) solver"
        others = agreeing[id(best)]
        if not others:
            return best, (f"no two exact solvers agree within {CONSENSUS_TOLERANCE:g} (relative); {kind}, the"
                          f" one that solved the most instances with the smallest residual ({said})")
        return best, (f"the consensus of the exact solvers: {len(others) + 1} of {len(exact)} agree within"
                      f" {CONSENSUS_TOLERANCE:g} (relative) on every instance both solved; {kind} among them"
                      f" ({said})")

    def gap(self, row: SolverRow) -> float | None:
        """``|objective - reference| / max(1, |reference|)``, the largest over the instances the row and the
        reference both solved; None without a reference or such an instance."""
        reference, _ = self.reference()
        if reference is None:
            return None
        gaps = [abs(row.objectives[i] - reference.objectives[i]) / max(1.0, abs(reference.objectives[i]))
                for i in range(len(row.statuses)) if row.solved(i) and reference.solved(i)]
        return max(gaps) if gaps else None

    def table(self) -> str:
        header = ("backend", "solver", "status", "mean objective", "gap", "max residual", "compile", "mean time",
                  "max time", "iterations", "peak memory")
        reference, _ = self.reference()
        lines = []
        for row in self.rows:
            d = row.to_dict()
            mean, gap = self.mean_objective(row), self.gap(row)
            lines.append((
                row.backend, row.solver, d["status"],
                f"{mean:.9g}" if mean is not None else "-",
                "reference" if row is reference else f"{gap:.1e}" if gap is not None else "-",
                f"{d['max_residual']:.1e}" if d["max_residual"] is not None else "-",
                _seconds(row.compile_time), _seconds(d["mean_time"]), _seconds(d["max_time"]),
                f"{d['mean_iterations']:.1f}" if d["mean_iterations"] is not None else "-",
                _memory(row),
            ))
        widths = [max(len(str(x)) for x in column) for column in zip(header, *lines, strict=True)]
        out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths, strict=True)).rstrip()]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in lines]
        return "\n".join(out + self.explanation())

    def explanation(self) -> list[str]:
        """The lines under the table: what the means are over, agreement, the gap's reference, where the rows
        ran, notes, and each row's trouble."""
        out = [self._means_line()] + [f"  dropped {line}" for line in self.dropped]
        idle = [f"{r.backend}/{r.solver}" for r in self.rows if r.ran and not r.compared]
        if idle:
            out.append(f"left out of the means: {', '.join(idle)} (solved no instance).")
        out += self._fallback_lines()
        if self.disagreements:
            out.append(f"DISAGREEMENT beyond {self.tolerance:g} (relative) on {len(self.disagreements)} instance(s):")
            out += [f"  {line}" for line in self.disagreements]
        elif sum(1 for r in self.rows if r.compared) >= 2:
            out.append(f"agreement: on every instance, the solvers that solved it agree within {self.tolerance:g}"
                       " (relative: high - low <= tolerance * max(1, |high|)).")
        reference, why = self.reference()
        if reference is not None:
            out.append(f"gap: |objective - reference| / max(1, |reference|), the largest over the instances both"
                       f" solved; reference {reference.backend}/{reference.solver}, {why}.")
        out += self._where_lines()
        out += [f"note: {note}" for note in self.notes]
        # one line per distinct trouble: a program refused by its size check is the same for every row
        troubles: dict[str, list[str]] = {}
        for row in self.rows:
            text = row.error or row.failure
            if text:
                troubles.setdefault(text, []).append(f"{row.backend}/{row.solver}")
        out += [f"{', '.join(names)}: {text}" for text, names in troubles.items()]
        out += [f"{r.backend}/{r.solver}: solved by {r.solved_by}" for r in self.rows if "delegated" in r.solved_by]
        return out

    def _fallback_lines(self) -> list[str]:
        """One line per set of instances some rows answered with the fallback program, with how far off it is."""
        groups: dict[tuple[int, ...], list[SolverRow]] = {}
        for row in self.rows:
            if row.ran and row.fallbacks():
                groups.setdefault(tuple(row.fallbacks()), []).append(row)
        out = []
        for instances, rows in groups.items():
            names = ", ".join(f"{r.backend}/{r.solver}" for r in rows)
            violations = [v for v in (r.max_violation() for r in rows) if v is not None]
            by = f": max_m g_m(ζ) up to {max(violations):.3g}" if violations else ""
            out.append(f"FALLBACK: {names} on instance(s) {', '.join(map(str, instances))} of {self.instances}: the"
                       " ε-tight program was infeasible, so the solver answered the program without the constraint"
                       f" rows (its point violates the constraints{by}); left out of the means, the agreement check"
                       " and the gaps.")
        return out

    def answered_any(self) -> bool:
        """Whether any row answered any instance: solved it, or found its ε-tight program infeasible (answered by
        the fallback, or infeasible outright) or unbounded: an answer about the program, unlike a time limit, an
        error, a refusal or a row not installed."""
        return any(row.ran and any(row.answered(i) for i in range(len(row.statuses))) for row in self.rows)

    def nothing_solved(self) -> str:
        """Why no row answered an instance, in one line ("" when one did): what each row's ending was."""
        if self.answered_any():
            return ""
        endings: dict[str, list[str]] = {}
        for row in self.rows:
            endings.setdefault(row.status_summary(), []).append(f"{row.backend}/{row.solver}")
        said = "; ".join(f"{', '.join(names)}: {ending}" for ending, names in endings.items())
        return f"no solver solved any instance of the {self.program} program ({said})."

    def _where_lines(self) -> list[str]:
        out = [f"isolation: {self.isolation}" if self.isolation else
               ("isolation: each backend and solver ran in its own child process." if self.isolated else
                "isolation: every backend and solver ran in this process.")]
        if self.isolated:
            out.append("peak memory: the child process's peak resident set (its own: interpreter, imports, the model,"
                       " the program and the solver); '>=' marks a child lost before its last report.")
        if self.time_limit is not None:
            guard = (f"; a child still in one stage (compiling, or one solve) {self.time_limit + self.margin:g} s after"
                     f" it began (the limit + a {self.margin:g} s margin) is killed" if self.margin is not None else "")
            out.append(f"time limit: {self.time_limit:g} s per solve (the backends' time_limit option){guard}.")
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


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{1e3 * value:.2f} ms" if value < 1.0 else f"{value:.2f} s"


def _common_instances(rows: list[SolverRow], count: int) -> tuple[list[int], list[str]]:
    """The instances every compared row solved, and a line per other instance naming who did not solve it."""
    compared = [r for r in rows if r.compared]
    common, dropped = [], []
    for i in range(count):
        missing = [f"{r.backend}/{r.solver} {r.outcome(i)}" for r in compared if not r.solved(i)]
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


def _interior(row: SolverRow) -> bool:
    return (row.backend, row.solver) in INTERIOR_POINT_SOLVERS


def _solved_count(row: SolverRow) -> int:
    return sum(row.solved(i) for i in range(len(row.statuses)))


def _agree(one: SolverRow, other: SolverRow) -> bool:
    """Whether two rows' objectives agree within :data:`CONSENSUS_TOLERANCE` on every instance both solved (and
    they solved at least one in common)."""
    both = [i for i in range(min(len(one.statuses), len(other.statuses))) if one.solved(i) and other.solved(i)]
    return bool(both) and all(
        abs(one.objectives[i] - other.objectives[i]) <= CONSENSUS_TOLERANCE * max(1.0, abs(one.objectives[i]),
                                                                                   abs(other.objectives[i]))
        for i in both)

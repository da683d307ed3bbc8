"""The conformance checks of the episodic and discounted programs (registered in :mod:`curlopt.testing.conformance`).

Checks, each on random small models drawn from the suite's seed (``S <= 4``, ``A <= 3``, ``H <= 4``), against the
independent LPs of :mod:`curlopt.testing.episodic_reference`:

``optimum/<kind>/<objective>``
    The result's status, variant and objective equal the reference's, and every row holds at the result's arrays
    (checked with numpy from the formulas: the initial and flow rows, for the extended program the link rows and
    its confidence set, and the constraint rows when ε-tight).
``fallback/<kind>/<objective>``
    ε beyond the largest feasible tightness: the labelled fallback, optimal without constraint rows.
``update/<kind>/<objective>``
    Compile once, solve, then push new data with ``program.update`` (kernels or estimate and radius, signals, ε)
    twice: each re-solve equals the reference on the new data.

Kinds: ``episodic-occupancy``, ``episodic-entry`` and ``episodic-l1`` (the extended program with per-entry or L1
confidence sets) and ``discounted``. Objectives: ``linear`` (required) and ``piecewise`` (a max-min objective and
constraints of two pieces; a backend may decline them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import episodic_reference as ref

__all__ = ["EPISODIC_KINDS", "EPISODIC_OBJECTIVES", "EpisodicCase", "draw_episodic_case", "episodic_checks"]

#: the program kinds these checks cover
EPISODIC_KINDS = ("episodic-occupancy", "episodic-entry", "episodic-l1", "discounted")
#: the objectives: ``linear`` is required of every backend
EPISODIC_OBJECTIVES = ("linear", "piecewise")


def _kernels(rng: np.random.Generator, S: int, A: int, count: int) -> list[np.ndarray]:
    return [rng.dirichlet(np.full(S, 0.7), size=(S, A)) for _ in range(count)]


@dataclass
class EpisodicCase:
    """One drawn instance: the model's data and the data the program is built (or updated) with."""

    seed: int
    kind: str
    objective: str
    S: int
    A: int
    H: int
    mu: np.ndarray
    model_kernels: list[np.ndarray]
    rewards: np.ndarray          # (H, K, S, A) (discounted: (K, S, A))
    costs: np.ndarray            # (H, d, S, A) (discounted: (d, S, A))
    objective_pieces: tuple[np.ndarray, np.ndarray]
    constraint_pieces: list[tuple[np.ndarray, np.ndarray]]
    epsilon: float
    kernels: list[np.ndarray] = field(default_factory=list)   # the program's kernels or estimates, per transition
    radii: list[np.ndarray] = field(default_factory=list)
    gamma: float = 0.9

    def __repr__(self) -> str:
        return (f"EpisodicCase(seed={self.seed}, kind={self.kind!r}, objective={self.objective!r}, S={self.S},"
                f" A={self.A}, H={self.H}, ε={self.epsilon:.6g})")

    # -- the model and the program -----------------------------------------------------------------------------------
    def utilities(self) -> tuple[Any, list[Any]]:
        from ..utilities.library import Linear, MaxOfLinear, MinOfLinear

        W, c = self.objective_pieces
        f = Linear(W[0], offset=float(c[0])) if W.shape[0] == 1 else MinOfLinear(W, c)
        return f, [MaxOfLinear(Wm, -cm) for Wm, cm in self.constraint_pieces]

    def model(self) -> Any:
        from ..models.cmdp import CMDP
        from ..models.episodic import EpisodicCMDP

        f, g = self.utilities()
        if self.kind == "discounted":
            return CMDP(self.rewards, self.costs, f, g, kernel=self.model_kernels[0], initial=self.mu)
        kernel = self.model_kernels if len(self.model_kernels) > 1 else self.model_kernels[0]
        return EpisodicCMDP(self.rewards, self.costs, f, g, kernel=kernel, initial=self.mu, horizon=self.H)

    def program(self) -> Any:
        from ..programs.discounted import DiscountedOccupancyProgram
        from ..programs.episodic import EpisodicExtendedProgram, EpisodicOccupancyProgram

        model = self.model()
        if self.kind == "discounted":
            return DiscountedOccupancyProgram(model, discount=self.gamma, kernel=self.kernels[0], epsilon=self.epsilon)
        if self.kind == "episodic-occupancy":
            return EpisodicOccupancyProgram(model, kernels=self._per_step(self.kernels), epsilon=self.epsilon)
        return EpisodicExtendedProgram(model, kernel=self._per_step(self.kernels), radius=self._per_step(self.radii),
                                       confidence=self.kind.split("-")[1], epsilon=self.epsilon)

    def _per_step(self, items: list[np.ndarray]) -> Any:
        return items[0] if self.H <= 1 else items[: self.H - 1]

    def update_data(self) -> dict[str, Any]:
        """The keywords of ``program.update`` that set this case's data."""
        if self.kind == "discounted":
            return {"kernel": self.kernels[0], "epsilon": self.epsilon}
        data: dict[str, Any] = {"rewards": self.rewards, "costs": self.costs, "epsilon": self.epsilon}
        if self.kind == "episodic-occupancy":
            data["kernels"] = self._per_step(self.kernels)
        else:
            data["kernel"], data["radius"] = self._per_step(self.kernels), self._per_step(self.radii)
        return data

    # -- the reference -----------------------------------------------------------------------------------------------
    def polytope(self) -> ref.Polytope:
        if self.kind == "discounted":
            return ref.discounted_polytope(self.kernels[0], self.mu, self.gamma)
        if self.kind == "episodic-occupancy":
            return ref.episodic_polytope(self.kernels, self.mu, self.H, self.S, self.A)
        return ref.extended_polytope(self.kernels, self.radii, self.kind.split("-")[1], self.mu, self.H, self.S,
                                     self.A)

    def reference(self, with_constraints: bool = True) -> tuple[bool, float | None]:
        return ref.solve_pieces(self.polytope(), self.rewards, self.costs, self.objective_pieces,
                                self.constraint_pieces, self.epsilon, with_constraints)

    def margin(self) -> float:
        """The largest feasible tightness minus ε (razor-thin when near 0)."""
        return ref.max_tightness(self.polytope(), self.costs, self.constraint_pieces) - self.epsilon


def _data(rng: np.random.Generator, case: EpisodicCase) -> dict[str, Any]:
    """Fresh program data for ``case``'s kind: kernels or estimates and radii, signals, ε."""
    S, A, H = case.S, case.A, case.H
    T = max(H - 1, 1)
    per_step = bool(rng.uniform() < 0.5)
    count = T if per_step else 1
    kernels = _kernels(rng, S, A, count)
    kernels = kernels if per_step else kernels * T
    out: dict[str, Any] = {"kernels": kernels, "epsilon": float(rng.choice([0.0, rng.uniform(0.0, 0.1)]))}
    if case.kind in ("episodic-entry", "episodic-l1"):
        shape = (S, A, S) if case.kind == "episodic-entry" else (S, A)
        radii = [rng.uniform(0.02, 0.3 if case.kind == "episodic-entry" else 0.8, size=shape) for _ in range(count)]
        out["radii"] = radii if per_step else radii * T
    if case.kind != "discounted":
        K, d = case.rewards.shape[1], case.costs.shape[1]
        out["rewards"] = rng.uniform(0.1, 1.0, size=(H, K, S, A))
        out["costs"] = rng.uniform(0.0, 1.0, size=(H, d, S, A))
    return out


def draw_episodic_case(seed: int, kind: str, objective: str = "linear") -> EpisodicCase:
    """A random case of ``kind`` (module docstring) from ``seed``."""
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    H = 1 if kind == "discounted" else int(rng.integers(1, 5))
    K = 1 if objective == "linear" else 2
    d = int(rng.integers(1, 3))
    scale = 1.0 if kind == "discounted" else float(H)
    if objective == "linear":
        objective_pieces = (rng.uniform(0.5, 1.5, size=(1, K)), np.zeros(1))
        constraint_pieces = [(np.eye(d)[[m]], -np.array([scale * rng.uniform(0.2, 0.8)])) for m in range(d)]
    else:
        objective_pieces = (np.diag(rng.uniform(0.5, 1.5, size=K)), rng.uniform(-0.2, 0.2, size=K))
        constraint_pieces = [(rng.uniform(0.2, 1.0, size=(2, d)), -scale * rng.uniform(0.3, 1.0, size=2))
                             for _ in range(d)]
    signal_shape = (K, S, A) if kind == "discounted" else (H, K, S, A)
    cost_shape = (d, S, A) if kind == "discounted" else (H, d, S, A)
    model_kernels = _kernels(rng, S, A, 1 if kind == "discounted" else max(H - 1, 1))
    case = EpisodicCase(seed, kind, objective, S, A, H, rng.dirichlet(np.ones(S)), model_kernels,
                        rng.uniform(0.1, 1.0, size=signal_shape), rng.uniform(0.0, 1.0, size=cost_shape),
                        objective_pieces, constraint_pieces, 0.0, gamma=float(rng.choice([0.5, 0.9, 0.99])))
    data = _data(rng, case)
    data.pop("rewards", None)
    data.pop("costs", None)
    return replace(case, **data)


def next_episodic_data(rng: np.random.Generator, case: EpisodicCase) -> EpisodicCase:
    """``case`` with new program data (what an agent pushes between episodes)."""
    return replace(case, **_data(rng, case))


# ----------------------------------------------------------------------------
# Checking a result
# ----------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def check_episodic_solution(case: EpisodicCase, result: Any, tight: bool, tol: float) -> None:
    """Every row of ``case``'s program holds at the result's arrays (numpy, from the formulas)."""
    q = np.asarray(result.occupancy, dtype=float)
    _require(q.min() >= -tol, f"a negative occupancy {q.min():.3g}")
    if case.kind == "discounted":
        flow = q.sum(axis=1) - case.gamma * np.einsum("sat,sa->t", case.kernels[0], q) - (1 - case.gamma) * case.mu
        _require(np.abs(flow).max() <= tol, f"the discounted flow rows are off by {np.abs(flow).max():.3g}")
        costs = np.einsum("ksa,sa->k", case.costs, q)
    else:
        _require(q.shape == (case.H, case.S, case.A), f"occupancy of shape {q.shape}, not (H, S, A)")
        _require(np.abs(q[0].sum(axis=1) - case.mu).max() <= tol, "the initial rows do not hold")
        joint = None if case.kind == "episodic-occupancy" else np.asarray(result.joint, dtype=float)
        for h in range(case.H - 1):
            if joint is None:
                moved = np.einsum("sat,sa->t", case.kernels[h], q[h])
            else:
                z = joint[h]
                _require(np.abs(z.sum(axis=2) - q[h]).max() <= tol, f"the link rows of step {h} do not hold")
                moved = z.sum(axis=(0, 1))
                gap = np.abs(z - case.kernels[h] * q[h][:, :, None])
                excess = (gap - case.radii[h] * q[h][:, :, None] if case.kind == "episodic-entry"
                          else gap.sum(axis=2) - case.radii[h] * q[h])
                _require(excess.max() <= tol, f"the joint of step {h} leaves its confidence set by {excess.max():.3g}")
            _require(np.abs(q[h + 1].sum(axis=1) - moved).max() <= tol, f"the flow rows of step {h} do not hold")
        costs = np.einsum("hksa,hsa->k", case.costs, q)
    _require(np.allclose(np.asarray(result.costs), costs, atol=tol, rtol=0), "ζ is not the totals of the costs")
    if tight:
        worst = max(float(np.max(Wm @ costs + cm)) for Wm, cm in case.constraint_pieces) + case.epsilon
        _require(worst <= tol, f"a constraint row is violated by {worst:.3g}")


def _check_result(case: EpisodicCase, result: Any, backend: Any, settings: Any, where: str) -> None:
    from ..backends.results import ProgramVariant, Status

    tight = case.margin() > 0
    feasible, value = case.reference(with_constraints=tight)
    _require(feasible and value is not None, f"{where}the reference found the program infeasible (a suite bug)")
    _require(result.status.has_solution, f"{where}status {result.status.value}: {result.message}")
    variant = ProgramVariant.TIGHT if tight else ProgramVariant.FALLBACK
    _require(result.program is variant, f"{where}{result.program.value} program, the reference says {variant.value}"
             f" ({result.message})")
    _require(result.tight_status is (Status.OPTIMAL if tight else Status.INFEASIBLE),
             f"{where}tight_status {result.tight_status.value}")
    slack = settings.tol.slack(value)
    _require(abs(result.objective - value) <= slack, f"{where}objective {result.objective!r} != reference {value!r}"
             f" (difference {result.objective - value:.3g}, allowed {slack:.3g})")
    check_episodic_solution(case, result, tight, settings.tol.feasibility)


# ----------------------------------------------------------------------------
# The checks
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Suite:
    """What the suite lends its checks (passed in, so that this module does not import the suite): how a check
    draws its seeds, and the exception that skips it."""

    seed: Callable[[Any, str, int], int]
    skip: type[Exception]


def _clear(suite: _Suite, settings: Any, name: str, example: int, kind: str, objective: str) -> EpisodicCase:
    for attempt in range(50):
        case = draw_episodic_case(suite.seed(settings, name, example * 50 + attempt), kind, objective)
        if abs(case.margin()) > settings.tol.margin:
            return case
    raise AssertionError(f"no case clear of the feasibility boundary in 50 draws (a suite bug); last {case!r}")


def _compile(suite: _Suite, backend: Any, case: EpisodicCase, required: bool) -> tuple[Any, Any]:
    from ..errors import UnsupportedUtilityError

    program = case.program()
    declines = [u for u in (program.objective, *program.constraints) if not backend.accepts(u)]
    try:
        compiled = backend.compile(program)
    except UnsupportedUtilityError as exc:
        if declines and not required:
            raise suite.skip(f"the backend declines {type(declines[0]).__name__} (accepts() is False)") from exc
        raise AssertionError(f"compile() refused {case!r}: {exc}") from exc
    if declines:
        raise AssertionError(f"accepts() declines {declines[0]!r} but compile() took it")
    return program, compiled


def _optimum(suite: _Suite, backend: Any, settings: Any, name: str, kind: str, objective: str) -> str:
    for example in range(settings.examples):
        case = _clear(suite, settings, name, example, kind, objective)
        _, compiled = _compile(suite, backend, case, objective == "linear")
        _check_result(case, compiled.solve(), backend, settings, f"{case!r}: ")
    return f"{settings.examples} random cases"


def _fallback(suite: _Suite, backend: Any, settings: Any, name: str, kind: str, objective: str) -> str:
    from ..backends.results import ProgramVariant

    for example in range(settings.examples):
        case = draw_episodic_case(suite.seed(settings, name, example), kind, objective)
        epsilon_max = case.margin() + case.epsilon
        excess = float(np.random.default_rng(case.seed).uniform(1e-3, 0.5))
        case = replace(case, epsilon=max(0.0, epsilon_max) + excess)
        _, compiled = _compile(suite, backend, case, objective == "linear")
        result = compiled.solve()
        where = f"{case!r} (ε_max {epsilon_max:.6g}): "
        _check_result(case, result, backend, settings, where)
        _require(result.program is ProgramVariant.FALLBACK and result.fell_back and "infeasible" in result.message,
                 f"{where}the fallback is not labelled: fell_back={result.fell_back}, message {result.message!r}")
    return f"{settings.examples} random cases"


def _update(suite: _Suite, backend: Any, settings: Any, name: str, kind: str, objective: str) -> str:
    steps = 2
    for example in range(settings.examples):
        case = _clear(suite, settings, name, example, kind, objective)
        program, compiled = _compile(suite, backend, case, objective == "linear")
        compiled.solve()  # the first solve leaves state (basis, warm start) that the updates must not corrupt
        rng = np.random.default_rng(case.seed)
        for step in range(1, steps + 1):
            for _ in range(50):  # redraw razor-thin data
                new = next_episodic_data(rng, case)
                if abs(new.margin()) > settings.tol.margin:
                    break
            case = new
            program.update(**case.update_data())
            _check_result(case, compiled.solve(), backend, settings, f"{case!r}, after update {step}: ")
    return f"{settings.examples} random cases, {steps} updates each"


def episodic_checks(seed: Callable[[Any, str, int], int], skip: type[Exception]) -> dict[str, Callable[..., str]]:
    """The checks by name (``family/kind/objective``), each called as ``check(backend, settings, name)``.

    Parameters
    ----------
    seed : callable
        ``seed(settings, check name, example)``: the suite's seed of one example of one check.
    skip : exception class
        Raised (with the reason) when a backend declines an optional utility: the suite reports the check skipped.
    """
    suite = _Suite(seed, skip)
    checks: dict[str, Callable[..., str]] = {}
    for family, function in (("optimum", _optimum), ("fallback", _fallback), ("update", _update)):
        for kind in EPISODIC_KINDS:
            for objective in EPISODIC_OBJECTIVES:
                checks[f"{family}/{kind}/{objective}"] = (
                    lambda backend, settings, name, f=function, k=kind, o=objective: f(suite, backend, settings, name,
                                                                                         k, o))
    return checks

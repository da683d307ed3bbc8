"""How a backend takes a program: its declared table of program types (``COMPILES``, along the type's MRO) and the
backends it hands the others to (``DELEGATES``). A new program type needs no backend code: the toy program below is
defined here and solved on every installed LP backend."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import curlopt.backends.base as base
from curlopt.backends import get_backend, installed_backends
from curlopt.backends.base import DelegatedProgram, exactly
from curlopt.backends.highs.backend import CompiledHighs, HighsBackend
from curlopt.backends.highs.box_columns import BoxColumnsBackend
from curlopt.backends.highs.columns import ColumnsBackend, CompiledColumns
from curlopt.backends.mdp.backend import CompiledMdpColumns, MdpColumnsBackend
from curlopt.backends.results import Status
from curlopt.errors import BackendError
from curlopt.models import random_model
from curlopt.programs import OccupancyProgram, OptimisticProgram, Program, SafeProgram

#: every backend that solves linear programs, as the registry names them
LP_BACKENDS = ["highs", "scipy", "cvxpy", "pyomo", "highs-columns", "highs-box-columns", "mdp-columns"]


class CappedMixProgram(Program):
    """A program type no backend knows: choose a distribution ρ over the pairs (no flow rows, so no chain), with
    every pair capped at ``cap`` and the pairs of state 0 together at most ``first_state``."""

    kind = "capped-mix"

    def __init__(self, model, cap: float, first_state: float):
        S, A = model.n_states, model.n_actions
        super().__init__(model, [("occupancy", (S, A))])
        rho = self.blocks["occupancy"].indices()
        lin = self.linear
        lin.add("mass", 1, np.zeros(S * A), rho.ravel(), 1.0, 1.0, 1.0)
        lin.add("caps", S * A, np.arange(S * A), rho.ravel(), 1.0, -np.inf, cap)
        lin.add("first state", 1, np.zeros(A), rho[0], 1.0, -np.inf, first_state)
        lin.finish()


class OccupancyWithARow(OccupancyProgram):
    """A subclass that could add rows a column-generation master would not know of."""


def _reference(model, cap: float, first_state: float) -> float:
    """The toy program's optimum by scipy's linprog on rows written out here."""
    S, A = model.n_states, model.n_actions
    reward = model.rewards[0].ravel()
    (w,), (c,) = model.constraints[0].affine_pieces()
    cost = w[0] * model.costs[0].ravel()
    first = np.zeros(S * A)
    first[:A] = 1.0
    res = linprog(-reward, A_ub=np.vstack([cost, first]), b_ub=[-c, first_state],
                  A_eq=np.ones((1, S * A)), b_eq=[1.0], bounds=[(0.0, cap)] * (S * A), method="highs")
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("name", LP_BACKENDS)
def test_a_new_program_type_is_solved_on_every_lp_backend_without_backend_code(name):
    if name not in installed_backends():
        pytest.skip(f"{name} is not installed")
    model = random_model(4, 3, seed=11)
    program = CappedMixProgram(model, cap=0.2, first_state=0.1)
    result = get_backend(name).compile(program).solve()
    assert result.status is Status.OPTIMAL, result.message
    assert result.backend == name
    assert result.objective == pytest.approx(_reference(model, 0.2, 0.1), abs=1e-6)
    assert result.occupancy.sum() == pytest.approx(1.0, abs=1e-6)
    assert result.occupancy[0].sum() <= 0.1 + 1e-6


def test_the_table_is_read_along_the_program_types_mro():
    assert HighsBackend.compiled_form(CappedMixProgram) is not None        # the entry for Program
    assert ColumnsBackend.compiled_form(CappedMixProgram) is None           # only OptimisticProgram itself
    assert ColumnsBackend.compiled_form(OptimisticProgram) is not None
    assert BoxColumnsBackend.compiled_form(OptimisticProgram) is not None   # inherited with highs-columns's table
    assert MdpColumnsBackend.compiled_form(SafeProgram) is not None
    # an exact entry does not take the type's subclasses: they go on to the delegate
    assert MdpColumnsBackend.compiled_form(OccupancyWithARow) is None
    assert HighsBackend.compiled_form(OccupancyWithARow) is not None


def test_what_the_column_backends_do_not_compile_they_hand_to_their_delegate():
    model = random_model(4, 3, seed=2)
    own = get_backend("mdp-columns").compile(OccupancyProgram(model))
    assert isinstance(own, CompiledMdpColumns)
    assert isinstance(get_backend("highs-columns").compile(OptimisticProgram(model)), CompiledColumns)
    for name in ("highs-columns", "highs-box-columns", "mdp-columns"):
        compiled = get_backend(name).compile(OccupancyWithARow(model))
        assert isinstance(compiled, DelegatedProgram) and isinstance(compiled.inner, CompiledHighs)
        assert compiled.delegate.name == "highs"
        result = compiled.solve()
        assert result.backend == name
        assert result.solver.endswith("(the OccupancyWithARow is delegated to the highs backend)")
        assert result.objective == pytest.approx(get_backend("highs").solve(OccupancyProgram(model)).objective,
                                                 abs=1e-8)


def test_the_delegate_is_built_with_the_backends_own_settings():
    backend = get_backend("highs-columns", options={"presolve": "off"}, time_limit=7.0)
    delegate = backend.delegate(OccupancyProgram(random_model(3, 2)))
    assert isinstance(delegate, HighsBackend)
    assert delegate.time_limit == 7.0 and delegate.options["presolve"] == "off"
    assert backend.delegate(OccupancyProgram(random_model(3, 2, seed=1))) is delegate  # built once


def test_a_backend_without_a_delegate_refuses_what_it_does_not_compile():
    class OccupancyOnly(HighsBackend):
        name = "occupancy-only"
        COMPILES = {OccupancyProgram: exactly(CompiledHighs)}

    model = random_model(3, 2)
    assert isinstance(OccupancyOnly().compile(OccupancyProgram(model)), CompiledHighs)
    with pytest.raises(BackendError, match="does not compile the CappedMixProgram"):
        OccupancyOnly().compile(CappedMixProgram(model, cap=0.5, first_state=0.5))


def test_a_delegated_solve_hands_its_deadline_to_the_delegate():
    compiled = get_backend("mdp-columns", time_limit=5.0).compile(OccupancyWithARow(random_model(4, 2)))
    seen = {}
    solve_inner = compiled.inner._solve

    def spy(with_constraints):
        seen.update(inner=compiled.inner.deadline, outer=compiled.deadline, left=compiled.inner.time_left())
        return solve_inner(with_constraints)

    compiled.inner._solve = spy
    assert compiled.solve().ok
    assert seen["inner"] is not None and seen["inner"] == seen["outer"]
    assert 0 < seen["left"] <= 5.0
    assert compiled.inner.deadline is None  # not left behind after the attempt


def test_a_delegated_solve_stops_at_the_time_limit(monkeypatch):
    compiled = get_backend("highs-columns", time_limit=5.0).compile(OccupancyProgram(random_model(4, 2)))
    readings = iter([0.0, 0.0])  # the solve's start and its check before the attempt; then time has run out
    monkeypatch.setattr(base, "_clock", lambda: next(readings, 100.0))
    result = compiled.solve()
    assert result.status is Status.TIME_LIMIT
    assert "time limit of 5 s" in result.message and "delegated to the highs backend" in result.solver

"""Small kernel entries: a transition probability far below the solvers' default matrix tolerances is part of the
program, and the optimum it makes is found.

HiGHS (also inside ``scipy.optimize.linprog``) drops every matrix entry of magnitude at most its
``small_matrix_value``, 1e-9 by default; curlopt sets it to HiGHS's lowest accepted value, 1e-12, on the HiGHS
model of a program's rows. The model below
puts a 1e-10-scale transition where it decides the optimum, whose exact value is computed here in rational
arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import installed_backend_names

from curlopt import CMDP, Linear, get_backend
from curlopt.optimum import solve_optimum
from curlopt.programs.occupancy import OccupancyProgram

#: the routes that solve the linear program exactly (simplex or value iteration with a simplex master)
EXACT = [name for name in ("highs", "scipy", "highs-columns", "highs-box-columns", "mdp-columns")
         if name in installed_backend_names()]


def rare_transition_model(delta: float, back: float, stay_reward: float) -> CMDP:
    """Two states. In state 0, action 0 (reward 0) moves to state 1 with probability ``delta``; action 1 earns
    ``stay_reward`` and stays. State 1 earns 1 and returns to state 0 with probability ``back``.

    The long-run average reward is ``max(stay_reward, delta / (delta + back))``: action 0 keeps a mass
    ``delta / (delta + back)`` in state 1; action 1 makes state 0 absorbing.
    """
    kernel = np.zeros((2, 2, 2))
    kernel[0, 0] = [1.0 - delta, delta]
    kernel[0, 1] = [1.0, 0.0]
    kernel[1, :] = [back, 1.0 - back]
    rewards = np.array([[[0.0, stay_reward], [1.0, 1.0]]])
    return CMDP(rewards, None, Linear([1.0]), (), kernel=kernel, initial=[1.0, 0.0], name="rare-transition")


def exact_optimum(delta: float, back: float, stay_reward: float) -> Fraction:
    d, b = Fraction(delta), Fraction(back)  # the floats' exact values, as the model holds them
    return max(Fraction(stay_reward), d / (d + b))


@pytest.mark.parametrize("delta, back, stay_reward", [(5e-10, 1e-2, 2.5e-8), (2e-12, 1e-4, 1e-8)])
@pytest.mark.parametrize("backend", EXACT)
def test_a_transition_below_the_default_matrix_tolerance_decides_the_optimum(backend, delta, back, stay_reward):
    """Dropping the entry ``delta`` would make action 0 worthless and give ``stay_reward``, 1e-8 or more below the
    optimum; every exact route lands on the rational optimum to 1e-12."""
    exact = exact_optimum(delta, back, stay_reward)
    assert exact - Fraction(stay_reward) > Fraction(9, 10**9)  # the entry matters at the 1e-8 level
    result = solve_optimum(rare_transition_model(delta, back, stay_reward), backend)
    assert result.status.value == "optimal", result.message
    assert abs(result.objective - float(exact)) < 1e-12, (result.objective, float(exact))


def test_the_highs_model_of_a_program_keeps_entries_down_to_its_lowest_tolerance():
    from curlopt.backends.highs.backend import SMALL_MATRIX_VALUE

    compiled = get_backend("highs").compile(OccupancyProgram(rare_transition_model(5e-10, 1e-2, 2.5e-8)))
    assert compiled.highs.getOptionValue("small_matrix_value")[1] == SMALL_MATRIX_VALUE == 1e-12
    told = get_backend("highs", options={"small_matrix_value": 1e-9}).compile(compiled.program)
    assert told.highs.getOptionValue("small_matrix_value")[1] == 1e-9  # an explicit option wins

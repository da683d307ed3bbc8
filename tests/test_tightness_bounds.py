"""The bounds on ε and K_ε: derived from what every backend represents, refused before a backend sees a value
beyond them (HiGHS read -1e20 as -inf and aborted), and every backend falls back correctly at the largest ε."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from cli_helpers import fresh_process as cli

from curlopt import CMDP, build_model
from curlopt.agents import PsCurl, UcCurl
from curlopt.backends import get_backend, installed_backends
from curlopt.backends.registry import backend_class
from curlopt.backends.results import ProgramVariant, Status
from curlopt.errors import AgentError, ProgramError
from curlopt.optimum import solve_optimum
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.tightness import EPSILON_MAX, TIGHTNESS_CONSTANT_MAX, tightness
from curlopt.utilities.library import Linear, LinearBound

HAS = set(installed_backends())
needs_pyomo = pytest.mark.skipif("pyomo" not in HAS, reason="pyomo backend not installed")


def one_policy_model(reward: float = 1.0, objective=None) -> CMDP:
    """S = A = 1: the only policy has cost 1, and the constraint asks for at most 0.5."""
    return CMDP(rewards=np.full((1, 1, 1), reward), costs=np.ones((1, 1, 1)),
                objective=objective or Linear([1.0]), constraints=[LinearBound([1.0], 0.5)],
                kernel=np.ones((1, 1, 1)))


def test_the_bounds_are_consistent():
    # max over τ >= 1 of sqrt(ln τ / τ) is 1/sqrt(e) (at τ = e): every ε of the schedule stays <= EPSILON_MAX
    taus = np.linspace(1.0, 50.0, 200_001)
    assert np.max(np.sqrt(np.log(taus) / taus)) == pytest.approx(1 / math.sqrt(math.e), rel=1e-9)
    assert TIGHTNESS_CONSTANT_MAX / math.sqrt(math.e) <= EPSILON_MAX
    assert tightness(1.0, TIGHTNESS_CONSTANT_MAX, horizon_lower_bound=math.e) <= EPSILON_MAX
    assert EPSILON_MAX * (1 - 1e-6) < TIGHTNESS_CONSTANT_MAX / math.sqrt(math.e)  # derived, not arbitrary


def test_epsilon_beyond_the_bound_is_refused_before_any_backend_sees_it():
    model = build_model("queue")
    for bad in (EPSILON_MAX * 1.5, 1e20, 1e25):
        with pytest.raises(ProgramError, match=r"epsilon must be at most 1e\+06"):
            OccupancyProgram(model, epsilon=bad)
        with pytest.raises(ProgramError, match="epsilon must be at most"):
            solve_optimum(model, "highs", epsilon=bad)
    program = OccupancyProgram(model)
    compiled = get_backend("highs").compile(program)
    with pytest.raises(ProgramError, match="epsilon must be at most"):
        program.update(epsilon=1e20)
    assert program.epsilon == 0.0 and compiled.solve().program is ProgramVariant.TIGHT  # nothing changed
    with pytest.raises(ProgramError, match="tightness constant must be at most 1648721"):
        tightness(10.0, 1e21)
    for agent in (UcCurl, PsCurl):
        with pytest.raises(AgentError, match=r"tightness_constant \(K_ε\) must be at most 1648721"):
            agent(model, tightness_constant=1e21)
        agent(model, tightness_constant=TIGHTNESS_CONSTANT_MAX)  # the bound itself is fine


def test_cli_refuses_a_huge_epsilon_instead_of_crashing():
    # before: HiGHS read the row bound -1e20 as -inf and the process aborted (heap corruption, exit 134)
    done = cli("optimum", "queue", "--epsilon", "1e20")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: epsilon must be at most 1e+06")
    done = cli("run", "queue", "--tightness", "1e21", "--steps", "50")
    assert done.returncode == 2 and "tightness_constant (K_ε) must be at most" in done.stderr


def test_highs_refuses_a_bound_it_would_read_as_infinite():
    # a constraint constant beyond -1e20 reached HiGHS as a -inf row bound, as ε = 1e20 did (in a subprocess:
    # before the fix HiGHS aborted the process, "munmap_chunk(): invalid pointer")
    code = textwrap.dedent("""
        import numpy as np
        from curlopt import CMDP, build_model
        from curlopt.errors import BackendError
        from curlopt.optimum import solve_optimum
        from curlopt.utilities.library import LinearBound
        queue = build_model("queue")
        model = CMDP(queue.rewards, queue.costs, queue.objective, [LinearBound(np.ones(queue.n_costs), -1e25)],
                     queue.kernel)
        try:
            result = solve_optimum(model, "highs")
            print("solved:", result.status.value, result.program.value)
        except BackendError as exc:
            print("refused:", exc)
    """)
    done = cli(code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: the highs backend cannot represent the program")
    assert "which HiGHS reads as infinite" in done.stdout


@pytest.mark.parametrize("name", sorted(HAS))
def test_every_backend_falls_back_correctly_at_the_largest_epsilon(name):
    # with bounded costs the ε-tight program at ε = EPSILON_MAX cannot hold: each solver of each backend
    # must say so (infeasible), fall back, and label the result
    model = one_policy_model()
    for label, options in backend_class(name).solver_variants():
        result = get_backend(name, **options).compile(OccupancyProgram(model, epsilon=EPSILON_MAX)).solve()
        assert result.tight_status is Status.INFEASIBLE, (label, result.message)
        assert result.status is Status.OPTIMAL and result.program is ProgramVariant.FALLBACK, (label, result.message)
        assert result.epsilon == EPSILON_MAX and "is infeasible" in result.message
        assert result.constraint_values[0] == pytest.approx(0.5, abs=1e-6)


@needs_pyomo
def test_pyomo_never_sees_an_epsilon_beyond_the_bound():
    # before: ε = 1e25 reached Ipopt, which ended in solver_error instead of a fallback
    with pytest.raises(ProgramError, match="epsilon must be at most"):
        solve_optimum(one_policy_model(), "pyomo", epsilon=1e25)

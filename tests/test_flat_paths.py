"""The per-epoch shortcuts of the solve check, the solution reading and the run loop agree bit for bit with the plain
computations they replace, on random programs and points (the plain computations are written out here)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from curlopt.agents.triggers import FixedLengthTrigger
from curlopt.backends.base import CompiledProgram
from curlopt.experiments.simulation.trace import EpochRecord, _record_dict
from curlopt.models.cmdp import policy_kernel, stationary_occupancy
from curlopt.models.random import random_model
from curlopt.programs.blocks import VariableBlock
from curlopt.programs.occupancy import OccupancyProgram
from curlopt.programs.optimistic import BoxOptimisticProgram, OptimisticProgram
from curlopt.programs.policy import (
    VISIT_TOLERANCE,
    extract_policy,
    policy_and_unreached,
    policy_from_occupancy,
    policy_of_clipped,
    unreached_states,
)
from curlopt.utilities.library import LinearBound, MaxOfLinear, MinOfLinear, Utility, onto_domain


def _plain_residuals(program, x, include_constraints=True):
    """Program.residuals group by group, as it was written before its shortcuts (programs without scaled groups)."""
    lower, upper = program.column_bounds()
    out = {"bounds": float(max(0.0, np.maximum.reduce(lower - x), np.maximum.reduce(x - upper)))}
    linear = program.linear
    values = linear.fixed @ x + np.bincount(
        linear.param_rows, weights=linear.param_values * x[linear.param_cols], minlength=linear.n_rows)
    violation = np.maximum(linear.lower - values, values - linear.upper)
    for name, rows in linear.groups.items():
        out[name] = float(max(0.0, violation[rows].max())) if rows.stop > rows.start else 0.0
    if include_constraints and program.constraints:
        costs = program.cost_map @ x
        out["constraints"] = float(max(0.0, max(g.value(costs) + program.epsilon for g in program.constraints)))
    return out


def _programs(seed):
    model = random_model(4, 3, n_costs=2, seed=seed)
    counts = np.random.default_rng(seed).integers(0, 5, (4, 3, 4)).astype(float)
    return [OccupancyProgram(model, epsilon=0.01), OptimisticProgram(model, counts, time=50.0, epsilon=0.02),
            BoxOptimisticProgram(model, 1000.0, counts=counts)]


def _points(program, rng):
    """Random points: ordinary ones, with negative entries and zeros of both signs, and with NaN and infinities."""
    n = program.n_vars
    plain = rng.uniform(0.0, 0.3, n)
    signed = rng.normal(0.0, 0.2, n)
    signed[rng.integers(0, n, 3)] = 0.0
    signed[rng.integers(0, n, 3)] = -0.0
    odd = rng.uniform(-0.1, 0.3, n)
    odd[rng.integers(0, n)] = math.inf
    nan = rng.uniform(0.0, 0.3, n)
    nan[rng.integers(0, n)] = math.nan
    low = rng.uniform(0.0, 0.3, n)
    low[rng.integers(0, n)] = -math.inf
    return [plain, signed, odd, nan, low, np.zeros(n), -np.zeros(n)]


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert repr(a[key]) == repr(b[key]), key  # repr: the sign of a zero and NaN count


@pytest.mark.parametrize("seed", range(4))
def test_residuals_agree_with_the_group_by_group_computation(seed):
    rng = np.random.default_rng(seed)
    for program in _programs(seed):
        assert program._residual_layout().nonnegative  # every variable in [0, inf): the shortcut is taken
        for x in _points(program, rng):
            for include in (True, False):
                with np.errstate(all="ignore"):
                    _same(program.residuals(x, include), _plain_residuals(program, x, include))


def test_residuals_of_variables_with_other_bounds_take_the_general_formula():
    program = _programs(7)[1]
    block = program.blocks["deviation"]
    program.blocks["deviation"] = VariableBlock(block.name, block.shape, block.start, lower=-0.5, upper=2.0)
    assert not program._residual_layout().nonnegative  # the key changed: the layout was made again
    rng = np.random.default_rng(7)
    for x in _points(program, rng):
        with np.errstate(all="ignore"):
            _same(program.residuals(x), _plain_residuals(program, x))
            assert program.residuals(x)["bounds"] >= 0.0


def test_residuals_refuse_a_point_of_the_wrong_size():
    program = _programs(1)[0]
    with pytest.raises(ValueError):
        program.residuals(np.zeros(program.n_vars + 1))


@pytest.mark.parametrize("seed", range(6))
def test_policy_and_unreached_are_the_hand_definitions(seed):
    rng = np.random.default_rng(seed)
    occupancy = rng.uniform(0.0, 1.0, (7, 4)) * (rng.uniform(size=(7, 1)) < 0.6)
    occupancy[rng.integers(0, 7)] = [-1e-12, 0.0, 1e-13, 0.0]
    occupancy[rng.integers(0, 7), 0] = math.nan
    policy, unreached = policy_and_unreached(occupancy)
    masses = np.maximum(np.nan_to_num(occupancy, nan=0.0), 0.0)
    totals = masses.sum(axis=1)
    expected_unreached = ~(totals > VISIT_TOLERANCE * 4)
    expected = np.where(expected_unreached[:, None], 0.25,
                        masses / np.where(expected_unreached, 1.0, totals)[:, None])
    assert np.array_equal(unreached, expected_unreached)
    assert np.array_equal(policy, expected)
    assert np.array_equal(policy_from_occupancy(occupancy), policy)
    assert np.array_equal(unreached_states(occupancy), unreached)


def test_extract_policy_with_the_results_mask_equals_extract_policy_without():
    rng = np.random.default_rng(3)
    occupancy = rng.uniform(0.0, 1.0, (6, 3)) * (rng.uniform(size=(6, 1)) < 0.5)
    policy, mask = policy_and_unreached(occupancy)
    given = extract_policy(occupancy, None, "uniform", uniform_policy=policy, unreached_mask=mask)
    computed = extract_policy(occupancy, None, "uniform", uniform_policy=policy)
    for a, b in zip(given, computed, strict=True):
        assert np.array_equal(a, b)
    assert given[1] is not mask  # the caller's mask is not handed back to be changed


def test_a_solves_fields_include_the_unreached_states_of_its_occupancy():
    from curlopt.backends.registry import get_backend

    program = _programs(2)[0]
    result = get_backend("highs").compile(program).solve()
    assert result.ok
    assert np.array_equal(result.unreached, unreached_states(result.occupancy))


@pytest.mark.parametrize("utility", [LinearBound([1.0, -2.0], 0.3), MinOfLinear([[1.0, 0.5], [0.2, 1.0]], [0.1, 0.0]),
                                     MaxOfLinear([[1.0, 0.5], [0.2, 1.0], [-1.0, 0.3]], [0.1, 0.0, 0.2])])
def test_piecewise_affine_values_of_any_input_form_are_the_same(utility):
    rng = np.random.default_rng(0)
    for _ in range(50):
        y = rng.normal(size=2)
        expected = float(np.max(utility.matrix @ y + utility.offset)) if utility.curvature != "concave" else \
            float(np.min(utility.matrix @ y + utility.offset))
        for form in (y, y.tolist(), y.reshape(1, 2), np.stack([y, y], axis=1)[:, 0], tuple(y)):
            assert repr(utility.value(form)) == repr(expected)
    with pytest.raises(Exception, match="length 2"):
        utility.value(np.zeros(3))


def test_onto_domain_of_the_default_domain_is_a_copy():
    utility = LinearBound([1.0, 1.0], 0.0)
    point = np.array([-1e-12, 3.0])
    moved = onto_domain(utility, point, 1e-7)
    assert np.array_equal(moved, point) and moved is not point

    class Bounded(LinearBound):
        def domain_lower(self):
            return np.zeros(2)

    assert np.array_equal(onto_domain(Bounded([1.0, 1.0], 0.0), point, 1e-7), [0.0, 3.0])
    instance = LinearBound([1.0, 1.0], 0.0)
    instance.domain_lower = lambda: np.zeros(2)  # an instance's own domain is read, not the class's
    assert np.array_equal(onto_domain(instance, point, 1e-7), [0.0, 3.0])


def test_backend_statistics_follow_attributes_added_changed_and_removed():
    class Counting(CompiledProgram):
        def _solve(self, with_constraints):
            raise NotImplementedError

    compiled = Counting.__new__(Counting)
    compiled.last_rounds = 3
    compiled.other = 1
    assert compiled._backend_statistics() == {"rounds": 3}
    compiled.last_rounds = np.int64(5)
    compiled.last_note = "x"
    statistics = compiled._backend_statistics()
    assert statistics == {"rounds": 5, "note": "x"} and type(statistics["rounds"]) is int
    del compiled.last_note
    compiled.last_bound = [1]  # not a number or a word: left out
    assert compiled._backend_statistics() == {"rounds": 5}


@pytest.mark.parametrize("seed", range(5))
def test_stationary_occupancy_is_the_balance_systems_least_squares_solution(seed):
    model = random_model(5, 3, seed=seed)
    policy = np.random.default_rng(seed).dirichlet(np.ones(3), size=5)
    chain = policy_kernel(model.kernel, policy)
    system = np.vstack([chain.T - np.eye(5), np.ones((1, 5))])
    rhs = np.zeros(6)
    rhs[-1] = 1.0
    mu = np.clip(np.linalg.lstsq(system, rhs, rcond=None)[0], 0.0, None)
    mu /= mu.sum()
    assert np.array_equal(stationary_occupancy(model.kernel, policy), mu[:, None] * policy)


def test_an_epoch_records_dictionary_is_a_copy_of_its_fields_in_order():
    record = EpochRecord(3, 10, 5, 0.1, "tight", exact_rewards=[1.0], exact_constraints=[-0.5, 0.2])
    out = _record_dict(record)
    assert list(out) == ["index", "start", "length", "epsilon", "source", "status", "solve_time", "iterations",
                         "message", "exact_rewards", "exact_costs", "exact_objective", "exact_constraints",
                         "unreached"]
    assert out["exact_rewards"] == [1.0] and out["exact_rewards"] is not record.exact_rewards
    record.note = "added"  # an attribute that is not a field is not written
    assert list(_record_dict(record)) == list(out)


def test_visits_are_the_counts_row_sums():
    from curlopt.agents import make_agent

    model = random_model(4, 2, seed=1)
    agent = make_agent("ucrl-cmdp", model, horizon=1000)
    counts = np.random.default_rng(1).integers(0, 9, (4, 2, 4)).astype(float)
    agent.end_epoch(counts, np.zeros(1), np.zeros(1), int(counts.sum()))
    assert np.array_equal(agent.visits, counts.sum(axis=2))
    assert np.array_equal(agent.previous_epoch_visits, counts.sum(axis=2))
    assert isinstance(agent.trigger, FixedLengthTrigger)


def test_utility_base_domain_is_unbounded():
    assert getattr(LinearBound([1.0], 0.0).domain_lower, "__func__", None) is Utility.domain_lower


def test_residuals_follow_a_replaced_cost_map_and_new_parameter_values():
    program = _programs(5)[1]
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 0.3, program.n_vars)
    _same(program.residuals(x), _plain_residuals(program, x))
    built, layout = program._product_form, program._residual_layout()
    program.residuals(x)
    assert program._residual_layout() is layout
    assert program._product_form is built  # made once for the program's arrays, not at every solve
    program.cost_map = (program.cost_map * 3.0).tocsr()   # a program replaces its maps (never edits them in place)
    _same(program.residuals(x), _plain_residuals(program, x))
    assert program._product_form is not built
    program.update(counts=rng.integers(0, 20, (4, 3, 4)).astype(float), time=400.0)
    _same(program.residuals(x), _plain_residuals(program, x))


def test_one_piece_values_are_the_arrays_sum_at_every_magnitude():
    # sizes past BLAS's unrolled blocks, and y as a strided view (its dot then steps through memory as matmul's)
    rng = np.random.default_rng(11)
    for trial in range(2000):
        d = int(rng.integers(1, 6)) if trial % 2 else int(rng.integers(6, 70))
        weights = rng.normal(size=d) * 10 ** rng.uniform(-8, 8, size=d)
        bound = float(rng.normal() * 10 ** rng.uniform(-8, 8))
        y = rng.normal(size=d) * 10 ** rng.uniform(-8, 8, size=d)
        if trial % 3 == 0:
            y = np.repeat(y, 2)[::2]
        utility = LinearBound(weights, bound)
        assert repr(utility.value(y)) == repr(float(np.max(utility.matrix @ y + utility.offset)))
    assert math.isnan(LinearBound([1.0, 1.0], 0.0).value(np.array([math.nan, 1.0])))


def test_triggers_that_do_not_read_the_visits_give_the_same_limits_without_them():
    from curlopt.agents.triggers import TRIGGERS

    rng = np.random.default_rng(4)
    for make in [*TRIGGERS.values(), lambda: FixedLengthTrigger(7)]:
        with_visits, without = make(), make()
        if getattr(with_visits, "reads_visits", True):
            continue
        for start in (1, 10, 50, 200):
            visits = rng.integers(0, 30, (4, 3)).astype(float)
            previous = rng.integers(0, 9, (4, 3)).astype(float)
            a, b = with_visits.limits(visits, previous, start), without.limits(None, previous, start)
            assert np.array_equal(a[0], b[0]) and a[1] == b[1]


def test_an_agent_hands_its_visits_to_a_trigger_that_reads_them():
    from curlopt.agents import make_agent

    seen = []

    class Recording:
        def limits(self, visits_before, previous_epoch_visits, epoch_start):
            seen.append(visits_before)
            return np.full(np.shape(previous_epoch_visits), np.inf), 3.0

    model = random_model(3, 2, seed=2)
    agent = make_agent("uc-curl", model, trigger=Recording())
    counts = np.random.default_rng(2).integers(0, 4, (3, 2, 3)).astype(float)
    agent.end_epoch(counts, np.zeros(1), np.zeros(1), int(counts.sum()))
    agent.limits(20)
    assert np.array_equal(seen[-1], counts.sum(axis=2))
    fixed = make_agent("ucrl-cmdp", model, horizon=1000)
    thresholds, length = fixed.limits(5)
    assert thresholds.shape == (3, 2) and np.all(np.isinf(thresholds)) and length == fixed.trigger.length


@pytest.mark.parametrize("seed", range(6))
def test_the_policy_of_clipped_masses_is_the_policy_of_the_occupancy(seed):
    rng = np.random.default_rng(seed)
    occupancy = rng.normal(0.0, 0.3, (6, 3)) * (rng.uniform(size=(6, 1)) < 0.7)
    occupancy[rng.integers(0, 6), rng.integers(0, 3)] = -0.0
    for odd in (None, math.nan, math.inf):
        if odd is not None:
            occupancy[rng.integers(0, 6), rng.integers(0, 3)] = odd
        with np.errstate(invalid="ignore"):
            got = policy_of_clipped(np.maximum(occupancy, 0.0))
            expected = policy_and_unreached(occupancy)
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b)


def test_only_builtin_utilities_unbounded_below_skip_the_domain_copy():
    from curlopt.utilities.library import CustomUtility, SumOfLogs

    class Bare(CompiledProgram):
        def _solve(self, with_constraints):
            raise NotImplementedError

    compiled = Bare.__new__(Bare)
    bound = LinearBound([1.0, 0.0], 0.0)
    assert compiled._unbounded_builtin(bound) and compiled._unbounded_builtin(bound)
    assert not compiled._unbounded_builtin(SumOfLogs(dim=2))  # its own domain: moved onto it first
    user = CustomUtility(2, "concave", value=lambda y: float(y.sum()))
    assert not compiled._unbounded_builtin(user)  # a user's code gets its own copy, as before


def test_a_solves_objective_is_the_objective_at_its_rewards():
    from curlopt.backends.registry import get_backend

    program = _programs(6)[0]
    result = get_backend("highs").compile(program).solve()
    assert result.ok and repr(result.objective) == repr(program.model.objective.value(result.rewards))


def test_a_subclass_that_overrides_limits_is_given_the_visits():
    from curlopt.agents.triggers import LinearTrigger, reads_visits

    class Mine(LinearTrigger):
        def limits(self, visits_before, previous_epoch_visits, epoch_start):
            return np.maximum(1.0, visits_before), math.inf

    class Declared(Mine):
        reads_visits = False

        def limits(self, visits_before, previous_epoch_visits, epoch_start):
            return np.ones_like(previous_epoch_visits), math.inf

    patched = LinearTrigger()
    patched.limits = lambda visits_before, previous, start: (np.maximum(1.0, visits_before), math.inf)
    assert not reads_visits(LinearTrigger()) and not reads_visits(FixedLengthTrigger(3))
    assert reads_visits(Mine()) and reads_visits(patched) and not reads_visits(Declared())
    assert reads_visits(object())


def test_linear_trigger_thresholds_follow_the_plain_rule():
    # the rule written plainly: a pair whose previous epoch's count reached its threshold raises its bar to that
    # count; the thresholds are max(1, bar + 1)
    from curlopt.agents.triggers import LinearTrigger

    rng = np.random.default_rng(8)
    for _ in range(20):
        trigger, bar, returned = LinearTrigger(), np.ones((5, 4)), None
        start = 1
        for _ in range(30):
            previous = rng.integers(0, 12, (5, 4)).astype(float)
            if returned is not None:
                for index in np.ndindex(bar.shape):
                    if previous[index] >= returned[index]:
                        bar[index] = previous[index]
            returned = np.maximum(1.0, bar + 1.0)
            limits, length = trigger.limits(None, previous, start)
            assert np.array_equal(limits, returned) and length == math.inf
            start += int(rng.integers(1, 50))

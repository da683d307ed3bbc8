"""UC-CURL's epoch write into its optimistic program without re-checking its own counts.

``OptimisticProgram.update_unchecked`` (the agent's per-epoch path) must leave the program with the data that the
checked ``update(counts=..., time=..., epsilon=...)`` sets from the same counts: the same parameter values (signs of
zeros included), counts, time, ε and version, on the dense support, on a sparse agent support and on the full
support of a sparse-stored model (where the program's entries are a pattern's CSR order, not the dense array's).
The parameter values are also checked against ``-P^``, ``P^`` and ``-β`` written here from their formulas, and bit
for bit against the program's own ``empirical_entries()`` and ``radius`` (which sum the visits apart).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curlopt.agents import UcCurl
from curlopt.models import random_model
from curlopt.programs.optimistic import OptimisticProgram


def agents(seed: int) -> list[UcCurl]:
    dense = random_model(5, 3, seed=seed, n_costs=2, storage="dense")
    sparse = random_model(6, 3, seed=seed, n_costs=2, successors=3, storage="sparse")
    return [UcCurl(dense, backend="highs", trigger="linear"),
            UcCurl(sparse, backend="highs", trigger="linear", support="model"),
            UcCurl(sparse, backend="highs", trigger="linear", support="full")]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_epoch_write_is_the_checked_update(seed):
    rng = np.random.default_rng(seed)
    kinds = []
    for agent in agents(seed):
        kinds.append(agent.program.support.is_dense)
        S, A = agent.model.n_states, agent.model.n_actions
        program = agent.program
        checked = OptimisticProgram(agent.planning, radius=agent.radius, radius_scale=agent.radius_scale,
                                    support=agent.program_support)
        assert program.support.is_dense == checked.support.is_dense
        counts = np.zeros_like(agent.entry_counts)
        for epoch, time in enumerate((1, 7, 40, 333)):
            counts = counts + rng.integers(0, 6, size=counts.size) * (rng.random(counts.size) < 0.6)
            agent.entry_counts[:] = counts
            epsilon = agent.epsilon(time)
            agent._update_program(time, epsilon)
            checked.update(counts=agent.counts, time=time, epsilon=epsilon)
            values, expected = program.linear.param_values, checked.linear.param_values
            np.testing.assert_array_equal(values, expected)
            assert np.signbit(values).tolist() == np.signbit(expected).tolist()
            np.testing.assert_array_equal(program.entry_counts, checked.entry_counts)
            assert (program.time, program.epsilon) == (checked.time, checked.epsilon)
            assert type(program.time) is float and program.version == checked.version == epoch + 2
            # the counts are the program's own copy: the agent's next counts do not reach it
            assert not np.shares_memory(program.entry_counts, agent.entry_counts)
            # -P^, P^ and -β from their formulas (the analysis radius: sqrt(14 S ln(2 A t) / max(1, N)))
            dense = agent.counts if agent.support.is_dense else agent.counts.toarray().reshape(S, A, S)
            visits = dense.sum(axis=2)
            divisor = np.maximum(1.0, visits)
            groups = program.linear.param_groups
            p_hat = (dense / divisor[:, :, None]).reshape(-1)
            if program.support.is_dense:
                np.testing.assert_allclose(values[groups["deviation_lower"]], p_hat, rtol=1e-15, atol=0)
            else:  # the support's entries of P^, in its CSR order
                rows, successors = program.support.pairs, program.support.successors
                on_support = p_hat.reshape(S * A, S)[rows, successors]
                np.testing.assert_allclose(values[groups["deviation_lower"]], on_support, rtol=1e-15, atol=0)
            beta = np.array([math.sqrt(14 * S * math.log(2 * A * time) / d) for d in divisor.ravel()])
            np.testing.assert_allclose(-values[groups["radius"]], beta, rtol=1e-14, atol=0)
            np.testing.assert_array_equal(values[groups["deviation_upper"]], -values[groups["deviation_lower"]])
            # and bit for bit the program's own estimates, computed apart (the visits summed by the property)
            np.testing.assert_array_equal(values[groups["deviation_lower"]], program.empirical_entries())
            np.testing.assert_array_equal(values[groups["radius"]], -program.radius.ravel())
    assert kinds == [True, False, False]  # the three cases: dense, a sparse pattern, a full pattern

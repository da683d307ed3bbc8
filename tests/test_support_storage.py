"""How a kernel is stored never changes what an agent learns: the support an agent assumes is decided by a rule on
the model (its size, its kernel's nonzero pattern), the same for ``storage="dense"`` and ``storage="sparse"``.

``support="auto"`` (the default) is every successor up to 2^20 entries S·A·S (the paper's sizes: the results
published on them are unchanged) and the kernel's nonzero pattern above; the queue with a buffer of 255 has exactly
2^20 entries, with 256 it is above.
"""

from __future__ import annotations

import numpy as np
import pytest

from curlopt.agents import make_agent
from curlopt.agents.estimates import agent_support
from curlopt.envs import make
from curlopt.experiments.simulation.loop import run
from curlopt.models import build_model


def _trajectory(storage: str, buffer: int, steps: int, **options):
    model = build_model("queue", buffer=buffer, storage=storage)
    agent = make_agent("ps-curl", model, **options)
    trace = run(agent, make(model), steps, seed=3, checkpoints=10, progress=False, model=model)
    return agent, trace


def _same_trajectory(dense, sparse) -> None:
    (dense_agent, dense_trace), (sparse_agent, sparse_trace) = dense, sparse
    for column in ("t", "rewards", "costs", "objective", "constraints", "regret", "violation"):
        np.testing.assert_array_equal(dense_trace.checkpoints[column], sparse_trace.checkpoints[column])
    assert [(e.start, e.length, e.source) for e in dense_trace.epochs] == \
        [(e.start, e.length, e.source) for e in sparse_trace.epochs]
    assert dense_agent.support.nnz == sparse_agent.support.nnz
    assert dense_agent.entry_counts.sum() == sparse_agent.entry_counts.sum()


@pytest.mark.parametrize("buffer, full", [(5, True), (255, True), (256, False)])
def test_the_support_rule_reads_the_model_not_its_storage(buffer, full):
    supports = [agent_support(build_model("queue", buffer=buffer, storage=storage), "auto", "ps-curl")
                for storage in ("dense", "sparse")]
    assert [s.is_dense for s in supports] == [full, full]
    model = build_model("queue", buffer=buffer, storage="sparse")
    expected = model.n_states * model.n_actions * model.n_states if full else int((model.transitions.data > 0).sum())
    assert [s.nnz for s in supports] == [expected, expected]
    # "model" is the kernel's nonzero pattern whatever the storage; "full" every successor
    dense_model, sparse_model = (build_model("queue", buffer=buffer, storage=storage) for storage in ("dense", "sparse"))
    pattern = [agent_support(m, "model", "ps-curl") for m in (dense_model, sparse_model)]
    assert not pattern[0].is_dense and not pattern[1].is_dense
    np.testing.assert_array_equal(pattern[0].indptr, pattern[1].indptr)
    np.testing.assert_array_equal(pattern[0].successors, pattern[1].successors)


def test_below_the_threshold_dense_and_sparse_storage_learn_the_same():
    _same_trajectory(_trajectory("dense", 5, 1500), _trajectory("sparse", 5, 1500))


def test_above_the_threshold_dense_and_sparse_storage_learn_the_same():
    options = {"min_epoch_length": 100}
    _same_trajectory(_trajectory("dense", 256, 300, **options), _trajectory("sparse", 256, 300, **options))

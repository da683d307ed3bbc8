"""A built-in model whose occupancy program could not be built is refused before its kernel is allocated."""

from __future__ import annotations

import tracemalloc

import pytest

from curlopt.errors import ModelError
from curlopt.models import build_model
from curlopt.programs import MAX_PROGRAM_BYTES
from curlopt.programs.blocks import BYTES_PER_NONZERO, BYTES_PER_VARIABLE


def occupancy_program_bytes(states: int, actions: int, nonzeros: int) -> int:
    """The occupancy program's arrays as the program itself estimates them: S·A variables; a mass row (S·A entries)
    and flow rows with one entry per kernel nonzero and one per pair."""
    return BYTES_PER_VARIABLE * states * actions + BYTES_PER_NONZERO * (2 * states * actions + nonzeros)


def test_the_queue_at_a_million_states_is_refused_before_any_kernel_is_built() -> None:
    # the queue has 16 actions and three successors per pair at most: its program is far above the limit
    assert occupancy_program_bytes(1_000_001, 16, 3 * 16_000_016) > MAX_PROGRAM_BYTES
    tracemalloc.start()
    with pytest.raises(ModelError, match="refused before it is built: its occupancy program"):
        build_model("queue", buffer=1_000_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 2 ** 20  # the kernel alone would be 770 MB


def test_a_queue_whose_program_fits_is_still_built() -> None:
    model = build_model("queue", buffer=2_000)
    assert occupancy_program_bytes(model.n_states, model.n_actions, model.nnz) < MAX_PROGRAM_BYTES

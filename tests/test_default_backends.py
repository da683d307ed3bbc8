"""Which backend an agent takes by default: the documented rule, at the sizes on both sides of it."""

from __future__ import annotations

from curlopt.agents.curl import COLUMNS_FROM_ENTRIES, optimistic_backend
from curlopt.models import build_model


def test_uc_curl_keeps_the_whole_lp_at_the_papers_sizes_and_takes_column_generation_above():
    queue = build_model("queue")  # S = 6, A = 16: 576 kernel entries, below the threshold
    assert queue.n_states ** 2 * queue.n_actions < COLUMNS_FROM_ENTRIES
    assert optimistic_backend(queue, "auto") == "auto"  # then "auto" resolves to highs, as before
    larger = build_model("random", n_states=20, n_actions=5)  # 2,000 entries
    assert optimistic_backend(larger, "auto") == "highs-columns"
    assert optimistic_backend(larger, "highs") == "highs"  # a named backend is never replaced
    sparse = build_model("queue", buffer=1000)  # stored sparse: its nonzeros count, not S²·A
    assert sparse.sparse and sparse.nnz >= COLUMNS_FROM_ENTRIES
    assert optimistic_backend(sparse, "auto") == "highs-columns"
    log = build_model("scheduler", clients=3)  # a log objective: no LP backend applies
    assert optimistic_backend(log, "auto") == "auto"

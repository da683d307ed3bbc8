"""Inverse-CDF tables of a sparse kernel: what the environment and the fast stepping path draw successors from.

A successor of ``(s, a)`` is drawn with one uniform ``u`` as the first successor whose cumulative probability
exceeds ``u``. On a sparse kernel the cumulative sums run over the row's stored successors only, in column order.
They are summed one after the other, as ``numpy.cumsum`` sums a dense row, and adding a zero changes no sum, so
the table holds exactly the dense table's values at the stored successors: for the same uniform the sparse and the
dense draw give the same state. (Both differ only when ``u`` is at least the row's sum, which is below 1 by
round-off at most: the dense draw then takes state S − 1, the sparse one the row's last stored successor.)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["cumulative_transitions", "SPARSE_TABLE_PADDING"]

#: The row sums run in a padded (rows, widest row) array, one vectorised cumulative sum, unless that array would
#: hold more than this many times the nonzeros (a few very long rows); then row by row.
SPARSE_TABLE_PADDING = 4


def cumulative_transitions(transitions: sp.csr_array) -> sp.csr_array:
    """A CSR matrix with ``transitions``' structure whose entry ``(s·A + a, s')`` is ``Σ_{t <= s'} P(t|s,a)``.

    ``transitions`` has sorted column indices (as :attr:`curlopt.CMDP.transitions` has). The result is read-only.
    """
    indptr, data = transitions.indptr, np.asarray(transitions.data, dtype=float)
    lengths = np.diff(indptr)
    rows, width = lengths.size, int(lengths.max(initial=0))
    if rows * width <= SPARSE_TABLE_PADDING * data.size + rows:
        inside = np.arange(width) < lengths[:, None]
        padded = np.zeros((rows, width))
        padded[inside] = data
        cumulative = np.cumsum(padded, axis=1)[inside]  # zeros pad the rows' ends: no sum changes
    else:
        cumulative = np.empty_like(data)
        for start, end in zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True):
            cumulative[start:end] = np.cumsum(data[start:end])
    table = sp.csr_array((cumulative, transitions.indices.copy(), indptr.copy()), shape=transitions.shape)
    for array in (table.data, table.indices, table.indptr):
        array.setflags(write=False)
    return table

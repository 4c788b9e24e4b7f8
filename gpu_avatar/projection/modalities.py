"""The modality statistics of ``projection.py``'s Gram matrix in one compiled pass (numba)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import host_array


def modality_statistics(x: np.ndarray, codes: np.ndarray, offsets: np.ndarray):
    """``Projection._modality_statistics`` in one pass over the rows (single-threaded: each
    sum runs over the rows in order, so its bits do not depend on a thread count)."""
    return _modality_statistics(
        host_array(x, np.float64), host_array(codes, np.int64), host_array(offsets, np.int64)
    )


@njit(cache=True)
def _modality_statistics(x, codes, offsets):
    n, n_continuous = x.shape
    n_variables = codes.shape[1]
    total = offsets[n_variables]
    sums = np.zeros((total, n_continuous))
    cross = np.zeros((total, total), np.int64)
    cells = np.empty(n_variables, np.int64)
    for r in range(n):
        for j in range(n_variables):
            cells[j] = offsets[j] + codes[r, j]
        for j in range(n_variables):
            for c in range(n_continuous):
                sums[cells[j], c] += x[r, c]
            for other in range(j, n_variables):
                cross[cells[j], cells[other]] += 1
    return sums, cross

"""The attacks' scan for each query's k nearest references by the mixed-type distance
(``neighbours/references.py``): every reference measured in index order, so ties go to the
lower index; a pair's sum stops once it exceeds the current k-th distance, a query once that
distance is 0. On the CPU, references in cache-sized blocks and queries in parallel; on the
GPU (``cuda.py``), references in tiles staged in shared memory, several queries per thread.
Both merge block after block with ``nearest_mixed_scan``: the same comparisons in the same
order, so the same neighbours and distance bits.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from . import host_array
from .tree import cpu_walks, exact_add, exact_sub, keep_best, shared


def mixed_distance(a, i, b, j, categorical, cap):
    """The attacks' mixed-type distance between row ``i`` of ``a`` and row ``j`` of ``b``,
    whose rows lie one after another (flat: a block of references, as a shared-memory tile
    holds them) (numbers already divided by their range, categories as codes, NaN where
    missing), summed column by column: ``|x - y|`` for numbers, 0 or 1 for categories, 0 for
    two missing values and 1 for one. Stops early, returning a partial sum, once it exceeds
    ``cap``."""
    columns = a.shape[1]
    total = 0.0
    d = 0
    while d < columns and total <= cap:
        x = a[i, d]
        y = b[j * columns + d]
        if x != x or y != y:  # a missing value
            term = 0.0 if (x != x and y != y) else 1.0
        elif categorical[d]:
            term = 0.0 if x == y else 1.0
        else:
            term = abs(exact_sub(x, y))
        total = exact_add(total, term)
        d += 1
    return total


def nearest_mixed_scan(block, rows, offset, categorical, queries, q, k, best_d, best_i):
    """Merge the ``rows`` references of the flat ``block`` (the references ``offset``,
    ``offset + 1``, ...), in index order, into query ``q``'s k best ``(best_d, best_i)`` by
    (mixed distance, index); returns False once nothing further can enter (the k-th distance
    is 0: a later reference, of a higher index, could only tie)."""
    for j in range(rows):
        if best_d[k - 1] == 0.0:
            return False
        keep_best(best_d, best_i, k,
                  mixed_distance(queries, q, block, j, categorical, best_d[k - 1]), offset + j)
    return best_d[k - 1] != 0.0


# Compiled inline into their callers: on the CPU (``tree.shared``), on the GPU by ``cuda.py``.
SHARED = shared(mixed_distance, nearest_mixed_scan)


# -------------------------------------------------------------------------- CPU driver
_MIXED_QUERIES = 32  # queries per parallel work item
_MIXED_REFERENCES = 2048  # references per block: a block stays in cache across its queries
# The one kernel left on numba's parallel loop (``in_blocks`` runs the others): compiled
# serially, this scan runs 1.3x slower (attacks on 3 x 10^4 rows: 43.0 s against 35.6 s), as
# numba's parallel lowering compiles the loop body apart, with more facts about its arrays. Its
# 1-4 s of extra compilation is paid only by the attacks. numba's default threading layer
# refuses concurrent parallel calls: the lock serialises them.
_PARALLEL_LOCK = threading.Lock()


def nearest_mixed(references: np.ndarray, categorical: np.ndarray, queries: np.ndarray, k: int):
    """(n_queries, k) indices and mixed distances of each query's k nearest references,
    ordered by (distance, index): ``nearest_mixed_scan`` over the references block by block
    (in index order, so ties still go to the lower index), queries in parallel."""
    references = host_array(references, np.float64)
    categorical, queries = host_array(categorical, np.bool_), host_array(queries, np.float64)
    with _PARALLEL_LOCK:
        return _nearest_mixed(references.ravel(), references.shape[0], categorical, queries,
                              int(k))  # fmt: skip


@njit(cache=True, parallel=True)
def _nearest_mixed(references, m, categorical, queries, k):
    n, columns = queries.shape
    indices = np.empty((n, k), np.int64)
    distances = np.empty((n, k))
    for item in prange(-(-n // _MIXED_QUERIES)):
        lo, hi = item * _MIXED_QUERIES, min((item + 1) * _MIXED_QUERIES, n)
        best_d = np.full((hi - lo, k), np.inf)
        best_i = np.full((hi - lo, k), m, np.int64)
        open_ = np.ones(hi - lo, np.bool_)
        for first in range(0, m, _MIXED_REFERENCES):
            rows = min(_MIXED_REFERENCES, m - first)
            block = references[first * columns : (first + rows) * columns]
            for q in range(lo, hi):
                if open_[q - lo]:
                    open_[q - lo] = cpu_walks.nearest_mixed_scan(
                        block, rows, first, categorical, queries, q, k, best_d[q - lo],
                        best_i[q - lo])
        # element by element: a block copy would compile numba's shape-mismatch message
        for q in range(lo, hi):
            for slot in range(k):
                indices[q, slot] = best_i[q - lo, slot]
                distances[q, slot] = best_d[q - lo, slot]
    return indices, distances

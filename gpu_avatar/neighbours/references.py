"""Exact k nearest REFERENCE rows of query rows by the mixed-type distance of the attacks.

What the attacks need (``metrics/attacks/``): each attacked individual's closest synthetic
rows. The distance: numbers divided by their range, ``|x - y|``; categories 0 when equal, 1
otherwise; 0 for two missing values, 1 for one. One scan, written once (``kernels/mixed.py``),
run by the backend's kernels on the CPU (numba, references in cache-sized blocks, queries in
parallel) and on the GPU (numba-cuda, reference tiles in shared memory, several queries per
thread): every reference is measured in index order, so neighbours are ordered by (distance, index),
ties going to the lower index; a pair's sum stops once it exceeds the current k-th distance,
and a query stops once that distance is 0. Exact, no index to approximate.
"""

from __future__ import annotations

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError
from ..parameters import check_integer


def nearest_references(queries, references, categorical, k: int, backend: Backend = CPU):
    """Indices (n_queries, k) int64 and distances (n_queries, k) float64 of each query's k
    nearest references, as backend arrays; ``categorical`` flags the code columns."""
    check_integer("k", k, 1, min(references.shape[0], backend.max_k))
    categorical = np.asarray(categorical, dtype=bool)
    if not queries.shape[1] == references.shape[1] == categorical.shape[0]:
        raise AvatarError(
            f"queries ({queries.shape[1]}), references ({references.shape[1]}) and categorical "
            f"({categorical.shape[0]}) must have the same number of columns"
        )
    xp = backend.xp
    queries = backend.asarray(queries, dtype=np.float64)
    references = backend.asarray(references, dtype=np.float64)
    if bool(xp.isinf(queries).any()) or bool(xp.isinf(references).any()):
        raise AvatarError("infinite values have no distance: replace them before the search")
    return backend.kernels.nearest_mixed(backend, references, categorical, queries, k)

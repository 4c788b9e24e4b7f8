"""The CPU driver (numba): the functions of ``cuda.py``, with the same signatures, on host
arrays. ``backend`` is unused here; every result is a numpy array."""

from __future__ import annotations

import numpy as np

from .. import synthesis_kernels
from . import knn, mixed, ranks

MAX_K = np.iinfo(np.int64).max  # the CPU's top-k arrays have no fixed capacity
# "auto" runs array tiles up to this many rows, the tree above: for the kNN, never (the tree
# walk is faster at any size); for the rank counts, while n^2 pairs stay under 25 * 10^6.
KNN_BRUTE_MAX_ROWS = 0
RANKS_BRUTE_MAX_ROWS = 5000


def nearest_others(backend, points, k: int, rows=None):
    """Indices and squared distances ``(m, k)`` of the k nearest others of every point (or of
    the caller rows ``rows``), ordered by (squared distance, index)."""
    if rows is None:
        return knn.nearest_others(points, k)
    return knn.nearest_others_of(points, rows, k)


def verify_candidates(backend, points, candidates, far_squared, margin, k: int):
    """The k nearest among each row's index candidates, exactly, and the rows whose result the
    index cannot guarantee (``knn.verify_candidates``)."""
    return knn.verify_candidates(points, candidates, far_squared, margin, k)


def distance_ranks(backend, x, y, own):
    """``(cloaking, hidden, first, second)`` of ``ranks.distance_ranks``."""
    return ranks.distance_ranks(x, y, own)


def ranks_among(backend, y, avatar_ids, x, original_ids, own):
    """``(cloaking, hidden)`` of the originals against the avatars given alone, rows carrying
    caller indices (``ranks.ranks_among``)."""
    return ranks.ranks_among(y, avatar_ids, x, original_ids, own)


def two_nearest(backend, queries, references, aligned: bool = False):
    """``(first, second)``: each query's two smallest squared distances to the references
    (``ranks.two_nearest``)."""
    return ranks.two_nearest(queries, references, aligned)


def nearest_reference(backend, queries, references):
    """``(index, squared)`` of each query's nearest reference, the lowest index among equally
    near ones (``ranks.nearest_reference``)."""
    return ranks.nearest_reference(queries, references)


def count_within(backend, queries, references, radius: float, limit: int):
    """Per query, the references within Chebyshev distance ``radius``, counted up to ``limit``
    (``ranks.count_within``)."""
    return ranks.count_within(queries, references, radius, limit)


def nearest_mixed(backend, references, categorical, queries, k: int):
    """Each query's k nearest references by the mixed-type distance (``mixed.py``)."""
    return mixed.nearest_mixed(references, categorical, queries, k)


def synthesize_block(backend, continuous, codes, neighbours, weights, uniforms, out=None):
    """A block of avatars' continuous values and codes (``synthesis_kernels.py``), written to
    ``out`` if given."""
    return synthesis_kernels.synthesize_block(continuous, codes, neighbours, weights, uniforms,
                                              out)  # fmt: skip

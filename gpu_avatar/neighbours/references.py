"""Exact k nearest REFERENCE rows of query rows, by city-block (L1) distance.

What the attacks need: each attacked individual's closest synthetic rows in a mixed-type space
(``metrics/attacks.py``). Same contract as ``search.py``: distances from ``distances.py``'s
fixed arithmetic, neighbours ordered by (distance, index) so that ties go to the lower
reference index, no approximation.

Engines:
- ``"brute"``: every pair, tile by tile with a running top-k (array code: what the GPU runs);
- ``"kdtree"`` (the CPU's): scipy's cKDTree with p = 1 proposes k + 1 candidates, their
  distances are recomputed exactly; a row is certain when its (k + 1)-th candidate is farther
  than its k-th by more than the tree's rounding, otherwise (a tie at the boundary) every
  reference within the k-th distance is fetched by a ball query and ordered exactly.
"""

from __future__ import annotations

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError
from ..parameters import REFERENCE_ENGINES, check_choice, check_integer
from .distances import pairwise_cityblock, rowwise_cityblock
from .search import brute_top_k

_RELATIVE_ERROR = 1e-9  # cKDTree's float64 sums against ours: far below this
_ABSOLUTE_ERROR = 1e-12  # the same, around zero distances
_BALL_CHUNK = 4096


def nearest_references(queries, references, k: int, backend: Backend = CPU,
                       engine: str = "auto"):
    """Indices (n_queries, k) int64 and L1 distances (n_queries, k) float64 of each query's k
    nearest references, as backend arrays."""
    check_integer("k", k, 1, references.shape[0])
    check_choice("engine", engine, REFERENCE_ENGINES)
    if engine == "auto":
        engine = "brute" if backend.is_gpu else "kdtree"
    queries = backend.asarray(queries, dtype=np.float64)
    references = backend.asarray(references, dtype=np.float64)
    if engine == "brute":
        return brute_top_k(queries, references, k, backend, pairwise_cityblock)
    if backend.is_gpu:
        raise AvatarError("engine='kdtree' runs on the CPU: use engine='brute' on the GPU")
    return _tree_top_k(queries, references, k)


def _tree_top_k(queries: np.ndarray, references: np.ndarray, k: int):
    from scipy.spatial import cKDTree

    n_ref = references.shape[0]
    tree = cKDTree(references)
    q = min(k + 1, n_ref)
    _, candidates = tree.query(queries, k=q, p=1, workers=-1)
    candidates = np.asarray(candidates, dtype=np.int64).reshape(len(queries), q)
    exact = rowwise_cityblock(queries, references[candidates], np)
    order = _row_order(exact, candidates)
    exact = np.take_along_axis(exact, order, axis=1)
    candidates = np.take_along_axis(candidates, order, axis=1)
    indices, distances = candidates[:, :k].copy(), exact[:, :k].copy()
    if q == n_ref:  # every reference was proposed: nothing can be missing
        return indices, distances
    kth = distances[:, k - 1]
    uncertain = np.nonzero(exact[:, k] <= kth * (1 + _RELATIVE_ERROR) + _ABSOLUTE_ERROR)[0]
    for start in range(0, uncertain.size, _BALL_CHUNK):
        rows = uncertain[start : start + _BALL_CHUNK]
        radius = kth[rows] * (1 + _RELATIVE_ERROR) + _ABSOLUTE_ERROR
        found = tree.query_ball_point(queries[rows], radius, p=1, workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=rows.size)
        owner = np.repeat(np.arange(rows.size), counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        d = rowwise_cityblock(queries[rows][owner], references[candidate][:, None, :], np)[:, 0]
        ranked = np.lexsort((candidate, d, owner))
        owner, candidate, d = owner[ranked], candidate[ranked], d[ranked]
        first = np.searchsorted(owner, np.arange(rows.size))
        take = first[:, None] + np.arange(k)[None, :]
        indices[rows], distances[rows] = candidate[take], d[take]
    return indices, distances


def _row_order(distances: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Per row, the order by (distance, index): two stable sorts make a lexicographic one."""
    by_index = np.argsort(candidates, axis=1, kind="stable")
    by_distance = np.argsort(np.take_along_axis(distances, by_index, axis=1), axis=1,
                             kind="stable")
    return np.take_along_axis(by_index, by_distance, axis=1)


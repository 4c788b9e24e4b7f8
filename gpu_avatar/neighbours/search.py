"""Exact k nearest neighbours of every point among the OTHER points.

Contract (every engine): squared Euclidean distances computed by ``distances.py`` (float64,
one fixed arithmetic); the point itself excluded by index (its duplicates are not excluded);
neighbours ordered by (distance, index), so ties go to the lower row index. No approximate
index: a fast index only proposes candidates, which are then verified exactly.

Engines:
- ``"brute"``: every pair, tile by tile with a running top-k (array code: numpy or cupy).
- ``"kdtree"`` (or ``"numba"``, the same): the compiled k-d tree walk of ``kernels/knn.py``,
  exact by construction (same arithmetic, ties by index), run by the backend's kernels: on
  the CPU (numba; what ``"auto"`` picks there), on the GPU one thread per point (numba-cuda;
  what ``"auto"`` picks above the kernels' ``KNN_BRUTE_MAX_ROWS``).
- ``"faiss"``, ``"cuml"``: FAISS (flat L2 index, on the GPU when FAISS has GPU support) and
  cuML's brute-force search as candidate indexes, when importable and asked for.

Candidate indexes ask for k + 2 candidates per point, recompute their distances exactly, and
keep the first k by (distance, index). The result is certain when the k-th exact distance is
below the index's distance to its farthest candidate by more than the index's own rounding
error (every point not proposed is at least that far); the other rows are answered exactly by
the compiled k-d tree walk.
"""

from __future__ import annotations

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError, import_extra
from ..parameters import ENGINES, check_choice, check_integer
from .distances import pairwise_squared

_TREE_RELATIVE_ERROR = 1e-9  # float64 trees: distances exact to far better than this
_FLOAT32_RELATIVE_ERROR = 1e-5  # float32 expanded-form indexes (FAISS), generous


def nearest_neighbours(points, k: int, backend: Backend = CPU, engine: str = "auto"):
    """Indices (n, k) int64 and distances (n, k) float64 of each point's k nearest others,
    as backend arrays."""
    n = points.shape[0]
    check_integer("k", k, 1, n - 1)
    check_choice("engine", engine, ENGINES)
    xp = backend.xp
    points = backend.asarray(points, dtype=np.float64)
    if engine == "auto":
        engine = _auto_engine(backend, n, k)
    if engine == "brute":
        indices, squared = _brute(points, k, backend)
        return indices, xp.sqrt(squared)
    if engine in ("kdtree", "numba"):
        indices, squared = _tree_neighbours(points, k, backend)
        return indices, xp.sqrt(squared)
    candidates, far_squared, margin = _PROPOSERS[engine](points, min(k + 2, n), backend)
    indices, squared, uncertain = backend.kernels.verify_candidates(
        backend, points, candidates, far_squared, margin, k
    )
    if uncertain.size:
        indices[uncertain], squared[uncertain] = _tree_neighbours(points, k, backend, uncertain)
    return indices, xp.sqrt(squared)


def _tree_neighbours(points, k: int, backend: Backend, rows=None):
    """The compiled k-d tree's k nearest others of every point (or of the rows ``rows``)."""
    if k > backend.max_k:
        raise AvatarError(
            f"the {backend.name.upper()} k-d tree search keeps at most {backend.max_k} "
            f"neighbours, got k = {k}: use engine='brute' (exact, slower) or backend='cpu'"
        )
    return backend.kernels.nearest_others(backend, points, k, rows)


def _auto_engine(backend: Backend, n: int, k: int) -> str:
    """Array tiles up to the kernels' ``KNN_BRUTE_MAX_ROWS`` (the GPU's, for small tables) or
    for more neighbours than they keep; the compiled k-d tree above."""
    if n <= backend.kernels.KNN_BRUTE_MAX_ROWS or k > backend.max_k:
        return "brute"
    return "kdtree"


def nearest_reference_distances(queries, references, backend: Backend = CPU) -> np.ndarray:
    """Exact distance (this module's arithmetic) of each query row to its nearest row of
    ``references``, as a numpy array: the compiled k-d tree walk of the backend's kernels."""
    xp = backend.xp
    queries = xp.ascontiguousarray(backend.asarray(queries, dtype=np.float64))
    references = backend.asarray(references, dtype=np.float64)
    squared = backend.kernels.nearest_squared(backend, queries, references)
    return backend.to_numpy(xp.sqrt(squared))


# ------------------------------------------------------------------ candidate proposers
def _faiss_candidates(points, q: int, backend: Backend):
    faiss = import_extra("faiss", "faiss", "engine='faiss'")

    host = np.ascontiguousarray(backend.to_numpy(points), dtype=np.float32)
    index = backend.faiss_index(faiss, faiss.IndexFlatL2(host.shape[1]))
    index.add(host)
    far_squared, candidates = index.search(host, q)
    norms = (host.astype(np.float64) ** 2).sum(axis=1)
    far = far_squared[:, -1].astype(np.float64)
    margin = _FLOAT32_RELATIVE_ERROR * (norms + norms.max() + far)
    return tuple(backend.asarray(a) for a in (candidates.astype(np.int64), far, margin))


def _cuml_candidates(points, q: int, backend: Backend):
    NearestNeighbors = import_extra(  # noqa: N806 - cuML's class
        "cuml.neighbors", None, "engine='cuml'",
        "install RAPIDS cuML (conda, or the rapidsai image: docker/README.md), or use "
        "engine='auto'",
    ).NearestNeighbors

    xp = backend.xp
    model = NearestNeighbors(n_neighbors=q, algorithm="brute", metric="euclidean")
    distances, candidates = model.fit(points).kneighbors(points)
    distances, candidates = xp.asarray(distances, dtype=xp.float64), xp.asarray(candidates)
    norms = (points**2).sum(axis=1)
    far = distances[:, -1] ** 2
    margin = _TREE_RELATIVE_ERROR * (norms + norms.max() + far)
    return candidates.astype(xp.int64), far, margin


_PROPOSERS = {"faiss": _faiss_candidates, "cuml": _cuml_candidates}


# ------------------------------------------------------------------------ brute force
def _brute(points, k: int, backend: Backend):
    """Exhaustive top-k of every point, tile by tile (array code on either backend)."""
    xp = backend.xp
    n, dim = points.shape
    rows = xp.arange(n)
    query_tile = 1024
    ref_tile = _reference_tile(backend, query_tile, dim, k, n)
    indices = xp.empty((rows.shape[0], k), dtype=xp.int64)
    squared = xp.empty((rows.shape[0], k), dtype=xp.float64)
    for q0 in range(0, rows.shape[0], query_tile):
        query_rows = rows[q0 : q0 + query_tile]
        queries = points[query_rows]
        best_d2 = xp.full((query_rows.shape[0], 0), xp.inf)
        best_idx = xp.zeros((query_rows.shape[0], 0), dtype=xp.int64)
        for r0 in range(0, n, ref_tile):
            r1 = min(r0 + ref_tile, n)
            d2 = pairwise_squared(queries, points[r0:r1], xp)
            idx = xp.broadcast_to(xp.arange(r0, r1)[None, :], d2.shape)
            d2 = xp.where(idx == query_rows[:, None], xp.inf, d2)
            # Running best first (all lower indices, sorted by (d, idx)), then the tile in
            # index order: a stable sort on distance alone keeps ties by index.
            all_d2 = xp.concatenate([best_d2, d2], axis=1)
            all_idx = xp.concatenate([best_idx, idx], axis=1)
            order = xp.argsort(all_d2, axis=1, kind="stable")[:, :k]
            best_d2 = xp.take_along_axis(all_d2, order, axis=1)
            best_idx = xp.take_along_axis(all_idx, order, axis=1)
        indices[q0 : q0 + query_tile] = best_idx
        squared[q0 : q0 + query_tile] = best_d2
    return indices, squared


def _reference_tile(backend: Backend, query_tile: int, dim: int, k: int, n: int) -> int:
    """Reference rows per tile: a few (query_tile x tile) float64 temporaries in memory."""
    free = backend.free_memory_bytes()
    budget = (1 << 28) if free is None else max(1 << 28, free // 8)
    return int(max(k, min(n, budget // (8 * query_tile * (dim + 4)))))

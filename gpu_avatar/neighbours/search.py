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
  what ``"auto"`` picks above the kernels' ``KNN_BRUTE_MAX_ROWS``). On a CPU without numba,
  ``"kdtree"`` is scipy's cKDTree as a candidate index (below).
- ``"faiss"``, ``"cuml"``: FAISS (flat L2 index, on the GPU when FAISS has GPU support) and
  cuML's brute-force search as candidate indexes, when importable and asked for.

Candidate indexes ask for k + 2 candidates per point, recompute their distances exactly, and
keep the first k by (distance, index). The result is certain when the k-th exact distance is
below the index's distance to its farthest candidate by more than the index's own rounding
error (every point not proposed is at least that far); the other rows are answered exactly by
the compiled k-d tree walk (without numba, from a ball query around the k-th distance).
"""

from __future__ import annotations

import numpy as np

from ..backend import CPU, Backend, check_compiled
from ..errors import AvatarError, import_extra
from ..parameters import ENGINES, check_choice, check_integer
from .distances import pairwise_squared, rowwise_squared

_TREE_RELATIVE_ERROR = 1e-9  # float64 trees: distances exact to far better than this
_FLOAT32_RELATIVE_ERROR = 1e-5  # float32 expanded-form indexes (FAISS), generous
_ROW_CHUNK = 1 << 16


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
    if engine == "numba" or (engine == "kdtree" and backend.compiled):
        indices, squared = _tree_neighbours(points, k, backend)
        return indices, xp.sqrt(squared)
    candidates, far_squared, margin = _PROPOSERS[engine](points, min(k + 2, n), backend)
    indices, squared, uncertain = _verify(points, candidates, far_squared, margin, k, backend)
    if uncertain.size:
        indices[uncertain], squared[uncertain] = _exact_rows(
            points, uncertain, k, backend, squared[uncertain, k - 1]
        )
    return indices, xp.sqrt(squared)


def _tree_neighbours(points, k: int, backend: Backend, rows=None):
    """The compiled k-d tree's k nearest others of every point (or of the rows ``rows``)."""
    check_compiled(backend, "engine='numba'")
    if k > backend.max_k:
        raise AvatarError(
            f"the {backend.name.upper()} k-d tree search keeps at most {backend.max_k} "
            f"neighbours, got k = {k}: use engine='brute' (exact, slower) or backend='cpu'"
        )
    return backend.kernels.nearest_others(backend, points, k, rows)


def _exact_rows(points, rows, k: int, backend: Backend, bound):
    """The exact k nearest others of the points ``rows`` (whose candidates fell short);
    ``bound``: their candidates' squared k-th distances, at least the true ones."""
    if backend.compiled:
        return _tree_neighbours(points, k, backend, rows)
    return _nearest_by_ball(points, rows, k, bound)


def _auto_engine(backend: Backend, n: int, k: int) -> str:
    """Array tiles up to the kernels' ``KNN_BRUTE_MAX_ROWS`` (the GPU's, for small tables) or
    for more neighbours than they keep; the k-d tree above (scipy's on a CPU without numba)."""
    if backend.compiled and (n <= backend.kernels.KNN_BRUTE_MAX_ROWS or k > backend.max_k):
        return "brute"
    return "kdtree"


def nearest_reference_distances(queries, references, backend: Backend = CPU) -> np.ndarray:
    """Exact distance (this module's arithmetic) of each query row to its nearest row of
    ``references``, as a numpy array: scipy's k-d tree proposes the nearest, then every
    reference within the proposed distance (widened by the tree's rounding) is measured."""
    from scipy.spatial import cKDTree

    queries = np.ascontiguousarray(backend.to_numpy(queries), dtype=np.float64)
    references = np.ascontiguousarray(backend.to_numpy(references), dtype=np.float64)
    tree = cKDTree(references)
    proposed, nearest = tree.query(queries, k=1, workers=-1)
    squared = rowwise_squared(queries, references[nearest], np)
    rows = np.flatnonzero(squared > 0)  # a duplicate found is exactly at 0: nothing is closer
    for start in range(0, rows.size, _ROW_CHUNK):
        chunk = rows[start : start + _ROW_CHUNK]
        radius = np.maximum(proposed[chunk], np.sqrt(squared[chunk])) * (
            1 + _TREE_RELATIVE_ERROR) + np.finfo(float).tiny
        found = tree.query_ball_point(queries[chunk], radius, workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=chunk.size)
        owner = np.repeat(chunk, counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        np.minimum.at(squared, owner, rowwise_squared(queries[owner], references[candidate], np))
    return np.sqrt(squared)


# ------------------------------------------------------------------ candidate proposers
def _kdtree_candidates(points, q: int, backend: Backend):
    from scipy.spatial import cKDTree

    tree = cKDTree(points)
    distances, candidates = query_in_tree_order(
        tree, lambda p: tree.query(p, k=q, workers=-1), points
    )
    far = distances[:, -1] ** 2
    return candidates.astype(np.int64), far, _TREE_RELATIVE_ERROR * far


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


_PROPOSERS = {"kdtree": _kdtree_candidates, "faiss": _faiss_candidates, "cuml": _cuml_candidates}


def query_in_tree_order(tree, query, *per_row):
    """``query(*per_row)`` run with the rows sorted in ``tree``'s leaf order (the rows being
    the tree's points, or points close to them), results put back in the original order.
    Neighbouring queries then visit the same nodes: about 30 % faster on 2 x 10^5 points in
    5-D (cKDTree, k = 22), for identical results."""
    order = np.asarray(tree.indices)
    results = query(*(values[order] for values in per_row))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    if isinstance(results, tuple):
        return tuple(np.asarray(result)[inverse] for result in results)
    return np.asarray(results)[inverse]


# ------------------------------------------------------------------- exact verification
def _sort_by_distance_then_index(squared, candidates, xp):
    """Order each row by (squared distance, index): two stable sorts make a lexicographic one."""
    by_index = xp.argsort(candidates, axis=1, kind="stable")
    squared = xp.take_along_axis(squared, by_index, axis=1)
    candidates = xp.take_along_axis(candidates, by_index, axis=1)
    by_distance = xp.argsort(squared, axis=1, kind="stable")
    return xp.take_along_axis(squared, by_distance, axis=1), xp.take_along_axis(
        candidates, by_distance, axis=1
    )


def _order_candidates(d2, block, own_rows, xp):
    """Candidates without the point itself, ordered by (squared distance, index).

    The index usually lists the point itself first and the others already in order: those
    rows are only shifted; the others are sorted."""
    self_first = block[:, 0] == own_rows
    rest_d2, rest = d2[:, 1:], block[:, 1:]
    in_order = (rest_d2[:, 1:] > rest_d2[:, :-1]) | (
        (rest_d2[:, 1:] == rest_d2[:, :-1]) & (rest[:, 1:] > rest[:, :-1])
    )
    simple = self_first & in_order.all(axis=1)
    out_d2, out = xp.full(d2.shape, xp.inf), block.copy()
    out_d2[:, :-1], out[:, :-1] = rest_d2, rest
    other = xp.nonzero(~simple)[0]
    if other.size:
        masked = xp.where(block[other] == own_rows[other, None], xp.inf, d2[other])
        out_d2[other], out[other] = _sort_by_distance_then_index(masked, block[other], xp)
    return out_d2, out


def _verify(points, candidates, far_squared, margin, k: int, backend: Backend):
    """Exact top-k among candidates, and the rows whose top-k the index cannot guarantee."""
    if backend.compiled:  # the same, in one compiled pass
        return backend.kernels.verify_candidates(backend, points, candidates, far_squared,
                                                 margin, k)  # fmt: skip
    xp = backend.xp
    n = points.shape[0]
    indices = xp.empty((n, k), dtype=xp.int64)
    squared = xp.empty((n, k), dtype=xp.float64)
    uncertain = []
    exhaustive = candidates.shape[1] >= n  # every point was proposed: nothing can be missing
    for start in range(0, n, _ROW_CHUNK):
        stop = min(start + _ROW_CHUNK, n)
        block = candidates[start:stop]
        d2 = rowwise_squared(points[start:stop], points[block], xp)
        d2, block = _order_candidates(d2, block, xp.arange(start, stop), xp)
        indices[start:stop] = block[:, :k]
        squared[start:stop] = d2[:, :k]
        if not exhaustive:
            bound = far_squared[start:stop] - margin[start:stop]
            uncertain.append(xp.nonzero(d2[:, k - 1] >= bound)[0] + start)
    rows = xp.concatenate(uncertain) if uncertain else xp.zeros(0, dtype=xp.int64)
    return indices, squared, rows


def _nearest_by_ball(points: np.ndarray, rows: np.ndarray, k: int, bound: np.ndarray):
    """CPU without numba: the k nearest others of ``rows`` from every point within the
    squared distance ``bound`` of each."""
    from scipy.spatial import cKDTree

    tree = cKDTree(points)
    indices = np.empty((rows.size, k), dtype=np.int64)
    squared = np.empty((rows.size, k))
    for start in range(0, rows.size, _ROW_CHUNK):
        chunk = rows[start : start + _ROW_CHUNK]
        out = slice(start, start + chunk.size)
        radius = np.sqrt(bound[out]) * (1 + _TREE_RELATIVE_ERROR) + np.finfo(float).tiny
        found = tree.query_ball_point(points[chunk], radius, workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=chunk.size)
        owner = np.repeat(chunk, counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        keep = candidate != owner
        owner, candidate = owner[keep], candidate[keep]
        d2 = rowwise_squared(points[owner], points[candidate], np)
        order = np.lexsort((candidate, d2, owner))
        owner, candidate, d2 = owner[order], candidate[order], d2[order]
        first = np.searchsorted(owner, chunk)
        take = first[:, None] + np.arange(k)[None, :]
        indices[out] = candidate[take]
        squared[out] = d2[take]
    return indices, squared


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

"""Exact k nearest neighbours of every point among the OTHER points.

Contract (every engine): Euclidean distance computed as ``sqrt(sum_d (x_d - y_d)^2)`` in
float64; the point itself excluded by index (its duplicates are not excluded); neighbours
ordered by (distance, index), so ties go to the lower row index. No approximate index.

Engines:
- ``"kdtree"`` (CPU): scipy's cKDTree on all cores asks for k + 2 candidates, the distances are
  recomputed with the arithmetic above, and rows whose k-th and (k+1)-th distances are tied (or
  within 1e-9 relative, where the tree's own rounding could differ) are resolved exactly from a
  ball query.
- ``"brute"`` (any backend, the GPU path): tiles of queries against tiles of points, running
  top-k; memory bounded by the tile sizes.
"""

from __future__ import annotations

import numpy as np

from .backend import CPU, Backend
from .errors import AvatarError

ENGINES = ("auto", "kdtree", "brute")
_TIE_BAND = 1e-9
_ROW_CHUNK = 1 << 16


def nearest_neighbours(
    points, k: int, backend: Backend = CPU, engine: str = "auto"
) -> tuple[object, object]:
    """Indices (n, k) int64 and distances (n, k) float64 of each point's k nearest others."""
    n = points.shape[0]
    if not 1 <= k < n:
        raise AvatarError(f"k must satisfy 1 <= k < n = {n}, got k = {k}")
    if engine not in ENGINES:
        raise AvatarError(f"engine={engine!r} is not one of {ENGINES}")
    if engine == "auto":
        engine = "brute" if backend.is_gpu else "kdtree"
    if engine == "kdtree":
        if backend.is_gpu:
            raise AvatarError("engine='kdtree' runs on the CPU only; use engine='brute' on the GPU")
        return _kdtree_neighbours(np.ascontiguousarray(points, dtype=np.float64), k)
    return _brute_neighbours(backend.asarray(points, dtype=np.float64), k, backend)


def _squared_distances(queries, candidates):
    """Exact squared distances between row-aligned queries (b, d) and candidates (b, q, d)."""
    return ((candidates - queries[:, None, :]) ** 2).sum(axis=-1)


def _kdtree_neighbours(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    from scipy.spatial import cKDTree

    n = points.shape[0]
    tree = cKDTree(points)
    n_candidates = min(k + 2, n)
    indices = np.empty((n, k), dtype=np.int64)
    squared = np.empty((n, k), dtype=np.float64)
    boundary_rows = []
    for start in range(0, n, _ROW_CHUNK):
        stop = min(start + _ROW_CHUNK, n)
        _, candidates = tree.query(points[start:stop], k=n_candidates, workers=-1)
        candidates = candidates.astype(np.int64)
        d2 = _squared_distances(points[start:stop], points[candidates])
        own = np.arange(start, stop)[:, None]
        d2[candidates == own] = np.inf
        order = np.lexsort((candidates, d2), axis=1)
        candidates = np.take_along_axis(candidates, order, axis=1)
        d2 = np.take_along_axis(d2, order, axis=1)
        indices[start:stop] = candidates[:, :k]
        squared[start:stop] = d2[:, :k]
        if n_candidates > k + 1:
            # The (k+1)-th other point decides whether the k-th is certain.
            tied = d2[:, k] <= d2[:, k - 1] * (1 + _TIE_BAND)
            boundary_rows.append(np.flatnonzero(tied) + start)
    rows = np.concatenate(boundary_rows) if boundary_rows else np.zeros(0, dtype=np.int64)
    if rows.size:
        _resolve_ties(tree, points, rows, k, indices, squared)
    return indices, np.sqrt(squared)


def _resolve_ties(tree, points, rows, k, indices, squared) -> None:
    """Recompute the k nearest of ``rows`` from every point within their k-th distance."""
    for start in range(0, rows.size, _ROW_CHUNK):
        chunk = rows[start : start + _ROW_CHUNK]
        radius = np.sqrt(squared[chunk, k - 1]) * (1 + _TIE_BAND) + np.finfo(float).tiny
        found = tree.query_ball_point(points[chunk], radius, workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=chunk.size)
        owner = np.repeat(chunk, counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        keep = candidate != owner
        owner, candidate = owner[keep], candidate[keep]
        d2 = ((points[candidate] - points[owner]) ** 2).sum(axis=1)
        order = np.lexsort((candidate, d2, owner))
        owner, candidate, d2 = owner[order], candidate[order], d2[order]
        first = np.searchsorted(owner, chunk)
        take = first[:, None] + np.arange(k)[None, :]
        indices[chunk] = candidate[take]
        squared[chunk] = d2[take]


def _brute_neighbours(points, k: int, backend: Backend):
    """Tiled exhaustive search with a running top-k (stable on (distance, index))."""
    xp = backend.xp
    n, dim = points.shape
    query_tile = 1024
    ref_tile = max(k, min(n, (1 << 25) // (query_tile * max(dim, 1))))
    indices = xp.empty((n, k), dtype=xp.int64)
    squared = xp.empty((n, k), dtype=xp.float64)
    for q0 in range(0, n, query_tile):
        q1 = min(q0 + query_tile, n)
        queries = points[q0:q1]
        best_d2 = xp.full((q1 - q0, 0), xp.inf)
        best_idx = xp.zeros((q1 - q0, 0), dtype=xp.int64)
        own = xp.arange(q0, q1)[:, None]
        for r0 in range(0, n, ref_tile):
            r1 = min(r0 + ref_tile, n)
            d2 = ((points[None, r0:r1, :] - queries[:, None, :]) ** 2).sum(axis=-1)
            idx = xp.broadcast_to(xp.arange(r0, r1)[None, :], d2.shape)
            d2 = xp.where(idx == own, xp.inf, d2)
            # Running best first (all lower indices, sorted by (d, idx)), then the tile in
            # index order: a stable sort on distance alone keeps ties by index.
            all_d2 = xp.concatenate([best_d2, d2], axis=1)
            all_idx = xp.concatenate([best_idx, idx], axis=1)
            order = xp.argsort(all_d2, axis=1, kind="stable")[:, :k]
            best_d2 = xp.take_along_axis(all_d2, order, axis=1)
            best_idx = xp.take_along_axis(all_idx, order, axis=1)
        indices[q0:q1] = best_idx
        squared[q0:q1] = best_d2
    return indices, xp.sqrt(squared)

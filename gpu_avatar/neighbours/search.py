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
error (every point not proposed is at least that far): for the float32 indexes (FAISS, cuML)
a bound proved in ``_float32_certificate``, about (2 d + 16) 2^-24 times the squared norms of
the (centred) points. The other rows are answered exactly by the compiled k-d tree walk.
"""

from __future__ import annotations

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError, import_extra
from ..parameters import ENGINES, check_choice, check_integer
from .distances import pairwise_squared

# Float32 candidate indexes (FAISS, cuML): see _float32_certificate.
_FLOAT32_UNIT_ROUNDOFF = 2.0**-24  # u, half of float32's machine epsilon
_FLOAT32_UNDERFLOW = 2.0**-100  # absolute: every float32 underflow in a distance, and more
_FLOAT32_MAX_SQUARED_NORM = 2.0**125  # above, a float32 distance could overflow: no certificate
_FLOAT32_MAX_DIMENSIONS = 1 << 20  # the bound's second-order slack holds up to here


def nearest_neighbours(points, k: int, backend: Backend = CPU, engine: str = "auto"):
    """Indices (n, k) int64 and distances (n, k) float64 of each point's k nearest others,
    as backend arrays."""
    n = points.shape[0]
    check_integer("k", k, 1, n - 1)
    check_choice("engine", engine, ENGINES)
    xp = backend.xp
    points = backend.asarray(points, dtype=np.float64)
    if not bool(xp.isfinite(points).all()):
        raise AvatarError("points hold missing or infinite coordinates, whose neighbours are "
                          "undefined: impute or drop those rows first")
    if engine == "auto":
        engine = _auto_engine(backend, n, k)
    if engine == "brute":
        indices, squared = _brute(points, k, backend)
        return indices, xp.sqrt(squared, out=squared)  # in place: no second (n, k) array
    if engine in ("kdtree", "numba"):
        indices, squared = _tree_neighbours(points, k, backend)
        return indices, xp.sqrt(squared, out=squared)
    candidates, far_squared, margin = _PROPOSERS[engine](points, min(k + 2, n), backend)
    indices, squared, uncertain = backend.kernels.verify_candidates(
        backend, points, candidates, far_squared, margin, k
    )
    if uncertain.size:
        indices[uncertain], squared[uncertain] = _tree_neighbours(points, k, backend, uncertain)
    return indices, xp.sqrt(squared, out=squared)


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


def nearest_reference(queries, references, backend: Backend = CPU):
    """``(index, distance)`` numpy arrays: each query row's nearest row of ``references``, the
    lowest index among equally near ones, and the exact distance (this module's arithmetic):
    the compiled k-d tree walk of the backend's kernels."""
    queries = backend.asarray(queries, dtype=np.float64)
    references = backend.asarray(references, dtype=np.float64)
    index, squared = backend.kernels.nearest_reference(backend, queries, references)
    return backend.to_numpy(index), backend.to_numpy(backend.xp.sqrt(squared))


def nearest_reference_distances(queries, references, backend: Backend = CPU) -> np.ndarray:
    """Exact distance of each query row to its nearest row of ``references``, as a numpy
    array (``nearest_reference``)."""
    return nearest_reference(queries, references, backend)[1]


# ------------------------------------------------------------------ candidate proposers
def _faiss_candidates(points, q: int, backend: Backend):
    faiss = import_extra("faiss", "faiss", "engine='faiss'")

    host, norms = _float32_points(np.asarray(backend.to_numpy(points), dtype=np.float64), np)
    index = backend.faiss_index(faiss, faiss.IndexFlatL2(host.shape[1]))
    index.add(host)
    reported, candidates = index.search(host, q)  # float32 squared distances
    far, margin = _float32_certificate(
        np.asarray(reported, dtype=np.float64), norms, host.shape[1], np
    )
    return tuple(backend.asarray(a) for a in (candidates.astype(np.int64), far, margin))


def _cuml_candidates(points, q: int, backend: Backend):
    NearestNeighbors = import_extra(  # noqa: N806 - cuML's class
        "cuml.neighbors", None, "engine='cuml'",
        "install RAPIDS cuML (conda, or a rapidsai/base image), or use "
        "engine='auto'",
    ).NearestNeighbors

    xp = backend.xp
    cast, norms = _float32_points(points, xp)  # what cuML's float32 brute force works on
    model = NearestNeighbors(n_neighbors=q, algorithm="brute", metric="euclidean")
    distances, candidates = model.fit(cast).kneighbors(cast)  # float32, square roots
    distances, candidates = xp.asarray(distances, dtype=xp.float64), xp.asarray(candidates)
    far, margin = _float32_certificate(distances * distances, norms, cast.shape[1], xp)
    return candidates.astype(xp.int64), far, margin


def _float32_points(points, xp):
    """The points as a float32 index gets them: minus their mean (in float64), cast to
    float32; and the squared norms of the cast points (float64).

    Centring changes no exact distance (the candidates are re-measured on the original
    points) but the float32 error grows with the norms: a table far from the origin (say
    coordinates near 10^4 that differ by 10^-3) would otherwise leave no row certified."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf or nan: no certificate
        cast = (points - points.mean(axis=0)).astype(xp.float32)
    wide = cast.astype(xp.float64)
    return cast, (wide * wide).sum(axis=1)


def _float32_certificate(reported, norms, dim: int, xp):
    """``(far, margin)`` for ``_verify`` from a float32 index's squared distances ``reported``
    (n, q), given the squared norms ``norms`` of the cast points (``_float32_points``).

    ``far`` is each row's largest reported distance: the index kept its q smallest, so every
    point it did not propose reported at least ``far``. ``margin`` bounds, for any pair (i, j),
    |reported(i, j) - D(i, j)| with D this module's float64 distance, so such a point has
    D >= far - margin, and a row whose exact k-th candidate distance is below that is certain.

    The bound, with u = 2^-24, a and b the cast points i and j, N = |a|^2 + |b|^2 (Higham's
    gamma_d = d u / (1 - d u) for a d-term sum or dot product, in any order, FMA or not):
    - the cast (after the centring's float64 rounding): each coordinate within a relative
      U ~ u + 2^-52, so |a - b| is within U (|a| + |b|) of the exact distance r and the square
      within U (2 + U) (|a| + |b|)^2 <= 4 u N (+ second order);
    - the index's float32 arithmetic on the cast points: the expanded form |a|^2 + |b|^2 -
      2 a.b (FAISS's BLAS path, cuML's brute force) errs by gamma_d N on the two norms,
      2 gamma_d sum|a_d b_d| <= gamma_d N on the product, and 2 roundings of values below
      2 N: 2 gamma_d N + 4 u N; the direct sum of squares (FAISS below 20 queries) errs by
      gamma_(d+1) |a - b|^2 <= 2 gamma_(d+1) N, less; clamping at zero only reduces it;
    - cuML returns float32 square roots, squared here in float64: 2 u times the value,
      below 2 N, so 4 u N (counted for FAISS too: one bound for both);
    - D itself: float64, relative gamma_(d+1) in float64, about 10^-9 times the above.
    First order: (2 d + 12) u N. The coefficient (2 d + 16) u / (1 - (d + 2) u), used with N
    at its largest over j (|a_i|^2 + max |b|^2), keeps 4 u N for the rest, up to d = 2^20:
    the second-order terms, the float64 norms and evaluation of far - margin (below
    10^-3 u N), and float32 underflow, flush-to-zero included: 4 sqrt(d) 2^-126 (|a| + |b|)
    from the cast, below 2 u N where |a| + |b| > 2^-90 (else below 2^-200), and at most
    3 d + 4 losses of 2^-126 in the arithmetic, below ``_FLOAT32_UNDERFLOW`` (2^-100), added.
    This assumes IEEE float32 arithmetic: no TF32 or float16 (FAISS's and cuML's brute force
    default). Where the bound cannot hold (a squared norm above 2^125, where float32 may
    overflow, a non-finite reported distance, d above 2^20), the margin is infinite and the
    row is answered exactly.

    The old margins (1e-5 relative for FAISS, 1e-9 for cuML) were below this bound from
    d ~ 76 and for every d respectively: cuML's lost true neighbours silently."""
    far = reported.max(axis=1)
    largest = norms.max()
    usable = xp.isfinite(far) & (largest <= _FLOAT32_MAX_SQUARED_NORM)
    if dim > _FLOAT32_MAX_DIMENSIONS:
        usable = xp.zeros_like(usable)
    u = _FLOAT32_UNIT_ROUNDOFF
    coefficient = (2 * dim + 16) * u / (1 - (dim + 2) * u)
    margin = coefficient * (norms + largest) + _FLOAT32_UNDERFLOW
    return xp.where(usable, far, 0.0), xp.where(usable, margin, xp.inf)


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

"""Exact distance-rank reductions between originals X and their unshuffled avatars Y.

One pass gives, for every original i (own avatar = row i of Y):

- ``local_cloaking[i] = #{j != i : d(x_i, y_j) <= d(x_i, y_i)}``;
- ``hidden[i]``: the nearest avatar of x_i is not its own. Rule for ties: another avatar at
  exactly the own distance hides i only if its index is lower than i (the order a stable
  ``argmin`` would pick);

and for every avatar a:

- ``closest[a]``, ``second_closest[a]``: distances to its closest and second closest originals
  (its own original included).

All comparisons use the squared distances of ``distances.py``, so the own pair is computed
with exactly the arithmetic of every other pair and is excluded by index, never by
subtracting one from a count.

Engines: ``"brute"`` (tiles of X against tiles of Y, memory bounded by the tile, written
against ``xp`` so cupy runs it unchanged) and ``"kdtree"`` (CPU, large n: counts within a
per-row radius from scipy's cKDTree, taken at ``d_own * (1 -/+ 1e-9)``; a row with anything
besides its own avatar inside that band is re-checked exactly from the candidates' exact
distances). Both give identical results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backend import CPU, Backend
from .distances import pairwise_squared, rowwise_squared
from .errors import AvatarError

ENGINES = ("auto", "brute", "kdtree")
BRUTE_MAX_PAIRS_ON_CPU = 4 * 10**8
_BAND = 1e-9
_ROW_CHUNK = 1 << 16


@dataclass
class DistanceRanks:
    """Per-row outputs of the reduction, as host numpy arrays."""

    own_distance: np.ndarray
    local_cloaking: np.ndarray
    hidden: np.ndarray
    closest: np.ndarray
    second_closest: np.ndarray


def distance_ranks(
    originals, avatars, backend: Backend = CPU, engine: str = "auto", tile: int | None = None
) -> DistanceRanks:
    """Run the reduction; ``originals`` and ``avatars`` are (n, d) coordinates, row-aligned."""
    if engine not in ENGINES:
        raise AvatarError(f"engine={engine!r} is not one of {ENGINES}")
    if originals.shape != avatars.shape:
        raise AvatarError(
            f"originals {originals.shape} and avatars {avatars.shape} must have the same shape"
        )
    if originals.shape[0] < 2:
        raise AvatarError("distance metrics need at least 2 rows")
    n = originals.shape[0]
    if engine == "auto":
        engine = "brute" if backend.is_gpu or n * n <= BRUTE_MAX_PAIRS_ON_CPU else "kdtree"
    if engine == "kdtree":
        if backend.is_gpu:
            raise AvatarError("engine='kdtree' runs on the CPU only; use engine='brute' on the GPU")
        return _kdtree(np.asarray(originals, np.float64), np.asarray(avatars, np.float64))
    return _brute(
        backend.asarray(originals, dtype=np.float64),
        backend.asarray(avatars, dtype=np.float64),
        backend,
        tile or default_tile(backend),
    )


def default_tile(backend: Backend) -> int:
    """Square tile edge: ~32 MB of float64 per tile on the CPU, more on a GPU's free memory."""
    free = backend.free_memory_bytes()
    if free is None:
        return 2048
    # a handful of (tile x tile) float64 temporaries must fit in a tenth of the free memory
    return int(max(1024, min(16384, np.sqrt(free / 10 / (8 * 8)))))


def _brute(x, y, backend: Backend, tile: int) -> DistanceRanks:
    xp = backend.xp
    n = x.shape[0]
    own = rowwise_squared(x, y, xp)
    cloaking = xp.zeros(n, dtype=xp.int64)
    hidden = xp.zeros(n, dtype=bool)
    best = xp.full((2, n), xp.inf)  # per avatar: two smallest squared distances
    for i0 in range(0, n, tile):
        i1 = min(i0 + tile, n)
        rows = xp.arange(i0, i1)[:, None]
        own_rows = own[i0:i1, None]
        for j0 in range(0, n, tile):
            j1 = min(j0 + tile, n)
            d2 = pairwise_squared(x[i0:i1], y[j0:j1], xp)
            cols = xp.arange(j0, j1)[None, :]
            at_most = (d2 <= own_rows) & (cols != rows)
            cloaking[i0:i1] += at_most.sum(axis=1)
            # d2 < own never holds for the own pair: same arithmetic, same value.
            hides = (d2 < own_rows) | ((d2 == own_rows) & (cols < rows))
            hidden[i0:i1] |= hides.any(axis=1)
            stacked = xp.concatenate([best[:, j0:j1], d2], axis=0)
            two = xp.partition(stacked, 1, axis=0)[:2]
            best[:, j0:j1] = xp.sort(two, axis=0)
    return DistanceRanks(
        own_distance=backend.to_numpy(xp.sqrt(own)),
        local_cloaking=backend.to_numpy(cloaking),
        hidden=backend.to_numpy(hidden),
        closest=backend.to_numpy(xp.sqrt(best[0])),
        second_closest=backend.to_numpy(xp.sqrt(best[1])),
    )


def _kdtree(x: np.ndarray, y: np.ndarray) -> DistanceRanks:
    from scipy.spatial import cKDTree

    n = x.shape[0]
    own = rowwise_squared(x, y, np)
    own_distance = np.sqrt(own)
    avatar_tree = cKDTree(y)
    low = avatar_tree.query_ball_point(
        x, own_distance * (1 - _BAND), return_length=True, workers=-1
    )
    high_radius = own_distance * (1 + _BAND) + np.finfo(float).tiny
    high = avatar_tree.query_ball_point(x, high_radius, return_length=True, workers=-1)
    # Only the own avatar in the band: everything below the band is strictly closer.
    cloaking = (high - 1).astype(np.int64)
    hidden = (low > 0) & (own > 0)  # at d_own = 0 the low ball holds the own avatar
    recheck = np.flatnonzero((high - low > 1) | ((own == 0) & (high > 1)))
    for start in range(0, recheck.size, _ROW_CHUNK):
        rows = recheck[start : start + _ROW_CHUNK]
        found = avatar_tree.query_ball_point(x[rows], high_radius[rows], workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=rows.size)
        owner = np.repeat(rows, counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        d2 = rowwise_squared(x[owner], y[candidate], np)
        other = candidate != owner
        at_most = other & (d2 <= own[owner])
        hides = other & ((d2 < own[owner]) | ((d2 == own[owner]) & (candidate < owner)))
        position = np.searchsorted(rows, owner)
        cloaking[rows] = np.bincount(position, weights=at_most, minlength=rows.size).astype(
            np.int64
        )
        hidden[rows] = np.bincount(position, weights=hides, minlength=rows.size) > 0

    original_tree = cKDTree(x)
    n_candidates = min(3, n)
    _, candidates = original_tree.query(y, k=n_candidates, workers=-1)
    d2 = np.sort(rowwise_squared(y, x[candidates], np), axis=1)
    return DistanceRanks(
        own_distance=own_distance,
        local_cloaking=cloaking,
        hidden=hidden,
        closest=np.sqrt(d2[:, 0]),
        second_closest=np.sqrt(d2[:, 1]),
    )

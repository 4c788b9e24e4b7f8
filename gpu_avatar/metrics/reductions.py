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
against ``xp`` so cupy runs it unchanged) and ``"kdtree"`` (or ``"numba"``, the same): the
compiled k-d tree walks of ``kernels/ranks.py``, that compare with the shared arithmetic
itself, run by the backend's kernels (on the CPU a walk shared by each block of neighbouring
rows, on the GPU one thread per row). On a CPU without numba, ``"kdtree"`` is scipy's cKDTree
counting within a per-row radius taken at ``d_own * (1 -/+ 1e-9)``, a row with anything
besides its own avatar inside that band being re-checked exactly from the ball's members. All
give identical results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import CPU, Backend, check_compiled
from ..errors import AvatarError
from ..neighbours.distances import pairwise_squared, rowwise_squared
from ..neighbours.search import query_in_tree_order
from ..parameters import METRIC_ENGINES, check_choice

BRUTE_MAX_PAIRS_ON_CPU = 25 * 10**6  # without numba: tiles for n <= 5000, scipy's tree above
_BAND = 1e-9
_ROW_CHUNK = 1 << 16
# Ball members listed per CPU re-check chunk (~200 bytes each): bounds the re-check's memory
# where exact ties put many avatars inside many rows' radius (duplicated, lattice-like points).
_RECHECK_CANDIDATES = 1 << 20
_BALL_VERSUS_TILE = 0.05  # a listed ball member costs about 20 tiled pair comparisons


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
    check_choice("engine", engine, METRIC_ENGINES)
    if originals.shape != avatars.shape:
        raise AvatarError(
            f"originals {originals.shape} and avatars {avatars.shape} must have the same shape"
        )
    if originals.shape[0] < 2:
        raise AvatarError("distance metrics need at least 2 rows")
    n = originals.shape[0]
    x = backend.asarray(originals, dtype=np.float64)
    y = backend.asarray(avatars, dtype=np.float64)
    if engine == "auto":
        engine = auto_engine(backend, n)
    if engine == "numba" or (engine == "kdtree" and backend.compiled):
        return _tree(x, y, backend)
    if engine == "kdtree":
        return _kdtree(x, y)
    own = rowwise_squared(x, y, backend.xp)
    cloaking, hidden, best = tile_pass(
        x, y, own, backend.xp.arange(n), backend, tile or default_tile(backend), columns=True
    )
    return host_ranks(backend, own, cloaking, hidden, best[0], best[1])


def auto_engine(backend: Backend, n: int) -> str:
    """The engine ``"auto"`` picks: tiles up to the kernels' ``RANKS_BRUTE_MAX_ROWS``, the
    k-d tree above (scipy's on a CPU without numba)."""
    if not backend.compiled:
        return "brute" if n * n <= BRUTE_MAX_PAIRS_ON_CPU else "kdtree"
    return "brute" if n <= backend.kernels.RANKS_BRUTE_MAX_ROWS else "kdtree"


def _tree(x, y, backend: Backend) -> DistanceRanks:
    """The compiled k-d tree walks of the backend's kernels."""
    check_compiled(backend, "engine='numba'")
    own = rowwise_squared(x, y, backend.xp)
    return host_ranks(backend, own, *backend.kernels.distance_ranks(backend, x, y, own))


def default_tile(backend: Backend) -> int:
    """Square tile edge: ~32 MB of float64 per tile on the CPU, more on a GPU's free memory."""
    free = backend.free_memory_bytes()
    if free is None:
        return 2048
    # a handful of (tile x tile) float64 temporaries must fit in a tenth of the free memory
    return int(max(1024, min(16384, np.sqrt(free / 10 / (8 * 8)))))


def host_ranks(backend: Backend, own, cloaking, hidden, first, second) -> DistanceRanks:
    xp = backend.xp
    return DistanceRanks(
        own_distance=backend.to_numpy(xp.sqrt(own)),
        local_cloaking=backend.to_numpy(cloaking).astype(np.int64),
        hidden=backend.to_numpy(hidden).astype(bool),
        closest=backend.to_numpy(xp.sqrt(first)),
        second_closest=backend.to_numpy(xp.sqrt(second)),
    )


def tile_pass(x, y, own, rows, backend: Backend, tile: int, columns: bool, first_row: int = 0):
    """Counts and hidden flags of the originals ``rows`` against every avatar, tile by tile;
    with ``columns`` also each avatar's two smallest squared distances to those originals.
    ``x`` and ``own`` may hold a block of originals starting at global row ``first_row``."""
    xp = backend.xp
    n = y.shape[0]
    cloaking = xp.zeros(rows.shape[0], dtype=xp.int64)
    hidden = xp.zeros(rows.shape[0], dtype=bool)
    best = xp.full((2, n), xp.inf) if columns else None
    for i0 in range(0, rows.shape[0], tile):
        block = rows[i0 : i0 + tile]
        row_ids = block[:, None] + first_row
        own_rows = own[block][:, None]
        for j0 in range(0, n, tile):
            j1 = min(j0 + tile, n)
            d2 = pairwise_squared(x[block], y[j0:j1], xp)
            cols = xp.arange(j0, j1)[None, :]
            at_most = (d2 <= own_rows) & (cols != row_ids)
            cloaking[i0 : i0 + tile] += at_most.sum(axis=1)
            # d2 < own never holds for the own pair: same arithmetic, same value.
            hides = (d2 < own_rows) | ((d2 == own_rows) & (cols < row_ids))
            hidden[i0 : i0 + tile] |= hides.any(axis=1)
            if columns:
                stacked = xp.concatenate([best[:, j0:j1], d2], axis=0)
                two = xp.partition(stacked, 1, axis=0)[:2]
                best[:, j0:j1] = xp.sort(two, axis=0)
    return cloaking, hidden, best


def _kdtree(x: np.ndarray, y: np.ndarray) -> DistanceRanks:
    """The CPU engine without numba: scipy's ball counts at the banded radius, re-checked."""
    from scipy.spatial import cKDTree

    n = x.shape[0]
    own = rowwise_squared(x, y, np)
    own_distance = np.sqrt(own)
    avatar_tree = cKDTree(y)
    high_radius = own_distance * (1 + _BAND) + np.finfo(float).tiny
    high = _ball_counts(avatar_tree, x, high_radius)
    # A row whose ball holds its own avatar alone has nothing closer: low = 0 is exact there.
    low = _ball_counts(avatar_tree, x, own_distance * (1 - _BAND), rows=high > 1)
    # Only the own avatar in the band: everything below the band is strictly closer.
    cloaking = (high - 1).astype(np.int64)
    hidden = (low > 0) & (own > 0)  # at d_own = 0 the low ball holds the own avatar
    recheck = np.nonzero((high - low > 1) | ((own == 0) & (high > 1)))[0]
    # Re-check from the ball members, unless listing them costs more than comparing the rows
    # with every avatar (many exact ties: lattice-like or duplicated points).
    listed = int(high[recheck].sum()) if recheck.size else 0
    if recheck.size and listed > _BALL_VERSUS_TILE * recheck.size * n:
        cloaking[recheck], hidden[recheck], _ = tile_pass(
            x, y, own, recheck, CPU, default_tile(CPU), columns=False
        )
    elif recheck.size:
        _recheck_by_ball(avatar_tree, x, y, own, high_radius, recheck, cloaking, hidden)

    original_tree = cKDTree(x)
    # x_i and y_i are close: the originals' leaf order suits the avatars too
    _, candidates = query_in_tree_order(
        original_tree, lambda q: original_tree.query(q, k=2, workers=-1), y
    )
    d2 = np.sort(rowwise_squared(y, x[candidates], np), axis=1)
    return host_ranks(CPU, own, cloaking, hidden, d2[:, 0], d2[:, 1])


def _ball_counts(tree, points: np.ndarray, radius: np.ndarray, rows=None) -> np.ndarray:
    """Number of tree points within ``radius[i]`` of ``points[i]`` for the ``rows`` mask (all
    rows by default; 0 elsewhere)."""
    counts = np.zeros(points.shape[0], dtype=np.int64)
    # points[i] lies near the tree's point i (an original and its own avatar): querying in
    # the tree's leaf order keeps neighbouring queries on the same nodes (~30 % faster).
    order = np.asarray(tree.indices)
    if rows is not None:
        order = order[rows[order]]
    counts[order] = tree.query_ball_point(
        points[order], radius[order], return_length=True, workers=-1
    )
    return counts


def _recheck_chunks(rows: np.ndarray, ball_sizes: np.ndarray):
    """Consecutive groups of ``rows``: at most ``_ROW_CHUNK`` rows whose balls hold at most
    ``_RECHECK_CANDIDATES`` members together (a single row may exceed that alone)."""
    ends = np.cumsum(ball_sizes)
    start = 0
    while start < rows.size:
        listed_before = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, listed_before + _RECHECK_CANDIDATES, side="right"))
        stop = min(max(stop, start + 1), start + _ROW_CHUNK)
        yield rows[start:stop]
        start = stop


def _recheck_by_ball(tree, x, y, own, radius, rows, cloaking, hidden) -> None:
    """CPU: exact counts for ``rows`` from every avatar inside their high-band ball."""
    for chunk in _recheck_chunks(rows, cloaking[rows] + 1):  # ball sizes: the high counts
        found = tree.query_ball_point(x[chunk], radius[chunk], workers=-1)
        counts = np.fromiter((len(f) for f in found), dtype=np.int64, count=chunk.size)
        owner = np.repeat(chunk, counts)
        candidate = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        d2 = rowwise_squared(x[owner], y[candidate], np)
        other = candidate != owner
        at_most = other & (d2 <= own[owner])
        hides = other & ((d2 < own[owner]) | ((d2 == own[owner]) & (candidate < owner)))
        position = np.searchsorted(chunk, owner)
        cloaking[chunk] = np.bincount(position, weights=at_most, minlength=chunk.size)
        hidden[chunk] = np.bincount(position, weights=hides, minlength=chunk.size) > 0

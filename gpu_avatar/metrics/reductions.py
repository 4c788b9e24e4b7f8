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
rows, on the GPU one thread per row). Both give identical results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError
from ..neighbours.distances import pairwise_squared, rowwise_squared
from ..parameters import METRIC_ENGINES, check_choice


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
    if engine in ("kdtree", "numba"):
        return _tree(x, y, backend)
    own = rowwise_squared(x, y, backend.xp)
    cloaking, hidden, best = tile_pass(
        x, y, own, backend.xp.arange(n), backend, tile or default_tile(backend), columns=True
    )
    return host_ranks(backend, own, cloaking, hidden, best[0], best[1])


def auto_engine(backend: Backend, n: int) -> str:
    """The engine ``"auto"`` picks: tiles up to the kernels' ``RANKS_BRUTE_MAX_ROWS``, the
    k-d tree above."""
    return "brute" if n <= backend.kernels.RANKS_BRUTE_MAX_ROWS else "kdtree"


def _tree(x, y, backend: Backend) -> DistanceRanks:
    """The compiled k-d tree walks of the backend's kernels."""
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

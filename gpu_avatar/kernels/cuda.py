"""The CUDA driver (numba-cuda): the functions of ``cpu.py``, with the same signatures, on
device arrays; one thread per query.

The walks are the ones the CPU runs (``rank_query``, ``two_nearest_query``, ``knn_query``,
``verify_row``, ``nearest_mixed_scan``, ``synthesize_row``), compiled here for the device: one
source, so a GPU result equals the CPU's row for row. The flat k-d tree is built on the host
(``tree.KDTree``) and copied to the device; queries run in the tree's leaf order, so the
threads of a warp walk nearby queries down the same nodes. Pair distances use round-to-nearest
intrinsics (no fused multiply-add), node boxes only prune or count whole nodes with the CPU's
margin, and no result depends on a float atomic: the GPU decides every comparison exactly as
the CPU does.

Every kernel is cached on disk (``cache=True``: next to this file in ``__pycache__``, or under
``NUMBA_CACHE_DIR``), per compute capability and CUDA version, as the CPU kernels are: a later
process loads it instead of compiling it. numba keys the cache on this file only: after editing
a walk of another module, clear this module's cache.

Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, how the test suite runs these kernels
without a GPU) the walks run as Python on numpy arrays. This module imports numba-cuda: the
backend imports it only for the GPU (``Backend.kernels``).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import cuda
from numba.cuda.core.config import ENABLE_CUDASIM

from .. import synthesis_kernels
from ..synthesis_kernels import synthesize_row
from . import knn, mixed, ranks, tree
from .knn import knn_query, verify_row
from .mixed import nearest_mixed_scan
from .ranks import rank_query, two_nearest_query
from .tree import STACK, KDTree

THREADS = 128  # threads per block
# knn_query keeps its top-k in per-thread arrays of a size fixed at compile time: one kernel
# per capacity, compiled on first use.
K_CAPACITIES = (16, 32, 64, 128)
MAX_K = K_CAPACITIES[-1]
# "auto" runs array tiles up to this many rows, the device tree above.
KNN_BRUTE_MAX_ROWS = RANKS_BRUTE_MAX_ROWS = 4096
# Per-thread local memory of the largest kernel (8-byte top-k values and indices, two stacks);
# the driver reserves it for every thread the device can hold at once.
LOCAL_BYTES_PER_THREAD = 8 * 2 * (MAX_K + STACK)


def _register_for_cuda() -> None:
    """Make the shared walks callable from CUDA kernels, with the exact pair arithmetic."""
    if ENABLE_CUDASIM:  # the simulator calls them as Python functions
        return
    from numba.cuda import libdevice
    from numba.cuda.extending import overload, register_jitable  # numba-cuda >= 0.21

    def exact(operation, implementation):
        @overload(operation, target="cuda")
        def typed(a, b):
            return implementation

    exact(tree.exact_sub, lambda a, b: libdevice.dadd_rn(a, -b))  # a - b, exactly
    exact(tree.exact_mul, lambda a, b: libdevice.dmul_rn(a, b))
    exact(tree.exact_add, lambda a, b: libdevice.dadd_rn(a, b))
    for walk in (tree.SHARED + ranks.SHARED + knn.SHARED + mixed.SHARED
                 + synthesis_kernels.SHARED):  # fmt: skip
        register_jitable(walk)


_register_for_cuda()


# ------------------------------------------------------------------------------- kernels
@cuda.jit(cache=True)
def _rank_kernel(y, order, start, stop, left, right, lower, upper, low_index, x, own, cloaking,
                 hidden):  # fmt: skip
    p = cuda.grid(1)
    if p < x.shape[0]:
        stack = cuda.local.array(STACK, np.int64)
        count, hides = rank_query(y, order, start, stop, left, right, lower, upper, low_index, x,
                                  own, p, stack)  # fmt: skip
        cloaking[p] = count
        hidden[p] = hides


@cuda.jit(cache=True)
def _two_nearest_kernel(x, order, start, stop, left, right, lower, upper, low_index, y, first,
                        second):  # fmt: skip
    p = cuda.grid(1)
    if p < y.shape[0]:
        nodes = cuda.local.array(STACK, np.int64)
        bounds = cuda.local.array(STACK, np.float64)
        best, runner_up = two_nearest_query(x, order, start, stop, left, right, lower, upper,
                                            low_index, y, p, nodes, bounds)  # fmt: skip
        first[p] = best
        second[p] = runner_up


@cache
def _knn_kernel(capacity: int):
    """The kNN kernel whose per-thread top-k holds up to ``capacity`` neighbours."""

    @cuda.jit(cache=True)
    def kernel(points, order, start, stop, left, right, lower, upper, low_index, queries, k,
               indices, squared):  # fmt: skip
        t = cuda.grid(1)
        if t < queries.shape[0]:
            best_d = cuda.local.array(capacity, np.float64)
            best_i = cuda.local.array(capacity, np.int64)
            nodes = cuda.local.array(STACK, np.int64)
            bounds = cuda.local.array(STACK, np.float64)
            knn_query(points, order, start, stop, left, right, lower, upper, low_index,
                      queries[t], k, best_d, best_i, nodes, bounds)  # fmt: skip
            for slot in range(k):
                indices[t, slot] = best_i[slot]
                squared[t, slot] = best_d[slot]

    return kernel


@cache
def _mixed_kernel(capacity: int):
    """The mixed-type nearest-references kernel, one thread per query, its top-k in local
    arrays of ``capacity``."""

    @cuda.jit(cache=True)
    def kernel(references, categorical, queries, k, indices, distances):
        t = cuda.grid(1)
        if t < queries.shape[0]:
            best_d = cuda.local.array(capacity, np.float64)
            best_i = cuda.local.array(capacity, np.int64)
            for slot in range(k):
                best_d[slot] = np.inf
                best_i[slot] = references.shape[0]
            nearest_mixed_scan(references, 0, references.shape[0], categorical, queries, t, k,
                               best_d, best_i)  # fmt: skip
            for slot in range(k):
                indices[t, slot] = best_i[slot]
                distances[t, slot] = best_d[slot]

    return kernel


@cuda.jit(cache=True)
def _verify_kernel(points, candidates, k, indices, squared):
    i = cuda.grid(1)
    if i < candidates.shape[0]:
        verify_row(points, candidates, i, k, squared[i], indices[i])


@cuda.jit(cache=True)
def _synthesis_kernel(continuous, codes, neighbours, weights, uniforms, out_continuous,
                      out_codes):  # fmt: skip
    r = cuda.grid(1)
    if r < neighbours.shape[0]:
        synthesize_row(continuous, codes, neighbours, weights, uniforms, r, out_continuous,
                       out_codes)  # fmt: skip


def capacity_for(k: int) -> int:
    """The smallest compiled top-k capacity holding ``k`` neighbours."""
    for capacity in K_CAPACITIES:
        if k <= capacity:
            return capacity
    raise ValueError(f"k = {k} exceeds the GPU tree kernels' capacity ({MAX_K})")


def _launch(backend, kernel, n_threads: int, *args) -> None:
    """One thread per query, on CuPy's current stream (ordered with the array work around it;
    CuPy's default, the legacy stream, is numba's default too)."""
    if not n_threads:
        return
    pointer = backend.xp.cuda.get_current_stream().ptr
    stream = cuda.external_stream(pointer) if pointer else cuda.default_stream()
    kernel[-(-n_threads // THREADS), THREADS, stream](*args)


# ------------------------------------------------------------------------- host wrappers
class DeviceTree:
    """A ``KDTree`` built on the host from device points, its arrays copied to the device."""

    def __init__(self, backend, points) -> None:
        self.backend = backend
        self.host = KDTree.build(backend.to_numpy(points))
        self.arrays = tuple(backend.asarray(a) for a in self.host.walk())
        self.order = self.arrays[1]

    def in_leaf_order(self, values):
        """Rows of ``values`` (caller order) in the tree's stored order."""
        return self.backend.xp.ascontiguousarray(values[self.order])

    def to_caller_order(self, values):
        """Rows indexed by stored row, put back in the caller's order."""
        out = self.backend.xp.empty_like(values)
        out[self.order] = values
        return out


def distance_ranks(backend, x, y, own):
    """``(cloaking, hidden, first, second)`` on the device, as ``cpu.distance_ranks``:
    per original, the local-cloaking count and hidden flag; per avatar, its two smallest
    squared distances to the originals."""
    xp = backend.xp
    n = x.shape[0]
    avatars, originals = DeviceTree(backend, y), DeviceTree(backend, x)
    # originals queried in their own avatars' stored order (x_i lies near y_i), and back
    cloaking = xp.empty(n, dtype=xp.int64)
    hidden = xp.empty(n, dtype=xp.bool_)
    _launch(backend, _rank_kernel, n, *avatars.arrays, avatars.in_leaf_order(x),
            avatars.in_leaf_order(own), cloaking, hidden)  # fmt: skip
    first = xp.empty(n, dtype=xp.float64)
    second = xp.empty(n, dtype=xp.float64)
    _launch(backend, _two_nearest_kernel, n, *originals.arrays, originals.in_leaf_order(y),
            first, second)  # fmt: skip
    return (avatars.to_caller_order(cloaking), avatars.to_caller_order(hidden),
            originals.to_caller_order(first), originals.to_caller_order(second))  # fmt: skip


def nearest_squared(backend, queries, references):
    """Each query's smallest squared distance to the rows of ``references``, on the device."""
    xp = backend.xp
    first = xp.empty(queries.shape[0], dtype=xp.float64)
    second = xp.empty(queries.shape[0], dtype=xp.float64)
    _launch(backend, _two_nearest_kernel, queries.shape[0], *DeviceTree(backend, references).arrays,
            queries, first, second)  # fmt: skip
    return first


def nearest_others(backend, points, k: int, rows=None):
    """Indices and squared distances ``(m, k)`` of the k nearest others of every point (or of
    the caller rows ``rows``), ordered by (squared distance, index), on the device."""
    xp = backend.xp
    tree = DeviceTree(backend, points)
    if rows is None:  # every stored row, in leaf order; results put back in caller order
        queries = xp.arange(points.shape[0], dtype=xp.int64)
    else:
        stored = tree.to_caller_order(xp.arange(points.shape[0], dtype=xp.int64))
        queries = stored[rows]
    indices = xp.empty((queries.shape[0], k), dtype=xp.int64)
    squared = xp.empty((queries.shape[0], k), dtype=xp.float64)
    _launch(backend, _knn_kernel(capacity_for(k)), queries.shape[0], *tree.arrays, queries, k,
            indices, squared)  # fmt: skip
    if rows is None:
        return tree.to_caller_order(indices), tree.to_caller_order(squared)
    return indices, squared


def verify_candidates(backend, points, candidates, far_squared, margin, k: int):
    """The k nearest among each row's index candidates, exactly (``verify_row``, each row's
    results written in place), and the rows whose result the index cannot guarantee (k-th
    distance >= the farthest candidate's minus ``margin``)."""
    xp = backend.xp
    n = candidates.shape[0]
    indices = xp.empty((n, k), dtype=xp.int64)
    squared = xp.empty((n, k), dtype=xp.float64)
    _launch(backend, _verify_kernel, n, xp.ascontiguousarray(points, dtype=xp.float64),
            xp.ascontiguousarray(candidates), k, indices, squared)  # fmt: skip
    if candidates.shape[1] >= points.shape[0]:  # every point proposed: nothing is missing
        return indices, squared, xp.zeros(0, dtype=xp.int64)
    return indices, squared, xp.nonzero(squared[:, k - 1] >= far_squared - margin)[0]


def nearest_mixed(backend, references, categorical, queries, k: int):
    """Each query's k nearest references by the mixed-type distance, ordered by (distance,
    index), on the device."""
    xp = backend.xp
    references = xp.ascontiguousarray(references, dtype=xp.float64)
    queries = xp.ascontiguousarray(queries, dtype=xp.float64)
    indices = xp.empty((queries.shape[0], k), dtype=xp.int64)
    distances = xp.empty((queries.shape[0], k), dtype=xp.float64)
    _launch(backend, _mixed_kernel(capacity_for(k)), queries.shape[0], references,
            xp.asarray(categorical, dtype=xp.bool_), queries, k, indices, distances)
    return indices, distances


def synthesize_block(backend, continuous, codes, neighbours, weights, uniforms):
    """A block of avatars' continuous values and codes: ``synthesize_row`` on the device."""
    xp = backend.xp
    out_continuous = xp.empty((neighbours.shape[0], continuous.shape[1]), dtype=xp.float64)
    out_codes = xp.empty((neighbours.shape[0], codes.shape[1]), dtype=xp.int64)
    _launch(backend, _synthesis_kernel, neighbours.shape[0], continuous, codes, neighbours,
            weights, uniforms, out_continuous, out_codes)  # fmt: skip
    return out_continuous, out_codes

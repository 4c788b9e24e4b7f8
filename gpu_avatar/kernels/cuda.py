"""The CUDA driver (numba-cuda): the functions of ``cpu.py``, with the same signatures, on
device arrays; one thread per query (the attacks' scan: several, over reference tiles in
shared memory).

The walks are the ones the CPU runs (``rank_query``, ``two_nearest_query``,
``count_within_query``, ``knn_query``, ``verify_row``, ``nearest_mixed_scan``,
``synthesize_row``), compiled here for the device: one
source, so a GPU result equals the CPU's row for row. The flat k-d tree is built on the host
(``tree.KDTree``) and copied to the device; queries run in the tree's leaf order, so the
threads of a warp walk nearby queries down the same nodes. Pair distances use round-to-nearest
intrinsics (no fused multiply-add), node boxes only prune or count whole nodes with the CPU's
margin, and no result depends on a float atomic: the GPU decides every comparison exactly as
the CPU does.

Every kernel is cached on disk (``cache=True``: next to this file in ``__pycache__``, or under
``NUMBA_CACHE_DIR``), per compute capability and CUDA version, as the CPU kernels are: a later
process loads it instead of compiling it. The cache is keyed on every file of the walks it
inlines, not on this one alone (``kernels.key_caches_on_sources``): a walk edited elsewhere
compiles the kernels again.

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
from ..backend.memory import resident_threads
from ..synthesis_kernels import synthesize_row
from . import key_caches_on_sources, knn, mixed, ranks, tree
from .knn import knn_query, verify_row
from .mixed import nearest_mixed_scan
from .ranks import count_within_query, rank_query, two_nearest_query
from .tree import STACK, KDTree

THREADS = 128  # threads per block
# knn_query keeps its top-k in per-thread arrays of a size fixed at compile time: one kernel
# per capacity, compiled on first use.
K_CAPACITIES = (16, 32, 64, 128)
MAX_K = K_CAPACITIES[-1]
# "auto" runs array tiles up to this many rows, the device tree above.
KNN_BRUTE_MAX_ROWS = RANKS_BRUTE_MAX_ROWS = 4096
# The attacks' scan: reference values per shared-memory tile (16 KB a block), and the fewest
# query-reference pairs a launch gets (fewer, larger launches: fewer host waits; not tuned on
# a device yet).
MIXED_TILE_VALUES = 2048
MIXED_CHUNK_PAIRS = 1 << 36
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
if not ENABLE_CUDASIM:  # the simulator caches nothing
    from numba.cuda.dispatcher import CUDACacheImpl

    key_caches_on_sources(CUDACacheImpl)


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
                        second, nearest):  # fmt: skip
    p = cuda.grid(1)
    if p < y.shape[0]:
        nodes = cuda.local.array(STACK, np.int64)
        bounds = cuda.local.array(STACK, np.float64)
        best, runner_up, index = two_nearest_query(x, order, start, stop, left, right, lower,
                                                   upper, low_index, y, p, nodes, bounds)
        first[p] = best
        second[p] = runner_up
        nearest[p] = index


@cuda.jit(cache=True)
def _count_within_kernel(points, start, stop, left, right, lower, upper, queries, radius, limit,
                         counts):  # fmt: skip
    p = cuda.grid(1)
    if p < queries.shape[0]:
        stack = cuda.local.array(STACK, np.int64)
        counts[p] = count_within_query(points, start, stop, left, right, lower, upper, queries,
                                       p, radius, limit, stack)  # fmt: skip


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
def _mixed_kernel(capacity: int, tile_values: int):
    """The mixed-type nearest-references kernel, on the references' values row after row
    (flat). A block's threads copy whole rows, up to ``tile_values`` values, into shared
    memory; each thread then merges that tile into the top-k (local arrays of ``capacity``) of
    each of its ``per_thread`` queries, at most ``MAX_K // capacity`` (one ``MAX_K`` top-k's
    local memory); the block stops as soon as none of its queries can change. Rows wider than
    a tile (or of no column) are read from device memory, in one pass."""
    slots = MAX_K // capacity

    @cuda.jit(cache=True)
    def kernel(references, m, categorical, queries, first_query, last_query, per_thread, k,
               indices, distances):  # fmt: skip
        tile = cuda.shared.array(tile_values, np.float64)
        best_d = cuda.local.array((slots, capacity), np.float64)
        best_i = cuda.local.array((slots, capacity), np.int64)
        open_ = cuda.local.array(slots, np.bool_)
        columns = queries.shape[1]
        lane, width = cuda.threadIdx.x, cuda.blockDim.x
        # query of slot s: base + s * width (a warp's threads take consecutive queries)
        base = first_query + cuda.blockIdx.x * width * per_thread + lane
        for s in range(per_thread):
            open_[s] = base + s * width < last_query
            for slot in range(k):
                best_d[s, slot] = np.inf
                best_i[s, slot] = m
        staged = 0 < columns <= tile_values  # the same for every thread of the block
        rows = tile_values // columns if staged else m
        block = tile if staged else references
        for first in range(0, m, rows):
            size = min(rows, m - first)
            if staged:
                cuda.syncthreads()  # every thread is done with the previous tile
                for v in range(lane, size * columns, width):
                    tile[v] = references[first * columns + v]
                cuda.syncthreads()
            going = 0
            for s in range(per_thread):
                if open_[s]:
                    open_[s] = nearest_mixed_scan(block, size, first, categorical, queries,
                                                  base + s * width, k, best_d[s], best_i[s])
                    going += open_[s]
            if not cuda.syncthreads_or(going):
                break
        for s in range(per_thread):
            if base + s * width < last_query:
                for slot in range(k):
                    indices[base + s * width, slot] = best_i[s, slot]
                    distances[base + s * width, slot] = best_d[s, slot]

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


def _stream(backend):
    """CuPy's current stream for numba (ordered with the array work around it; CuPy's default,
    the legacy stream, is numba's default too)."""
    pointer = backend.xp.cuda.get_current_stream().ptr
    return cuda.external_stream(pointer) if pointer else cuda.default_stream()


def _launch(backend, kernel, n_threads: int, *args) -> None:
    """One thread per query, on CuPy's current stream."""
    if not n_threads:
        return
    kernel[-(-n_threads // THREADS), THREADS, _stream(backend)](*args)


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
    ids = np.arange(own.shape[0])
    return (*ranks_among(backend, y, ids, x, ids, own),
            *two_nearest(backend, y, x, aligned=True))  # fmt: skip


def ranks_among(backend, y, avatar_ids, x, original_ids, own):
    """``(cloaking, hidden)`` of the originals against the avatars given alone, on the device,
    as ``cpu.ranks_among`` (caller indices ``avatar_ids`` and ``original_ids`` on the host)."""
    xp = backend.xp
    host, order, rows = ranks.walk_rows(
        KDTree.build(backend.to_numpy(y)), avatar_ids, original_ids,
        lambda positions: backend.to_numpy(x[backend.asarray(positions)]),
    )
    points, _, *nodes = host.walk()  # its order is the walk's ``order``, copied below
    points, *nodes = (backend.asarray(a) for a in (points, *nodes))
    rows = backend.asarray(rows)
    x_rows, own_rows = ranks.walk_originals(points, order.size, rows, x, own, xp)
    cloaking = xp.empty(order.size, dtype=xp.int64)
    hidden = xp.empty(order.size, dtype=xp.bool_)
    _launch(backend, _rank_kernel, order.size, points, backend.asarray(order), *nodes, x_rows,
            own_rows, cloaking, hidden)  # fmt: skip
    return cloaking[rows], hidden[rows]


def two_nearest(backend, queries, references, aligned: bool = False):
    """``(first, second)`` of ``cpu.two_nearest`` on the device; ``aligned``: the queries run
    in the references' leaf order (query i lies near reference i)."""
    xp = backend.xp
    tree = DeviceTree(backend, references)
    if aligned:
        queries = tree.in_leaf_order(queries)
    queries = xp.ascontiguousarray(queries, dtype=xp.float64)
    n = queries.shape[0]
    first = xp.empty(n, dtype=xp.float64)
    second = xp.empty(n, dtype=xp.float64)
    _launch(backend, _two_nearest_kernel, n, *tree.arrays, queries, first, second,
            xp.empty(n, dtype=xp.int64))  # fmt: skip
    if aligned:
        return tree.to_caller_order(first), tree.to_caller_order(second)
    return first, second


def nearest_reference(backend, queries, references):
    """``(index, squared)`` of each query's nearest reference, the lowest index among equally
    near ones, on the device."""
    xp = backend.xp
    queries = xp.ascontiguousarray(queries, dtype=xp.float64)
    n = queries.shape[0]
    first = xp.empty(n, dtype=xp.float64)
    nearest = xp.empty(n, dtype=xp.int64)
    _launch(backend, _two_nearest_kernel, n, *DeviceTree(backend, references).arrays, queries,
            first, xp.empty(n, dtype=xp.float64), nearest)  # fmt: skip
    return nearest, first


def count_within(backend, queries, references, radius: float, limit: int):
    """Per query, the references within Chebyshev distance ``radius``, counted up to
    ``limit``, on the device."""
    xp = backend.xp
    queries = xp.ascontiguousarray(queries, dtype=xp.float64)
    points, _, start, stop, left, right, lower, upper, _ = DeviceTree(backend, references).arrays
    counts = xp.empty(queries.shape[0], dtype=xp.int64)
    _launch(backend, _count_within_kernel, queries.shape[0], points, start, stop, left, right,
            lower, upper, queries, radius, limit, counts)  # fmt: skip
    return counts


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
    index), on the device. Several queries per thread once there are more than the device
    holds threads; launches of at least ``MIXED_CHUNK_PAIRS`` pairs that fill the device, the
    host waiting for each before the next: one synchronisation per chunk, and an interrupt
    stops the scan after the current chunk rather than after the whole queue."""
    xp = backend.xp
    references = xp.ascontiguousarray(references, dtype=xp.float64)
    queries = xp.ascontiguousarray(queries, dtype=xp.float64)
    categorical = xp.asarray(categorical, dtype=xp.bool_)
    n, m = queries.shape[0], references.shape[0]
    indices = xp.empty((n, k), dtype=xp.int64)
    distances = xp.empty((n, k), dtype=xp.float64)
    capacity = capacity_for(k)
    resident = resident_threads(backend)
    per_thread = min(MAX_K // capacity, max(1, n // resident))
    per_block = THREADS * per_thread
    launches = max(1, n // max(resident * per_thread, MIXED_CHUNK_PAIRS // m))
    chunk = max(1, -(-n // (launches * per_block))) * per_block  # whole blocks per launch
    kernel = _mixed_kernel(capacity, MIXED_TILE_VALUES)
    stream = _stream(backend)
    for first in range(0, n, chunk):
        last = min(first + chunk, n)
        kernel[-(-(last - first) // per_block), THREADS, stream](
            references.ravel(), m, categorical, queries, first, last, per_thread, k, indices,
            distances,
        )  # fmt: skip
        stream.synchronize()
    return indices, distances


def synthesize_block(backend, continuous, codes, neighbours, weights, uniforms, out=None):
    """A block of avatars' continuous values and codes: ``synthesize_row`` on the device,
    written to ``out`` if given (C-ordered device arrays)."""
    xp = backend.xp
    if out is None:
        out = (xp.empty((neighbours.shape[0], continuous.shape[1]), dtype=xp.float64),
               xp.empty((neighbours.shape[0], codes.shape[1]), dtype=xp.int64))  # fmt: skip
    out_continuous, out_codes = out
    _launch(backend, _synthesis_kernel, neighbours.shape[0], continuous, codes, neighbours,
            weights, uniforms, out_continuous, out_codes)  # fmt: skip
    return out_continuous, out_codes

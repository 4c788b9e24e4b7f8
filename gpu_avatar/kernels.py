"""Fused CUDA kernels for the GPU backend (cupy ``RawKernel``), compiled on first use.

Each kernel is one pass over all pairs that keeps only per-row results, with the pair
arithmetic of ``distances.py`` (float64, dimension by dimension, explicit round-to-nearest
intrinsics so that no fused multiply-add changes a value): the GPU decides every comparison
exactly as the CPU does.

- ``knn``: one thread per query, reference points streamed through shared memory, running
  top-k kept sorted by (distance, index); self excluded by index. For k <= ``MAX_K``.
- ``distance_ranks``: per original, the local-cloaking count and the hidden flag; per avatar,
  the two smallest squared distances to the originals.
"""

from __future__ import annotations

from functools import cache

MAX_K = 64
_THREADS = 128
_TILE = 128  # reference points per shared-memory tile
_MAX_DIM = 32  # shared memory: _TILE * _MAX_DIM doubles = 32 KiB

_SOURCE = r"""
#define TILE 128
#define MAX_DIM 32
#define MAX_K 64

__device__ __forceinline__ double pair_squared(const double* a, const double* b, int dim) {
    double total = 0.0;
    for (int d = 0; d < dim; ++d) {
        double diff = __dsub_rn(a[d], b[d]);
        double square = __dmul_rn(diff, diff);
        total = (d == 0) ? square : __dadd_rn(total, square);
    }
    return total;
}

__device__ __forceinline__ void load_tile(double* tile, const double* points, long long start,
                                          long long n, int dim) {
    for (int t = threadIdx.x; t < TILE * dim; t += blockDim.x) {
        long long row = start + t / dim;
        tile[t] = row < n ? points[row * dim + (t % dim)] : 0.0;
    }
}

extern "C" __global__ void knn(const double* points, long long n, int dim, int k,
                               long long* out_index, double* out_squared) {
    __shared__ double tile[TILE * MAX_DIM];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double query[MAX_DIM];
    double best_d[MAX_K];
    long long best_i[MAX_K];
    int filled = 0;
    if (i < n) {
        for (int d = 0; d < dim; ++d) query[d] = points[i * dim + d];
    }
    for (long long start = 0; start < n; start += TILE) {
        __syncthreads();
        load_tile(tile, points, start, n, dim);
        __syncthreads();
        if (i >= n) continue;
        long long stop = start + TILE < n ? start + TILE : n;
        for (long long j = start; j < stop; ++j) {
            if (j == i) continue;
            double d2 = pair_squared(query, tile + (j - start) * dim, dim);
            if (filled == k && !(d2 < best_d[k - 1])) continue;  // ties keep the lower index
            int pos = filled < k ? filled : k - 1;
            while (pos > 0 && d2 < best_d[pos - 1]) {
                best_d[pos] = best_d[pos - 1];
                best_i[pos] = best_i[pos - 1];
                --pos;
            }
            best_d[pos] = d2;
            best_i[pos] = j;
            if (filled < k) ++filled;
        }
    }
    if (i < n) {
        for (int t = 0; t < k; ++t) {
            out_index[i * k + t] = best_i[t];
            out_squared[i * k + t] = best_d[t];
        }
    }
}

extern "C" __global__ void rank_counts(const double* originals, const double* avatars,
                                       const double* own, long long n, int dim,
                                       long long* cloaking, bool* hidden) {
    __shared__ double tile[TILE * MAX_DIM];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double query[MAX_DIM];
    double own_i = 0.0;
    long long count = 0;
    bool hides = false;
    if (i < n) {
        for (int d = 0; d < dim; ++d) query[d] = originals[i * dim + d];
        own_i = own[i];
    }
    for (long long start = 0; start < n; start += TILE) {
        __syncthreads();
        load_tile(tile, avatars, start, n, dim);
        __syncthreads();
        if (i >= n) continue;
        long long stop = start + TILE < n ? start + TILE : n;
        for (long long j = start; j < stop; ++j) {
            if (j == i) continue;
            double d2 = pair_squared(query, tile + (j - start) * dim, dim);
            if (d2 <= own_i) {
                ++count;
                if (d2 < own_i || j < i) hides = true;
            }
        }
    }
    if (i < n) {
        cloaking[i] = count;
        hidden[i] = hides;
    }
}

extern "C" __global__ void closest_two(const double* avatars, const double* originals,
                                       long long n, int dim, double* first, double* second) {
    __shared__ double tile[TILE * MAX_DIM];
    long long a = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double query[MAX_DIM];
    double best = 1.0 / 0.0, next = 1.0 / 0.0;
    if (a < n) {
        for (int d = 0; d < dim; ++d) query[d] = avatars[a * dim + d];
    }
    for (long long start = 0; start < n; start += TILE) {
        __syncthreads();
        load_tile(tile, originals, start, n, dim);
        __syncthreads();
        if (a >= n) continue;
        long long stop = start + TILE < n ? start + TILE : n;
        for (long long j = start; j < stop; ++j) {
            double d2 = pair_squared(tile + (j - start) * dim, query, dim);
            if (d2 < best) { next = best; best = d2; }
            else if (d2 < next) { next = d2; }
        }
    }
    if (a < n) {
        first[a] = best;
        second[a] = next;
    }
}
"""


def supports(dim: int, k: int = 1) -> bool:
    """Whether the fused kernels handle this dimension and neighbour count."""
    return 1 <= dim <= _MAX_DIM and 1 <= k <= MAX_K


@cache
def _module(cupy_module):
    return cupy_module.RawModule(code=_SOURCE, options=("--std=c++11",))


def _launch(cp, name: str, n: int, args: tuple) -> None:
    kernel = _module(cp).get_function(name)
    blocks = (n + _THREADS - 1) // _THREADS
    kernel((blocks,), (_THREADS,), args)


def knn(cp, points, k: int):
    """Indices (n, k) and squared distances (n, k) of each point's k nearest others."""
    points = cp.ascontiguousarray(points, dtype=cp.float64)
    n, dim = points.shape
    index = cp.empty((n, k), dtype=cp.int64)
    squared = cp.empty((n, k), dtype=cp.float64)
    _launch(cp, "knn", n, (points, cp.int64(n), cp.int32(dim), cp.int32(k), index, squared))
    return index, squared


def distance_ranks(cp, originals, avatars, own):
    """(local cloaking, hidden, closest squared, second closest squared) on the device."""
    originals = cp.ascontiguousarray(originals, dtype=cp.float64)
    avatars = cp.ascontiguousarray(avatars, dtype=cp.float64)
    n, dim = originals.shape
    cloaking = cp.empty(n, dtype=cp.int64)
    hidden = cp.empty(n, dtype=cp.bool_)
    first = cp.empty(n, dtype=cp.float64)
    second = cp.empty(n, dtype=cp.float64)
    _launch(
        cp,
        "rank_counts",
        n,
        (originals, avatars, own, cp.int64(n), cp.int32(dim), cloaking, hidden),
    )
    _launch(cp, "closest_two", n, (avatars, originals, cp.int64(n), cp.int32(dim), first, second))
    return cloaking, hidden, first, second

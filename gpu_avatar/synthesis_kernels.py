"""The compiled passes of ``synthesis.py`` (numba): the barycentres and categorical draws of
a block of avatars in one pass (on the CPU here, on the GPU by ``kernels/cuda.py``), and the
random ranks of the weights."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernels import LOCK, host_array
from .kernels.tree import cpu_walks, exact_add, exact_mul, shared


def synthesize_row(continuous, codes, neighbours, weights, uniforms, r, out_continuous,
                   out_codes):  # fmt: skip
    """Row ``r`` of a block: each continuous value the weighted sum of the neighbours' values,
    added in neighbour order and clipped to their range (``synthesis._barycentre``, the same
    operations in the same order, so the same bits); each code drawn, that of the first
    neighbour where the running sum of the weights exceeds the uniform times their total.
    Compiled inline on the CPU and for the GPU (``kernels/cuda.py``), with the exact
    arithmetic of the tree walks (no fused multiply-add), so both give the same bits."""
    k = neighbours.shape[1]
    for c in range(continuous.shape[1]):
        value = continuous[neighbours[r, 0], c]
        total = exact_mul(weights[r, 0], value)
        low = value
        high = value
        for j in range(1, k):
            value = continuous[neighbours[r, j], c]
            total = exact_add(total, exact_mul(weights[r, j], value))
            low = min(low, value)
            high = max(high, value)
        out_continuous[r, c] = min(max(total, low), high)
    if codes.shape[1] == 0:
        return
    total = weights[r, 0]
    for j in range(1, k):
        total = exact_add(total, weights[r, j])
    for c in range(codes.shape[1]):
        threshold = exact_mul(uniforms[r, c], total)
        running = weights[r, 0]
        chosen = 0
        for j in range(k):
            if j > 0:
                running = exact_add(running, weights[r, j])
            if running <= threshold:
                chosen += 1
        out_codes[r, c] = codes[neighbours[r, min(chosen, k - 1)], c]


SHARED = shared(synthesize_row)


def synthesize_block(continuous, codes, neighbours, weights, uniforms):
    """(continuous values, codes) of one block of avatars: ``synthesize_row`` for every row."""
    out_continuous = np.empty((neighbours.shape[0], continuous.shape[1]))
    out_codes = np.empty((neighbours.shape[0], codes.shape[1]), np.int64)
    with LOCK:
        _synthesize(host_array(continuous, np.float64), host_array(codes, np.int64),
                    host_array(neighbours, np.int64), host_array(weights, np.float64),
                    host_array(uniforms, np.float64), out_continuous, out_codes)
    return out_continuous, out_codes


@njit(cache=True, parallel=True)
def _synthesize(continuous, codes, neighbours, weights, uniforms, out_continuous, out_codes):
    for r in prange(neighbours.shape[0]):
        cpu_walks.synthesize_row(continuous, codes, neighbours, weights, uniforms, r,
                                 out_continuous, out_codes)  # fmt: skip


def random_ranks(uniforms: np.ndarray) -> np.ndarray:
    """``synthesis.random_ranks``, compiled."""
    with LOCK:
        return _random_ranks(host_array(uniforms, np.float64))


@njit(cache=True, parallel=True)
def _random_ranks(uniforms):
    b, k = uniforms.shape[0], uniforms.shape[1] + 1
    ranks = np.empty((b, k), np.int64)
    for r in prange(b):
        for i in range(k):
            ranks[r, i] = i + 1
        for i in range(k - 1, 0, -1):
            other = min(np.int64(uniforms[r, i - 1] * (i + 1)), i)
            ranks[r, i], ranks[r, other] = ranks[r, other], ranks[r, i]
    return ranks

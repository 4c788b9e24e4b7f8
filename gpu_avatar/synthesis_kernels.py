"""The compiled passes of ``synthesis.py`` (numba): the barycentres and categorical draws of
a block of avatars in one pass, and the random ranks of the weights; the same operations in
the same order as the array code, so the same bits."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernels import LOCK


def synthesize_block(continuous, codes, neighbours, weights, uniforms):
    """``synthesis._barycentre`` and ``synthesis._draw`` for one block of rows, fused: the
    same operations in the same order per value, so the same bits, without the (b, k)
    temporaries per column."""
    out_continuous = np.empty((neighbours.shape[0], continuous.shape[1]))
    out_codes = np.empty((neighbours.shape[0], codes.shape[1]), np.int64)
    with LOCK:
        _synthesize(continuous, codes, neighbours, weights, uniforms, out_continuous, out_codes)
    return out_continuous, out_codes


@njit(cache=True, parallel=True)
def _synthesize(continuous, codes, neighbours, weights, uniforms, out_continuous, out_codes):
    b, k = neighbours.shape
    for r in prange(b):
        for c in range(continuous.shape[1]):
            value = continuous[neighbours[r, 0], c]
            total = weights[r, 0] * value
            low = value
            high = value
            for j in range(1, k):
                value = continuous[neighbours[r, j], c]
                total = total + weights[r, j] * value
                low = min(low, value)
                high = max(high, value)
            out_continuous[r, c] = min(max(total, low), high)
        if codes.shape[1] == 0:
            continue
        cumulative = np.empty(k)
        cumulative[0] = weights[r, 0]
        for j in range(1, k):
            cumulative[j] = cumulative[j - 1] + weights[r, j]
        for c in range(codes.shape[1]):
            threshold = uniforms[r, c] * cumulative[k - 1]
            chosen = 0
            for j in range(k):
                if cumulative[j] <= threshold:
                    chosen += 1
            out_codes[r, c] = codes[neighbours[r, min(chosen, k - 1)], c]


def random_ranks(uniforms: np.ndarray) -> np.ndarray:
    """``synthesis.random_ranks``, compiled."""
    with LOCK:
        return _random_ranks(np.ascontiguousarray(uniforms))


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

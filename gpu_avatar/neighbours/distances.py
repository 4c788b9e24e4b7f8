"""Squared Euclidean distances with one fixed arithmetic, shared by every engine.

``sum_d (a_d - b_d)^2`` accumulated dimension by dimension, in float64, as separate
elementwise operations (no fused multiply-add, no ``|a|^2 + |b|^2 - 2 a.b`` expansion). The
same pair therefore gets the bit-identical value whether it is computed alone (an individual
and its own avatar), inside a tile, by numpy or by cupy: threshold comparisons such as "is
this avatar at least as close as my own" are decided identically everywhere.
"""

from __future__ import annotations


def _accumulate(a, b, xp):
    total = None
    for d in range(a.shape[-1]):
        diff = a[..., d] - b[..., d]
        square = diff * diff
        total = square if total is None else total + square
    if total is None:  # zero dimensions
        return xp.zeros(xp.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    return total


def pairwise_squared(a, b, xp):
    """(len(a), len(b)) squared distances between the rows of ``a`` and of ``b``."""
    return _accumulate(a[:, None, :], b[None, :, :], xp)


def rowwise_squared(a, b, xp):
    """Squared distance of row i of ``a`` to row i of ``b`` (same shape), or to a stack.

    ``b`` may be (n, d) (row-aligned) or (n, q, d) (q candidates per row of ``a``).
    """
    if b.ndim == 3:
        return _accumulate(a[:, None, :], b, xp)
    return _accumulate(a, b, xp)

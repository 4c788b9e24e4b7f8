"""Distances with one fixed arithmetic, shared by every engine.

Squared Euclidean ``sum_d (a_d - b_d)^2`` (the projection's distances) and city-block
``sum_d |a_d - b_d|`` (the attacks' mixed-type distance), accumulated dimension by dimension,
in float64, as separate elementwise operations (no fused multiply-add, no
``|a|^2 + |b|^2 - 2 a.b`` expansion). The same pair therefore gets the bit-identical value
whether it is computed alone (an individual and its own avatar), inside a tile, by numpy or by
cupy: threshold comparisons such as "is this avatar at least as close as my own" are decided
identically everywhere.
"""

from __future__ import annotations


def _square(diff, xp):
    return diff * diff


def _absolute(diff, xp):
    return xp.abs(diff)


def _accumulate(a, b, xp, term=_square):
    total = None
    for d in range(a.shape[-1]):
        part = term(a[..., d] - b[..., d], xp)
        total = part if total is None else total + part
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


def pairwise_cityblock(a, b, xp):
    """(len(a), len(b)) city-block (L1) distances between the rows of ``a`` and of ``b``."""
    return _accumulate(a[:, None, :], b[None, :, :], xp, _absolute)


def rowwise_cityblock(a, b, xp):
    """City-block distance of row i of ``a`` to each of its candidates ``b`` (n, q, d)."""
    return _accumulate(a[:, None, :], b, xp, _absolute)

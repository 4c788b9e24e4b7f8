"""The compiled passes of ``synthesis.py`` (numba): the barycentres and categorical draws of
a block of avatars in one pass (on the CPU here, on the GPU by ``kernels/cuda.py``), and the
random ranks of the weights."""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernels import host_array
from .kernels.tree import cpu_walks, exact_add, exact_mul, shared
from .parallel import in_blocks


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


def synthesize_block(continuous, codes, neighbours, weights, uniforms, out=None):
    """(continuous values, codes) of one block of avatars: ``synthesize_row`` for every row,
    written to ``out`` if given (C-ordered float64 and int64 arrays: rows of the caller's
    outputs, no copy)."""
    if out is None:
        out = (np.empty((neighbours.shape[0], continuous.shape[1])),
               np.empty((neighbours.shape[0], codes.shape[1]), np.int64))  # fmt: skip
    out_continuous, out_codes = out
    in_blocks(_synthesize, neighbours.shape[0], host_array(continuous, np.float64),
              host_array(codes, np.int64), host_array(neighbours, np.int64),
              host_array(weights, np.float64), host_array(uniforms, np.float64), out_continuous,
              out_codes)  # fmt: skip
    return out_continuous, out_codes


@njit(cache=True, nogil=True)
def _synthesize(continuous, codes, neighbours, weights, uniforms, out_continuous, out_codes,
                first, last):  # fmt: skip
    for r in range(first, last):
        cpu_walks.synthesize_row(continuous, codes, neighbours, weights, uniforms, r,
                                 out_continuous, out_codes)  # fmt: skip


def random_ranks(uniforms: np.ndarray) -> np.ndarray:
    """``synthesis.random_ranks``, compiled (serial: each thread of ``random_weights`` runs
    its own block)."""
    return _random_ranks(host_array(uniforms, np.float64))


@njit(cache=True, nogil=True)
def _random_ranks(uniforms):
    b, k = uniforms.shape[0], uniforms.shape[1] + 1
    ranks = np.empty((b, k), np.int64)
    for r in range(b):
        for i in range(k):
            ranks[r, i] = i + 1
        for i in range(k - 1, 0, -1):
            other = min(np.int64(uniforms[r, i - 1] * (i + 1)), i)
            ranks[r, i], ranks[r, other] = ranks[r, other], ranks[r, i]
    return ranks


@njit(cache=True)
def _quotas(held, drawn, floor, exact):
    """Each value's count after calibration: its original count when held by at least
    ``floor`` rows, and for value ``exact`` (missing cells; -1: none) however rare; a rarer
    one's at most, never above its drawn count; the rows left over shared among the common
    values by their counts (largest remainders, the first of equals)."""
    m = held.shape[0]
    quota = np.zeros(m, np.int64)
    remainders = np.full(m, -1.0)  # a rare value never takes a row left over
    free = held.sum()
    common = 0
    for v in range(m):
        if v == exact:
            quota[v] = held[v]
            free -= quota[v]
        elif held[v] < floor:
            quota[v] = min(held[v], drawn[v])
            free -= quota[v]
        else:
            common += held[v]
    if common == 0:
        return drawn.copy()  # nothing may be raised
    left = free
    for v in range(m):
        if held[v] >= floor and v != exact:
            share = held[v] * free / common
            quota[v] = np.int64(np.floor(share))
            remainders[v] = share - quota[v]
            left -= quota[v]
    for _ in range(left):  # the largest remainders, the first of equals (m is small)
        best = 0
        for v in range(1, m):
            if remainders[v] > remainders[best]:
                best = v
        quota[best] += 1
        remainders[best] = -np.inf
    return quota


@njit(cache=True, nogil=True)
def calibration_candidates(original, avatars, m, neighbours, weights, uniforms, floor, exact):
    """One variable of ``pipeline/calibration.py``'s re-decision (no GIL held: the variables
    run on threads): each value's ``need`` (its quota less its drawn count; value ``exact``
    gets its original count, -1: none), and the candidate
    changes (``rows``, new ``values``) with their sort ``keys``: an avatar holding a value
    above its quota may change to a value below its quota that one of its neighbours holds,
    with weight its likelihood ratio (the new value's summed neighbour weight over the old
    one's); the changes are drawn without replacement in increasing key, ``-log(u) / ratio``
    (Efraimidis and Spirakis, 2006; ``u`` the avatar's uniform)."""
    n, k = neighbours.shape
    held = np.zeros(m, np.int64)
    drawn = np.zeros(m, np.int64)
    for i in range(n):
        held[original[i]] += 1
        drawn[avatars[i]] += 1
    need = _quotas(held, drawn, floor, exact) - drawn
    bound = 0  # the candidate changes, at most
    if need.max() > 0:
        for i in range(n):
            if need[avatars[i]] < 0:
                for t in range(k):
                    bound += need[original[neighbours[i, t]]] > 0
    rows = np.empty(bound, np.int64)
    values = np.empty(bound, np.int64)
    keys = np.empty(bound)
    p = 0
    for i in range(n if bound else 0):
        own = avatars[i]
        if need[own] >= 0:
            continue
        first = p
        kept = 0.0
        for t in range(k):
            v = original[neighbours[i, t]]
            w = weights[i, t]
            if v == own:
                kept += w
            elif need[v] > 0:
                q = first
                while q < p and values[q] != v:
                    q += 1
                if q == p:
                    rows[p] = i
                    values[p] = v
                    keys[p] = 0.0
                    p += 1
                keys[q] += w
        for q in range(first, p):
            keys[q] = -(np.log(uniforms[i]) * max(kept, 1e-300) / keys[q])
    return need, rows[:p], values[:p], keys[:p]


@njit(cache=True, nogil=True)
def apply_changes(order, rows, values, avatars, need):
    """The candidate changes in ``order``, each made while its new value is still below its
    quota and its avatar's value above (a changed avatar's value is never above)."""
    for q in order:
        i = rows[q]
        v = values[q]
        if need[v] > 0 and need[avatars[i]] < 0:
            need[avatars[i]] += 1
            need[v] -= 1
            avatars[i] = v

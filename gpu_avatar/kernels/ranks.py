"""Distance-rank walks: for each original, its local-cloaking count and hidden flag; for
each avatar, its two smallest squared distances to the originals; for each query, its nearest
reference, or how many references match it within a Chebyshev radius.

``rank_visit`` is what one node adds to an original's count and flag, by the rules
``box_rule`` and ``pair_rule`` of ``reductions.py``. The GPU walks it per original
(``rank_query``, one CUDA thread each); the CPU applies the same rules in one walk shared by a
block of neighbouring originals, which scans each leaf, while in cache, from a fixed-width slot
in vector code. ``two_nearest_query``: an avatar's two smallest squared distances to the
originals, nearest box first, and the index of the nearest (also each query's nearest
reference: ``nearest_reference``); the GPU walks it per query, the CPU gets the same results
from the kNN's walk shared by the queries of one leaf of their own tree
(``knn.nearest_by_leaf``). ``count_within_query``: the references within a Chebyshev
radius of a query, counted up to a limit (``count_within``). The CPU's rank walk compiles once
per dimension up to ``SLOT_DIMENSIONS`` (its leaf slots are one array per dimension).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import njit

from .. import parallel
from . import host_array
from .knn import nearest_by_leaf
from .tree import (
    LANES,
    MARGIN,
    STACK,
    KDTree,
    box_squared,
    cpu_walks,
    exact_sub,
    is_point,
    pair_squared,
    push_children,
    shared,
    squared,
)

# Up to this dimension a slot scan is one vector loop (12-D: 0.8 ns a pair-dimension); above,
# the compiler no longer unrolls the dimensions and it is 10x slower than a row-by-row scan.
SLOT_DIMENSIONS = 12
_BLOCK = 64  # queries per work item
# Originals sharing one walk of the avatar tree, at most: a leaf is scanned, while in cache, by
# every original of the block whose sphere crosses it; on dense clouds (balls of ~10^4
# avatars) ~50 of 1024 originals do, ~5 of 64 (1.6x slower). At 10^6 rows, 8192 take 20-27 %
# less CPU than 1024 (Gaussian originals; a dense mixed table), 2048 to 16384 in between.
_RANK_BLOCK = 8192


def _block_order(n: int, block: int = _BLOCK) -> np.ndarray:
    """Work items (blocks of ``block`` queries) in a fixed shuffled order."""
    return np.random.default_rng(0).permutation(-(-n // block)).astype(np.int64)


def distance_ranks(x: np.ndarray, y: np.ndarray, own: np.ndarray):
    """``(cloaking, hidden, first, second)`` for originals ``x`` and row-aligned avatars
    ``y``, ``own[i]`` being the squared distance of x_i to y_i (``distances.py``)."""
    ids = np.arange(own.size)
    avatars = KDTree.build(y)  # walked by the originals, then grouping the avatars' walks
    return (*_ranks_in(avatars, ids, x, ids, own), *_two_nearest_in(KDTree.build(x), avatars))


def ranks_among(y: np.ndarray, avatar_ids, x: np.ndarray, original_ids, own: np.ndarray):
    """``(cloaking, hidden)`` of the originals ``x`` (own squared distances ``own``) against
    the avatars ``y`` alone, so that counts over disjoint sets of avatars add up and flags OR
    (``ga.distributed``). Rows carry caller indices, ``avatar_ids`` strictly ascending and
    ``original_ids`` distinct: an original's own avatar is the avatar of the same index, when
    given, and ties are decided by these indices, as over all avatars."""
    return _ranks_in(KDTree.build(y), avatar_ids, x, original_ids, own)


def _ranks_in(avatars: KDTree, avatar_ids, x: np.ndarray, original_ids, own: np.ndarray):
    """``ranks_among`` with the avatars' tree built."""
    if len(avatar_ids) == 0:  # no avatar: nothing counts, nothing hides
        return np.zeros(len(original_ids), np.int64), np.zeros(len(original_ids), np.bool_)
    x = host_array(x, np.float64)
    avatars, order, rows = walk_rows(avatars, avatar_ids, original_ids,
                                     lambda positions: x[positions])  # fmt: skip
    x_rows, own_rows = walk_originals(avatars.points, order.size, rows, x, own, np)
    block = _rank_block(order.size)
    if x.shape[1] <= SLOT_DIMENSIONS:
        slots = avatars.leaf_slots()
    else:  # no slots: leaves scanned row by row
        slots = ((), np.empty(0, np.int64), np.empty(0, np.int64))
    points, _, *nodes = avatars.walk()
    cloaking = np.zeros(order.size, np.int64)
    hidden = np.zeros(order.size, np.bool_)
    blocks = _block_order(order.size, block)
    parallel.in_blocks(_ranks, blocks.size, points, order, *nodes, *slots, x_rows, own_rows,
                       blocks, block, cloaking, hidden)  # fmt: skip
    return cloaking[rows], hidden[rows]


def walk_rows(avatars: KDTree, avatar_ids, original_ids, coordinates):
    """How the rank walk takes the originals: the original of walk row p < len(avatars) has
    its own avatar at the tree's stored row p (``rank_visit``). Returns the avatar tree with
    the caller indices ``avatar_ids`` in its ``order`` and ``low_index``, the caller index of
    every walk row, and each original's walk row. A stored row whose original is not given
    holds none (``walk_originals``); the originals whose own avatar is not given follow, in the
    leaf order of a tree of their own (``coordinates(positions)``: their host coordinates), so
    that the originals sharing a walk are near one another."""
    avatar_ids = np.asarray(avatar_ids, np.int64)
    original_ids = np.asarray(original_ids, np.int64)
    n = avatar_ids.size
    if np.any(avatar_ids[1:] <= avatar_ids[:-1]):
        raise ValueError("avatar_ids must be strictly ascending: sort the avatars by index")
    ascending = bool(np.all(original_ids[1:] > original_ids[:-1]))  # distinct (in memory: all)
    if not ascending and np.unique(original_ids).size != original_ids.size:
        raise ValueError("original_ids must be distinct: give each original once")
    labelled = replace(avatars, order=avatar_ids[avatars.order],
                       low_index=avatar_ids[avatars.low_index])  # fmt: skip
    stored = np.empty(n, np.int64)
    stored[avatars.order] = np.arange(n)
    at = np.minimum(np.searchsorted(avatar_ids, original_ids), n - 1)
    given = avatar_ids[at] == original_ids
    rows = np.empty(original_ids.size, np.int64)
    rows[given] = stored[at[given]]
    others = np.flatnonzero(~given)
    if others.size:
        others = others[KDTree.build(coordinates(others)).order]
    rows[others] = n + np.arange(others.size)
    return labelled, np.concatenate([labelled.order, original_ids[others]]), rows


def walk_originals(points, size: int, rows, x, own, xp):
    """The ``size`` walk rows of the originals ``x`` placed at ``rows`` (``walk_rows``), and
    their own squared distances: NaN where a row holds no original, which counts nothing; such
    a row takes the coordinates of the avatar stored there (any finite point would do)."""
    x_rows = xp.concatenate([points, xp.zeros((size - points.shape[0], points.shape[1]))])
    x_rows[rows] = x
    own_rows = xp.full(size, xp.nan)
    own_rows[rows] = own
    return x_rows, own_rows


def two_nearest(queries: np.ndarray, references: np.ndarray, aligned: bool = False):
    """``(first, second)``: each query's two smallest squared distances to the references
    (``two_nearest_query``'s results, ``knn.nearest_by_leaf``'s walk: the queries of each
    leaf of their own tree share one, 1.9x faster than a walk per query at 10^6 rows). The
    GPU walks the queries in the references' leaf order when ``aligned`` (query i lies near
    reference i: an avatar and its original); here their tree groups them either way."""
    return _two_nearest_in(KDTree.build(references), KDTree.build(queries))


def _two_nearest_in(references: KDTree, queries: KDTree):
    """``two_nearest`` with both trees built."""
    _, squared = nearest_by_leaf(references, queries, 2)
    return squared[:, 0].copy(), squared[:, 1].copy()


def nearest_reference(queries: np.ndarray, references: np.ndarray):
    """``(index, squared)``: each query's nearest row of ``references``, the lowest index
    among equally near ones, and its squared distance (``two_nearest_query``'s results, by
    ``knn.nearest_by_leaf``)."""
    indices, squared = nearest_by_leaf(KDTree.build(references), KDTree.build(queries), 1)
    return indices[:, 0].copy(), squared[:, 0].copy()


def count_within(queries: np.ndarray, references: np.ndarray, radius: float, limit: int):
    """Per query, how many rows of ``references`` lie within Chebyshev distance ``radius``
    of it, counted up to ``limit`` (``count_within_query``)."""
    tree = KDTree.build(references)
    queries = host_array(queries, np.float64)
    counts = np.empty(queries.shape[0], np.int64)
    blocks = _block_order(queries.shape[0])
    parallel.in_blocks(_count_within, blocks.size, tree.points, tree.start, tree.stop,
                       tree.left, tree.right, tree.lower, tree.upper, queries, float(radius),
                       int(limit), blocks, counts)  # fmt: skip
    return counts


def _rank_block(n: int) -> int:
    """Originals per shared walk: ``_RANK_BLOCK``, fewer where that would leave under four
    work items per thread (no result depends on it)."""
    return min(_RANK_BLOCK, max(64, n // (4 * parallel.thread_count())))


def box_rule(x, p, lower, upper, node, radius):
    """(near, inside) for the original ``x[p]`` of own squared distance ``radius`` and a node:
    ``near``: the original has a radius (a NaN one counts nothing) and the node's box is not
    provably beyond it (a NaN box, of a node holding a NaN, is not); ``inside``: every avatar
    in it is strictly closer (counted whole)."""
    low, high = box_squared(x, p, lower, upper, node)
    near = (radius == radius) & (not (low > radius * (1 + MARGIN)))
    return near, near & (high < radius * (1 - MARGIN))


def others_in(start, stop, node, p):
    """The number of avatars in ``node`` besides the own one of the original stored row p."""
    return stop[node] - start[node] - (start[node] <= p < stop[node])


def pair_rule(d2, radius, other, lower_index):
    """(counts, hides): what one avatar at squared distance ``d2`` adds to an original of own
    squared distance ``radius`` (``reductions.py``'s rules): another avatar (``other``: not
    the own one, excluded by index) at most as far counts; one strictly closer, or as close
    with a lower caller index (``lower_index``), hides. A NaN compares false: nothing."""
    return (d2 <= radius) & other, ((d2 < radius) | ((d2 == radius) & lower_index)) & other


def rank_visit(y, order, start, stop, left, lower, upper, low_index, x, own, p, node):
    """What the avatars of ``node`` add to the original ``x[p]``: (count, hides, descend),
    the own avatar being stored row ``p``. A leaf is scanned whole and without branches: the
    comparisons come out as with an early stop, without its mispredictions (half the time)."""
    radius = own[p]
    near, inside = box_rule(x, p, lower, upper, node, radius)
    if not near:
        return 0, False, False
    others = others_in(start, stop, node, p)
    if inside:
        return others, others > 0, False
    if is_point(lower, upper, node):  # duplicates: one distance decides them all
        d2 = pair_squared(x, p, y, start[node], radius)
        # a tie hides when the lowest index among them is lower than the original's
        counts, hides = pair_rule(d2, radius, others > 0, low_index[node] < order[p])
        return others * counts, hides, False
    if left[node] >= 0:
        return 0, False, True
    count = 0
    hides = False
    for q in range(start[node], stop[node]):
        counts, hide = pair_rule(squared(x, p, y, q), radius, q != p, order[q] < order[p])
        count += counts
        hides |= hide
    return count, hides, False


def rank_query(y, order, start, stop, left, right, lower, upper, low_index, x, own, p, stack):
    """(local cloaking, hidden) of the original ``x[p]``: one walk of the avatar tree."""
    count = 0
    hides = False
    stack[0] = 0
    top = 1
    while top:
        top -= 1
        node = stack[top]
        c, h, descend = rank_visit(y, order, start, stop, left, lower, upper, low_index, x,
                                   own, p, node)  # fmt: skip
        count += c
        hides = hides or h
        if descend:
            stack[top] = left[node]
            stack[top + 1] = right[node]
            top += 2
    return count, hides


def two_nearest_query(
    x, order, start, stop, left, right, lower, upper, low_index, y, p, nodes, bounds
):
    """``(best, runner_up, nearest)``: the two smallest squared distances from ``y[p]`` to the
    points ``x`` stored in the tree, and the caller index of the nearest, the lowest among
    equally near ones. Nearest box first, a node skipped when its box is farther than the
    runner-up (a point as near as the best, which may hold a lower index, is never skipped)."""
    best = np.inf
    runner_up = np.inf
    nearest = order.size
    nodes[0] = 0
    bounds[0] = 0.0
    top = 1
    while top:
        top -= 1
        node = nodes[top]
        if bounds[top] > runner_up * (1 + MARGIN):
            continue
        point = is_point(lower, upper, node)
        if left[node] < 0 or point:
            last = stop[node]
            if point:  # duplicates: two of them say all, the lowest index for the nearest
                last = min(last, start[node] + 2)
            for q in range(start[node], last):
                d2 = pair_squared(y, p, x, q, runner_up)
                index = low_index[node] if point else order[q]
                if d2 < best or (d2 == best and index < nearest):
                    runner_up = best
                    best = d2
                    nearest = index
                elif d2 < runner_up:
                    runner_up = d2
            continue
        top = push_children(y, p, lower, upper, left, right, node, nodes, bounds, top)
    return best, runner_up, nearest


def box_within(q, i, lower, upper, node, radius):
    """(beyond, within) for ``q[i]`` and a node's box: some coordinate of every point in the
    box differs by more than ``radius`` from the query's, or no coordinate of any point does.
    Exact, without a margin: a difference rounds monotonically, so no point's difference
    passes its box's; a NaN box is neither."""
    beyond = False
    within = True
    for d in range(q.shape[1]):
        v = q[i, d]
        beyond |= (lower[node, d] - v > radius) | (v - upper[node, d] > radius)
        within &= (v - lower[node, d] <= radius) & (upper[node, d] - v <= radius)
    return beyond, within


def pair_within(a, i, b, j, radius):
    """Whether no coordinate of ``b[j]`` differs by more than ``radius`` from ``a[i]``'s
    (Chebyshev distance at most ``radius``; a NaN difference is never within)."""
    for d in range(a.shape[1]):
        if not abs(exact_sub(a[i, d], b[j, d])) <= radius:
            return False
    return True


def count_within_query(points, start, stop, left, right, lower, upper, q, i, radius, limit,
                       stack):  # fmt: skip
    """How many points stored in the tree lie within Chebyshev distance ``radius`` of
    ``q[i]`` (``pair_within``), counted up to ``limit``: the walk stops there. A node whose
    box is beyond is skipped, one whose box is within counted whole."""
    count = 0
    stack[0] = 0
    top = 1
    while top and count < limit:
        top -= 1
        node = stack[top]
        beyond, within = box_within(q, i, lower, upper, node, radius)
        if beyond:
            continue
        if within:
            count += stop[node] - start[node]
        elif left[node] < 0:
            for j in range(start[node], stop[node]):
                count += pair_within(q, i, points, j, radius)
        else:
            stack[top] = left[node]
            stack[top + 1] = right[node]
            top += 2
    return min(count, limit)


SHARED = shared(box_rule, others_in, pair_rule, rank_visit, rank_query, two_nearest_query,
                box_within, pair_within, count_within_query)  # fmt: skip


# -------------------------------------------------------------------------- CPU drivers
@njit(cache=True, nogil=True)
def _ranks(y, order, start, stop, left, right, lower, upper, low_index, columns, lane_order,
           first_lane, x, own, blocks, block, cloaking, hidden, first_item,
           last_item):  # fmt: skip
    """``rank_query``'s results for the originals of ``blocks[first_item:last_item]``,
    original row p's own avatar being stored row p. The ``block`` originals of a work item
    (neighbours in space) share one depth-first walk: a node is tested for each original still
    concerned (``active[depth]``: those its parent passed on), and a leaf is scanned by each
    original whose sphere crosses it, while it is in cache: from its slot
    (``KDTree.leaf_slots``) up to ``SLOT_DIMENSIONS``, else (no ``columns``) row by row by
    ``rank_visit``, which also takes every node of duplicates."""
    n = x.shape[0]
    active = np.empty((STACK, block), np.int64)
    sizes = np.empty(STACK, np.int64)
    nodes = np.empty(STACK, np.int64)
    depths = np.empty(STACK, np.int64)
    for item in range(first_item, last_item):
        first = blocks[item] * block
        sizes[0] = min(first + block, n) - first
        for a in range(sizes[0]):
            active[0, a] = first + a
        nodes[0] = 0
        depths[0] = 1
        top = 1
        while top:  # a node's list (active[depth - 1]) outlives its subtree
            top -= 1
            node = nodes[top]
            depth = depths[top]
            concerned = active[depth - 1, : sizes[depth - 1]]
            if cpu_walks.is_point(lower, upper, node):
                for p in concerned:
                    c, h, _ = _rank_visit(y, order, start, stop, left, lower, upper, low_index,
                                          x, own, p, node)  # fmt: skip
                    cloaking[p] += c
                    hidden[p] |= h
                continue
            passed = 0
            for p in concerned:  # without branches: the outcomes are unpredictable
                near, inside = cpu_walks.box_rule(x, p, lower, upper, node, own[p])
                whole = inside * cpu_walks.others_in(start, stop, node, p)
                cloaking[p] += whole
                hidden[p] |= whole > 0
                active[depth, passed] = p
                passed += near & ~inside
            if left[node] < 0:
                for p in active[depth, :passed]:
                    if len(columns):
                        c, h = _scan_slot(x, p, columns, lane_order, first_lane[node], own[p],
                                          order[p])  # fmt: skip
                    else:  # wide data: no slots
                        c, h, _ = _rank_visit(y, order, start, stop, left, lower, upper,
                                              low_index, x, own, p, node)  # fmt: skip
                    cloaking[p] += c
                    hidden[p] |= h
            elif passed:
                sizes[depth] = passed
                nodes[top] = left[node]
                nodes[top + 1] = right[node]
                depths[top] = depths[top + 1] = depth + 1
                top += 2


# called, not inlined: compiled once for all
_rank_visit = njit(cache=True)(cpu_walks.rank_visit.py_func)


@njit(cache=True)
def _scan_slot(x, p, columns, lane_order, first_lane, radius, caller):
    """(count, hides) of the avatars of one leaf slot for the original ``x[p]`` (caller index
    ``caller``): ``pair_rule`` on each lane, in one vector loop (padding lanes are NaN, so
    count nothing). Compiled on its own and called (not inlined by numba), with an unsigned
    lane index, which cannot wrap around like a negative one: the compiler then loads whole
    vectors rather than lane by lane (2x faster); ``columns`` is a tuple, so its length, the
    dimension, is a constant."""
    count = 0
    hides = False
    base = np.uint64(first_lane)
    for j in range(LANES):
        lane = base + np.uint64(j)
        d2 = 0.0
        for d in range(len(columns)):  # distances.py's sum, dimension by dimension
            diff = x[p, d] - columns[d][lane]
            d2 = d2 + diff * diff
        index = lane_order[lane]
        counts, hide = cpu_walks.pair_rule(d2, radius, index != caller, index < caller)
        count += counts
        hides |= hide
    return count, hides


@njit(cache=True, nogil=True)
def _count_within(points, start, stop, left, right, lower, upper, queries, radius, limit,
                  blocks, counts, first_item, last_item):  # fmt: skip
    """``count_within_query`` for the query rows of ``blocks[first_item:last_item]``."""
    n = queries.shape[0]
    stack = np.empty(STACK, np.int64)
    for item in range(first_item, last_item):
        for p in range(blocks[item] * _BLOCK, min((blocks[item] + 1) * _BLOCK, n)):
            counts[p] = cpu_walks.count_within_query(points, start, stop, left, right, lower,
                                                     upper, queries, p, radius, limit, stack)

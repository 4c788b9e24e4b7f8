"""Each point's exact k nearest others, ordered by (squared distance, index), the point
itself excluded by index (its duplicates are not): ``neighbours/search.py``'s contract; and
each point of another table's k nearest points, by the same walk.

- ``knn_query``: one point's walk, nearest box first (the GPU runs one per CUDA thread; the
  CPU for a subset of rows, ``nearest_others_of``);
- ``nearest_others``: every point, the queries of one leaf sharing one walk (faster on the
  CPU than one walk per query); ``nearest_by_leaf``, the same walk for queries of another
  table grouped by their own tree (``ranks.py``: each avatar's two nearest originals, each
  query's nearest reference);
- ``verify_row``: the exact re-check of one row's index candidates (``verify_candidates``
  for every row on the CPU; one CUDA thread per row on the GPU).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..parallel import in_blocks
from . import host_array
from .tree import (
    MARGIN,
    STACK,
    KDTree,
    cpu_walks,
    is_point,
    keep_best,
    pair_squared,
    push_children,
    shared,
)


def knn_query(points, order, start, stop, left, right, lower, upper, low_index, q, k, best_d,
              best_i, nodes, bounds):  # fmt: skip
    """The k nearest others of the point stored at row ``q``, written to ``best_d`` (squared
    distances) and ``best_i`` (caller indices) ordered by (distance, index); the point itself
    excluded by its row, its duplicates not. Nearest box first; a node is skipped when its box
    is farther than the current k-th distance (with the margin: a tie inside it could still
    enter by a lower index), or, once that distance is 0, when its lowest index is too high;
    a node of duplicates is measured once."""
    n = points.shape[0]
    for slot in range(k):
        best_d[slot] = np.inf
        best_i[slot] = n
    nodes[0] = 0
    bounds[0] = 0.0
    top = 1
    while top:
        top -= 1
        node = nodes[top]
        if bounds[top] > best_d[k - 1] * (1 + MARGIN):
            continue
        if best_d[k - 1] == 0.0 and low_index[node] > best_i[k - 1]:
            continue  # only ties at distance 0 could enter, and none has a lower index
        point = is_point(lower, upper, node)
        if left[node] < 0 or point:
            measured = False  # a node of duplicates is measured once (a partial sum over
            d2 = 0.0  # the cap stays over it: the cap only shrinks)
            for j in range(start[node], stop[node]):
                if j == q:
                    continue
                if not (point and measured):
                    d2 = pair_squared(points, q, points, j, best_d[k - 1])
                    measured = True
                keep_best(best_d, best_i, k, d2, order[j])
            continue
        top = push_children(points, q, lower, upper, left, right, node, nodes, bounds, top)


def verify_row(points, candidates, i, k, best_d, best_i):
    """Row ``i``'s k nearest among its ``candidates`` by (exact squared distance, index),
    itself excluded by index, written to ``best_d`` and ``best_i``."""
    for slot in range(k):
        best_d[slot] = np.inf
        best_i[slot] = points.shape[0]
    for c in range(candidates.shape[1]):
        j = candidates[i, c]
        if j != i:
            keep_best(best_d, best_i, k, pair_squared(points, i, points, j, np.inf), j)


SHARED = shared(knn_query, verify_row)


# -------------------------------------------------------------------------- CPU drivers
def verify_candidates(points, candidates, far_squared, margin, k: int):
    """``verify_row`` for every row, and the rows whose result the index cannot guarantee
    (k-th distance >= the farthest candidate's minus ``margin``)."""
    points = host_array(points, np.float64)
    exhaustive = candidates.shape[1] >= points.shape[0]
    n = candidates.shape[0]
    indices = np.empty((n, k), np.int64)
    squared = np.empty((n, k))
    uncertain = np.zeros(n, np.bool_)
    in_blocks(_verify, n, points, host_array(candidates, np.int64),
              host_array(far_squared, np.float64), host_array(margin, np.float64), exhaustive,
              indices, squared, uncertain)  # fmt: skip
    return indices, squared, np.nonzero(uncertain)[0]


@njit(cache=True, nogil=True)
def _verify(points, candidates, far_squared, margin, exhaustive, indices, squared, uncertain,
            first, last):  # fmt: skip
    k = indices.shape[1]
    for i in range(first, last):
        cpu_walks.verify_row(points, candidates, i, k, squared[i], indices[i])
        uncertain[i] = not exhaustive and squared[i, k - 1] >= far_squared[i] - margin[i]


def nearest_others(points: np.ndarray, k: int):
    """``neighbours.nearest_neighbours``'s contract, exact in one walk: (n, k) indices and
    squared distances of each point's k nearest others, ordered by (squared distance, index),
    the point itself excluded by index (``nearest_by_leaf``)."""
    tree = KDTree.build(points)
    return nearest_by_leaf(tree, tree, k)


def nearest_by_leaf(tree: KDTree, queries: KDTree, k: int):
    """(n, k) indices and squared distances of the k nearest points of ``tree`` to each point
    of the tree ``queries``, ordered by (squared distance, index), in the caller's order of
    the queries; when ``queries`` is ``tree``, each point's k nearest others (the point itself
    excluded by index).

    The queries of one leaf of their tree share a walk (``_group_nearest``), from the leaf's
    box. Each visited leaf is tested against every query's current k-th distance with one
    vectorised box bound, then measured against the surviving queries in one vectorised pass
    per query (the points stored dimension-major): about 5x scipy's cKDTree query on 10^6
    points in 5-D, k = 20, with no re-check needed."""
    if queries.points.shape[1] != tree.points.shape[1]:
        raise ValueError(f"queries of {queries.points.shape[1]} coordinates, points of "
                         f"{tree.points.shape[1]}: give both the same columns")
    # in the tree's order: consecutive walks (of neighbouring leaves) find the nodes they
    # share in cache (a shuffled order, for balance, was 1.3x slower at 10^6 rows)
    groups = np.nonzero(queries.left < 0)[0]
    columns = np.ascontiguousarray(tree.points.T)
    query_columns = columns if queries is tree else np.ascontiguousarray(queries.points.T)
    largest = int((tree.stop - tree.start)[tree.left < 0].max())
    n = queries.points.shape[0]
    indices = np.empty((n, k), np.int64)
    squared = np.empty((n, k))
    in_blocks(_nearest_by_leaf, groups.size, *tree.walk(), columns, query_columns,
              queries.order, queries.start, queries.stop, queries.lower, queries.upper,
              queries is tree, groups, largest, indices, squared)  # fmt: skip
    return indices, squared


@njit(cache=True, nogil=True)
def _nearest_by_leaf(points, order, start, stop, left, right, lower, upper, low_index, columns,
                     queries, query_order, query_start, query_stop, group_lower, group_upper,
                     others, groups, largest, indices, squared, first, last):  # fmt: skip
    for item in range(first, last):
        _group_nearest(
            groups[item], points, order, start, stop, left, right, lower, upper, low_index,
            columns, queries, query_order, query_start, query_stop, group_lower, group_upper,
            others, largest, indices.shape[1], indices, squared,
        )  # fmt: skip


@njit(cache=True, inline="always")
def _box_gap(group_lower, group_upper, own, lower, upper, b):
    """Smallest squared distance between the box of group ``own`` and that of node b."""
    total = 0.0
    for d in range(lower.shape[1]):
        gap = max(lower[b, d] - group_upper[own, d], group_lower[own, d] - upper[b, d])
        if gap > 0.0:
            total += gap * gap
    return total


@njit(cache=True)
def _group_nearest(own, points, order, start, stop, left, right, lower, upper, low_index,
                   columns, queries, query_order, query_start, query_stop, group_lower,
                   group_upper, others, largest, k, indices, squared):  # fmt: skip
    """The k nearest points of the queries of leaf ``own`` of their tree, written at their
    caller's rows (``others``: the queries are the points, a query's own row excluded). Nodes
    are visited nearest box first; a node is skipped when its box is farther from the leaf's box
    than the largest current k-th distance, a leaf's point when it is farther from that query
    than the query's own k-th distance (both with the 1e-9 margin), and once that distance is 0,
    when the node's lowest index is above the query's k-th (only a tie of lower index could
    enter). A leaf of duplicates is measured once per query; a NaN distance is no neighbour. The
    columns are read through views indexed from 0 (``columns[d, s : s + m][p]``, not
    ``columns[d, s + p]``): an index that cannot be negative needs no wraparound test, and the
    loops compile to vector loads (1.4x faster)."""
    dim = points.shape[1]
    s, m = query_start[own], query_stop[own] - query_start[own]
    best_d = np.full((m, k), np.inf)
    best_i = np.full((m, k), points.shape[0])
    kth = np.full(m, np.inf)
    bound = np.inf
    worst = points.shape[0]  # the highest k-th index of the queries, once all k-th are 0
    box_low = np.empty(m)
    pair = np.empty(largest)
    node_stack = np.empty(STACK, np.int64)
    gap_stack = np.empty(STACK)
    node_stack[0], gap_stack[0], top = 0, 0.0, 1
    while top:
        top -= 1
        node = node_stack[top]
        if gap_stack[top] > bound * (1 + MARGIN) or (bound == 0.0 and low_index[node] > worst):
            continue
        if left[node] >= 0:
            near, far = left[node], right[node]
            near_gap = _box_gap(group_lower, group_upper, own, lower, upper, near)
            far_gap = _box_gap(group_lower, group_upper, own, lower, upper, far)
            if far_gap < near_gap:
                near, far, near_gap, far_gap = far, near, far_gap, near_gap
            node_stack[top], gap_stack[top] = far, far_gap
            node_stack[top + 1], gap_stack[top + 1] = near, near_gap
            top += 2
            continue
        first, size = start[node], stop[node] - start[node]
        measured = 1 if cpu_walks.is_point(lower, upper, node) else size  # duplicates: one distance
        for p in range(m):  # squared distance from every query to this leaf's box
            box_low[p] = 0.0
        for d in range(dim):
            a, b = lower[node, d], upper[node, d]
            own_column = queries[d, s : s + m]
            for p in range(m):
                v = own_column[p]
                gap = max(max(a - v, v - b), 0.0)
                box_low[p] += gap * gap
        for p in range(m):
            if box_low[p] > kth[p] * (1 + MARGIN):
                continue
            if kth[p] == 0.0 and low_index[node] > best_i[p, k - 1]:
                continue
            # distances.py's sum, dimension by dimension (0.0 + square == square)
            v = queries[0, s + p]
            scanned = columns[0, first : first + measured]
            for j in range(measured):
                diff = scanned[j] - v
                pair[j] = diff * diff
            for d in range(1, dim):
                v = queries[d, s + p]
                scanned = columns[d, first : first + measured]
                for j in range(measured):
                    diff = scanned[j] - v
                    pair[j] += diff * diff
            for j in range(measured, size):
                pair[j] = pair[0]
            itself = s + p - first if others else -1
            cap, worst_p = best_d[p, k - 1], best_i[p, k - 1]
            for j in range(size):
                d2 = pair[j]
                if not d2 <= cap or j == itself:
                    continue
                index = order[first + j]
                if d2 == cap and index > worst_p:
                    continue
                slot = k - 1
                while slot > 0 and (
                    d2 < best_d[p, slot - 1]
                    or (d2 == best_d[p, slot - 1] and index < best_i[p, slot - 1])
                ):
                    best_d[p, slot] = best_d[p, slot - 1]
                    best_i[p, slot] = best_i[p, slot - 1]
                    slot -= 1
                best_d[p, slot], best_i[p, slot] = d2, index
                cap, worst_p = best_d[p, k - 1], best_i[p, k - 1]
            kth[p] = cap
        bound, worst = 0.0, 0
        for p in range(m):
            bound = max(bound, kth[p])
            worst = max(worst, best_i[p, k - 1])
    # element by element: a row copy would compile numba's shape-mismatch message
    for p in range(m):
        for slot in range(k):
            indices[query_order[s + p], slot] = best_i[p, slot]
            squared[query_order[s + p], slot] = best_d[p, slot]


def nearest_others_of(points: np.ndarray, rows: np.ndarray, k: int):
    """(len(rows), k) indices and squared distances of the k nearest others of ``points[rows]``
    among all ``points`` (``knn_query``, one walk per row): the exact answer for the rows whose
    index candidates could not be verified (``neighbours/search.py``)."""
    tree = KDTree.build(points)
    stored = np.empty_like(tree.order)
    stored[tree.order] = np.arange(tree.order.size)
    indices = np.empty((len(rows), k), np.int64)
    squared = np.empty((len(rows), k))
    in_blocks(_nearest_others_of, len(rows), *tree.walk(), stored[rows], indices, squared)
    return indices, squared


@njit(cache=True, nogil=True)
def _nearest_others_of(points, order, start, stop, left, right, lower, upper, low_index, queries,
                       indices, squared, first, last):  # fmt: skip
    nodes = np.empty(STACK, np.int64)
    bounds = np.empty(STACK)
    for r in range(first, last):
        cpu_walks.knn_query(
            points, order, start, stop, left, right, lower, upper, low_index, queries[r],
            indices.shape[1], squared[r], indices[r], nodes, bounds,
        )  # fmt: skip

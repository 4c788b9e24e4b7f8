"""Compiled kernels (numba): exact k-d tree searches, and the synthesis of a block of avatars
in one pass.

scipy's cKDTree decides "within the radius" in its own arithmetic, so the scipy engines ask it
for candidates or for counts at a radius -/+ a band and then re-check with ``distances.py``.
Here the tree is walked by compiled code that compares every pair with that same arithmetic
(float64, dimension by dimension, no fused multiply-add), so one walk decides each query
exactly. Node boxes only prune or, for the counts, add whole nodes; both with a 1e-9 relative
margin, far above the rounding of a box distance (about 1e-15 relative), so a node is skipped
or added whole only when every pair inside it would compare the same way.

- ``KDTree.build(points)``: median splits on the widest axis, tight boxes, ``LEAF_SIZE``
  points per leaf (built on the host for both backends).
- Per-query walks, one source for two targets (see "Shared walks" below): ``rank_visit``
  (what one node adds to the local-cloaking count and hidden flag of one original, by the
  rules ``box_rule`` and ``pair_rule`` of ``reductions.py``: walked per original by
  ``rank_query`` on the GPU; on the CPU the same rules are applied by a walk shared by a
  block of originals, which scans leaves from fixed-width slots in vector code),
  ``two_nearest_query`` (an avatar's two smallest squared distances to the originals) and
  ``knn_query`` (a point's exact k nearest others by (distance, index)). Here the CPU drivers
  loop over queries in parallel; ``cuda_kernels.py`` runs them one CUDA thread per query.
- ``distance_ranks(x, y, own)``, ``nearest_others_of(points, rows, k)``: the CPU drivers.
- ``nearest_others(points, k)``: every point's k nearest others, the queries of one leaf
  sharing one walk (faster on the CPU than one walk per query).
- ``synthesize_block``: barycentres and categorical draws of ``synthesis.py``, bit for bit.
- ``verify_candidates``: the exact re-check of ``neighbours/search.py``'s index candidates.

Queries run in the tree's leaf order (neighbouring queries visit the same nodes), split into
blocks spread over the threads in a fixed shuffled order (dense regions cost more), so
every result is independent of the thread count. Compiled on first use and cached on disk
(the CPU rank walk once per dimension up to ``SLOT_DIMENSIONS``: its leaf slots are one
array per dimension).
This module imports numba: import it only when numba is installed (``Backend.compiled``, or
the GPU backend).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numba import get_num_threads, njit, prange
from numba.extending import overload, register_jitable

LEAF_SIZE = 32
# Lanes of a leaf slot (``KDTree.leaf_slots``): a compile-time width, so a leaf scan is one
# fixed-length vector loop; leaves never hold more than LEAF_SIZE <= LANES points.
LANES = 32
# Up to this dimension a slot scan is one vector loop (12-D: 0.8 ns a pair-dimension); above,
# the compiler no longer unrolls the dimensions and it is 10x slower than a row-by-row scan.
SLOT_DIMENSIONS = 12
MARGIN = 1e-9  # relative margin of every box test (prune, or count a node whole)
_BLOCK = 64  # queries per parallel work item
# Originals sharing one walk of the avatar tree, at most: a leaf is scanned, while in cache, by
# every original of the block whose sphere crosses it; on dense clouds (balls of ~10^4
# avatars) ~50 of 1024 originals do, ~5 of 64 (1.6x slower).
_RANK_BLOCK = 1024
# Walk stacks: a median-split tree of n points is ceil(log2(n / LEAF_SIZE)) levels deep and a
# depth-first walk holds at most one entry per level plus one.
STACK = 64
# numba's default threading layer refuses concurrent parallel calls: serialise ours.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class KDTree:
    """Flat k-d tree over ``points`` stored in leaf order: node ``m`` holds the rows
    ``start[m]:stop[m]`` of ``points`` inside the box ``[lower[m], upper[m]]``; ``left[m] = -1``
    marks a leaf (else ``right[m]`` is its other child). ``order[p]`` is the caller's index of
    the point stored at row p; ``low_index[m]`` the lowest caller index in node m (ties at
    distance 0 among duplicates are decided by index: a node of duplicates whose lowest index
    is too high is skipped whole)."""

    points: np.ndarray
    order: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    left: np.ndarray
    right: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    low_index: np.ndarray

    @classmethod
    def build(cls, points: np.ndarray) -> KDTree:
        points = np.ascontiguousarray(points, dtype=np.float64)
        with _LOCK:
            order, *nodes = _build(points, LEAF_SIZE)
        return cls(points[order], order, *nodes)

    def walk(self):
        """The arrays the compiled searches take, in their order."""
        return (self.points, self.order, self.start, self.stop, self.left, self.right,
                self.lower, self.upper, self.low_index)  # fmt: skip

    def leaf_slots(self):
        """Each leaf's points dimension-major in a slot of ``LANES`` lanes padded with NaN (a
        NaN compares false: padding counts nothing), for leaf scans of one fixed width that
        the compiler turns into vector code: (one array per dimension, the caller index of
        each lane (-1: padding), each node's first lane (-1: not a leaf))."""
        leaves = np.nonzero(self.left < 0)[0]
        sizes = self.stop[leaves] - self.start[leaves]
        if sizes.max() > LANES:
            raise ValueError(f"leaves of up to {sizes.max()} points exceed {LANES} lanes")
        first_lane = np.full(self.left.size, -1, np.int64)
        first_lane[leaves] = np.arange(leaves.size) * LANES
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        rows = np.repeat(self.start[leaves], sizes) + within
        lanes = np.repeat(first_lane[leaves], sizes) + within
        columns = np.full((self.points.shape[1], leaves.size * LANES), np.nan)
        columns[:, lanes] = self.points[rows].T
        lane_order = np.full(leaves.size * LANES, -1, np.int64)
        lane_order[lanes] = self.order[rows]
        return tuple(columns), lane_order, first_lane

    def unsort(self, *per_row):
        """Arrays indexed by stored row, put back in the caller's order."""
        results = []
        for values in per_row:
            out = np.empty_like(values)
            out[self.order] = values
            results.append(out)
        return results


def _block_order(n: int, block: int = _BLOCK) -> np.ndarray:
    """Work items (blocks of ``block`` queries) in a fixed shuffled order."""
    return np.random.default_rng(0).permutation(-(-n // block)).astype(np.int64)


def distance_ranks(x: np.ndarray, y: np.ndarray, own: np.ndarray):
    """``(cloaking, hidden, first, second)`` for originals ``x`` and row-aligned avatars
    ``y``, ``own[i]`` being the squared distance of x_i to y_i (``distances.py``)."""
    avatars, originals = KDTree.build(y), KDTree.build(x)
    # Each original is queried in its own avatar's row order (x_i lies near y_i), and back:
    # neighbouring queries then visit the same nodes.
    x_rows = np.ascontiguousarray(x[avatars.order], dtype=np.float64)
    y_rows = np.ascontiguousarray(y[originals.order], dtype=np.float64)
    block = _rank_block(own.size)
    if x.shape[1] <= SLOT_DIMENSIONS:
        slots = avatars.leaf_slots()
    else:  # no slots: leaves scanned row by row
        slots = ((), np.empty(0, np.int64), np.empty(0, np.int64))
    with _LOCK:
        cloaking, hidden = _ranks(*avatars.walk(), *slots, x_rows,
                                  own[avatars.order], _block_order(own.size, block),
                                  block)  # fmt: skip
        first, second = _two_nearest(*originals.walk(), y_rows, _block_order(own.size))
    return (*avatars.unsort(cloaking, hidden), *originals.unsort(first, second))


def _rank_block(n: int) -> int:
    """Originals per shared walk: ``_RANK_BLOCK``, fewer where that would leave under four
    work items per thread (no result depends on it)."""
    return min(_RANK_BLOCK, max(64, n // (4 * get_num_threads())))


# ------------------------------------------------------------------------- shared walks
# Plain Python functions, compiled where they are called: by the njit drivers of this module
# on the CPU and by the kernels of ``cuda_kernels.py`` on the GPU (which registers them with
# numba-cuda); the CUDA simulator runs them as Python. Scratch arrays (walk stacks, top-k
# buffers) are passed in, as each target allocates them its own way. ``exact_sub``,
# ``exact_mul`` and ``exact_add`` are the pair arithmetic of ``distances.py``: plain operations
# on the CPU (numba emits no fused multiply-add), round-to-nearest intrinsics on the GPU (where
# the compiler would otherwise contract a multiply and an add into one FMA).


def exact_sub(a, b):
    return a - b


def exact_mul(a, b):
    return a * b


def exact_add(a, b):
    return a + b


def _cpu_arithmetic(function):
    """The CPU implementation of an ``exact_*`` operation: the operation itself."""

    @overload(function, target="cpu", inline="always")
    def implementation(a, b):
        return function

    return implementation


for _operation in (exact_sub, exact_mul, exact_add):
    _cpu_arithmetic(_operation)


def pair_squared(a, i, b, j, cap):
    """The sum of ``distances.py`` term by term (0.0 + square == square, bit for bit); stops
    early, returning a partial sum, once it exceeds ``cap`` (the terms are >= 0, so the full
    sum would exceed it too: every comparison with ``cap`` is decided the same)."""
    total = 0.0
    d = 0
    while d < a.shape[1] and total <= cap:
        diff = exact_sub(a[i, d], b[j, d])
        total = exact_add(total, exact_mul(diff, diff))
        d += 1
    return total


def squared(a, i, b, j):
    """``pair_squared`` without the early stop, for scans whose comparisons need no branch."""
    total = 0.0
    for d in range(a.shape[1]):
        diff = exact_sub(a[i, d], b[j, d])
        total = exact_add(total, exact_mul(diff, diff))
    return total


def box_squared(q, i, lower, upper, node):
    """(min, max) squared distance from q[i] to the node's box (only ever compared with a
    margin, so its rounding does not matter); without branches, which the walks' random
    boxes would mispredict."""
    low = 0.0
    high = 0.0
    for d in range(q.shape[1]):
        v = q[i, d]
        a = lower[node, d]
        b = upper[node, d]
        gap = max(max(a - v, v - b), 0.0)
        far = max(v - a, b - v)
        low += gap * gap
        high += far * far
    return low, high


def children_low(q, i, lower, upper, a, b):
    """Smallest squared distances from q[i] to the boxes of nodes a and b (compared with a
    margin only)."""
    low_a = 0.0
    low_b = 0.0
    for d in range(q.shape[1]):
        v = q[i, d]
        gap_a = max(max(lower[a, d] - v, v - upper[a, d]), 0.0)
        gap_b = max(max(lower[b, d] - v, v - upper[b, d]), 0.0)
        low_a += gap_a * gap_a
        low_b += gap_b * gap_b
    return low_a, low_b


def push_children(q, i, lower, upper, left, right, node, nodes, bounds, top):
    """Push both children of ``node`` with their lower bounds, the nearer one on top (walked
    first); return the new stack top."""
    near = left[node]
    far = right[node]
    near_low, far_low = children_low(q, i, lower, upper, near, far)
    if far_low < near_low:
        near, far, near_low, far_low = far, near, far_low, near_low
    nodes[top] = far
    bounds[top] = far_low
    nodes[top + 1] = near
    bounds[top + 1] = near_low
    return top + 2


def keep_best(best_d, best_i, k, d2, index):
    """Insert ``(d2, index)`` among the k best so far, ordered by (squared distance, index),
    if it belongs there."""
    if d2 > best_d[k - 1] or (d2 == best_d[k - 1] and index > best_i[k - 1]):
        return
    slot = k - 1
    while slot > 0 and (
        d2 < best_d[slot - 1] or (d2 == best_d[slot - 1] and index < best_i[slot - 1])
    ):
        best_d[slot] = best_d[slot - 1]
        best_i[slot] = best_i[slot - 1]
        slot -= 1
    best_d[slot] = d2
    best_i[slot] = index


def is_point(lower, upper, node):
    """Whether every point of the node is one and the same point (a box of no width)."""
    for d in range(lower.shape[1]):
        if lower[node, d] != upper[node, d]:
            return False
    return True


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
    """The two smallest squared distances from ``y[p]`` to the points ``x`` stored in the
    tree; nearest box first, a node skipped when its box is farther than the runner-up."""
    best = np.inf
    runner_up = np.inf
    nodes[0] = 0
    bounds[0] = 0.0
    top = 1
    while top:
        top -= 1
        node = nodes[top]
        if bounds[top] > runner_up * (1 + MARGIN):
            continue
        if left[node] < 0 or is_point(lower, upper, node):
            last = stop[node]
            if is_point(lower, upper, node):  # duplicates: two of them say all
                last = min(last, start[node] + 2)
            for q in range(start[node], last):
                d2 = pair_squared(y, p, x, q, runner_up)
                if d2 < best:
                    runner_up = best
                    best = d2
                elif d2 < runner_up:
                    runner_up = d2
            continue
        top = push_children(y, p, lower, upper, left, right, node, nodes, bounds, top)
    return best, runner_up


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


def mixed_distance(a, i, b, j, categorical, cap):
    """The attacks' mixed-type distance between row ``i`` of ``a`` and row ``j`` of ``b``
    (numbers already divided by their range, categories as codes, NaN where missing), summed
    column by column: ``|x - y|`` for numbers, 0 or 1 for categories, 0 for two missing values
    and 1 for one. Stops early, returning a partial sum, once it exceeds ``cap``."""
    total = 0.0
    d = 0
    while d < a.shape[1] and total <= cap:
        x = a[i, d]
        y = b[j, d]
        if x != x or y != y:  # a missing value
            term = 0.0 if (x != x and y != y) else 1.0
        elif categorical[d]:
            term = 0.0 if x == y else 1.0
        else:
            term = abs(exact_sub(x, y))
        total = exact_add(total, term)
        d += 1
    return total


def nearest_mixed_scan(references, first, last, categorical, queries, q, k, best_d, best_i):
    """Merge the references ``first..last-1``, in index order, into query ``q``'s k best
    ``(best_d, best_i)`` by (mixed distance, index); returns False once nothing further can
    enter (the k-th distance is 0: a later reference, of a higher index, could only tie)."""
    for j in range(first, last):
        if best_d[k - 1] == 0.0:
            return False
        keep_best(best_d, best_i, k,
                  mixed_distance(queries, q, references, j, categorical, best_d[k - 1]), j)
    return best_d[k - 1] != 0.0


# Compiled inline into their callers, on the CPU here (numba's generic registry, inlined in
# numba's IR: as fast as the walk written out in one kernel) and on the GPU by
# ``cuda_kernels.py``.
SHARED_WALKS = (pair_squared, squared, box_squared, children_low, push_children, keep_best,
                is_point, box_rule, others_in, pair_rule, rank_visit, rank_query, two_nearest_query,
                knn_query, mixed_distance, nearest_mixed_scan)  # fmt: skip
for _walk in SHARED_WALKS:
    register_jitable(inline="always")(_walk)


# -------------------------------------------------------------------------- CPU drivers
# ------------------------------------------------------------------------- tree build
@njit(cache=True)
def _select(order, points, dim, lo, hi, kth):
    """Quickselect: order[lo:hi] rearranged so that order[kth] holds the kth value of
    points[:, dim], smaller-or-equal ones before it and greater-or-equal ones after."""
    while hi - lo > 1:
        a = points[order[lo], dim]
        b = points[order[(lo + hi) // 2], dim]
        c = points[order[hi - 1], dim]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        i, j = lo, hi - 1
        while i <= j:
            while points[order[i], dim] < pivot:
                i += 1
            while points[order[j], dim] > pivot:
                j -= 1
            if i <= j:
                order[i], order[j] = order[j], order[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j + 1
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, parallel=True)
def _build(points, leaf_size):
    """Nodes created, then split, in breadth-first order, the nodes of one level in parallel
    (their rows are disjoint): the same tree whatever the number of threads."""
    n, dim = points.shape
    order = np.arange(n)
    capacity = 4 * (n // leaf_size + 1)
    start = np.zeros(capacity, np.int64)
    stop = np.zeros(capacity, np.int64)
    left = np.full(capacity, -1, np.int64)
    right = np.full(capacity, -1, np.int64)
    lower = np.empty((capacity, dim))
    upper = np.empty((capacity, dim))
    low_index = np.empty(capacity, np.int64)
    stop[0] = n
    first, count = 0, 1  # the current level: nodes first .. count - 1
    while first < count:
        width = count - first
        for i in prange(width):
            node = first + i
            s, e = start[node], stop[node]
            lowest = order[s]
            for d in range(dim):
                lower[node, d] = points[order[s], d]
                upper[node, d] = points[order[s], d]
            for row in range(s + 1, e):
                lowest = min(lowest, order[row])
                for d in range(dim):
                    v = points[order[row], d]
                    # NaN-propagating: a node holding a NaN has NaN bounds, so it is
                    # never skipped, counted whole or taken for duplicates
                    lower[node, d] = np.minimum(lower[node, d], v)
                    upper[node, d] = np.maximum(upper[node, d], v)
            low_index[node] = lowest
        children = np.full(width, -1, np.int64)
        following = count
        for i in range(width):  # children numbered in the level's order
            if stop[first + i] - start[first + i] > leaf_size:
                children[i] = following
                following += 2
        for i in prange(width):
            if children[i] < 0:
                continue
            node = first + i
            s, e = start[node], stop[node]
            widest = 0
            for d in range(1, dim):
                if upper[node, d] - lower[node, d] > upper[node, widest] - lower[node, widest]:
                    widest = d
            middle = (s + e) // 2
            _select(order, points, widest, s, e, middle)
            left[node], right[node] = children[i], children[i] + 1
            start[children[i]], stop[children[i]] = s, middle
            start[children[i] + 1], stop[children[i] + 1] = middle, e
        first, count = count, following
    return (order, start[:count].copy(), stop[:count].copy(), left[:count].copy(),
            right[:count].copy(), lower[:count].copy(), upper[:count].copy(),
            low_index[:count].copy())  # fmt: skip


@njit(cache=True, parallel=True)
def _ranks(y, order, start, stop, left, right, lower, upper, low_index, columns, lane_order,
           first_lane, x, own, blocks, block):  # fmt: skip
    """``rank_query``'s results for every original, original row p's own avatar being stored
    row p. The ``block`` originals of a work item (neighbours in space) share one depth-first
    walk: a node is tested for each original still concerned (``active[depth]``: those its
    parent passed on), and a leaf is scanned by each original whose sphere crosses it, while it
    is in cache: from its slot (``KDTree.leaf_slots``) up to ``SLOT_DIMENSIONS``, else (no
    ``columns``) row by row by ``rank_visit``, which also takes every node of duplicates."""
    n = x.shape[0]
    cloaking = np.zeros(n, np.int64)
    hidden = np.zeros(n, np.bool_)
    for item in prange(blocks.size):
        active = np.empty((STACK, block), np.int64)
        sizes = np.empty(STACK, np.int64)
        nodes = np.empty(STACK, np.int64)
        depths = np.empty(STACK, np.int64)
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
            if is_point(lower, upper, node):
                for p in concerned:
                    c, h, _ = _rank_visit(y, order, start, stop, left, lower, upper, low_index,
                                          x, own, p, node)  # fmt: skip
                    cloaking[p] += c
                    hidden[p] |= h
                continue
            passed = 0
            for p in concerned:  # without branches: the outcomes are unpredictable
                near, inside = box_rule(x, p, lower, upper, node, own[p])
                whole = inside * others_in(start, stop, node, p)
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
    return cloaking, hidden


_rank_visit = njit(cache=True)(rank_visit)  # called, not inlined: compiled once for all


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
        counts, hide = pair_rule(d2, radius, index != caller, index < caller)
        count += counts
        hides |= hide
    return count, hides


@njit(cache=True, parallel=True)
def _two_nearest(x, order, start, stop, left, right, lower, upper, low_index, y, blocks):
    """``two_nearest_query`` for every avatar row p."""
    n = y.shape[0]
    first = np.empty(n)
    second = np.empty(n)
    for item in prange(blocks.size):
        nodes = np.empty(STACK, np.int64)
        bounds = np.empty(STACK)
        for p in range(blocks[item] * _BLOCK, min((blocks[item] + 1) * _BLOCK, n)):
            first[p], second[p] = two_nearest_query(
                x, order, start, stop, left, right, lower, upper, low_index, y, p, nodes, bounds
            )
    return first, second


def nearest_others_of(points: np.ndarray, rows: np.ndarray, k: int):
    """(len(rows), k) indices and squared distances of the k nearest others of ``points[rows]``
    among all ``points`` (``knn_query``, one walk per row): the exact answer for the rows whose
    index candidates could not be verified (``neighbours/search.py``)."""
    tree = KDTree.build(points)
    stored = np.empty_like(tree.order)
    stored[tree.order] = np.arange(tree.order.size)
    with _LOCK:
        return _nearest_others_of(*tree.walk(), stored[rows], k)


@njit(cache=True, parallel=True)
def _nearest_others_of(
    points, order, start, stop, left, right, lower, upper, low_index, queries, k
):
    indices = np.empty((queries.size, k), np.int64)
    squared = np.empty((queries.size, k))
    for r in prange(queries.size):
        nodes = np.empty(STACK, np.int64)
        bounds = np.empty(STACK)
        knn_query(
            points, order, start, stop, left, right, lower, upper, low_index, queries[r], k,
            squared[r],
            indices[r], nodes, bounds,
        )  # fmt: skip
    return indices, squared


# ------------------------------------------------------------------------------- synthesis
def synthesize_block(continuous, codes, neighbours, weights, uniforms):
    """``synthesis._barycentre`` and ``synthesis._draw`` for one block of rows, fused: the
    same operations in the same order per value, so the same bits, without the (b, k)
    temporaries per column."""
    out_continuous = np.empty((neighbours.shape[0], continuous.shape[1]))
    out_codes = np.empty((neighbours.shape[0], codes.shape[1]), np.int64)
    with _LOCK:
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
    with _LOCK:
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


# ------------------------------------------------------------------------------ projection
def modality_statistics(x: np.ndarray, codes: np.ndarray, offsets: np.ndarray):
    """``Projection._modality_statistics`` in one pass over the rows (single-threaded: the
    sums keep the row order of the bincounts, hence their bits)."""
    return _modality_statistics(
        np.ascontiguousarray(x), np.ascontiguousarray(codes, dtype=np.int64), offsets
    )


@njit(cache=True)
def _modality_statistics(x, codes, offsets):
    n, n_continuous = x.shape
    n_variables = codes.shape[1]
    total = offsets[n_variables]
    sums = np.zeros((total, n_continuous))
    cross = np.zeros((total, total), np.int64)
    cells = np.empty(n_variables, np.int64)
    for r in range(n):
        for j in range(n_variables):
            cells[j] = offsets[j] + codes[r, j]
        for j in range(n_variables):
            for c in range(n_continuous):
                sums[cells[j], c] += x[r, c]
            for other in range(j, n_variables):
                cross[cells[j], cells[other]] += 1
    return sums, cross


# ------------------------------------------------------------------------------ neighbours
def verify_candidates(points, candidates, far_squared, margin, k: int):
    """``neighbours._verify`` in one compiled pass: each row's k nearest among its candidates
    by (exact squared distance, index), itself excluded by index, and the rows whose result
    the index cannot guarantee (k-th distance >= the farthest candidate's minus ``margin``)."""
    points = np.ascontiguousarray(points, dtype=np.float64)
    exhaustive = candidates.shape[1] >= points.shape[0]
    with _LOCK:
        indices, squared, uncertain = _verify(
            points, np.ascontiguousarray(candidates), far_squared, margin, k, exhaustive
        )
    return indices, squared, np.nonzero(uncertain)[0]


@njit(cache=True, parallel=True)
def _verify(points, candidates, far_squared, margin, k, exhaustive):
    n, q = candidates.shape
    indices = np.empty((n, k), np.int64)
    squared = np.empty((n, k))
    uncertain = np.zeros(n, np.bool_)
    for i in prange(n):
        best_d = np.full(k, np.inf)
        best_i = np.full(k, n)
        for c in range(q):
            j = candidates[i, c]
            if j == i:
                continue
            keep_best(best_d, best_i, k, pair_squared(points, i, points, j, np.inf), j)
        indices[i] = best_i
        squared[i] = best_d
        uncertain[i] = not exhaustive and best_d[k - 1] >= far_squared[i] - margin[i]
    return indices, squared, uncertain


def nearest_others(points: np.ndarray, k: int):
    """``neighbours.nearest_neighbours``'s contract, exact in one walk: (n, k) indices and
    squared distances of each point's k nearest others, ordered by (squared distance, index),
    the point itself excluded by index.

    The queries of one leaf share a walk. Each visited leaf is tested against every query's
    current k-th distance with one vectorised box bound, then measured against the surviving
    queries in one vectorised pass per query (the points stored dimension-major): about 1.5x
    scipy's cKDTree query on 10^5 FAMD coordinates in 5-D, k = 20, with no re-check needed."""
    tree = KDTree.build(points)
    leaves = np.nonzero(tree.left < 0)[0]
    leaves = leaves[np.random.default_rng(0).permutation(leaves.size)]  # dense regions spread
    columns = np.ascontiguousarray(tree.points.T)
    largest = int((tree.stop - tree.start)[leaves].max())
    with _LOCK:
        return _nearest_others(*tree.walk(), columns, leaves, largest, k)


@njit(cache=True, parallel=True)
def _nearest_others(
    points, order, start, stop, left, right, lower, upper, low_index, columns, leaves, largest, k
):
    n = points.shape[0]
    indices = np.empty((n, k), np.int64)
    squared = np.empty((n, k))
    for item in prange(leaves.size):
        _leaf_neighbours(
            leaves[item], points, order, start, stop, left, right, lower, upper, low_index, columns,
            largest, k, indices, squared,
        )  # fmt: skip
    return indices, squared


@njit(cache=True, inline="always")
def _box_gap(lower, upper, a, b):
    """Smallest squared distance between the boxes of nodes a and b."""
    total = 0.0
    for d in range(lower.shape[1]):
        gap = max(lower[b, d] - upper[a, d], lower[a, d] - upper[b, d])
        if gap > 0.0:
            total += gap * gap
    return total


@njit(cache=True)
def _leaf_neighbours(
    own, points, order, start, stop, left, right, lower, upper, low_index, columns, largest, k,
    indices,
    squared,
):
    """The k nearest others of the points stored in leaf ``own``, written at their caller's
    rows. Nodes are visited nearest box first; a node is skipped when its box is farther from
    the leaf's box than the largest current k-th distance, a leaf's point when it is farther
    from that query than the query's own k-th distance (both with the 1e-9 margin), and once
    that distance is 0, when the node's lowest index is above the query's k-th (only a tie of
    lower index could enter). A leaf of duplicates is measured once per query."""
    dim = points.shape[1]
    s, m = start[own], stop[own] - start[own]
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
            near_gap = _box_gap(lower, upper, own, near)
            far_gap = _box_gap(lower, upper, own, far)
            if far_gap < near_gap:
                near, far, near_gap, far_gap = far, near, far_gap, near_gap
            node_stack[top], gap_stack[top] = far, far_gap
            node_stack[top + 1], gap_stack[top + 1] = near, near_gap
            top += 2
            continue
        first, size = start[node], stop[node] - start[node]
        measured = 1 if is_point(lower, upper, node) else size  # duplicates: one distance
        for p in range(m):  # squared distance from every query to this leaf's box
            box_low[p] = 0.0
        for d in range(dim):
            a, b = lower[node, d], upper[node, d]
            for p in range(m):
                v = columns[d, s + p]
                gap = max(max(a - v, v - b), 0.0)
                box_low[p] += gap * gap
        for p in range(m):
            if box_low[p] > kth[p] * (1 + MARGIN):
                continue
            if kth[p] == 0.0 and low_index[node] > best_i[p, k - 1]:
                continue
            # distances.py's sum, dimension by dimension (0.0 + square == square)
            v = columns[0, s + p]
            for j in range(measured):
                diff = columns[0, first + j] - v
                pair[j] = diff * diff
            for d in range(1, dim):
                v = columns[d, s + p]
                for j in range(measured):
                    diff = columns[d, first + j] - v
                    pair[j] += diff * diff
            for j in range(measured, size):
                pair[j] = pair[0]
            cap, worst_p = best_d[p, k - 1], best_i[p, k - 1]
            for j in range(size):
                d2 = pair[j]
                if d2 > cap or first + j == s + p:
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
    for p in range(m):
        indices[order[s + p]] = best_i[p]
        squared[order[s + p]] = best_d[p]


# ---------------------------------------------------------------- mixed-type nearest scan
_MIXED_QUERIES = 32  # queries per parallel work item
_MIXED_REFERENCES = 2048  # references per block: a block stays in cache across its queries


def nearest_mixed(references: np.ndarray, categorical: np.ndarray, queries: np.ndarray, k: int):
    """(n_queries, k) indices and mixed distances of each query's k nearest references,
    ordered by (distance, index): ``nearest_mixed_scan`` over the references block by block
    (in index order, so ties still go to the lower index), queries in parallel."""
    with _LOCK:
        return _nearest_mixed(np.ascontiguousarray(references, dtype=np.float64),
                              np.ascontiguousarray(categorical, dtype=np.bool_),
                              np.ascontiguousarray(queries, dtype=np.float64), k)


@njit(cache=True, parallel=True)
def _nearest_mixed(references, categorical, queries, k):
    n, m = queries.shape[0], references.shape[0]
    indices = np.empty((n, k), np.int64)
    distances = np.empty((n, k))
    for item in prange(-(-n // _MIXED_QUERIES)):
        lo, hi = item * _MIXED_QUERIES, min((item + 1) * _MIXED_QUERIES, n)
        best_d = np.full((hi - lo, k), np.inf)
        best_i = np.full((hi - lo, k), m, np.int64)
        open_ = np.ones(hi - lo, np.bool_)
        for first in range(0, m, _MIXED_REFERENCES):
            last = min(first + _MIXED_REFERENCES, m)
            for q in range(lo, hi):
                if open_[q - lo]:
                    open_[q - lo] = nearest_mixed_scan(references, first, last, categorical,
                                                       queries, q, k, best_d[q - lo],
                                                       best_i[q - lo])
        indices[lo:hi] = best_i
        distances[lo:hi] = best_d
    return indices, distances


# ------------------------------------------------------------- capacitated assignment
def transport(cost: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """The parent (column) of each child (row) in a minimum-cost assignment of every child
    to one parent, parent p receiving exactly ``capacity[p]`` children (they sum to the
    number of children): the linear sum assignment of children to parents repeated by their
    counts, solved as the transportation problem it is, without repeating anything.

    Successive shortest paths: children join one by one, each along the cheapest path of
    moves (the new child to a parent, a child of that parent to another, ... to a parent with
    room), found by Bellman-Ford over the parents (edge p -> q: the cheapest move of one of
    p's children to q). Each step keeps the assignment optimal for the children placed so far
    (no negative cycle), so the last is optimal: the same total cost as the dense solver."""
    with _LOCK:
        return _transport(np.ascontiguousarray(cost, dtype=np.float64),
                          np.ascontiguousarray(capacity, dtype=np.int64))


_TRANSPORT_TOLERANCE = 1e-12  # relative: what a path must gain over another to replace it


@njit(cache=True)
def _move_costs(cost, parent_of, placed, p, move, mover):
    """Row p of the move graph: for each parent q, the cheapest ``cost[x, q] - cost[x, p]``
    over the children x of p (``mover``: that x, lowest index on ties; -1: p has none)."""
    m = cost.shape[1]
    for q in range(m):
        move[p, q] = np.inf
        mover[p, q] = -1
    for x in range(placed):
        if parent_of[x] != p:
            continue
        for q in range(m):
            if q != p:
                gain = cost[x, q] - cost[x, p]
                if gain < move[p, q]:
                    move[p, q] = gain
                    mover[p, q] = x


@njit(cache=True)
def _transport(cost, capacity):
    n, m = cost.shape
    parent_of = np.full(n, -1, np.int64)
    load = np.zeros(m, np.int64)
    move = np.full((m, m), np.inf)
    mover = np.full((m, m), -1, np.int64)
    dist = np.empty(m)
    via = np.empty(m, np.int64)  # the parent a path reaches p from (-1: from the new child)
    moved = np.empty(m, np.int64)  # the child that moves into p along it
    for s in range(n):
        for p in range(m):
            dist[p] = cost[s, p]
            via[p] = -1
            moved[p] = -1
        for _ in range(m):  # Bellman-Ford: paths of at most m parents
            changed = False
            for p in range(m):
                if not np.isfinite(dist[p]):
                    continue
                for q in range(m):
                    # a move must gain more than rounding: a cycle of moves that gains
                    # nothing (ties) could otherwise look negative by one ulp
                    through = dist[p] + move[p, q]
                    if mover[p, q] >= 0 and through < dist[q] - _TRANSPORT_TOLERANCE * (
                            1.0 + abs(dist[q])):
                        dist[q] = through
                        via[q] = p
                        moved[q] = mover[p, q]
                        changed = True
            if not changed:
                break
        target = -1
        for p in range(m):
            if load[p] < capacity[p] and (target < 0 or dist[p] < dist[target]):
                target = p
        load[target] += 1
        touched = np.zeros(m, np.bool_)  # the parents whose children change
        q, steps = target, 0
        touched[q] = True
        while via[q] >= 0 and steps < m:  # walk the path back: each mover goes to q
            parent_of[moved[q]] = q
            q = via[q]
            touched[q] = True
            steps += 1
        parent_of[s] = q
        for p in range(m):
            if touched[p]:
                _move_costs(cost, parent_of, s + 1, p, move, mover)
    return parent_of

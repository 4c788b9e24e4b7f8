"""The flat k-d tree and the walk rules shared by every search, on the CPU and the GPU.

scipy's cKDTree decides "within the radius" in its own arithmetic. Here the tree is walked by
compiled code that compares every pair with the arithmetic of ``distances.py`` (float64,
dimension by dimension, no fused multiply-add), so one walk decides each query exactly. Node
boxes only prune or, for the counts, add whole nodes; both with a 1e-9 relative margin
(``MARGIN``), far above the rounding of a box distance (about 1e-15 relative), so a node is
skipped or added whole only when every pair inside it would compare the same way.

``KDTree.build(points)``: median splits on the widest axis, tight boxes, ``LEAF_SIZE`` points
per leaf, built on the host for both backends (one level's nodes split in parallel). Queries
run in the tree's leaf order: neighbouring queries visit the same nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import FunctionType, ModuleType

import numpy as np
from numba import njit

from ..parallel import in_blocks

LEAF_SIZE = 32
# Lanes of a leaf slot (``KDTree.leaf_slots``): a compile-time width, so a leaf scan is one
# fixed-length vector loop; leaves never hold more than LEAF_SIZE <= LANES points.
LANES = 32
MARGIN = 1e-9  # relative margin of every box test (prune, or count a node whole)
# Walk stacks: a median-split tree of n points is ceil(log2(n / LEAF_SIZE)) levels deep and a
# depth-first walk holds at most one entry per level plus one.
STACK = 64


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
        """Nodes created, then split, in breadth-first order, the nodes of one level in
        parallel (their rows are disjoint): the same tree whatever the number of threads."""
        stored = np.array(points, np.float64, order="C")  # rows rearranged with ``order``
        n, dim = stored.shape
        capacity = 4 * (n // LEAF_SIZE + 1)
        order = np.arange(n)
        start = np.zeros(capacity, np.int64)
        stop = np.zeros(capacity, np.int64)
        left = np.full(capacity, -1, np.int64)
        right = np.full(capacity, -1, np.int64)
        lower = np.empty((capacity, dim))
        upper = np.empty((capacity, dim))
        low_index = np.empty(capacity, np.int64)
        stop[0] = n
        first, count = 0, 1  # the current level: nodes first .. count - 1
        if n == 0:  # one empty leaf, whose NaN box is never skipped (and holds nothing)
            lower[0], upper[0], low_index[0], first = np.nan, np.nan, 0, 1
        while first < count:
            in_blocks(_boxes, count - first, stored, order, start, stop, lower, upper,
                      low_index, first)  # fmt: skip
            nodes = first + np.flatnonzero(stop[first:count] - start[first:count] > LEAF_SIZE)
            children = count + 2 * np.arange(nodes.size)  # numbered in the level's order
            left[nodes], right[nodes] = children, children + 1
            in_blocks(_split, nodes.size, stored, order, start, stop, lower, upper, left, nodes)
            first, count = count, count + 2 * nodes.size
        nodes = (start, stop, left, right, lower, upper, low_index)
        return cls(stored, order, *(array[:count].copy() for array in nodes))

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


# ------------------------------------------------------------------------- shared walks
# Plain Python functions, compiled where they are called: inline by the njit drivers on the
# CPU (their ``cpu_walks`` versions, ``shared``) and by the kernels of ``cuda.py`` on the GPU
# (which registers them with numba-cuda); the CUDA simulator runs them as Python. Scratch arrays
# (walk stacks, top-k buffers) are passed in, as each target allocates them its own way.
# ``exact_sub``, ``exact_mul`` and ``exact_add`` are the pair arithmetic of ``distances.py``:
# plain operations on the CPU (numba emits no fused multiply-add), round-to-nearest intrinsics
# on the GPU (where the compiler would otherwise contract a multiply and an add into one FMA).

cpu_walks = ModuleType(f"{__name__}.cpu_walks", "The CPU versions of the shared walks.")
_cpu_namespaces: list[dict] = []  # the globals of the CPU versions


def shared(*walks):
    """Give each plain function a CPU version, ``cpu_walks.<name>``: ``njit(inline="always")``
    of a copy of it whose calls to shared walks go to their CPU versions, so that numba inlines
    the walks into the drivers that call them in its untyped IR, before typing (as fast as a
    walk written out in one kernel). numba's other way, ``register_jitable(inline="always")``,
    also compiles every walk on its own, once per signature, only to discard it: about a quarter
    of the kernels' first-use compile time. ``cuda.py`` registers the plain functions for the
    GPU."""
    for walk in walks:
        namespace = dict(walk.__globals__)
        _cpu_namespaces.append(namespace)
        copy = FunctionType(walk.__code__, namespace, walk.__name__, walk.__defaults__,
                            walk.__closure__)  # fmt: skip
        copy.__qualname__ = walk.__qualname__
        setattr(cpu_walks, walk.__name__, njit(inline="always")(copy))
    versions = {name: value for name, value in vars(cpu_walks).items()
                if not name.startswith("__")}  # fmt: skip
    for namespace in _cpu_namespaces:
        namespace.update(versions)
    return walks


def exact_sub(a, b):
    return a - b


def exact_mul(a, b):
    return a * b


def exact_add(a, b):
    return a + b


shared(exact_sub, exact_mul, exact_add)  # on the CPU, the operations themselves


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
    if not d2 <= best_d[k - 1] or (d2 == best_d[k - 1] and index > best_i[k - 1]):
        return  # (a NaN distance is no neighbour)
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


SHARED = shared(pair_squared, squared, box_squared, children_low, push_children, keep_best,
                is_point)  # fmt: skip


# ------------------------------------------------------------------------- tree build
@njit(inline="always")
def _select(order, stored, dim, lo, hi, kth):
    """Quickselect: rows lo:hi of ``stored`` (and their caller indices ``order``) rearranged so
    that row kth holds the kth value of column ``dim``, smaller-or-equal ones before it and
    greater-or-equal ones after. The rows move with their indices, so that every pass reads
    memory in order, not a row at a random place of ``points`` (2x faster at 10^6 rows).
    Inlined: compiled on its own, it would be compiled twice, once for a literal ``dim`` of 0."""
    while hi - lo > 1:
        a = stored[lo, dim]
        b = stored[(lo + hi) // 2, dim]
        c = stored[hi - 1, dim]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        i, j = lo, hi - 1
        while i <= j:
            while stored[i, dim] < pivot:
                i += 1
            while stored[j, dim] > pivot:
                j -= 1
            if i <= j:
                order[i], order[j] = order[j], order[i]
                for d in range(stored.shape[1]):
                    stored[i, d], stored[j, d] = stored[j, d], stored[i, d]
                i += 1
                j -= 1
        if kth <= j:
            hi = j + 1
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, nogil=True)
def _boxes(stored, order, start, stop, lower, upper, low_index, offset, first, last):
    """The box and lowest caller index of the nodes ``offset + first .. offset + last``."""
    dim = stored.shape[1]
    for node in range(offset + first, offset + last):
        s, e = start[node], stop[node]
        lowest = order[s]
        for d in range(dim):
            lower[node, d] = stored[s, d]
            upper[node, d] = stored[s, d]
        for row in range(s + 1, e):
            lowest = min(lowest, order[row])
            for d in range(dim):
                v = stored[row, d]
                # NaN-propagating: a node holding a NaN has NaN bounds, so it is
                # never skipped, counted whole or taken for duplicates
                lower[node, d] = np.minimum(lower[node, d], v)
                upper[node, d] = np.maximum(upper[node, d], v)
        low_index[node] = lowest


@njit(cache=True, nogil=True)
def _split(stored, order, start, stop, lower, upper, left, nodes, first, last):
    """Split ``nodes[first:last]`` at the median of their widest axis into their children
    ``left[node]`` and the next."""
    for i in range(first, last):
        node = nodes[i]
        s, e = start[node], stop[node]
        widest = 0
        for d in range(1, stored.shape[1]):
            if upper[node, d] - lower[node, d] > upper[node, widest] - lower[node, widest]:
                widest = d
        middle = (s + e) // 2
        _select(order, stored, widest, s, e, middle)
        child = left[node]
        start[child], stop[child] = s, middle
        start[child + 1], stop[child + 1] = middle, e

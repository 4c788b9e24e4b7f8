"""Giving each avatar child an avatar parent (docs/spec/multitable.md,
section 2, step 3, and section 3).

- ``calibrated_counts``: avatarized children counts -> the originals' counts (those held by
  few parents moved to the nearest widely held one), given in the avatarized order, adjusted
  to the exact total of avatar children.
- ``assign_minimum_distance``: each child to its nearest parent (the lowest index among
  equally near ones).
- ``assign_linear_sum``: parents repeated by their counts ("slots"), then the assignment of
  slots to children that minimises the total Euclidean distance. Exact up to ``block_size``
  children (``default_block_size``); above, both sides are split jointly by recursive median
  cuts along the widest coordinate into balanced blocks (as many slots as children in each),
  every block solved exactly, blocks in parallel processes. A block where parents have many
  children each is the transportation problem it is (``transport.py``: each parent
  once, with its count as capacity); one where they have few, scipy's dense
  ``linear_sum_assignment`` of the slots. Both give the block's exact optimum. The worker
  processes are forked (the platform's default), or started from a forkserver once CUDA may
  be initialised in this process (``pool_context``).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from ..backend import CPU, Backend
from ..errors import AvatarError
from ..metrics.signal import SHARE_FLOOR
from ..neighbours.search import nearest_reference

DEFAULT_BLOCK_SIZE = 2000  # within ~3 % of the optimum at n = 4000 (see tests)
# From this many children per parent on, the transportation solver beats the dense one (on
# 2000 children: 0.02 s against 2.4 s at 100 per parent, 1.3 s against 1.8 s at 10, 4.8 s
# against 1.3 s at 5), and blocks grow to TRANSPORT_BLOCK_SIZE (10^5 children of 10^3
# parents: 1.2 s and 12 % less total distance than 1000-row dense blocks in 17 s).
TRANSPORT_MIN_CHILDREN_PER_PARENT = 8
TRANSPORT_BLOCK_SIZE = 4000
# Above LARGE_PROBLEM_ROWS children, blocks of LARGE_PROBLEM_BLOCK_SIZE: a block where few
# parents are repeated many times is a degenerate problem that the dense solver finds hard
# (measured: ~2 s for 2000 rows and 20 parents, ~0.25 s for 1000 rows and 10 parents), at
# the price of a few per cent of total distance.
LARGE_PROBLEM_ROWS = 50_000
LARGE_PROBLEM_BLOCK_SIZE = 1000
EXACT_RATIO_MAX_ROWS = 3000  # above, the exact optimum is too slow to report beside the blocks
# Imported, these mean CUDA may be initialised in this process (the GPU backend imports cupy
# and numba-cuda; RAPIDS brings the others).
CUDA_MODULES = ("cupy", "numba.cuda", "cudf", "cuml", "rmm", "cuvs", "pylibraft")


def default_block_size(n_children: int, n_parents: int) -> int:
    """Children per exact block: large for the transportation solver (many children per
    parent), smaller for the dense one, smaller still above ``LARGE_PROBLEM_ROWS``."""
    if n_children >= TRANSPORT_MIN_CHILDREN_PER_PARENT * max(n_parents, 1):
        return TRANSPORT_BLOCK_SIZE
    return DEFAULT_BLOCK_SIZE if n_children <= LARGE_PROBLEM_ROWS else LARGE_PROBLEM_BLOCK_SIZE


@dataclass
class Assignment:
    """Parent position for every child, with the total cost when it was optimised."""

    parent: np.ndarray
    total_cost: float | None = None
    n_blocks: int = 1
    cost_ratio_to_exact: float | None = None  # blocked cost / exact optimum, small problems


def calibrated_counts(avatarized: np.ndarray, original: np.ndarray, total: int,
                      k: int) -> np.ndarray:
    """Children per avatar parent with the originals' distribution of children per parent:
    the original counts, sorted, given rank by rank in the order of the ``avatarized``
    (barycentric, so shrunk towards the mean) counts, ties by position; then one child moved
    at a time, where the avatarized count is furthest from the given one (parents with no
    child or one child last, so that the share of parents without children holds), until
    they sum to ``total`` (the avatar children to link). A barycentre of counts would shrink
    the tails: patients with many infections, the main outcome of a recurrent-event trial.

    A count held by fewer than ``k`` parents or under ``SHARE_FLOOR`` of them is never handed
    out, as the calibrated shares never raise such a modality: its parents get the nearest
    count held more widely (the most infections of one patient are not released as such)."""
    avatarized = np.nan_to_num(np.asarray(avatarized, dtype=np.float64))
    original = np.asarray(original, dtype=np.int64)
    if total < 0 or len(original) != len(avatarized) or (total and not len(original)):
        raise AvatarError(f"internal: {total} children for {len(avatarized)} avatar parents "
                          f"of {len(original)} original ones")
    values, holders = np.unique(original, return_counts=True)
    common = values[(holders >= k) & (holders >= SHARE_FLOOR * len(original))]
    if not common.size:  # no count is widely held: the most held one
        common = values[[np.argmax(holders)]] if values.size else values
    nearest = common[np.abs(values[:, None] - common[None, :]).argmin(axis=1)] if values.size \
        else values
    counts = np.empty(len(avatarized), dtype=np.int64)
    counts[np.argsort(avatarized, kind="stable")] = np.sort(
        nearest[np.searchsorted(values, original)])
    while (missing := total - int(counts.sum())) != 0:
        residual = avatarized - counts
        if missing > 0:  # the parents the avatarization gave most above their count, those
            # with children first (the share of parents without children is kept)
            chosen = np.lexsort((np.arange(len(counts)), -residual, counts == 0))[:missing]
            counts[chosen] += 1
        else:  # those it gave most below, among the parents with a child to take, those
            # with more than one first
            candidates = np.flatnonzero(counts > 0)
            chosen = candidates[np.lexsort((candidates, residual[candidates],
                                            counts[candidates] == 1))][:-missing]
            counts[chosen] -= 1
    return counts


def assign_minimum_distance(children: np.ndarray, parents: np.ndarray,
                            backend: Backend = CPU) -> Assignment:
    """Nearest parent of each child (Euclidean, exact: ``nearest_reference``; ties to the
    lowest parent index)."""
    nearest, distances = nearest_reference(children, parents, backend)
    return Assignment(parent=nearest, total_cost=float(distances.sum()))


def _solve_block(slot_points: np.ndarray, child_points: np.ndarray) -> tuple[np.ndarray, float]:
    """Optimal slot for each child of one block, and the block's cost: the slots of one
    parent as one column with a capacity (``transport.py``) when parents have many
    children each, else the dense assignment of the slots."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    from .transport import transport

    parents, slot_parent, capacity = np.unique(slot_points, axis=0, return_inverse=True,
                                               return_counts=True)
    if len(child_points) < TRANSPORT_MIN_CHILDREN_PER_PARENT * len(parents):
        # Children as rows: the solver is about twice as fast on this orientation when
        # parents are repeated (identical rows of slots).
        cost = cdist(child_points, slot_points)
        children, slots = linear_sum_assignment(cost)
        slot_of_child = np.empty(len(child_points), dtype=np.int64)
        slot_of_child[children] = slots
        return slot_of_child, float(cost[children, slots].sum())
    cost = cdist(child_points, parents)
    parent_of_child = transport(cost, capacity)
    # each child takes one of its parent's slots (in slot order)
    slots_by_parent = np.argsort(slot_parent.ravel(), kind="stable")
    first_slot = np.concatenate([[0], np.cumsum(capacity)[:-1]])
    order = np.argsort(parent_of_child, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - first_slot[parent_of_child[order]]
    slot_of_child = slots_by_parent[first_slot[parent_of_child] + rank]
    return slot_of_child, float(cost[np.arange(len(child_points)), parent_of_child].sum())


def balanced_blocks(
    parent_points: np.ndarray, slot_parent: np.ndarray, child_points: np.ndarray, block_size: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split slots (slot i is a copy of parent ``slot_parent[i]``) and children jointly into
    blocks of <= ``block_size`` of each, equal sizes. The slots' points are read through
    ``slot_parent`` and one coordinate at a time: no (slots + children) x dimensions copy."""
    blocks = []
    stack = [(np.arange(len(slot_parent)), np.arange(len(child_points)))]
    while stack:
        slots, children = stack.pop()
        if len(slots) <= block_size:
            blocks.append((slots, children))
            continue
        rows = slot_parent[slots]
        spans = [
            max(parent_points[rows, j].max(), child_points[children, j].max())
            - min(parent_points[rows, j].min(), child_points[children, j].min())
            for j in range(child_points.shape[1])
        ]
        axis = int(np.argmax(spans))
        slots = slots[np.argsort(parent_points[rows, axis], kind="stable")]
        children = children[np.argsort(child_points[children, axis], kind="stable")]
        half = len(slots) // 2
        stack.append((slots[half:], children[half:]))
        stack.append((slots[:half], children[:half]))
    return blocks


def cuda_may_be_initialised() -> bool:
    """Whether this process may hold a CUDA context: a CUDA library is imported (numba-cuda
    in its simulator, which never touches CUDA, excepted), or torch has initialised CUDA."""
    for name in CUDA_MODULES:
        if name not in sys.modules:
            continue
        if name == "numba.cuda":
            config = sys.modules.get("numba.cuda.core.config")
            if config is not None and getattr(config, "ENABLE_CUDASIM", False):
                continue
        return True
    torch_cuda = getattr(sys.modules.get("torch"), "cuda", None)
    return bool(torch_cuda is not None and torch_cuda.is_initialized())


def pool_context():
    """The start method of the block-solving processes, as a ``multiprocessing`` context
    (None: the platform's default, ``fork`` on Linux up to Python 3.13).

    Forking is the cheapest start, but CUDA does not survive a fork: a child forked after
    CUDA was initialised inherits a context it cannot use, and locks held by the driver's
    threads, so a CUDA call there (a library's import or exit hook) fails or hangs. Once CUDA
    may be initialised, the workers are forked from a forkserver instead: a clean process
    started without CUDA, where this module and the solvers' modules are imported once rather
    than in every worker (measured: a pool of 2 on 600 children, 0.9 s against 2.9 s without
    the preload and 0.2 s forked; the server's own start, once per process, about 5 s). Where
    there is no forkserver, ``spawn``. Either way, as under spawn (macOS, Windows) and under
    Linux's default from Python 3.14, a script that calls the library must keep its top level
    under ``if __name__ == "__main__":``, since each worker re-runs the script's top level."""
    if not cuda_may_be_initialised():
        return None
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    from . import transport  # the transport solver's module (numba, no CUDA)

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        [__name__, transport.__name__, "scipy.optimize", "scipy.spatial.distance"]
    )
    return context


def _solved_in_order(pool: ProcessPoolExecutor, tasks: Iterator, window: int) -> Iterator:
    """``_solve_block`` of each task, in order, with at most ``window`` tasks submitted at
    once: the blocks' points are copied for the workers only shortly before they are solved."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.submit(_solve_block, *task))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def assign_linear_sum(
    children: np.ndarray,
    parents: np.ndarray,
    counts: np.ndarray,
    block_size: int | None = None,
    workers: int | None = None,
) -> Assignment:
    """Each parent receives exactly ``counts[p]`` children, minimising the total distance."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() != len(children):
        raise AvatarError(
            f"the counts sum to {counts.sum()} but there are {len(children)} children"
        )
    if block_size is None:
        block_size = default_block_size(len(children), int((counts > 0).sum()))
    if block_size < 1:
        raise AvatarError(f"block_size must be >= 1, got {block_size}")
    slot_parent = np.repeat(np.arange(len(parents)), counts)
    blocks = balanced_blocks(parents, slot_parent, children, block_size)
    tasks = ((parents[slot_parent[s]], children[c]) for s, c in blocks)
    workers = min(workers or os.cpu_count() or 1, len(blocks))
    parent = np.empty(len(children), dtype=np.int64)
    total = 0.0
    with ExitStack() as stack:
        if workers > 1:
            pool = stack.enter_context(
                ProcessPoolExecutor(max_workers=workers, mp_context=pool_context())
            )
            solved = _solved_in_order(pool, tasks, window=16 * workers)
        else:
            solved = (_solve_block(*task) for task in tasks)
        for (slots, block_children), (slot_of_child, cost) in zip(blocks, solved, strict=True):
            parent[block_children] = slot_parent[slots[slot_of_child]]
            total += cost
    ratio = None
    if len(blocks) > 1 and len(children) <= EXACT_RATIO_MAX_ROWS:
        _, exact = _solve_block(parents[slot_parent], children)
        ratio = total / exact if exact > 0 else 1.0
    return Assignment(
        parent=parent, total_cost=total, n_blocks=len(blocks), cost_ratio_to_exact=ratio
    )

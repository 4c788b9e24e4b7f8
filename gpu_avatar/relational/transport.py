"""The transportation problem of ``assignment.py``'s blocks, compiled (numba)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import host_array


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
    return _transport(host_array(cost, np.float64), host_array(capacity, np.int64))


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

"""The batch plan row by row (``batches.BatchPlan``, what every partition of a streamed or
distributed run computes alone) is the in-memory plan (``split_plan`` over ``plan_order``)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_avatar.pipeline.batches import BatchPlan, plan_order, plan_ranks, plan_rows, split_plan


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 1023, 1024, 1025, 4099])
def test_the_order_is_a_bijection_and_its_inverse(n):
    sequence = np.random.SeedSequence(n)
    ranks = plan_ranks(np.arange(n), n, sequence)
    assert np.array_equal(np.sort(ranks), np.arange(n))
    assert np.array_equal(plan_rows(ranks, n, sequence), np.arange(n))
    assert np.array_equal(plan_order(n, sequence)[ranks], np.arange(n))


def test_huge_tables_stay_in_range():
    n = 2**62 + 5
    rows = np.array([0, 1, n - 2, n - 1], dtype=np.int64)
    ranks = plan_ranks(rows, n, np.random.SeedSequence(1))
    assert (ranks >= 0).all() and (ranks < n).all() and np.unique(ranks).size == 4
    assert np.array_equal(plan_rows(ranks, n, np.random.SeedSequence(1)), rows)


@pytest.mark.parametrize("n, batch_size, covering", [
    (10, 4, [9]),  # the covering holds the last rank
    (10, 4, [8, 9]),
    (57, 20, None),  # nothing to cover (no categorical, no missing value)
    (7, 7, [6]),
    (100_003, 10_000, [0, 5, 17, 400, 100_002]),
])  # fmt: skip
def test_each_row_finds_its_batch_and_position_alone(n, batch_size, covering):
    sequence = np.random.SeedSequence(11)
    order = plan_order(n, sequence)
    ranks = np.array(covering or [], dtype=np.int64)
    pieces = split_plan(order, np.unique(order[ranks]), batch_size)
    plan = BatchPlan(n, batch_size, covering, sequence)
    rows = np.arange(n)
    for part in np.array_split(rows, 3):  # partitions, each alone
        batch, slot = plan.locate(part, plan_ranks(part, n, sequence))
        for b, piece in enumerate(pieces):
            mine = np.isin(piece, part)
            assert np.array_equal(batch[np.isin(part, piece)], np.full(mine.sum(), b))
            positions = dict(zip(piece.tolist(), range(piece.size), strict=True))
            assert [positions[r] for r in part[batch == b]] == slot[batch == b].tolist()

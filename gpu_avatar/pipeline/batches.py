"""Batches for large tables (avatar-method.md section 5).

A covering first batch holds, for every categorical column and every missing-value indicator,
one row of each modality (the first such row in a seeded random order); the remaining rows,
shuffled with the seed, fill it and the other batches so that all batches have the same size
(+/- 1). The projection is fitted once on the first batch; every batch is then avatarized
independently in that space (its own neighbour search), with its own child seed.
"""

from __future__ import annotations

import numpy as np

from ..errors import AvatarError

_PLAN_STREAM = 5  # SeedSequence stream for the batch plan
_BATCH_STREAM = 6  # SeedSequence stream for the per-batch child seeds


def _child(sequence: np.random.SeedSequence, stream: int, index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(sequence.entropy, spawn_key=(*sequence.spawn_key, stream, index))


def batch_seed(sequence: np.random.SeedSequence, batch: int) -> np.random.SeedSequence:
    """The seed of batch ``batch`` of a batched run."""
    return _child(sequence, _BATCH_STREAM, batch)


def check_batch_size(batch_size: int, k: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise AvatarError(f"batch_size must be an integer or None, got {batch_size!r}")
    if batch_size < 2 * k:
        raise AvatarError(
            f"batch_size = {batch_size} is smaller than 2k = {2 * k}: every batch needs at least "
            "2k rows for its own neighbour search; raise batch_size or lower k"
        )


def covering_rows(codes: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows (in ``order``'s sense: first seen) that together show every code of every column."""
    chosen = []
    for j in range(codes.shape[1]):
        _, first = np.unique(codes[order, j], return_index=True)
        chosen.append(order[first])
    if not chosen:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(chosen))


def plan_order(n: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """The seeded order of a batched run over ``n`` rows: covering rows are the first of each
    modality in this order, and the other rows fill the batches in this order."""
    return np.random.default_rng(_child(sequence, _PLAN_STREAM, 0)).permutation(n)


def split_plan(order: np.ndarray, covering: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Row positions of each batch: the ``covering`` rows (sorted) then the rest of ``order``
    fill batch 0, the rest of ``order`` the other batches, all of the same size (+/- 1)."""
    n = order.size
    n_batches = -(-n // batch_size)
    if covering.size > batch_size // 2:
        raise AvatarError(
            f"showing every modality takes {covering.size} rows, more than half a batch "
            f"({batch_size // 2}); raise batch_size or merge rare modalities"
        )
    rest = order[~np.isin(order, covering)]
    sizes = np.full(n_batches, n // n_batches) + (np.arange(n_batches) < n % n_batches)
    cuts = np.cumsum(sizes) - covering.size
    pieces = np.split(rest, cuts[:-1])
    pieces[0] = np.concatenate([covering, pieces[0]])
    return pieces


def plan_batches(
    codes: np.ndarray, batch_size: int, sequence: np.random.SeedSequence
) -> list[np.ndarray]:
    """Row positions of each batch; batch 0 covers every modality of ``codes`` (n, p)."""
    order = plan_order(codes.shape[0], sequence)
    return split_plan(order, covering_rows(codes, order), batch_size)

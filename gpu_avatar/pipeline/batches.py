"""Batches for large tables (docs/spec/method.md, section 5).

A covering first batch holds, for every categorical column and every missing-value indicator,
one row of each code (the first such row in a seeded random order; a missing categorical cell
has the code the encoder fills it with); the remaining rows, shuffled with the seed, fill it
and the other batches so that all batches have the same size (+/- 1). The projection is fitted
once on the first batch; every batch is then avatarized independently in that space (its own
neighbour search), with its own child seed.

The covering is found from the rows' values chunk by chunk (``CoveringScan``): the same code
serves a table in memory (one chunk) and a streamed one.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..encoding import CATEGORICAL, TableEncoder
from ..errors import AvatarError
from ..streams import BATCH_PLAN, BATCHES, child


def batch_seed(sequence: np.random.SeedSequence, batch: int) -> np.random.SeedSequence:
    """The seed of batch ``batch`` of a batched run."""
    return child(sequence, BATCHES, batch)


_NO_RANK = np.iinfo(np.int64).max


class CoveringScan:
    """The plan ranks of the covering rows, from chunks of rows and their ranks (positions in
    the seeded order): per column, the first rank of a missing cell and of a present one, and
    per categorical column the first rank of each value; ``ranks(encoder)`` turns values into
    the encoder's codes. (Only categorical values are followed: a continuous column's values
    are all distinct, and following them cost minutes and gigabytes at 10^7 rows.)"""

    def __init__(self, columns: Iterable, categorical: Iterable) -> None:
        self.missing_first = dict.fromkeys(columns, _NO_RANK)
        self.present_first = dict.fromkeys(self.missing_first, _NO_RANK)
        self.first: dict = {c: {} for c in categorical}  # column -> value -> lowest rank

    def add(self, chunk: pd.DataFrame, ranks: np.ndarray) -> CoveringScan:
        for name in self.missing_first:
            series = chunk[name]
            missing = series.isna().to_numpy()
            if missing.any():
                self.missing_first[name] = min(self.missing_first[name], int(ranks[missing].min()))
            if missing.all():
                continue
            self.present_first[name] = min(self.present_first[name], int(ranks[~missing].min()))
            if name in self.first:
                firsts = pd.Series(ranks[~missing]).groupby(series[~missing].to_numpy()).min()
                known = self.first[name]
                for value, rank in firsts.items():
                    known[value] = min(known.get(value, _NO_RANK), int(rank))
        return self

    def merge(self, other: CoveringScan) -> CoveringScan:
        """Add what ``other`` found (another part of the same table) to this scan."""
        for name in self.missing_first:
            self.missing_first[name] = min(self.missing_first[name], other.missing_first[name])
            self.present_first[name] = min(self.present_first[name], other.present_first[name])
        for name, firsts in other.first.items():
            known = self.first[name]
            for value, rank in firsts.items():
                known[value] = min(known.get(value, _NO_RANK), rank)
        return self

    def ranks(self, encoder: TableEncoder) -> np.ndarray:
        """The ranks of the rows showing every code of every categorical column and every
        missing indicator of ``encoder`` (which learnt these columns)."""
        chosen = []
        for name in encoder.categorical_columns_:
            spec = encoder.specs_[name]
            values = list(self.first[name])
            codes = encoder.categorical_codes(spec, pd.Series(values, dtype=spec.dtype))
            by_code = pd.Series([self.first[name][v] for v in values]).groupby(codes).min()
            firsts = by_code.to_dict()
            if self.missing_first[name] != _NO_RANK:  # missing cells take the fill code
                fill = spec.fill_value
                firsts[fill] = min(firsts.get(fill, _NO_RANK), self.missing_first[name])
            chosen.extend(firsts.values())
        for name in encoder.indicator_columns_:
            chosen.extend([self.missing_first[name], self.present_first[name]])
        return np.unique(np.array(chosen, dtype=np.int64))


def covered_columns(encoder: TableEncoder) -> list:
    """The columns a covering looks at: categorical ones and those with an indicator."""
    kinds = encoder.specs_
    return [c for c in encoder.columns_ if kinds[c].kind == CATEGORICAL or kinds[c].has_missing]


_FEISTEL_ROUNDS = 6
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each value."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


def _walk(values: np.ndarray, n: int, sequence: np.random.SeedSequence,
          inverse: bool) -> np.ndarray:
    """The seeded bijection of ``[0, n)`` (or its inverse) on ``values``: a Feistel network on
    the smallest power of four above ``n``, applied again while it lands outside (cycle
    walking: a few rounds at most, the domain is under 4n)."""
    keys = np.random.default_rng(child(sequence, BATCH_PLAN, 0)).integers(
        0, 2**63, size=_FEISTEL_ROUNDS, dtype=np.uint64)
    half = max(1, -(-max(n - 1, 1).bit_length() // 2))
    shift, mask = np.uint64(half), np.uint64((1 << half) - 1)

    def network(x: np.ndarray) -> np.ndarray:
        left, right = x >> shift, x & mask
        if inverse:
            for key in keys[::-1]:
                left, right = right ^ (_mix(left ^ key) & mask), left
        else:
            for key in keys:
                left, right = right, left ^ (_mix(right ^ key) & mask)
        return (left << shift) | right

    out = network(np.asarray(values, dtype=np.uint64))
    outside = np.flatnonzero(out >= np.uint64(n))
    while outside.size:
        out[outside] = network(out[outside])
        outside = outside[out[outside] >= np.uint64(n)]
    return out.astype(np.int64)


def plan_ranks(rows: np.ndarray, n: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """The position of each of ``rows`` (row ids in ``[0, n)``) in the seeded order of a
    batched run, computed row by row: any chunk or partition of a table finds its own rows'
    positions without the whole order."""
    return _walk(rows, n, sequence, inverse=False)


def plan_rows(ranks: np.ndarray, n: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """The row ids at positions ``ranks`` of the seeded order (``plan_ranks`` undone)."""
    return _walk(ranks, n, sequence, inverse=True)


def plan_order(n: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """The seeded order of a batched run over ``n`` rows (row ids by position): covering rows
    are the first of each modality in this order, and the other rows fill the batches in it."""
    order = np.empty(n, dtype=np.int64)
    order[plan_ranks(np.arange(n), n, sequence)] = np.arange(n)
    return order


def batch_sizes(n: int, batch_size: int) -> np.ndarray:
    """Rows of each batch: as few batches as ``batch_size`` allows, of equal sizes (+/- 1)."""
    n_batches = -(-n // batch_size)
    return np.full(n_batches, n // n_batches) + (np.arange(n_batches) < n % n_batches)


def check_covering(covering_rows: int, batch_size: int) -> None:
    if covering_rows > batch_size // 2:
        raise AvatarError(
            f"showing every modality takes {covering_rows} rows, more than half a batch "
            f"({batch_size // 2}); raise batch_size or merge rare modalities"
        )


def split_plan(order: np.ndarray, covering: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Row positions of each batch: the ``covering`` rows (sorted by position) then the rest of
    ``order`` fill batch 0, the rest of ``order`` the other batches, all of the same size
    (+/- 1)."""
    check_covering(covering.size, batch_size)
    rest = order[~np.isin(order, covering)]
    cuts = np.cumsum(batch_sizes(order.size, batch_size)) - covering.size
    pieces = np.split(rest, cuts[:-1])
    pieces[0] = np.concatenate([covering, pieces[0]])
    return pieces


class BatchPlan:
    """``split_plan`` row by row: the batch and the position in it of any row, from its id and
    its rank, knowing only the covering rows (a few per modality) and the batch sizes."""

    def __init__(self, n: int, batch_size: int, covering_ranks: np.ndarray | None,
                 sequence: np.random.SeedSequence) -> None:
        self.covering_ranks = np.unique(np.asarray(
            [] if covering_ranks is None else covering_ranks, dtype=np.int64))
        check_covering(self.covering_ranks.size, batch_size)
        self.sizes = batch_sizes(n, batch_size)
        self.covering_rows = np.sort(plan_rows(self.covering_ranks, n, sequence))
        self.cuts = np.cumsum(self.sizes) - self.covering_ranks.size

    def locate(self, rows: np.ndarray, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(batch, position in the batch) of each row of ids ``rows`` and plan ``ranks``."""
        slot = np.searchsorted(self.covering_rows, rows)  # right for the covered rows
        covered = np.zeros(rows.size, dtype=bool)  # one search tells both
        inside = slot < self.covering_rows.size
        covered[inside] = self.covering_rows[slot[inside]] == rows[inside]
        batch = np.zeros(rows.size, dtype=np.int64)
        rest = ranks[~covered] - np.searchsorted(self.covering_ranks, ranks[~covered])
        batch[~covered] = np.searchsorted(self.cuts, rest, side="right")
        starts = np.concatenate([[0], self.cuts[:-1]])
        slot[~covered] = (rest - starts[batch[~covered]]
                          + np.where(batch[~covered] == 0, self.covering_ranks.size, 0))
        return batch, slot


def plan_batches(
    frame: pd.DataFrame, encoder: TableEncoder, batch_size: int, sequence: np.random.SeedSequence
) -> list[np.ndarray]:
    """Row positions of each batch of ``frame``; batch 0 covers every code of ``encoder``
    (which learnt ``frame``)."""
    n = len(frame)
    order = plan_order(n, sequence)
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n)
    covering = CoveringScan(covered_columns(encoder), encoder.categorical_columns_)
    covering = covering.add(frame, ranks).ranks(encoder)
    return split_plan(order, np.unique(order[covering]), batch_size)

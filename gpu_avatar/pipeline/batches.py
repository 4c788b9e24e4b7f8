"""Batches for large tables (avatar-method.md section 5).

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

_PLAN_STREAM = 5  # SeedSequence stream for the batch plan
_BATCH_STREAM = 6  # SeedSequence stream for the per-batch child seeds


def _child(sequence: np.random.SeedSequence, stream: int, index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(sequence.entropy, spawn_key=(*sequence.spawn_key, stream, index))


def batch_seed(sequence: np.random.SeedSequence, batch: int) -> np.random.SeedSequence:
    """The seed of batch ``batch`` of a batched run."""
    return _child(sequence, _BATCH_STREAM, batch)


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


def plan_order(n: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """The seeded order of a batched run over ``n`` rows: covering rows are the first of each
    modality in this order, and the other rows fill the batches in this order."""
    return np.random.default_rng(_child(sequence, _PLAN_STREAM, 0)).permutation(n)


def split_plan(order: np.ndarray, covering: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Row positions of each batch: the ``covering`` rows (sorted by position) then the rest of
    ``order`` fill batch 0, the rest of ``order`` the other batches, all of the same size
    (+/- 1)."""
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

"""The plan of a streamed run: which batch every row goes to, and its position in the batch:
the batches of ``batches.plan_batches`` on the same table in memory, found by scanning."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..encoding.rare import RareModalities
from ..errors import AvatarError
from ..parameters import AvatarParameters, avatar_parameters, seed_sequence
from ..pipeline.batches import plan_order, split_plan
from .scan import SourceScan, scan_source
from .source import ParquetSource, open_source


@dataclass
class StreamPlan:
    """How the rows go to batches: per row, its batch and its position inside it."""

    n_rows: int
    sizes: list[int]
    batch_of: np.ndarray | None = None  # None: a single batch, rows in input order
    slot: np.ndarray | None = None

    @property
    def n_batches(self) -> int:
        return len(self.sizes)

    @property
    def offsets(self) -> list[int]:
        return [0, *np.cumsum(self.sizes)[:-1].tolist()]


def make_plan(
    source: ParquetSource,
    batch_size: int,
    sequence: np.random.SeedSequence,
    types: Mapping[Any, str],
    imputation: str,
    keep_batches: bool = False,
    rare: RareModalities | None = None,
) -> tuple[StreamPlan, SourceScan, list[np.ndarray] | None]:
    """The plan (the in-memory plan's batches, modalities grouped by ``rare``), the scan, and
    the batches' row positions when ``keep_batches``."""
    n = source.n_rows
    if n <= batch_size:
        return StreamPlan(n, [n]), scan_source(source, types, imputation, sequence), None
    order = plan_order(n, sequence)
    rank_type = np.int32 if n < 2**31 else np.int64
    ranks = np.empty(n, dtype=rank_type)  # global row id -> position in the seeded order
    ranks[order] = np.arange(n, dtype=rank_type)
    scan = scan_source(source, types, imputation, sequence, ranks, rare)
    del ranks
    covering = np.unique(order[scan.covering])
    pieces = split_plan(order, covering, batch_size)
    del order
    index_type = np.int32 if max(len(pieces), batch_size) < 2**31 else np.int64
    batch_of = np.empty(n, dtype=index_type)
    slot = np.empty(n, dtype=index_type)
    for b, rows in enumerate(pieces):
        batch_of[rows] = b
        slot[rows] = np.arange(rows.size, dtype=index_type)
    plan = StreamPlan(n, [int(p.size) for p in pieces], batch_of, slot)
    return plan, scan, pieces if keep_batches else None


def plan_parquet(
    source: str | os.PathLike,
    *,
    parameters: AvatarParameters | None = None,
    **settings: Any,
) -> list[np.ndarray]:
    """The batches ``avatarize_parquet`` forms (global row positions, in plan order): the
    same as ``batches.plan_batches`` on the whole table in memory. ``batch_size`` is needed."""
    parameters = avatar_parameters(parameters, **settings)
    if parameters.batch_size is None:
        raise AvatarError("batch_size is required: the number of rows avatarized at once")
    source_ = open_source(source)
    plan, _, pieces = make_plan(source_, parameters.batch_size, seed_sequence(parameters.seed),
                                parameters.types, parameters.imputation, True,
                                RareModalities.of(parameters))  # fmt: skip
    return pieces if pieces is not None else [np.arange(plan.n_rows)]

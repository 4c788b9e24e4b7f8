"""The plan of a streamed run: which batch every row goes to, and its position in the batch:
the batches of ``batches.plan_batches`` on the same table in memory, found by scanning. The
plan is small (``batches.BatchPlan``: the covering rows and the batch sizes); every partition
locates its own rows with it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..encoding.rare import RareModalities
from ..errors import AvatarError
from ..parameters import AvatarParameters, avatar_parameters, seed_sequence
from ..pipeline.batches import BatchPlan, plan_order, split_plan
from .scan import Mapper, SourceScan, map_locally, scan_source
from .source import ParquetSource, open_source


@dataclass
class StreamPlan:
    """How the rows go to batches: ``batches`` locates every row (None: a single batch, rows
    in input order) and ``sequence`` gives their plan ranks."""

    n_rows: int
    sizes: list[int]
    sequence: np.random.SeedSequence
    batches: BatchPlan | None = None

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
    rare: RareModalities | None = None,
    mapper: Mapper = map_locally,
) -> tuple[StreamPlan, SourceScan]:
    """The plan (the in-memory plan's batches, modalities grouped by ``rare``) and the scan,
    its partitions' tasks run by ``mapper``."""
    n = source.n_rows
    if n <= batch_size:
        scan = scan_source(source, types, imputation, sequence, mapper=mapper)
        return StreamPlan(n, [n], sequence), scan
    scan = scan_source(source, types, imputation, sequence, True, rare, mapper)
    batches = BatchPlan(n, batch_size, scan.covering, sequence)
    return StreamPlan(n, batches.sizes.tolist(), sequence, batches), scan


def plan_parquet(
    source: str | os.PathLike,
    *,
    parameters: AvatarParameters | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **settings: Any,
) -> list[np.ndarray]:
    """The batches ``avatarize_parquet`` forms (global row positions, in plan order): the
    same as ``batches.plan_batches`` on the whole table in memory. ``batch_size`` is needed."""
    parameters = avatar_parameters(parameters, **settings)
    if parameters.batch_size is None:
        raise AvatarError("batch_size is required: the number of rows avatarized at once")
    source_ = open_source(source, storage_options)
    sequence = seed_sequence(parameters.seed)
    plan, _ = make_plan(source_, parameters.batch_size, sequence, parameters.types,
                        parameters.imputation, RareModalities.of(parameters))
    if plan.batches is None:
        return [np.arange(plan.n_rows)]
    order = plan_order(plan.n_rows, sequence)
    return split_plan(order, plan.batches.covering_rows, parameters.batch_size)

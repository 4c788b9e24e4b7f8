"""The scan of a streamed source: what the whole dataset shows, learnt partition by partition
(each one a task: ``Mapper``) with the rules a table in memory follows, and merged in row order.

1. ``dataset_dtypes``: the pandas dtypes of the dataset (``source.frame_dtypes``), from the
   dictionaries of the dictionary columns and whether each integer or boolean column holds a
   missing value (the Parquet statistics say so where they can, else the column is read);
2. ``scan_source``: the encoder learns the columns it must know over the whole dataset
   (kinds, modalities and modes, missing values, identifiers; the groups of rare modalities,
   which a batched run's first batch cannot learn alone): the first partition decides the
   kinds and readings, every other one learns from a ``blank`` of it, and the parts merge as
   if read in order. For a batched run, every partition also records the first plan rank of
   every value (``batches.CoveringScan``, ranks from ``batches.plan_ranks``): the covering
   rows are then the in-memory plan's.

Only what is needed is read: the identifier columns always, and for a batched run the
categorical columns and every column that may hold a missing value (floating columns always:
a NaN is missing for pandas and no null for Parquet). The driver holds these summaries, never
the rows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CATEGORICAL, IDENTIFIER, TableEncoder, detect_kind
from ..encoding.identifying import IdentifyingColumn, refuse_undeclared
from ..encoding.rare import RareModalities
from ..errors import AvatarError, among
from ..parameters import column_kind
from ..pipeline.apart import ColumnsApart
from ..pipeline.batches import CoveringScan, plan_ranks
from .source import (
    CHUNK_ROWS,
    ParquetSource,
    Partition,
    _pyarrow,
    frame_dtypes,
    to_frame,
)

Mapper = Callable[..., list]  # mapper(function, items, *arguments): [function(item, *arguments)]


def map_locally(function: Callable, items: list, *arguments: Any) -> list:
    """The single-process mapper: one item after the other."""
    return [function(item, *arguments) for item in items]


@dataclass
class SourceScan:
    """What the scan learns: the dataset's dtypes, what the identifier columns need (taken
    values, pseudonyms: ``pipeline/apart.py``), for a batched run the plan ranks of the
    covering rows and the groups of rare modalities (``encoding/rare.py``), and the columns
    released knowingly (``encoding.identifying``, on the first chunk)."""

    dtypes: dict[str, Any]
    apart: ColumnsApart
    covering: np.ndarray | None = None
    groups: dict[Any, dict] | None = None
    knowingly_released: list[IdentifyingColumn] = field(default_factory=list)


def check_head(source: ParquetSource, dtypes: Mapping[str, Any],
               types: Mapping[Any, str]) -> list[IdentifyingColumn]:
    """The identifying rule on the first ``CHUNK_ROWS`` rows of the dataset (over as many
    files as they take): the columns released knowingly, or the error naming the others."""
    parts, rows = [], 0
    for _, table in source.all_chunks():
        parts.append(to_frame(table, dtypes))
        rows += table.num_rows
        if rows >= CHUNK_ROWS:
            break
    head = (pd.concat(parts, ignore_index=True).iloc[:CHUNK_ROWS] if parts
            else to_frame(source.schema.empty_table(), dtypes))
    return refuse_undeclared(head, types)


def _dtype_facts(partition: Partition, source: ParquetSource, dictionary: list[str],
                 counted: list[str]) -> tuple[dict[str, int], dict[str, list]]:
    """One partition's null counts of ``counted`` and dictionary values of ``dictionary``."""
    null_counts = dict.fromkeys(counted, 0)
    dictionaries: dict[str, dict] = {c: {} for c in dictionary}
    for _, table in source.chunks(partition, [c for c in source.columns
                                              if c in {*dictionary, *counted}]):
        for name in dictionary:
            for chunk in table.column(name).chunks:
                for value in chunk.dictionary.to_pylist():
                    if value is not None:
                        dictionaries[name].setdefault(value, None)
        for name in counted:
            null_counts[name] += table.column(name).null_count
    return null_counts, {c: list(d) for c, d in dictionaries.items()}


def dataset_dtypes(source: ParquetSource, mapper: Mapper = map_locally) -> dict[str, Any]:
    """The pandas dtype of every column for the whole dataset."""
    pa, _, _ = _pyarrow()
    dictionary = [f.name for f in source.schema if pa.types.is_dictionary(f.type)]
    integral = {f.name for f in source.schema
                if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)}  # fmt: skip
    counted = sorted(integral & source.nullable)
    null_counts = dict.fromkeys(source.columns, 0)
    dictionaries: dict[str, dict] = {c: {} for c in dictionary}
    if dictionary or counted:
        for nulls, values in mapper(_dtype_facts, source.partitions(), source, dictionary,
                                    counted):
            for name, count in nulls.items():
                null_counts[name] += count
            for name, seen in values.items():
                dictionaries[name].update(dict.fromkeys(seen))
    return frame_dtypes(source.schema, null_counts, {c: list(d) for c, d in dictionaries.items()})


@dataclass
class ScanSettings:
    """What every partition's summary needs (small: shipped with each task)."""

    types: Mapping[Any, str]
    dtypes: dict[str, Any]
    read: list[str]
    categorical: list[str]
    sequence: np.random.SeedSequence
    n_rows: int
    batched: bool
    imputation: str
    rare: RareModalities | None
    apart: ColumnsApart  # the driver's, empty: a worker needs no pseudonym key to fill a copy


@dataclass
class PartitionSummary:
    """What one partition showed: the encoder's learning, the identifiers', the covering's."""

    encoder: TableEncoder
    apart: ColumnsApart
    covering: CoveringScan | None

    def merge(self, other: PartitionSummary) -> PartitionSummary:
        self.encoder.merge(other.encoder)
        self.apart.merge(other.apart)
        if self.covering is not None:
            self.covering.merge(other.covering)
        return self


def summarize_partition(partition: Partition, source: ParquetSource, settings: ScanSettings,
                        encoder: TableEncoder | None) -> PartitionSummary:
    """A partition's summary, learnt from ``encoder`` (a ``blank`` of the first partition's;
    None for the first partition itself)."""
    if encoder is None:
        encoder = TableEncoder({c: k for c, k in settings.types.items() if c in settings.read},
                               settings.imputation, rare=settings.rare)
    apart = copy.deepcopy(settings.apart)
    covering = CoveringScan(settings.read, settings.categorical) if settings.batched else None
    for start, table in source.chunks(partition, settings.read):
        if not table.num_rows:
            continue
        frame = to_frame(table, settings.dtypes)
        encoder.partial_fit(frame)
        apart.add(frame)
        if covering is not None:
            rows = np.arange(start, start + table.num_rows)
            covering.add(frame, plan_ranks(rows, settings.n_rows, settings.sequence))
    return PartitionSummary(encoder, apart, covering)


def scan_source(
    source: ParquetSource,
    types: Mapping[Any, str],
    imputation: str,
    sequence: np.random.SeedSequence,
    batched: bool = False,
    rare: RareModalities | None = None,
    mapper: Mapper = map_locally,
) -> SourceScan:
    """The scan (see the module docstring). A ``batched`` run's covering needs the first rank
    of every value, and its modalities grouped by ``rare``. ``mapper`` runs the partitions'
    tasks (locally, or as Dask tasks)."""
    dtypes = dataset_dtypes(source, mapper)
    unknown = [c for c in types if c not in source.columns]
    if unknown:
        raise AvatarError(f"types names unknown column(s) {unknown}; available: "
                          f"{among(source.columns, unknown)}")
    knowingly_released = mapper(check_head, [source], dtypes, types)[0]  # before any work
    empty = to_frame(source.schema.empty_table(), dtypes)
    kinds = {c: column_kind(types.get(c)) or detect_kind(empty[c]) for c in source.columns}
    wanted = {c for c in source.columns if kinds[c] == IDENTIFIER}
    if batched:
        pa, _, _ = _pyarrow()
        floating = {f.name for f in source.schema if pa.types.is_floating(f.type)}
        wanted |= {c for c in source.columns if kinds[c] == CATEGORICAL}
        wanted |= floating | source.nullable
    read = [c for c in source.columns if c in wanted]
    apart = ColumnsApart(types, list(source.columns), sequence, rows=source.n_rows)
    scan = SourceScan(dtypes, apart, knowingly_released=knowingly_released)
    partitions = [p for p in source.partitions() if p.rows]
    if not read or not partitions:
        return scan
    settings = ScanSettings(types, dtypes, read, [c for c in read if kinds[c] == CATEGORICAL],
                            sequence, source.n_rows, batched, imputation,
                            rare if batched else None, apart)
    summary = mapper(summarize_partition, partitions[:1], source, settings, None)[0]
    for other in mapper(summarize_partition, partitions[1:], source, settings,
                        summary.encoder.blank()):
        summary.merge(other)
    encoder = summary.encoder
    empty_columns = encoder.empty_columns()
    if empty_columns:
        raise AvatarError(
            f"column(s) {empty_columns} have no non-missing value; drop them before avatarizing"
        )
    scan.apart = summary.apart.draw()
    if summary.covering is not None:
        scan.covering = summary.covering.ranks(encoder)
        scan.groups = encoder.groups_
    return scan

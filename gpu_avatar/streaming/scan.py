"""The scan of a streamed source: what the whole dataset shows, learnt chunk by chunk with the
rules a table in memory follows.

1. ``dataset_dtypes``: the pandas dtypes of the dataset (``source.frame_dtypes``), from the
   dictionaries of the dictionary columns and whether each integer or boolean column holds a
   missing value (the Parquet statistics say so where they can, else the column is read);
2. ``scan_source``: the encoder learns the columns it must know over the whole dataset
   (``TableEncoder.partial_fit``: kinds, modalities and modes, missing values, identifiers;
   the groups of rare modalities, which a batched run's first batch cannot learn alone)
   and, for a batched run, the covering scan records the first plan rank of every value
   (``batches.CoveringScan``): the covering rows are then the in-memory plan's.

Only what is needed is read: the identifier columns always, and for a batched run the
categorical columns and every column that may hold a missing value (floating columns always:
a NaN is missing for pandas and no null for Parquet).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CATEGORICAL, IDENTIFIER, TableEncoder, detect_kind
from ..encoding.identifying import IdentifyingColumn, refuse_undeclared
from ..encoding.rare import RareModalities
from ..errors import AvatarError
from ..parameters import column_kind
from ..pipeline.apart import ColumnsApart
from ..pipeline.batches import CoveringScan
from .source import CHUNK_ROWS, ParquetSource, _pyarrow, frame_dtypes, to_frame


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


def _head(source: ParquetSource, dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """The first ``CHUNK_ROWS`` rows of the dataset (over as many files as they take): what
    the identifying rule reads of a streamed table."""
    parts, rows = [], 0
    for _, table in source.chunks():
        parts.append(to_frame(table, dtypes))
        rows += table.num_rows
        if rows >= CHUNK_ROWS:
            break
    if not parts:
        return to_frame(source.schema.empty_table(), dtypes)
    return pd.concat(parts, ignore_index=True).iloc[:CHUNK_ROWS]


def _may_hold_nulls(source: ParquetSource) -> set[str]:
    """Columns whose Parquet statistics do not prove the absence of null values."""
    _, pq, _ = _pyarrow()
    unknown = set()
    for name in source.files:
        with pq.ParquetFile(name) as handle:
            metadata = handle.metadata
            for g in range(metadata.num_row_groups):
                group = metadata.row_group(g)
                for j in range(group.num_columns):
                    chunk = group.column(j)
                    stats = chunk.statistics
                    if stats is None or not stats.has_null_count or stats.null_count > 0:
                        unknown.add(chunk.path_in_schema.split(".")[0])
    return unknown & set(source.columns)


def dataset_dtypes(source: ParquetSource) -> dict[str, Any]:
    """The pandas dtype of every column for the whole dataset."""
    pa, _, _ = _pyarrow()
    dictionary = [f.name for f in source.schema if pa.types.is_dictionary(f.type)]
    integral = {f.name for f in source.schema
                if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)}  # fmt: skip
    counted = sorted(integral & _may_hold_nulls(source))
    null_counts = dict.fromkeys(source.columns, 0)
    dictionaries: dict[str, dict] = {c: {} for c in dictionary}
    read = [c for c in source.columns if c in set(dictionary) | set(counted)]
    for _, table in source.chunks(read) if read else ():
        for name in dictionary:
            for chunk in table.column(name).chunks:
                for value in chunk.dictionary.to_pylist():
                    if value is not None:
                        dictionaries[name].setdefault(value, None)
        for name in counted:
            null_counts[name] += table.column(name).null_count
    return frame_dtypes(source.schema, null_counts, {c: list(d) for c, d in dictionaries.items()})


def scan_source(
    source: ParquetSource,
    types: Mapping[Any, str],
    imputation: str,
    sequence: np.random.SeedSequence,
    ranks: np.ndarray | None = None,
    rare: RareModalities | None = None,
) -> SourceScan:
    """The scan (see the module docstring). ``ranks`` (global row id -> position in the
    seeded order) is given for a batched run, whose covering needs the first rank of every
    value, and its modalities grouped by ``rare``."""
    dtypes = dataset_dtypes(source)
    unknown = [c for c in types if c not in source.columns]
    if unknown:
        raise AvatarError(f"types names unknown column(s) {unknown}; available: {source.columns}")
    knowingly_released = refuse_undeclared(_head(source, dtypes), types)  # before any work
    empty = to_frame(source.schema.empty_table(), dtypes)
    kinds = {c: column_kind(types.get(c)) or detect_kind(empty[c]) for c in source.columns}
    wanted = {c for c in source.columns if kinds[c] == IDENTIFIER}
    if ranks is not None:
        pa, _, _ = _pyarrow()
        floating = {f.name for f in source.schema if pa.types.is_floating(f.type)}
        wanted |= {c for c in source.columns if kinds[c] == CATEGORICAL}
        wanted |= floating | _may_hold_nulls(source)
    read = [c for c in source.columns if c in wanted]
    apart = ColumnsApart(types, list(source.columns), sequence)
    scan = SourceScan(dtypes, apart, knowingly_released=knowingly_released)
    if not read:
        return scan
    encoder = TableEncoder({c: k for c, k in types.items() if c in read}, imputation,
                           rare=rare if ranks is not None else None)
    categorical = [c for c in read if kinds[c] == CATEGORICAL]
    covering = CoveringScan(read, categorical) if ranks is not None else None
    for start, table in source.chunks(read):
        if not table.num_rows:
            continue
        frame = to_frame(table, dtypes)
        encoder.partial_fit(frame)
        apart.add(frame)
        if covering is not None:
            covering.add(frame, ranks[start : start + table.num_rows])
    empty_columns = encoder.empty_columns()
    if empty_columns:
        raise AvatarError(
            f"column(s) {empty_columns} have no non-missing value; drop them before avatarizing"
        )
    apart.draw()
    if covering is not None:
        scan.covering = covering.ranks(encoder)
        scan.groups = encoder.groups_
    return scan

"""Streaming avatarization of a Parquet dataset, batch by batch (avatar-method.md section 5).

``avatarize_parquet(source, destination, k, batch_size)`` reads a Parquet file or a directory of
Parquet files with pyarrow and writes the avatars as Parquet parts, holding about one batch in
memory at a time. The batches are exactly those of the in-memory ``avatarize(df,
batch_size=...)`` for the same seed (same rows, same order inside each batch, same per-batch
seeds), so both give the same avatar rows:

1. **scan** (pass 1): the row count ``n`` comes from the Parquet footers; the seeded order is
   ``batches.plan_order``. Only what the covering needs is read: the categorical columns, the
   missingness of every column that may hold a missing value (floating columns always; others
   unless their Parquet statistics say "no null"), the dictionaries of dictionary columns and
   the identifier columns. The covering rows are, for every categorical column and every
   missing-value indicator, the first row in the seeded order holding each modality (a missing
   categorical cell counts as the column's mode, as the encoder fills it): the rule of
   ``batches.covering_rows``.
2. **route** (pass 2): every row is appended to the spill file of its batch (under
   ``<destination>/_spill``) with its position inside the batch (the plan order). A run that
   fits in one batch skips this and reads the source directly, rows in input order.
3. **fit**: the encoder and the projection are fitted on batch 0 (``avatarize.fit_model``).
4. **batches**: ``process_batch`` loads one batch, avatarizes it in the shared space with
   ``avatarize_rows`` and the batch's own seed, computes its privacy metrics (``metrics=True``),
   releases its rows in ``shuffle_order(len(batch), seed)`` and writes ``part-<b>.parquet``.
   ``gpu_avatar.distributed`` runs the same ``process_batch`` as Dask tasks.

Output: ``part-00000.parquet``, ... (schema = the input's; a column read as pandas ``Int64``
because it holds missing integers is written back as the input's integer type), and
``_manifest.json`` (parameters, seed entropy, rows per part, the batches done and their privacy
metrics, mean and worst). ``_INCOMPLETE`` is present while a run is unfinished (also after a
failure); ``_SUCCESS`` replaces it at the end. ``resume=True`` continues an unfinished run,
skipping the batches the manifest records as done.

Pandas dtypes are decided once for the whole dataset (every chunk is converted to them): the
dtypes ``pyarrow`` gives (using the pandas metadata stored in the files), except dictionary
columns (one ``category`` dtype whose categories are the dictionaries of every chunk in order of
first appearance, as ``pandas.read_parquet`` unifies them), integer columns holding a missing
value (nullable ``Int64``-like dtype rather than ``float64``, so they stay integers) and boolean
columns holding a missing value (``object``, as ``pandas.read_parquet`` gives). Index columns
stored by pandas are not data: they are left out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..backend.choice import Backend, resolve_backend
from ..encoding.encoder import CATEGORICAL, IDENTIFIER, TableEncoder, _detect_kind
from ..errors import AvatarError, import_extra
from ..metrics.privacy import privacy_metrics
from ..pipeline.avatarize import (
    AvatarModel,
    _check_int,
    avatarize_rows,
    check_device_memory,
    fit_model,
    seed_sequence,
)
from ..pipeline.batches import batch_seed, check_batch_size, plan_order, split_plan
from ..progress import ProgressLike, Steps
from ..synthesis import CATEGORICAL_RULES, shuffle_order

if TYPE_CHECKING:
    import pyarrow as pa

MANIFEST = "_manifest.json"
INCOMPLETE = "_INCOMPLETE"
SUCCESS = "_SUCCESS"
SPILL = "_spill"
SLOT = "__gpu_avatar_slot__"  # position of a row inside its batch, in the spill files
MANIFEST_FORMAT = "gpu_avatar.avatarize_parquet/1"
CHUNK_ROWS = 1 << 18  # rows per read in the scan and the routing
MAX_OPEN_SPILLS = 256  # spill writers open at once; more batches: several routing passes
_NO_RANK = np.iinfo(np.int64).max
_ID_PREFIX = re.compile(r"((?:avatar)+)_")


def _pyarrow():
    pa = import_extra("pyarrow", "parquet", "Reading and writing Parquet")
    pq = import_extra("pyarrow.parquet", "parquet", "Reading and writing Parquet")
    ds = import_extra("pyarrow.dataset", "parquet", "Reading and writing Parquet")
    return pa, pq, ds


def part_name(batch: int) -> str:
    return f"part-{batch:05d}.parquet"


def spill_name(batch: int) -> str:
    return f"batch-{batch:05d}.parquet"


# ---------------------------------------------------------------------------- source
@dataclass
class ParquetSource:
    """A Parquet file or directory, checked: files, common schema, rows."""

    path: Path
    files: list[str]
    schema: pa.Schema  # data columns only, with the (cleaned) pandas metadata
    rows_per_file: list[int]

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows_per_file))

    def fingerprint(self) -> list[list[Any]]:
        """File names, sizes and modification times: a resumed run checks them."""
        out = []
        for name in self.files:
            stat = os.stat(name)
            out.append([os.path.relpath(name, self.path.parent), stat.st_size, stat.st_mtime_ns])
        return out

    def chunks(
        self, columns: Sequence[str] | None = None, chunk_rows: int = CHUNK_ROWS
    ) -> Iterator[tuple[int, pa.Table]]:
        """(global row id of the first row, table) over every file in order."""
        pa, pq, _ = _pyarrow()
        columns = self.columns if columns is None else list(columns)
        start = 0
        for name in self.files:
            try:
                with pq.ParquetFile(name) as handle:
                    for batch in handle.iter_batches(batch_size=chunk_rows, columns=columns):
                        table = pa.Table.from_batches([batch])
                        yield start, table.replace_schema_metadata(self.schema.metadata)
                        start += batch.num_rows
            except (OSError, pa.ArrowException) as error:
                raise AvatarError(f"cannot read Parquet file {name}: {error}") from error

    def read_all(self) -> pa.Table:
        """Every row (a run that fits in one batch)."""
        pa, _, _ = _pyarrow()
        tables = [table for _, table in self.chunks(chunk_rows=1 << 20)]
        if not tables:
            return self.schema.empty_table()
        return pa.concat_tables(tables)


def _schema_differences(reference: pa.Schema, other: pa.Schema) -> list[str]:
    ref = {f.name: f.type for f in reference}
    oth = {f.name: f.type for f in other}
    notes = []
    missing = [name for name in ref if name not in oth]
    extra = [name for name in oth if name not in ref]
    if missing:
        notes.append(f"lacks column(s) {missing}")
    if extra:
        notes.append(f"has extra column(s) {extra}")
    for name in ref:
        if name in oth and not ref[name].equals(oth[name]):
            notes.append(f"column {name!r} is {oth[name]} here but {ref[name]} in the first file")
    if not notes and reference.names != other.names:
        notes.append(f"columns are in another order ({other.names})")
    return notes


def _data_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` without the index columns pandas stored, and metadata to match."""
    pa, _, _ = _pyarrow()
    metadata = dict(schema.metadata or {})
    raw = metadata.get(b"pandas")
    if raw is None:
        return schema
    pandas_meta = json.loads(raw)
    index = [c for c in pandas_meta.get("index_columns", []) if isinstance(c, str)]
    pandas_meta["index_columns"] = []
    pandas_meta["columns"] = [
        c for c in pandas_meta.get("columns", []) if c.get("field_name") not in index
    ]
    metadata[b"pandas"] = json.dumps(pandas_meta).encode()
    fields = [f for f in schema if f.name not in index]
    return pa.schema(fields, metadata=metadata)


def open_source(source: str | os.PathLike) -> ParquetSource:
    """Check a Parquet file or directory: readable, at least one file, one schema."""
    pa, pq, ds = _pyarrow()
    path = Path(source)
    if not path.exists():
        raise AvatarError(f"the source {path} does not exist")
    if path.is_dir():
        try:
            files = list(ds.dataset(str(path), format="parquet").files)
        except (OSError, pa.ArrowException) as error:
            raise AvatarError(f"cannot read the Parquet directory {path}: {error}") from error
        if not files:
            raise AvatarError(f"the directory {path} holds no Parquet file")
    else:
        files = [str(path)]
    schemas, rows = [], []
    for name in files:
        try:
            with pq.ParquetFile(name) as handle:
                schemas.append(handle.schema_arrow)
                rows.append(handle.metadata.num_rows)
        except (OSError, pa.ArrowException) as error:
            raise AvatarError(f"cannot read {name} as Parquet: {error}") from error
    problems = []
    for name, schema in zip(files[1:], schemas[1:], strict=True):
        notes = _schema_differences(schemas[0], schema)
        if notes:
            problems.append(f"{name}: " + "; ".join(notes))
    if problems:
        raise AvatarError(
            f"the Parquet files of {path} do not share one schema (first file: {files[0]}): "
            + " | ".join(problems)
        )
    schema = _data_schema(schemas[0])
    if SLOT in schema.names:
        raise AvatarError(f"the column name {SLOT!r} is reserved; rename that column")
    if not schema.names:
        raise AvatarError(f"the Parquet data in {path} has no column")
    return ParquetSource(path=path, files=files, schema=schema, rows_per_file=rows)


# ---------------------------------------------------------------------- pandas types
def to_frame(table: pa.Table, dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """``table`` as pandas with the dataset's dtypes (the same for every chunk)."""
    frame = table.to_pandas()
    for name in frame.columns:
        dtype = dtypes.get(name)
        if dtype is not None and frame[name].dtype != dtype:
            frame[name] = frame[name].astype(dtype)
    return frame


def _nullable_integer(dtype: np.dtype) -> Any:
    return pd.api.types.pandas_dtype(f"{'U' if dtype.kind == 'u' else ''}Int{dtype.itemsize * 8}")


def frame_dtypes(
    schema: pa.Schema, null_counts: Mapping[str, int], dictionaries: Mapping[str, list]
) -> dict[str, Any]:
    """The pandas dtype of every column for the whole dataset (see the module docstring)."""
    pa, _, _ = _pyarrow()
    base = schema.empty_table().to_pandas().dtypes.to_dict()
    out = {}
    for arrow_field in schema:
        name = arrow_field.name
        dtype = base[name]
        if pa.types.is_dictionary(arrow_field.type):
            values = pa.array(dictionaries.get(name, []), type=arrow_field.type.value_type)
            dtype = pd.CategoricalDtype(
                pd.Index(values.to_pandas()), ordered=arrow_field.type.ordered
            )
        elif null_counts.get(name, 0) > 0 and isinstance(dtype, np.dtype):
            if dtype.kind in "iu":
                dtype = _nullable_integer(dtype)
            elif dtype.kind == "b":
                dtype = np.dtype(object)
        out[name] = dtype
    return out


# ---------------------------------------------------------------------- identifiers
@dataclass
class FreshIdentifiers:
    """The values ``encoding.fresh_identifiers(original, n)`` gives, by position, without
    holding them: integers, the smallest non-negative integers absent from the originals;
    text, ``<prefix><position>``."""

    name: str
    taken: np.ndarray | None = None  # integers: sorted distinct non-negative originals
    prefix: str | None = None  # text

    def take(self, start: int, stop: int) -> np.ndarray:
        positions = np.arange(start, stop, dtype=np.int64)
        if self.prefix is not None:
            return np.array([f"{self.prefix}{i}" for i in positions], dtype=object)
        gaps = self.taken - np.arange(self.taken.size, dtype=np.int64)  # absent below taken[i]
        return positions + np.searchsorted(gaps, positions, side="right")


class _IdentifierScan:
    """Gathers what ``FreshIdentifiers`` needs from the original values, chunk by chunk."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.integers: list[np.ndarray] = []
        self.held = 0
        self.repeats: set[int] = set()  # m such that a value starts with "avatar" * m + "_"
        self.text: bool | None = None

    def add(self, series: pd.Series) -> None:
        dtype = series.dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        if numeric:
            self.text = False
            values = series.dropna().to_numpy()
            if values.dtype.kind == "f":
                values = values[(values >= 0) & (values == np.floor(values)) & (values < 2**62)]
            values = np.unique(values.astype(np.int64))
            self.integers.append(values[values >= 0])
            self.held += self.integers[-1].size
            if self.held > 4 * CHUNK_ROWS and len(self.integers) > 1:
                self.integers = [np.unique(np.concatenate(self.integers))]
                self.held = self.integers[0].size
        elif pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
            self.text = True
            candidates = series[series.str.match(_ID_PREFIX.pattern, na=False).astype(bool)]
            for value in candidates:
                if isinstance(value, str):
                    self.repeats.add(len(_ID_PREFIX.match(value).group(1)) // len("avatar"))
        else:
            raise AvatarError(
                f"identifier column {self.name!r} has dtype {dtype}; identifiers must be "
                "integers or text"
            )

    def result(self) -> FreshIdentifiers:
        if self.text:
            repeats = 1
            while repeats in self.repeats:
                repeats += 1
            return FreshIdentifiers(self.name, prefix="avatar" * repeats + "_")
        taken = np.unique(np.concatenate(self.integers)) if self.integers else np.zeros(0, int)
        return FreshIdentifiers(self.name, taken=taken.astype(np.int64))


# ---------------------------------------------------------------------------- scan
@dataclass
class _ColumnScan:
    nulls: int = 0
    missing_first: int = _NO_RANK  # lowest plan rank of a missing cell
    present_first: int = _NO_RANK  # lowest plan rank of a present cell
    first: dict = field(default_factory=dict)  # categorical: value -> lowest plan rank
    counts: dict = field(default_factory=dict)  # categorical: value -> rows


@dataclass
class SourceScan:
    """What pass 1 learns: kinds, dtypes, null counts, covering ranks, identifiers."""

    kinds: dict[str, str]
    dtypes: dict[str, Any]
    columns: dict[str, _ColumnScan]
    identifiers: dict[str, FreshIdentifiers]


def _may_hold_missing(source: ParquetSource) -> set[str]:
    """Columns whose Parquet statistics do not prove the absence of missing values
    (floating columns always: a NaN is missing for pandas and no null for Parquet)."""
    pa, pq, _ = _pyarrow()
    floating = {f.name for f in source.schema if pa.types.is_floating(f.type)}
    unknown = set(floating)
    for name in source.files:
        with pq.ParquetFile(name) as handle:
            metadata = handle.metadata
            for g in range(metadata.num_row_groups):
                group = metadata.row_group(g)
                for j in range(group.num_columns):
                    chunk = group.column(j)
                    column = chunk.path_in_schema.split(".")[0]
                    stats = chunk.statistics
                    if stats is None or not stats.has_null_count or stats.null_count > 0:
                        unknown.add(column)
    return unknown & set(source.columns)


def _detect_kinds(source: ParquetSource, types: Mapping[Any, str]) -> dict[str, str]:
    unknown = [c for c in types if c not in source.columns]
    if unknown:
        raise AvatarError(f"types names unknown column(s) {unknown}; available: {source.columns}")
    with closing(source.chunks(chunk_rows=1024)) as chunks:
        sample = next(chunks, (0, source.schema.empty_table()))[1]
    frame = to_frame(sample, {})
    return {c: types.get(c) or _detect_kind(frame[c]) for c in source.columns}


def _merge_first(current: int, values: np.ndarray) -> int:
    return min(current, int(values.min())) if values.size else current


def scan_source(
    source: ParquetSource, types: Mapping[Any, str], ranks: np.ndarray | None
) -> SourceScan:
    """Pass 1. ``ranks`` (global row id -> position in the seeded order) is given for a
    batched run, whose covering needs the first rank of every modality."""
    pa, _, _ = _pyarrow()
    kinds = _detect_kinds(source, dict(types))
    dictionary_columns = [f.name for f in source.schema if pa.types.is_dictionary(f.type)]
    identifier_columns = [c for c in source.columns if kinds[c] == IDENTIFIER]
    categorical = [c for c in source.columns if kinds[c] == CATEGORICAL]
    maybe_missing = _may_hold_missing(source)
    if ranks is None:  # one batch: missing values matter only to the integer/bool dtypes
        integral = {
            f.name
            for f in source.schema
            if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)
        }
        maybe_missing &= integral
    wanted = set(dictionary_columns) | set(identifier_columns) | maybe_missing
    if ranks is not None:
        wanted |= set(categorical)
    read = [c for c in source.columns if c in wanted]
    columns = {c: _ColumnScan() for c in source.columns}
    dictionaries: dict[str, dict] = {c: {} for c in dictionary_columns}
    id_scans = {c: _IdentifierScan(c) for c in identifier_columns}
    for start, table in source.chunks(read) if read else ():
        for name in dictionary_columns:
            for chunk in table.column(name).chunks:
                for value in chunk.dictionary.to_pylist():
                    if value is not None:
                        dictionaries[name].setdefault(value, None)
        frame = to_frame(table, {})
        chunk_ranks = None if ranks is None else ranks[start : start + table.num_rows]
        for name in read:
            series = frame[name]
            missing = series.isna().to_numpy()
            scan = columns[name]
            scan.nulls += int(missing.sum())
            if name in id_scans:
                id_scans[name].add(series)
                continue
            if chunk_ranks is None:
                continue
            scan.missing_first = _merge_first(scan.missing_first, chunk_ranks[missing])
            scan.present_first = _merge_first(scan.present_first, chunk_ranks[~missing])
            if kinds[name] == CATEGORICAL:
                codes, uniques = pd.factorize(series[~missing])
                if not len(uniques):
                    continue
                counts = np.bincount(codes, minlength=len(uniques))
                firsts = pd.Series(chunk_ranks[~missing]).groupby(codes).min().to_numpy()
                for value, count, first in zip(uniques, counts, firsts, strict=True):
                    scan.counts[value] = scan.counts.get(value, 0) + int(count)
                    scan.first[value] = min(scan.first.get(value, _NO_RANK), int(first))
    null_counts = {c: s.nulls for c, s in columns.items()}  # 0 where not read
    empty = [c for c in source.columns if null_counts[c] == source.n_rows]
    if empty:
        raise AvatarError(
            f"column(s) {empty} have no non-missing value; drop them before avatarizing"
        )
    dtypes = frame_dtypes(source.schema, null_counts, {c: list(d) for c, d in dictionaries.items()})
    return SourceScan(
        kinds=kinds,
        dtypes=dtypes,
        columns=columns,
        identifiers={c: s.result() for c, s in id_scans.items()},
    )


def _mode(values: list, counts: list[int], dtype: Any) -> Any:
    """The value the encoder fills missing cells with: the most frequent modality, ties to
    the first in the encoder's modality order (category order, else sorted)."""
    if isinstance(dtype, pd.CategoricalDtype):
        position = dtype.categories.get_indexer(pd.Index(values, dtype=dtype.categories.dtype))
        ordered = np.argsort(position, kind="stable")
    else:
        codes, _ = pd.factorize(pd.Series(values, dtype=dtype), sort=True)
        ordered = np.argsort(codes, kind="stable")
    best = max(range(len(ordered)), key=lambda i: (counts[ordered[i]], -i))
    return values[ordered[best]]


def covering_ranks(scan: SourceScan) -> np.ndarray:
    """Plan ranks of the covering rows: ``batches.covering_rows`` from the scan's minima."""
    ranks = []
    for name, column in scan.columns.items():
        kind = scan.kinds[name]
        if kind == CATEGORICAL:
            first = dict(column.first)
            if column.nulls:
                values = list(column.counts)
                mode = _mode(values, [column.counts[v] for v in values], scan.dtypes[name])
                first[mode] = min(first[mode], column.missing_first)
            ranks.extend(first.values())
        if column.nulls and kind != IDENTIFIER:  # the "is missing" indicator's two values
            ranks.extend([column.missing_first, column.present_first])
    return np.array(ranks, dtype=np.int64)


# ---------------------------------------------------------------------------- plan
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


def _plan(
    source: ParquetSource,
    batch_size: int,
    sequence: np.random.SeedSequence,
    types: Mapping[Any, str],
    keep_batches: bool = False,
) -> tuple[StreamPlan, SourceScan, list[np.ndarray] | None]:
    n = source.n_rows
    if n <= batch_size:
        return StreamPlan(n, [n]), scan_source(source, types, None), None
    order = plan_order(n, sequence)
    rank_type = np.int32 if n < 2**31 else np.int64
    ranks = np.empty(n, dtype=rank_type)  # global row id -> position in the seeded order
    ranks[order] = np.arange(n, dtype=rank_type)
    scan = scan_source(source, types, ranks)
    del ranks
    covering = np.unique(order[covering_ranks(scan)])
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
    batch_size: int,
    seed: int | np.random.SeedSequence | None = None,
    types: Mapping[Any, str] | None = None,
) -> list[np.ndarray]:
    """The batches ``avatarize_parquet`` forms (global row positions, in plan order): the
    same as ``batches.plan_batches`` on the whole table in memory."""
    source_ = open_source(source)
    plan, _, pieces = _plan(source_, batch_size, seed_sequence(seed), types or {}, True)
    return pieces if pieces is not None else [np.arange(plan.n_rows)]


# -------------------------------------------------------------------------- routing
def route(source: ParquetSource, plan: StreamPlan, spill: Path) -> None:
    """Pass 2: append every row to its batch's spill file, with its position in the batch."""
    pa, pq, _ = _pyarrow()
    spill.mkdir(parents=True, exist_ok=True)
    slot_type = pa.from_numpy_dtype(plan.slot.dtype)
    schema = pa.schema([*source.schema, pa.field(SLOT, slot_type)], metadata=source.schema.metadata)
    for first in range(0, plan.n_batches, MAX_OPEN_SPILLS):
        last = min(first + MAX_OPEN_SPILLS, plan.n_batches)
        writers = {b: pq.ParquetWriter(spill / spill_name(b), schema) for b in range(first, last)}
        try:
            for start, table in source.chunks():
                batches = plan.batch_of[start : start + table.num_rows]
                rows = np.flatnonzero((batches >= first) & (batches < last))
                rows = rows[np.argsort(batches[rows], kind="stable")]
                if not rows.size:
                    continue
                taken = table.take(pa.array(rows))
                slots = pa.array(plan.slot[start + rows], type=slot_type)
                taken = pa.Table.from_arrays([*taken.columns, slots], schema=schema)
                ids = batches[rows]
                bounds = np.flatnonzero(np.diff(ids)) + 1
                for lo, hi in zip(
                    [0, *bounds.tolist()], [*bounds.tolist(), rows.size], strict=True
                ):
                    writers[int(ids[lo])].write_table(taken.slice(lo, hi - lo))
        finally:
            for writer in writers.values():
                writer.close()


# --------------------------------------------------------------------- one batch
@dataclass
class BatchTask:
    """One batch: where its rows are, how many, its seed and its part file."""

    batch: int
    n_batches: int
    rows: int
    offset: int  # position of the batch's first released row in the whole output
    sequence: np.random.SeedSequence
    spill: str | None  # the batch's spill file; None: the whole source is the batch


@dataclass
class BatchContext:
    """What every batch shares (Dask broadcasts it once): the model and the output format."""

    model: AvatarModel
    source: ParquetSource
    dtypes: dict[str, Any]
    identifiers: dict[str, FreshIdentifiers]
    destination: str
    types: dict[str, str]
    metrics: bool


def load_batch(task: BatchTask, context: BatchContext) -> pd.DataFrame:
    """The originals of a batch, in plan order, with the dataset's dtypes."""
    _, pq, _ = _pyarrow()
    if task.spill is None:
        frame = to_frame(context.source.read_all(), context.dtypes)
    else:
        table = pq.read_table(task.spill)
        slots = table.column(SLOT).to_numpy()
        table = table.drop_columns([SLOT]).replace_schema_metadata(context.source.schema.metadata)
        frame = to_frame(table, context.dtypes)
        in_plan_order = np.empty(slots.size, dtype=np.int64)
        in_plan_order[slots] = np.arange(slots.size)
        frame = frame.take(in_plan_order).reset_index(drop=True)
    if len(frame) != task.rows:
        raise AvatarError(
            f"batch {task.batch} holds {len(frame)} rows instead of {task.rows}: the source "
            "changed during the run"
        )
    return frame


def metric_values(metrics: Any) -> dict[str, float | None]:
    values = metrics.to_frame()["value"]
    out = {}
    for name, value in values.items():
        number = None if value is None else float(value)
        out[str(name)] = None if number is None or np.isnan(number) else number
    return out


def write_part(frame: pd.DataFrame, schema: pa.Schema, path: Path) -> None:
    """Write ``frame`` with the input's schema, atomically (a hidden temporary, renamed)."""
    pa, pq, _ = _pyarrow()
    output_schema = pa.schema(list(schema))  # fields only: pandas metadata is regenerated
    table = pa.Table.from_pandas(frame, schema=output_schema, preserve_index=False)
    temporary = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, temporary)
    os.replace(temporary, path)


def process_batch(task: BatchTask, context: BatchContext) -> dict[str, Any]:
    """Avatarize one batch and write its part; returns its summary (rows, metrics, timings).
    Run by the local loop and, unchanged, by the Dask tasks."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    frame = load_batch(task, context)
    timings["read"] = time.perf_counter() - started
    released_order = shuffle_order(task.rows, task.sequence)
    identifiers = {}
    for name, fresh in context.identifiers.items():
        values = fresh.take(task.offset, task.offset + task.rows)  # in released order
        unshuffled = np.empty_like(values)
        unshuffled[released_order] = values
        identifiers[name] = unshuffled
    avatars = avatarize_rows(context.model, frame, task.sequence, identifiers, timings)
    metrics = None
    if context.metrics:
        tick = time.perf_counter()
        metrics = metric_values(
            privacy_metrics(
                frame,
                avatars,
                ncp=context.model.ncp,
                types=context.types,
                backend=context.model.backend,
            )
        )
        timings["metrics"] = time.perf_counter() - tick
    del frame
    tick = time.perf_counter()
    released = avatars.iloc[released_order].reset_index(drop=True)
    write_part(released, context.source.schema, Path(context.destination) / part_name(task.batch))
    timings["write"] = time.perf_counter() - tick
    return {
        "batch": task.batch,
        "rows": task.rows,
        "part": part_name(task.batch),
        "metrics": metrics,
        "seconds": time.perf_counter() - started,
        "timings": timings,
    }


def batch_error(task: BatchTask, error: BaseException, destination: Path) -> AvatarError:
    return AvatarError(
        f"batch {task.batch} (of {task.n_batches}, {task.rows:,} rows) failed: "
        f"{type(error).__name__}: {error}. {destination} is left marked incomplete "
        f"({INCOMPLETE}); fix the cause and rerun with resume=True to finish the other batches"
    )


# -------------------------------------------------------------------------- manifest
def read_manifest(destination: str | os.PathLike) -> dict[str, Any]:
    """The ``_manifest.json`` of an ``avatarize_parquet`` destination."""
    path = Path(destination) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as error:
        raise AvatarError(f"{destination} has no {MANIFEST}") from error
    except (OSError, ValueError) as error:
        raise AvatarError(f"cannot read {path}: {error}") from error


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=False))
    os.replace(temporary, path)


def summarize_metrics(per_batch: Sequence[dict[str, float | None]]) -> dict[str, dict]:
    """Mean and worst (lowest) of every metric over the batches (metrics None are skipped)."""
    names = list(per_batch[0]) if per_batch else []
    mean, worst = {}, {}
    for name in names:
        values = [m[name] for m in per_batch if m.get(name) is not None]
        mean[name] = float(np.mean(values)) if values else None
        worst[name] = float(np.min(values)) if values else None
    return {"mean": mean, "worst": worst}


@dataclass
class ParquetAvatarization:
    """Outcome of ``avatarize_parquet`` (also in ``<destination>/_manifest.json``)."""

    destination: Path
    parts: list[str]
    n_rows: int
    seed: int  # entropy of the run's SeedSequence: pass it back as seed= to reproduce the run
    manifest: dict[str, Any] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def n_batches(self) -> int:
        return len(self.parts)

    def batch_privacy_metrics(self) -> pd.DataFrame | None:
        """One row per batch, then ``mean`` and ``worst`` (as
        ``AvatarizationResult.batch_privacy_metrics``); None for a run with ``metrics=False``."""
        if not self.manifest["parameters"]["metrics"]:
            return None
        batches = self.manifest["batches"]
        rows = {f"batch {b}": batches[str(b)]["metrics"] for b in range(self.n_batches)}
        summary = self.manifest["privacy_metrics"]
        rows.update(mean=summary["mean"], worst=summary["worst"])
        return pd.DataFrame(rows).T.astype(float)


# ------------------------------------------------------------------------ the run
Executor = Callable[[list[BatchTask], BatchContext, Callable[[BatchTask, dict], None]], None]


def run_locally(
    tasks: list[BatchTask], context: BatchContext, done: Callable[[BatchTask, dict], None]
) -> None:
    """The single-process scheduler: one batch after the other."""
    for task in tasks:
        try:
            summary = process_batch(task, context)
        except Exception as error:
            raise batch_error(task, error, Path(context.destination)) from error
        done(task, summary)


def _prepare_destination(destination: Path, source: ParquetSource, resume: bool) -> dict | None:
    """The manifest of the run to resume, or None for a fresh run (checks the folder)."""
    resolved, source_path = destination.resolve(), source.path.resolve()
    if (
        resolved == source_path
        or source_path in resolved.parents
        or resolved in (source_path.parents)
    ):
        raise AvatarError(
            f"the destination {destination} and the source {source.path} overlap; write the "
            "avatars to a folder outside the source"
        )
    if destination.exists() and not destination.is_dir():
        raise AvatarError(f"the destination {destination} exists and is not a folder")
    if destination.is_dir() and any(destination.iterdir()):
        if resume and (destination / MANIFEST).is_file():
            return read_manifest(destination)
        if resume and (destination / INCOMPLETE).is_file():
            return None  # stopped before its first manifest: start again
        raise AvatarError(
            f"the destination {destination} is not empty"
            + (" and holds no manifest to resume from" if resume else "")
            + "; give an empty or new folder"
            + ("" if resume else ", or resume=True to finish an interrupted run there")
        )
    return None


def _spills_intact(spill: Path, sizes: Sequence[int]) -> bool:
    """Whether every spill file of a resumed run is readable and holds its batch's rows."""
    _, pq, _ = _pyarrow()
    try:
        return all(
            pq.read_metadata(spill / spill_name(b)).num_rows == size for b, size in enumerate(sizes)
        )
    except Exception:  # missing or damaged: route again
        return False


def _check_resumable(previous: dict, manifest: dict) -> None:
    differences = [
        key
        for key in ("format", "parameters", "seed", "source", "rows_per_part")
        if previous.get(key) != manifest[key]
    ]
    if differences:
        raise AvatarError(
            f"cannot resume: the run recorded in {MANIFEST} differs in {differences} (same "
            "source files, parameters and seed needed; seed=None takes the recorded seed)"
        )


def avatarize_parquet(
    source: str | os.PathLike,
    destination: str | os.PathLike,
    k: int,
    batch_size: int,
    ncp: int = 5,
    seed: int | None = None,
    types: Mapping[Any, str] | None = None,
    column_weights: Mapping[Any, float] | None = None,
    imputation: str = "median",
    categorical: str = "draw",
    backend: str | Backend = "auto",
    metrics: bool = True,
    resume: bool = False,
    progress: ProgressLike = None,
    *,
    executor: Executor = run_locally,
    scheduler: str = "local",
) -> ParquetAvatarization:
    """Avatarize a Parquet file or directory into ``destination``, ``batch_size`` rows at a
    time, with bounded memory (see the module docstring for the passes and the outputs).

    Parameters as in ``avatarize``; ``batch_size`` >= 2k rows per batch (a covering first batch
    shows every modality; the projection is fitted on it). The avatar rows are those of
    ``avatarize(df, batch_size=batch_size)`` on the same table and seed (identifiers are fresh
    values unique over the whole output; rows are released batch by batch, each batch
    shuffled). ``metrics``: the privacy metrics of every batch, recorded in the manifest with
    their mean and worst. ``resume``: finish an interrupted run in ``destination`` (same
    source, parameters and seed; ``seed=None`` takes the recorded one). ``progress`` as in
    ``avatarize``. Returns a ``ParquetAvatarization``. Needs pyarrow
    (``pip install 'gpu_avatar[parquet]'``). ``executor``/``scheduler``: how batches run (a
    local loop; ``gpu_avatar.distributed`` passes its Dask executor).
    """
    if categorical not in CATEGORICAL_RULES:
        raise AvatarError(f"categorical={categorical!r} is not one of {CATEGORICAL_RULES}")
    ncp = _check_int("ncp", ncp, 1)
    k = _check_int("k", k, 2)
    if batch_size is None:
        raise AvatarError("batch_size is required: the number of rows avatarized at once")
    check_batch_size(batch_size, k)
    backend_ = resolve_backend(backend)
    types = dict(types or {})
    TableEncoder(types, imputation)  # checks the kinds and the imputation up front
    timings: dict[str, float] = {}
    source_ = open_source(source)
    n = source_.n_rows
    if n < 3 or k > n - 1:
        raise AvatarError(f"k = {k} is out of range for {n} rows: need 2 <= k <= {n - 1}")
    destination = Path(destination)
    previous = _prepare_destination(destination, source_, resume)
    if previous is not None and seed is None:
        seed = int(previous["seed"])
    sequence = seed_sequence(seed)

    steps = Steps(progress, "avatarize_parquet", total=3 + max(1, -(-n // batch_size)))
    tick = time.perf_counter()
    with steps.step("scan"):
        plan, scan, _ = _plan(source_, batch_size, sequence, types)
    timings["scan"] = time.perf_counter() - tick
    manifest = {
        "format": MANIFEST_FORMAT,
        "source": {"path": str(source_.path.resolve()), "files": source_.fingerprint(), "rows": n},
        "parameters": {
            "k": k,
            "ncp": ncp,
            "batch_size": int(batch_size),
            "types": {str(c): v for c, v in types.items()},
            "column_weights": {str(c): float(w) for c, w in (column_weights or {}).items()},
            "imputation": imputation,
            "categorical": categorical,
            "backend": backend_.name,
            "metrics": bool(metrics),
        },
        "seed": int(sequence.entropy),
        "rows_per_part": plan.sizes,
        "parts": [part_name(b) for b in range(plan.n_batches)],
    }
    if previous is not None:
        _check_resumable(previous, manifest)
        if previous.get("complete") and (destination / SUCCESS).is_file():
            steps.close()
            return _result(destination, previous, timings)
    destination.mkdir(parents=True, exist_ok=True)
    (destination / SUCCESS).unlink(missing_ok=True)
    (destination / INCOMPLETE).write_text(
        "This avatar dataset is unfinished: rerun avatarize_parquet(..., resume=True).\n"
    )
    spill = destination / SPILL
    done_before = (previous or {}).get("batches", {})
    manifest.update(
        scheduler=scheduler,
        routed=bool((previous or {}).get("routed")),
        batches={
            b: summary
            for b, summary in done_before.items()
            if (destination / summary["part"]).is_file()
        },
        complete=False,
    )
    _write_json(destination / MANIFEST, manifest)

    batched = plan.n_batches > 1
    with steps.step("route"):
        tick = time.perf_counter()
        if batched and not (manifest["routed"] and _spills_intact(spill, plan.sizes)):
            shutil.rmtree(spill, ignore_errors=True)
            route(source_, plan, spill)
            manifest["routed"] = True
            _write_json(destination / MANIFEST, manifest)
        timings["route"] = time.perf_counter() - tick
    offsets = plan.offsets
    tasks = [
        BatchTask(
            batch=b,
            n_batches=plan.n_batches,
            rows=plan.sizes[b],
            offset=offsets[b],
            sequence=batch_seed(sequence, b) if batched else sequence,
            spill=str(spill / spill_name(b)) if batched else None,
        )
        for b in range(plan.n_batches)
    ]
    del plan  # the per-row arrays are not needed any more
    context = BatchContext(
        model=None,  # type: ignore[arg-type]  (fitted below)
        source=source_,
        dtypes=scan.dtypes,
        identifiers=scan.identifiers,
        destination=str(destination),
        types=types,
        metrics=bool(metrics),
    )
    with steps.step("fit"):
        tick = time.perf_counter()
        first = load_batch(tasks[0], context)
        check_device_memory(backend_, len(first), first.shape[1], k, ncp)
        context.model = fit_model(
            first, k, ncp, column_weights, types, imputation, backend_, categorical
        )
        del first
        timings["fit"] = time.perf_counter() - tick

    def done(task: BatchTask, summary: dict) -> None:
        manifest["batches"][str(task.batch)] = {
            "rows": summary["rows"],
            "part": summary["part"],
            "metrics": summary["metrics"],
            "seconds": round(summary["seconds"], 3),
        }
        for step, seconds in summary["timings"].items():
            timings[f"batches: {step}"] = timings.get(f"batches: {step}", 0.0) + seconds
        _write_json(destination / MANIFEST, manifest)
        steps.start(f"batch {task.batch}")
        steps.advance()

    pending = [t for t in tasks if str(t.batch) not in manifest["batches"]]
    for task in tasks:
        if task not in pending:
            steps.start(f"batch {task.batch} (done before)")
            steps.advance()
    tick = time.perf_counter()
    try:
        executor(pending, context, done)
    finally:
        steps.close()
    timings["batches"] = time.perf_counter() - tick

    if metrics:
        manifest["privacy_metrics"] = summarize_metrics(
            [manifest["batches"][str(b)]["metrics"] for b in range(len(tasks))]
        )
    manifest["complete"] = True
    manifest["batches"] = {str(b): manifest["batches"][str(b)] for b in range(len(tasks))}
    manifest["timings"] = {step: round(seconds, 3) for step, seconds in timings.items()}
    _write_json(destination / MANIFEST, manifest)
    shutil.rmtree(spill, ignore_errors=True)
    (destination / SUCCESS).write_text("")
    (destination / INCOMPLETE).unlink(missing_ok=True)
    return _result(destination, manifest, timings)


def _result(destination: Path, manifest: dict, timings: dict) -> ParquetAvatarization:
    return ParquetAvatarization(
        destination=destination,
        parts=list(manifest["parts"]),
        n_rows=int(manifest["source"]["rows"]),
        seed=int(manifest["seed"]),
        manifest=manifest,
        timings=timings,
    )

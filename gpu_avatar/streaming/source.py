"""A Parquet file or folder as the source of a streamed run: its files, their common schema,
chunks of rows, and the pandas dtypes the whole dataset gets.

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, import_extra

if TYPE_CHECKING:
    import pyarrow as pa

SLOT = "__gpu_avatar_slot__"  # position of a row inside its batch, in the spill files
CHUNK_ROWS = 1 << 18  # rows per read in the scan and the routing


def _pyarrow():
    pa = import_extra("pyarrow", "parquet", "Reading and writing Parquet")
    pq = import_extra("pyarrow.parquet", "parquet", "Reading and writing Parquet")
    ds = import_extra("pyarrow.dataset", "parquet", "Reading and writing Parquet")
    return pa, pq, ds


# ---------------------------------------------------------------------------- source
PARTITION_ROWS = 1 << 21  # rows per partition (whole row groups): one task of the scan, route


def _fsspec():
    return import_extra("fsspec", "parquet", "Reading and writing Parquet")


def open_url(location: str | os.PathLike, storage_options: Mapping[str, Any] | None = None):
    """(fsspec file system, absolute path in it) of a local path or a URL (``file://``,
    ``s3://``, ``gs://``, ``memory://``...): a relative path is made absolute here, so that
    workers started elsewhere find it."""
    fsspec = _fsspec()
    try:
        return fsspec.core.url_to_fs(os.fspath(location), **dict(storage_options or {}))
    except (ImportError, ValueError) as error:
        raise AvatarError(f"cannot open {location}: {error} (a URL's protocol may need its "
                          "package, e.g. s3fs for s3://, gcsfs for gs://)") from error


def arrow_filesystem(fs: Any) -> Any:
    """``fs`` as pyarrow reads and writes it: its own local file system for local files."""
    pafs = import_extra("pyarrow.fs", "parquet", "Reading and writing Parquet")
    if "file" in ({fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)):
        return pafs.LocalFileSystem()
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs))


@dataclass(frozen=True)
class Partition:
    """Whole row groups of one file: the unit a task reads, with its rows' global ids."""

    index: int
    file: str
    row_groups: tuple[int, ...]
    first_row: int
    rows: int


@dataclass
class ParquetSource:
    """A Parquet file or directory (local or a URL), checked: files, common schema, rows."""

    location: str  # as given, for messages
    fs: Any  # fsspec file system
    path: str  # absolute path in ``fs``
    files: list[str]
    schema: pa.Schema  # data columns only, with the (cleaned) pandas metadata
    row_groups: list[list[int]]  # rows of every row group of every file
    nullable: set[str]  # columns whose Parquet statistics do not prove they hold no null
    partition_rows: int = PARTITION_ROWS  # a batched run lowers it to its batch size

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    @property
    def rows_per_file(self) -> list[int]:
        return [sum(groups) for groups in self.row_groups]

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows_per_file))

    def fingerprint(self) -> list[list[Any]]:
        """File names, sizes and modification times: a resumed run checks them."""
        out = []
        for name in self.files:
            info = self.fs.info(name)
            changed = next((info[k] for k in ("mtime", "LastModified", "updated", "created")
                            if k in info), None)
            out.append([name[len(self.path):].lstrip("/") or os.path.basename(name),
                        int(info.get("size") or 0), str(changed)])
        return out

    def partitions(self) -> list[Partition]:
        """Consecutive row groups of each file, about ``partition_rows`` rows each (more
        where one row group is larger), in row order."""
        rows = self.partition_rows
        out, first = [], 0
        for name, groups in zip(self.files, self.row_groups, strict=True):
            taken: list[int] = []
            held = 0
            for g, size in enumerate(groups):
                taken.append(g)
                held += size
                if held >= rows or g == len(groups) - 1:
                    out.append(Partition(len(out), name, tuple(taken), first, held))
                    first += held
                    taken, held = [], 0
        return out

    def chunks(self, partition: Partition, columns: Sequence[str] | None = None,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[int, pa.Table]]:
        """(global row id of the first row, table) over ``partition``, ``chunk_rows`` at most
        at a time."""
        pa, pq, _ = _pyarrow()
        columns = self.columns if columns is None else list(columns)
        start = partition.first_row
        try:
            with pq.ParquetFile(partition.file, filesystem=arrow_filesystem(self.fs)) as handle:
                for batch in handle.iter_batches(batch_size=chunk_rows, columns=columns,
                                                 row_groups=list(partition.row_groups)):
                    table = pa.Table.from_batches([batch])
                    yield start, table.replace_schema_metadata(self.schema.metadata)
                    start += batch.num_rows
        except (OSError, pa.ArrowException) as error:
            raise AvatarError(f"cannot read Parquet file {partition.file}: {error}") from error

    def all_chunks(self, columns: Sequence[str] | None = None,
                   chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[int, pa.Table]]:
        for partition in self.partitions():
            yield from self.chunks(partition, columns, chunk_rows)

    def read_all(self) -> pa.Table:
        """Every row (a run that fits in one batch)."""
        pa, _, _ = _pyarrow()
        tables = [table for _, table in self.all_chunks(chunk_rows=1 << 20)]
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


def open_source(source: str | os.PathLike,
                storage_options: Mapping[str, Any] | None = None) -> ParquetSource:
    """Check a Parquet file or directory (a local path or a URL): readable, at least one file,
    one schema; its footers read once (rows, row groups, null statistics)."""
    pa, pq, ds = _pyarrow()
    fs, path = open_url(source, storage_options)
    if not fs.exists(path):
        raise AvatarError(f"the source {source} does not exist")
    if fs.isdir(path):
        try:
            files = list(ds.dataset(path, format="parquet", filesystem=fs).files)
        except (OSError, pa.ArrowException) as error:
            raise AvatarError(f"cannot read the Parquet directory {source}: {error}") from error
        if not files:
            raise AvatarError(f"the directory {source} holds no Parquet file")
    else:
        files = [path]
    schemas, row_groups, nullable = [], [], set()
    for name in files:
        try:
            with pq.ParquetFile(name, filesystem=arrow_filesystem(fs)) as handle:
                schemas.append(handle.schema_arrow)
                metadata = handle.metadata
                groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
        except (OSError, pa.ArrowException) as error:
            raise AvatarError(f"cannot read {name} as Parquet: {error}") from error
        row_groups.append([group.num_rows for group in groups])
        for group in groups:
            for j in range(group.num_columns):
                stats = group.column(j).statistics
                if stats is None or not stats.has_null_count or stats.null_count > 0:
                    nullable.add(group.column(j).path_in_schema.split(".")[0])
    problems = []
    for name, schema in zip(files[1:], schemas[1:], strict=True):
        notes = _schema_differences(schemas[0], schema)
        if notes:
            problems.append(f"{name}: " + "; ".join(notes))
    if problems:
        raise AvatarError(
            f"the Parquet files of {source} do not share one schema (first file: {files[0]}): "
            + " | ".join(problems)
        )
    schema = _data_schema(schemas[0])
    if SLOT in schema.names:
        raise AvatarError(f"the column name {SLOT!r} is reserved; rename that column")
    if not schema.names:
        raise AvatarError(f"the Parquet data in {source} has no column")
    return ParquetSource(os.fspath(source), fs, path, files, schema, row_groups,
                         nullable & set(schema.names))


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

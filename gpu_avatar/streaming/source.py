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
from pathlib import Path
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

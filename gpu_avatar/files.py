"""Reading and writing tables by file name: CSV (separator detected) and Parquet.

``.csv``, ``.tsv``, ``.txt`` (optionally ``.gz``-compressed) are CSV; ``.parquet`` and ``.pq``
are Parquet (needs pyarrow: ``pip install 'gpu_avatar[parquet]'``). Every problem is an
``AvatarError`` naming the file.
"""

from __future__ import annotations

import csv
import gzip
import itertools
from pathlib import Path

import pandas as pd

from .errors import AvatarError, import_extra
from .outputs import atomic_path

CSV_SUFFIXES = (".csv", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
SEPARATORS = ",;\t|"
_SNIFF_LINES = 50


def table_format(path: str | Path) -> str:
    """``"csv"`` or ``"parquet"`` from the file name."""
    name = Path(path).name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES) or name.endswith(tuple(s + ".gz" for s in CSV_SUFFIXES)):
        return "csv"
    raise AvatarError(
        f"{path}: unsupported file type; use .csv (or .tsv, .txt, optionally .gz) or .parquet"
    )


def detect_separator(path: Path) -> str:
    """The CSV separator among , ; tab | (from the first lines; "," when unsure)."""
    if path.name.lower().endswith((".tsv", ".tsv.gz")):
        return "\t"
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
            sample = "".join(itertools.islice(handle, _SNIFF_LINES))
    except (OSError, EOFError) as error:
        raise AvatarError(f"{path}: cannot read the file ({error})") from error
    try:
        return csv.Sniffer().sniff(sample, delimiters=SEPARATORS).delimiter
    except csv.Error:
        return ","


def _check_input(path: Path) -> None:
    if not path.exists():
        raise AvatarError(f"input file {path} does not exist")
    if path.is_dir():
        raise AvatarError(f"{path} is a directory, not a table file")


def read_table(path: str | Path, sep: str | None = None) -> pd.DataFrame:
    """The table in ``path`` (CSV or Parquet, from its name); ``sep`` overrides detection."""
    path = Path(path)
    kind = table_format(path)
    _check_input(path)
    if kind == "parquet":
        pyarrow = import_extra("pyarrow", "parquet", "reading Parquet files")
        try:
            return pd.read_parquet(path, engine="pyarrow")
        except (pyarrow.ArrowException, OSError) as error:
            raise AvatarError(f"{path}: not a readable Parquet file ({error})") from error
    try:
        return pd.read_csv(path, sep=sep or detect_separator(path))
    except pd.errors.EmptyDataError as error:
        raise AvatarError(f"{path}: the file is empty") from error
    except pd.errors.ParserError as error:
        raise AvatarError(f"{path}: cannot parse as CSV ({error})") from error
    except UnicodeDecodeError as error:
        raise AvatarError(f"{path}: not UTF-8 text ({error})") from error


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` (without its index) as CSV or Parquet, from the file name; the file
    appears whole or not at all (``outputs.atomic_path``)."""
    path = Path(path)
    kind = table_format(path)
    if kind == "parquet":
        import_extra("pyarrow", "parquet", "writing Parquet files")
    with atomic_path(path) as temporary:
        if kind == "parquet":
            df.to_parquet(temporary, index=False, engine="pyarrow")
        else:  # separator and compression from the name, not the temporary's
            name = path.name.lower()
            tab = name.endswith((".tsv", ".tsv.gz"))
            df.to_csv(temporary, index=False, sep="\t" if tab else ",",
                      compression="gzip" if name.endswith(".gz") else None)
    return path

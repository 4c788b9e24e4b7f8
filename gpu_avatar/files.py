"""Reading and writing tables by file name: CSV (separator, decimal mark and encoding
detected; numbers, dates and booleans typed) and Parquet.

``.csv``, ``.tsv``, ``.txt`` (optionally ``.gz``-compressed) are CSV; ``.parquet`` and ``.pq``
are Parquet. A CSV file is read as a careful analyst reads it (``read_table_file``):

- encoding: UTF-8, UTF-8 with a BOM, UTF-16 with a BOM, else Windows-1252, else Latin-1;
- separator: the one of ``, ; tab |`` that splits every line of the head into as many fields
  (the most fields when several do);
- decimal mark: ``.``, or ``,`` when the separator is not ``,`` and more values are written
  ``1,5`` than ``1.5``;
- every column is read as text, then typed by ``parsing.type_text_column``: a number, a date
  or a boolean only if every non-missing value reads so. A Parquet file is typed by its
  writer: it is read as stored;
- missing values: empty cells; the markers of ``parsing.MISSING_MARKERS`` (``NA``, ``.``,
  ``-``, ``None``...) only in a column that reads as numbers or dates without them (a text
  column keeps ``None`` or ``NA`` as a modality, and the avatars write it back); the markers
  given as ``na_values`` in any column. The summary counts the cells each made missing.

``sep``, ``decimal``, ``encoding`` and ``date_format`` override the detection. Avatars are
written as the input was read: ``TableFile.write`` (``write_table`` with the input's
separator, decimal mark, encoding, date formats, booleans' spelling and line endings). Every
problem is an ``AvatarError`` naming the file.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import itertools
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .encoding.kinds import is_text
from .errors import AvatarError, FixableError, described, import_extra, in_context
from .outputs import atomic_path
from .parsing import (
    DECIMAL_MARKS,
    MISSING_MARKERS,
    TextTyping,
    date_format_fixes,
    decimal_mark,
    type_text_column,
)

CSV_SUFFIXES = (".csv", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
SEPARATORS = ",;\t|"
_SNIFF_LINES = 50
_DECIMAL_SAMPLE = 1000  # rows looked at for the decimal mark
_ENCODINGS = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 with BOM", "utf-16": "UTF-16",
              "cp1252": "Windows-1252", "latin-1": "Latin-1"}
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
_READ_BYTES = 1 << 20
_NA_FIXES = {"python": "fix na_values=", "cli": "fix --na-values", "yaml": "fix na_values:"}


@dataclass
class TableFile:
    """A table read from a file, with how it was read: what ``write`` reuses for the avatars
    (separator, decimal mark, encoding, dates, booleans, line endings) and what the command
    line reports."""

    frame: pd.DataFrame
    path: Path
    format: str  # "csv" or "parquet"
    sep: str | None = None
    decimal: str = "."
    encoding: str | None = None  # a Python codec name
    typings: dict[Any, TextTyping] = field(default_factory=dict)  # text columns, as typed
    line_ending: str = "\n"

    @property
    def write_options(self) -> dict[str, Any]:
        """``write_table``'s options that keep the input's way of writing, dates and booleans
        included (a day-first column comes back day first, ``TRUE`` as ``TRUE``)."""
        dates = {column: typing.written_format for column, typing in self.typings.items()
                 if typing.written_format is not None}
        booleans = {column: typing.spelling for column, typing in self.typings.items()
                    if typing.spelling is not None}
        return {"sep": self.sep, "decimal": self.decimal, "encoding": self.encoding,
                "date_formats": dates, "booleans": booleans, "line_ending": self.line_ending}

    def write(self, df: pd.DataFrame, path: str | Path, **options: Any) -> Path:
        """Write ``df`` (the avatars of this table) to ``path`` as this file was read
        (``write_options``); ``options`` (``write_table``'s: ``sep``, ``encoding``...)
        override some."""
        return write_table(df, path, **{**self.write_options, **options})

    def summary(self) -> str:
        """One paragraph: how the file was read and what each text column became."""
        rows, columns = self.frame.shape
        how = [f"{rows} rows, {columns} columns"]
        if self.format == "csv":
            how.append(f"{_ENCODINGS.get(self.encoding, self.encoding)}, separator "
                       f"{self.sep!r}, decimal mark {self.decimal!r}")
        lines = [f"read {self.path.name}: " + "; ".join(how)]
        for kind in ("integer", "number", "date", "boolean"):
            names = [str(c) + (f" ({t.date_format})" if kind == "date" else "")
                     for c, t in self.typings.items() if t.kind == kind]
            if names:
                lines.append(f"  {kind}s: {', '.join(names)}")
        for column, typing in self.typings.items():
            if typing.missing:  # markers are no person's value: they may be named
                cells = ", ".join(f"{count} cell{'s' * (count > 1)} {marker!r}"
                                  for marker, count in typing.missing.items())
                lines.append(f"  column {column!r}: {cells} read as missing")
            if typing.stopped is not None:
                lines.append(f"  {column!r} kept as text: a value ({described(typing.stopped)})"
                             " does not read as the rest of the column does")
        return "\n".join(lines)


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


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def detect_encoding(path: Path) -> str:
    """The file's codec: from its BOM, else the first of UTF-8 and Windows-1252 that decodes
    every byte, else Latin-1 (which decodes anything)."""
    try:
        with _open_binary(path) as handle:
            head = handle.read(4)
            for bom, codec in _BOMS:
                if head.startswith(bom):
                    return codec
            for codec in ("utf-8", "cp1252"):
                handle.seek(0)
                decoder = codecs.getincrementaldecoder(codec)()
                try:
                    for chunk in iter(lambda: handle.read(_READ_BYTES), b""):
                        decoder.decode(chunk)
                    decoder.decode(b"", final=True)
                    return codec
                except UnicodeDecodeError:
                    continue
    except (OSError, EOFError) as error:
        raise AvatarError(f"{path}: cannot read the file ({error})") from error
    return "latin-1"


def detect_separator(path: Path, encoding: str = "utf-8") -> tuple[str, int]:
    """The CSV separator, and the lines before the header (Excel's ``sep=;`` line): the one
    of , ; tab | that splits the header into the most fields (> 1) and 90 % of the head's
    lines alike (a trailing separator allowed); for a file of one column, one that does not
    occur. Lines split differently by every separator are refused: give ``sep``."""
    if path.name.lower().endswith((".tsv", ".tsv.gz")):
        return "\t", 0
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding=encoding, errors="replace", newline="") as handle:
            lines = list(itertools.islice(handle, _SNIFF_LINES))
    except (OSError, EOFError) as error:
        raise AvatarError(f"{path}: cannot read the file ({error})") from error
    hint = re.fullmatch(r"sep=(.)\r?\n?", lines[0]) if lines else None
    if hint:
        return hint.group(1), 1
    if len(lines) == _SNIFF_LINES:  # the last line may be cut inside a quoted field
        lines = lines[:-1]
    splits = []
    for separator in SEPARATORS:
        rows = [row for row in csv.reader(lines, delimiter=separator) if row]
        header = len(rows[0]) if rows else 0
        if header > 1:
            alike = sum(len(row) in (header, header + 1) for row in rows) / len(rows)
            splits.append((alike, header, separator))
    if not splits:  # one column
        head = "".join(lines)
        return next((s for s in "\t|;," if s not in head), ","), 0
    alike, _, separator = max(splits)
    if alike < 0.9:
        raise AvatarError(
            f"{path}: no separator among , ; tab | splits the first lines alike (the best, "
            f"{separator!r}, splits {1 - alike:.0%} of them otherwise); give the separator "
            "(--sep on the command line, sep: in YAML, sep= in Python)"
        )
    return separator, 0


def detect_decimal(frame: pd.DataFrame, sep: str) -> str:
    """``,`` when the separator is not ``,`` and more cells of the first rows are written
    ``1,5`` than ``1.5``; else ``.``."""
    return "." if sep == "," else decimal_mark(frame.head(_DECIMAL_SAMPLE).stack())


def detect_line_ending(path: Path, encoding: str) -> str:
    """``\r\n`` when the file's first line ends so (Windows), else ``\n``."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding=encoding, errors="replace", newline="") as handle:
            first = handle.readline()
    except (OSError, EOFError) as error:
        raise AvatarError(f"{path}: cannot read the file ({error})") from error
    return "\r\n" if first.endswith("\r\n") else "\n"


def _check_input(path: Path) -> None:
    if not path.exists():
        raise AvatarError(f"input file {path} does not exist")
    if path.is_dir():
        raise AvatarError(f"{path} is a directory, not a table file")


NaValues = str | Sequence[str] | Mapping[Any, str | Sequence[str]]


def checked_na_values(na_values: NaValues | None,
                      columns: Any) -> dict[Any, list[str]]:
    """``na_values`` (markers for every column, or per column) as column -> markers, for
    ``columns``; markers written as numbers (YAML's ``-99``) are their text."""
    if na_values is None:
        return {}
    if isinstance(na_values, Mapping):
        unknown = [c for c in na_values if c not in columns]
        if unknown:
            raise FixableError(f"missing markers given for unknown column(s) {unknown}; "
                               f"columns: {list(columns)}", _NA_FIXES)
        return {column: _markers(markers) for column, markers in na_values.items()}
    markers = _markers(na_values)
    return dict.fromkeys(columns, markers)


def _is_marker(marker: Any) -> bool:
    return isinstance(marker, str | numbers.Real) and not isinstance(marker, bool)


def _markers(markers: Any) -> list[str]:
    if _is_marker(markers):
        markers = [markers]
    if not isinstance(markers, Sequence | set | frozenset) or not all(
            _is_marker(m) for m in markers):
        raise FixableError("missing markers must be text", {
            "python": "give na_values=['NA', '.'], or per column {'exer': ['None']}",
            "yaml": "give na_values: ['NA', '.'], or per column {exer: ['None']}; quote a "
                    "marker YAML reads otherwise ('null', '~', 'yes')"})
    return [str(marker).strip() for marker in markers]


def type_columns(frame: pd.DataFrame, *, decimal: str = ".",
                 date_format: str | Mapping[Any, str] | None = None,
                 na_values: NaValues | None = None,
                 where: str = "the table") -> tuple[pd.DataFrame, dict[Any, TextTyping]]:
    """``frame`` with each text column typed (``parsing.type_text_column``), and how each
    was typed. ``date_format``: one format for every column it reads whole (before any
    detection: it settles day/month orders), or per column (a value it does not read is an
    error). ``MISSING_MARKERS`` are missing in a column of numbers or dates; ``na_values``
    (markers for every column, or per column) in any."""
    if isinstance(date_format, Mapping):
        unknown = [c for c in date_format if c not in frame.columns]
        if unknown:
            raise AvatarError(f"{where}: date_format names unknown column(s) {unknown}; "
                              f"columns: {list(frame.columns)}")
    try:
        declared = checked_na_values(na_values, frame.columns)
    except AvatarError as error:
        raise in_context(error, where) from None
    typed, typings = {}, {}
    for column in frame.columns:
        values = frame[column]
        if not is_text(values.dtype) or isinstance(values.dtype, pd.CategoricalDtype):
            typed[column] = values
            continue
        per_column = isinstance(date_format, Mapping)
        typing = type_text_column(
            values, decimal=decimal, where=f"{where}: column {column!r}",
            date_format=date_format.get(column) if per_column else None,
            try_format=None if per_column else date_format, fix=date_format_fixes(column),
            markers=MISSING_MARKERS, na_values=declared.get(column, ()),
        )
        typed[column], typings[column] = typing.values, typing
    return pd.DataFrame(typed, index=frame.index, columns=frame.columns), typings


def read_table_file(
    path: str | Path,
    *,
    sep: str | None = None,
    decimal: str | None = None,
    encoding: str | None = None,
    date_format: str | Mapping[Any, str] | None = None,
    na_values: NaValues | None = None,
) -> TableFile:
    """The table in ``path`` (CSV or Parquet, from its name), typed, with how it was read
    (see the module docstring); ``sep``, ``decimal``, ``encoding`` and ``date_format``
    override the detection; ``na_values``: markers read as missing in any column (a list for
    every column, or per column: ``{'exer': ['None']}``), besides the empty cell and, in
    columns of numbers or dates, ``parsing.MISSING_MARKERS``."""
    path = Path(path)
    kind = table_format(path)
    _check_input(path)
    if decimal is not None and decimal not in DECIMAL_MARKS:
        raise AvatarError(f"decimal must be one of {DECIMAL_MARKS}, got {decimal!r}")
    if kind == "parquet":
        if na_values:
            raise FixableError(f"{path}: a Parquet file stores missing values as missing, "
                               "its text is not read for markers",
                               {k: v.replace("fix", "drop") for k, v in _NA_FIXES.items()})
        pyarrow = import_extra("pyarrow", "parquet", "reading Parquet files")
        try:  # typed by its writer: a text column is text ("75001" stays a code)
            frame = pd.read_parquet(path, engine="pyarrow")
        except (pyarrow.ArrowException, OSError) as error:
            raise AvatarError(f"{path}: not a readable Parquet file ({error})") from error
        return TableFile(frame, path, kind)
    if encoding is None:
        encoding = detect_encoding(path)
    else:
        check_encoding(encoding, "encoding")
    sep, skip = (sep, 0) if sep else detect_separator(path, encoding)
    try:  # index_col=False: a trailing separator never turns the first column into an index;
        # only the empty cell is missing here (markers: type_columns)
        raw = pd.read_csv(path, sep=sep, encoding=encoding, dtype=str, skiprows=skip,
                          index_col=False, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError as error:
        raise AvatarError(f"{path}: the file is empty") from error
    except pd.errors.ParserError as error:
        raise AvatarError(f"{path}: cannot parse as CSV with separator {sep!r} ({error}); "
                          "give the separator") from error
    except UnicodeDecodeError as error:
        raise AvatarError(f"{path}: not {encoding} text ({error}); give its encoding (e.g. "
                          "cp1252 or latin-1)") from error
    decimal = decimal or detect_decimal(raw, sep)
    frame, typings = type_columns(raw, decimal=decimal, date_format=date_format,
                                  na_values=na_values, where=str(path))
    return TableFile(frame, path, kind, sep, decimal, encoding, typings,
                     detect_line_ending(path, encoding))


def read_table(path: str | Path, *, sep: str | None = None, decimal: str | None = None,
               encoding: str | None = None,
               date_format: str | Mapping[Any, str] | None = None,
               na_values: NaValues | None = None) -> pd.DataFrame:
    """The table in ``path`` as a typed DataFrame (``read_table_file``'s frame): CSV with
    its separator, decimal mark and encoding detected, numbers, dates and booleans typed
    only where every value reads so (missing markers such as ``NA`` or ``.`` missing in
    them, text in a text column; ``na_values``: markers missing in any column); Parquet as
    stored."""
    return read_table_file(path, sep=sep, decimal=decimal, encoding=encoding,
                           date_format=date_format, na_values=na_values).frame


def write_table(df: pd.DataFrame, path: str | Path, *, sep: str | None = None,
                decimal: str = ".", encoding: str | None = None,
                date_formats: Mapping[Any, str] | None = None,
                booleans: Mapping[Any, tuple[str, str]] | None = None,
                line_ending: str = "\n") -> Path:
    """Write ``df`` (without its index) as CSV or Parquet, from the file name; a CSV with
    ``sep`` (default ","; a .tsv file: tab), ``decimal``, ``encoding`` (default UTF-8),
    ``line_ending``, its date columns written with ``date_formats`` (column -> strftime
    format; others ISO 8601) and its boolean columns with ``booleans`` (column -> how true
    and false are written; others ``True``/``False``). ``TableFile.write`` gives them as a
    file was read. The file appears whole or not at all (``outputs.atomic_path``)."""
    path = Path(path)
    kind = table_format(path)
    if kind == "csv" and date_formats:
        df = _dates_written(df, date_formats)
    if kind == "csv" and booleans:
        df = _booleans_written(df, booleans)
    if kind == "csv" and encoding is not None:
        check_encoding(encoding, "encoding")
    if kind == "parquet":
        import_extra("pyarrow", "parquet", "writing Parquet files")
    with atomic_path(path) as temporary:
        if kind == "parquet":
            df.to_parquet(temporary, index=False, engine="pyarrow")
        else:  # separator and compression from the name, not the temporary's
            name = path.name.lower()
            if name.endswith((".tsv", ".tsv.gz")) or sep is None:
                sep = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
            try:
                df.to_csv(temporary, index=False, sep=sep, decimal=decimal,
                          encoding=encoding or "utf-8", lineterminator=line_ending,
                          compression="gzip" if name.endswith(".gz") else None)
            except UnicodeEncodeError:  # its message quotes the value: not kept
                raise AvatarError(f"{path}: a value has a character {encoding} cannot write; "
                                  "give another encoding (e.g. utf-8)") from None
    return path


def _dates_written(df: pd.DataFrame, date_formats: Mapping[Any, str]) -> pd.DataFrame:
    """A copy of ``df`` with each date column of ``date_formats`` as text in its format
    (missing stays missing); a column that is not dates (any more) is left as it is."""
    out = df.copy(deep=False)
    for column, form in date_formats.items():
        if column in out.columns and pd.api.types.is_datetime64_any_dtype(out[column]):
            out[column] = out[column].dt.strftime(form)
    return out


def _booleans_written(df: pd.DataFrame, booleans: Mapping[Any, tuple[str, str]]
                      ) -> pd.DataFrame:
    """A copy of ``df`` with each boolean column of ``booleans`` as text in its spelling
    (missing stays missing); a column that is not booleans (any more) is left as it is."""
    out = df.copy(deep=False)
    for column, (true, false) in booleans.items():
        if column in out.columns and pd.api.types.infer_dtype(
                out[column], skipna=True) == "boolean":
            out[column] = out[column].map({True: true, False: false})
    return out


def check_encoding(encoding: str, what: str) -> None:
    """A known codec, else an error naming it as ``what`` (the option that gave it)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise AvatarError(f"{what} {encoding!r} is not a known text encoding (e.g. utf-8, "
                          "cp1252, latin-1)") from None

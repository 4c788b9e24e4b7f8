"""Text read as numbers, dates and booleans: the rules every input path shares (CSV and
Parquet files, text in SQL DATE and TIMESTAMP columns, text columns declared ``continuous``
or ``datetime``).

A column becomes a number, a date or a boolean only if EVERY non-missing value parses;
otherwise it stays text, and ``TextTyping.stopped`` keeps a value that stopped it. pandas does
the parsing (``to_numeric``, ``to_datetime``); this module only chooses the reading:

- numbers: ``.`` or ``,`` as the decimal mark (``decimal_mark``), thousands grouped by the
  other mark, a space, a no-break space or ``'`` (``1 234,5``, ``1,234.5``); codes with a
  leading zero (``007``, ``01234``) and integers of 16 digits or more (beyond float64's exact
  integers) stay text, as a careful analyst keeps them;
- dates: ISO 8601 (``1968-01-10``, ``1980-01-01 13:45``, with or without a UTC offset), day
  first (``10/01/1968``, ``10-01-1968``, ``10.01.1968``) or month first (``01/10/1968``), with
  or without a time. A column that reads both day first and month first (every day <= 12) is
  ambiguous and refused with the fix. Offsets that differ between values (daylight saving)
  are read as one instant each, in UTC;
- booleans: ``true``/``false`` in any case, their spelling kept to write them back;
- missing values: an empty cell; a marker of ``MISSING_MARKERS`` (``NA``, ``.``, ``-``,
  ``None``...) only in a column that reads as numbers or dates without its markers (a SAS
  export's ``.`` in a lab value): in a text column ``None`` or ``NA`` is a modality (MASS's
  ``survey`` writes ``None`` for "no exercise"), and a silent NaN would lose it. Markers the
  user declares (``na_values``) are missing in any column.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .errors import AvatarError, FixableError, described, rows_named

DECIMAL_MARKS = (".", ",")
ISO = "ISO8601"  # pandas' own reading of every ISO 8601 form
_TIMES = {  # a time of day after a date: its format, and how it looks
    "": "", " %H:%M": r" \d{1,2}:\d{2}", " %H:%M:%S": r" \d{1,2}:\d{2}:\d{2}",
    " %H:%M:%S.%f": r" \d{1,2}:\d{2}:\d{2}\.\d{1,6}", "T%H:%M": r"T\d{1,2}:\d{2}",
    "T%H:%M:%S": r"T\d{1,2}:\d{2}:\d{2}", " %I:%M %p": r" \d{1,2}:\d{2} [AaPp][Mm]",
    " %I:%M:%S %p": r" \d{1,2}:\d{2}:\d{2} [AaPp][Mm]",
}
_DAY_FIRST = tuple(f"%d{s}%m{s}%Y" for s in "/-.")
_MONTH_FIRST = tuple(f"%m{s}%d{s}%Y" for s in "/-")
DATE_ORDERS = {"day first": _DAY_FIRST, "month first": _MONTH_FIRST}
_GROUPING = "[ \u00a0\u202f']"  # thousands marks besides the other decimal mark
_LEADING_ZERO = r"^[+-]?0\d"
_BOOLEANS = {"true": True, "false": False}
SAMPLE = 2000  # values tried first: most text columns are ruled out on them
# missing only in a column that otherwise reads as numbers or dates: pandas' default
# na_values (but the empty cell, missing everywhere) and what SAS, SPSS and spreadsheets write
MISSING_MARKERS = frozenset({
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null", ".", "-", "--", "?",
})


def non_missing_text(values: pd.Series) -> pd.Series:
    """The non-missing values of a text column, stripped of surrounding blanks."""
    present = values[values.notna()].astype(str).str.strip()
    return present[present != ""]


def first_failure(text: pd.Series, parsed: pd.Series) -> Any:
    """A value of ``text`` (non-missing) whose parse is missing; None if all parsed."""
    failed = text[parsed.isna().to_numpy()]
    return None if failed.empty else failed.iloc[0]


def row_numbers(index: pd.Index, labels: Any) -> np.ndarray:
    """1-based rows of ``labels`` in a table indexed by ``index``: the label itself where the
    index counts rows (a RangeIndex, which a file read in chunks continues), else its
    position (an index may hold values, never quoted); none where labels repeat."""
    labels = pd.Index(labels)
    if isinstance(index, pd.RangeIndex) and index.step == 1:
        return np.asarray(labels, dtype=np.int64) + 1
    if not index.is_unique:
        return np.zeros(0, dtype=np.int64)
    return index.get_indexer(labels) + 1


def failed_cells(values: pd.Series, text: pd.Series, parsed: pd.Series) -> tuple[str, int]:
    """The cells of ``values`` (``text``: its non-missing text) whose parse is missing, in
    words that quote none (how many, their first rows, the first one's shape), and how many."""
    failed = parsed.isna().to_numpy()
    count = int(failed.sum())
    rows = row_numbers(values.index, text.index[failed][:3])
    first = described(text[failed].iloc[0]) if count else "none"
    if count > 1:
        first = f"the first {first}"
    where = f"{rows_named(rows, count)}: " if len(rows) else ""
    return f"{count:,} cell{'' if count == 1 else 's'} ({where}{first})", count


def by_value(parse: Callable[..., pd.Series]) -> Callable[..., pd.Series]:
    """``parse`` applied once per distinct value (a column of a million rows often holds a
    few thousand dates or codes), the results put back in every row."""

    @functools.wraps(parse)
    def parse_distinct(text: pd.Series, *args: Any) -> pd.Series:
        head = text.iloc[:SAMPLE]
        if head.nunique() > len(head) // 2:  # mostly distinct: factorizing would not pay
            return parse(text, *args)
        codes, uniques = pd.factorize(text)
        parsed = parse(pd.Series(uniques, dtype=object), *args)
        return pd.Series(parsed.array.take(codes, allow_fill=True), index=text.index)

    return parse_distinct


# ------------------------------------------------------------------------- numbers
def decimal_mark(cells: pd.Series) -> str:
    """``,`` when more of ``cells`` (text) are written ``1,5`` than ``1.5``; else ``.``."""
    cells = cells.astype(str).str.strip()
    commas = int(cells.str.fullmatch(r"[+-]?\d*,\d+").sum())
    points = int(cells.str.fullmatch(r"[+-]?\d*\.\d+").sum())
    return "," if commas > points else "."


def date_format_fixes(column: Any, declared: bool = False) -> dict[str, str]:
    """How to give a column's date format, per entry point: as a reading option, or as a
    declared kind (``declared``)."""
    if declared:
        return {"python": f"types={{{str(column)!r}: 'datetime:%d/%m/%Y'}}",
                "cli": f"--types {column}=datetime:%d/%m/%Y",
                "yaml": f"types: {{{column}: 'datetime:%d/%m/%Y'}}"}
    return {"python": f"date_format={{{str(column)!r}: '%d/%m/%Y'}}",
            "cli": f"--date-format {column}=%d/%m/%Y",
            "yaml": f"date_format: {{{column}: '%d/%m/%Y'}}"}


@by_value
def to_numbers(text: pd.Series, decimal: str = ".") -> pd.Series:
    """``text`` (non-missing, stripped) as float64; missing where a value is not a number:
    pandas reads what is plainly written, the rest is tried with its thousands marks taken
    out; an infinity, or a code with a leading zero (``007``), is not a number."""
    text = text.astype(str)
    plain = text.str.replace(",", ".", regex=False) if decimal == "," else text
    if decimal == ",":  # a "." is not this decimal mark: only a thousands mark, below
        plain = plain.mask(text.str.contains(".", regex=False), "")
    numbers = pd.to_numeric(plain, errors="coerce").astype(np.float64)
    failed = numbers.isna().to_numpy()
    if failed.any():
        other = "," if decimal == "." else r"\."
        grouped = (rf"[+-]?\d{{1,3}}(?:(?P<mark>{other}|{_GROUPING})\d{{3}})(?:(?P=mark)\d{{3}})*"
                   rf"(?:{re.escape(decimal)}\d+)?")
        retried = text[failed]
        retried = retried.where(retried.str.fullmatch(grouped), "").str.replace(
            rf"{other}|{_GROUPING}", "", regex=True).str.replace(",", ".", regex=False)
        numbers[failed] = pd.to_numeric(retried, errors="coerce").to_numpy(np.float64)
    codes = text.str.match(_LEADING_ZERO) & ~text.str.match(r"^[+-]?0[.,]")
    long_integers = text.str.fullmatch(r"[+-]?\d{16,}")  # beyond float64's exact integers
    return numbers.mask((codes | long_integers).to_numpy() | np.isinf(numbers.to_numpy()))


# --------------------------------------------------------------------------- dates
def _parse_with(text: pd.Series, formats: tuple[str, ...]) -> pd.Series:
    """Each value read by the one of ``formats`` written with its separator and its time of
    day (NaT if it does not read): one parse per shape present, not per format."""
    out = pd.Series(pd.NaT, index=text.index, dtype="datetime64[us]")
    shape = text.str.extract(r"^\d{1,4}(?P<sep>[-/.])\d{1,2}[-/.]\d{1,4}(?P<time>.*)$")
    for time, pattern in _TIMES.items():
        timed = shape["time"].str.fullmatch(pattern).fillna(False).to_numpy(bool)
        for date_format in formats:
            rows = timed & (shape["sep"] == date_format[2]).to_numpy()
            if rows.any():
                parsed = pd.to_datetime(text[rows], format=date_format + time, errors="coerce")
                out[rows] = parsed.to_numpy()
    return out


def parse_iso(text: pd.Series) -> pd.Series:
    """ISO 8601 text as datetimes (NaT where not ISO); offsets that differ between values
    (daylight saving) give one instant each, in UTC."""
    try:
        return pd.to_datetime(text, format=ISO, errors="coerce")
    except ValueError:  # mixed offsets: pandas asks for one time zone
        return pd.to_datetime(text, format=ISO, errors="coerce", utc=True)


@by_value
def to_datetimes(text: pd.Series, reading: str | None = None) -> pd.Series:
    """``text`` (non-missing, stripped) as datetimes; ``reading``: None or ``ISO8601``, a
    key of ``DATE_ORDERS`` ("day first", "month first": with or without a time) or a
    ``strptime`` format. NaT where a value does not read."""
    text = text.astype(str)
    if reading in (None, ISO):
        return parse_iso(text)
    if reading in DATE_ORDERS:
        return _parse_with(text, DATE_ORDERS[reading])
    try:
        return pd.to_datetime(text, format=reading, errors="coerce")
    except ValueError:  # offsets that differ between values (%z)
        return pd.to_datetime(text, format=reading, errors="coerce", utc=True)


def detect_date_reading(text: pd.Series, where: str,
                        fix: str | Mapping[str, str]) -> str | None:
    """The reading of ``text`` (non-missing, stripped) that reads every value as a date:
    ``ISO8601``, "day first" or "month first"; None if none does. Both orders reading every
    value is refused (``fix``: how to give the format, per entry point: "python", "cli",
    "yaml"; a text is the Python one)."""
    distinct = pd.Series(text.unique())
    if distinct.empty or not distinct.str.match(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}").all():
        return None
    if to_datetimes(distinct, ISO).notna().all():
        return ISO
    readings = [order for order in DATE_ORDERS if to_datetimes(distinct, order).notna().all()]
    if len(readings) > 1:
        fixes = {"python": fix} if isinstance(fix, str) else fix
        raise FixableError(
            f"{where}: its dates (the first {described(text.iloc[0])}) read both day first "
            "and month first",
            {entry: f"give the format, {words}" for entry, words in fixes.items()},
        )
    return readings[0] if readings else None


def time_parts(text: pd.Series) -> int:
    """The time of day dates written as ``text`` carry: 0 none, 1 hours and minutes, 2 with
    seconds."""
    return int(text.str.contains(":").any()) + int(text.str.count(":").ge(2).any())


def written_date_format(example: str, reading: str, times: int) -> str:
    """The strftime format that writes dates as ``example`` (read by ``reading``, with
    ``times`` as ``time_parts``) is written: a given format as it is; ISO 8601, day or month
    first with the example's separators."""
    if reading not in DATE_ORDERS and reading != ISO:
        return reading
    clock = ("", " %H:%M", " %H:%M:%S")[times]
    if reading == ISO:
        separator = "T" if "T" in example else " "
        return "%Y-%m-%d" + clock.replace(" ", separator)
    separator = next(c for c in example if not c.isdigit())
    first, second = ("%d", "%m") if reading == "day first" else ("%m", "%d")
    return f"{first}{separator}{second}{separator}%Y{clock}"


# ----------------------------------------------------------------------- a column
@dataclass(frozen=True)
class TextTyping:
    """How a text column was read: ``kind`` "number", "integer", "date", "boolean" or
    "text"; ``date_format`` for dates (a reading of ``to_datetimes``), ``written_format``
    how they were written (``written_date_format``); ``spelling`` how booleans were
    written (``boolean_spelling``); ``stopped``: for a column kept as text that mostly
    parsed as numbers or dates, a value that stopped it; ``missing``: the cells each
    missing marker (or declared ``na_values``) made missing."""

    kind: str
    values: pd.Series
    date_format: str | None = None
    stopped: Any = None
    written_format: str | None = None  # dates: the strftime format they were written in
    missing: dict[str, int] = field(default_factory=dict)  # marker -> cells read as missing
    spelling: tuple[str, str] | None = None  # booleans: how true and false were written


def _text_kept(values: pd.Series, stopped: Any = None,
               missing: dict[str, int] | None = None) -> TextTyping:
    return TextTyping("text", values, stopped=stopped, missing=missing or {})


def _dates(values: pd.Series, text: pd.Series, parsed: pd.Series, reading: str) -> TextTyping:
    """A column read as dates, with the format its values were written in (None: ISO 8601
    with offsets, which pandas writes back as read)."""
    offsets = reading == ISO and getattr(parsed.dtype, "tz", None) is not None
    written = None if offsets else written_date_format(text.iloc[0], reading, time_parts(text))
    return TextTyping("date", _placed(values, parsed), reading, written_format=written)


def type_text_column(
    values: pd.Series, *, decimal: str, date_format: str | None, where: str,
    fix: str | Mapping[str, str], try_format: str | None = None,
    markers: Collection[str] = (), na_values: Collection[str] = (),
) -> TextTyping:
    """A text column as numbers, dates or booleans when every non-missing value reads so
    (see the module docstring); ``date_format`` forces a date reading, and a value it does
    not read is an error naming ``where``; ``try_format`` is a date reading tried first, kept
    when it reads every value (it settles day/month orders). ``markers`` (``MISSING_MARKERS``
    for a file) are missing if the column reads as numbers or dates without them, else kept
    as text; ``na_values`` are missing whatever the column holds (both after stripping)."""
    text = non_missing_text(values)
    declared: dict[str, int] = {}
    if na_values:
        forced = text.isin(list(na_values)).to_numpy()
        if forced.any():
            declared = _counted(text[forced])
            values = values.where(~values.index.isin(text.index[forced]))
            text = text[~forced]
    found = text.isin(list(markers)).to_numpy() if markers else None
    if found is not None and found.any() and not found.all():
        trial = _typed(values, text[~found], decimal, date_format, where, fix, try_format)
        if trial.kind in ("number", "integer", "date"):
            return replace(trial, missing=declared | _counted(text[found]))
        # text with or without its markers: they are modalities (None, NA...)
        return _text_kept(values, trial.stopped, declared)
    typing = _typed(values, text, decimal, date_format, where, fix, try_format)
    return replace(typing, missing=declared) if declared else typing


def _counted(markers: pd.Series) -> dict[str, int]:
    """How many cells hold each marker, the most frequent first."""
    return {str(marker): int(count) for marker, count in markers.value_counts().items()}


def _typed(values: pd.Series, text: pd.Series, decimal: str, date_format: str | None,
           where: str, fix: str | Mapping[str, str], try_format: str | None) -> TextTyping:
    """``type_text_column`` on ``text``, the non-missing values of ``values`` (``values``'
    other rows are missing once typed)."""
    if try_format is not None and date_format is None and len(text):
        parsed = to_datetimes(text, try_format)
        if parsed.notna().all():
            return _dates(values, text, parsed, try_format)
    if date_format is not None:
        parsed = to_datetimes(text, date_format)
        cells, failed = failed_cells(values, text, parsed)
        if failed:
            raise AvatarError(f"{where}: {cells} {'does' if failed == 1 else 'do'} not read "
                              f"as a date with format {date_format!r}")
        return _dates(values, text, parsed, date_format)
    if text.empty:
        return _text_kept(values)
    lowered = text.str.lower()
    if lowered.isin(list(_BOOLEANS)).all():
        booleans = _placed(values, lowered.map(_BOOLEANS).astype(bool), boolean=True)
        return TextTyping("boolean", booleans, spelling=boolean_spelling(text))
    sample = text.iloc[:SAMPLE]
    numbers = to_numbers(sample, decimal)
    if numbers.notna().all():
        if len(text) > len(sample):  # the rest, once the sample reads
            numbers = to_numbers(text, decimal)
        if numbers.notna().all():
            whole = bool((numbers == np.floor(numbers)).all()) and not text.str.contains(
                f"[{re.escape(decimal)}eE]", regex=True).any()
            return TextTyping("integer" if whole else "number", _placed(values, numbers,
                              integer=whole))
        return _text_kept(values, first_failure(text, numbers))
    found = detect_date_reading(text, where, fix)
    if found is not None:
        return _dates(values, text, to_datetimes(text, found), found)
    if numbers.notna().mean() >= 0.5:
        return _text_kept(values, first_failure(sample, numbers))
    dates = parse_iso(sample)
    if dates.notna().mean() >= 0.5:
        return _text_kept(values, first_failure(sample, dates))
    return _text_kept(values)


def boolean_spelling(text: pd.Series) -> tuple[str, str]:
    """How ``text`` (``true``/``false`` in any case) writes true and false: each as most of
    its values are; one never written, in the case of the other (``TRUE`` gives ``FALSE``)."""
    spelt = {}
    for word in _BOOLEANS:
        written = text[text.str.lower() == word]
        if len(written):
            spelt[word] = written.value_counts().index[0]
    for word, other in (("true", "false"), ("false", "true")):
        if word not in spelt:
            model = spelt[other]
            spelt[word] = (word.upper() if model.isupper() else word.title()
                           if model[0].isupper() else word)
    return spelt["true"], spelt["false"]


def _placed(values: pd.Series, parsed: pd.Series, integer: bool = False,
            boolean: bool = False) -> pd.Series:
    """``parsed`` (for the non-missing values) put back in ``values``' rows, missing
    elsewhere: integers as int64 (Int64 with a missing value), booleans as bool (object with
    a missing value)."""
    if boolean:
        if len(parsed) == len(values):
            return pd.Series(parsed.to_numpy(), index=values.index, name=values.name)
        out = pd.Series(None, index=values.index, name=values.name, dtype=object)
        out[parsed.index] = parsed.to_numpy()
        return out
    out = parsed.reindex(values.index)
    if integer:
        out = out.astype("Int64") if out.isna().any() else out.astype(np.int64)
    out.name = values.name
    return out

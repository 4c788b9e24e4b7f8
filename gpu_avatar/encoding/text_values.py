"""Text columns declared ``continuous`` or ``datetime``: read as numbers or dates by the
shared rules of ``gpu_avatar.parsing``, and written back as text the way the originals are
written (decimal mark and the decimals most values show; the date order, separator and time
of day).

A value that does not read is an error naming the column and the value's row and shape
(never the value): a declaration is a promise about every value, and a silent NaN would
lose it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, FixableError
from ..parameters import date_format_of, is_datetime_kind
from ..parsing import (
    ISO,
    SAMPLE,
    date_format_fixes,
    decimal_mark,
    detect_date_reading,
    failed_cells,
    non_missing_text,
    time_parts,
    to_datetimes,
    to_numbers,
    written_date_format,
)
from .precision import add_counts, typical_decimals

SECONDS_PER_DAY = 86400
_NANOS = 10**9


@dataclass
class TextValues:
    """How one text column is read (``reading``: "number", or a reading of
    ``parsing.to_datetimes``) and written back (``decimal`` and ``decimals`` for numbers;
    ``date_format``, a strftime format, for dates)."""

    column: Any
    reading: str
    decimal: str = "."
    decimals: int | None = 0  # None: as many as float64 holds (scientific notation)
    decimal_counts: np.ndarray | None = None  # numbers: values per decimals written
    date_format: str | None = None
    times: int = 0  # dates: 0 none, 1 hours and minutes, 2 with seconds

    @classmethod
    def declared(cls, series: pd.Series, kind: str) -> TextValues:
        """The reading of ``series`` declared ``kind`` ("continuous", "datetime" or
        "datetime:FORMAT"), decided on its first chunk."""
        text = non_missing_text(series)
        where = f"column {series.name!r}"
        if is_datetime_kind(kind):
            fixes = date_format_fixes(series.name, declared=True)
            reading = date_format_of(kind) or detect_date_reading(text, where, fixes)
            if reading is None:
                unread = to_datetimes(text, ISO).isna() & to_datetimes(text, "day first").isna()
                cells, count = failed_cells(series, text, unread.where(~unread))
                raise FixableError(
                    f"{where} is declared datetime but {cells} {'is' if count == 1 else 'are'}"
                    " not a date in ISO 8601 or day/month/year order",
                    {entry: f"give its format (strptime codes), {fix}"
                     for entry, fix in fixes.items()},
                )
            given = date_format_of(kind)
            times = 0 if given is None else (2 if "%S" in given else int("%H" in given))
            return cls(series.name, reading, date_format=given, times=times)
        return cls(series.name, "number", decimal=decimal_mark(text.iloc[:SAMPLE]))

    @property
    def is_date(self) -> bool:
        return self.reading != "number"

    def _parsed(self, series: pd.Series) -> tuple[pd.Series, pd.Series]:
        """The non-missing text and its values; a value that does not read is an error."""
        text = non_missing_text(series)
        parsed = to_datetimes(text, self.reading) if self.is_date else to_numbers(
            text, self.decimal)
        cells, failed = failed_cells(series, text, parsed)
        if failed:
            what = (f"a date ({self.reading})" if self.is_date else
                    f"a number (decimal mark {self.decimal!r})")
            dates = not self.is_date and to_datetimes(text.iloc[:SAMPLE]).notna().all()
            instead = "'datetime'" if dates else "'categorical'"
            raise AvatarError(
                f"column {self.column!r} is declared {'datetime' if self.is_date else 'continuous'}"
                f" but {cells} {'does' if failed == 1 else 'do'} not read as {what}; fix "
                f"{'it' if failed == 1 else 'them'}, or declare the column {instead}"
            )
        return text, parsed

    def add(self, series: pd.Series) -> None:
        """Learn from a chunk how its values are written (the decimals most values are
        written with, ``precision.typical_decimals``; the time of day)."""
        text, _ = self._parsed(series)
        if self.is_date:
            self.times = max(self.times, time_parts(text))
        else:
            digits = text.str.extract(rf"{re.escape(self.decimal)}(\d+)$", expand=False)
            if text.str.contains("[eE]").any():  # scientific notation: written as read
                self.decimals = None
            else:
                self._count(np.bincount(digits.str.len().fillna(0).to_numpy(np.int64)))
        if self.is_date and self.date_format is None and len(text):
            self.date_format = written_date_format(text.iloc[0], self.reading, self.times)

    def _count(self, counts: np.ndarray | None) -> None:
        self.decimal_counts = add_counts(self.decimal_counts, counts)
        if self.decimals is not None and self.decimal_counts is not None:
            self.decimals = typical_decimals(self.decimal_counts)

    def blank(self) -> TextValues:
        """The same reading, with nothing learnt from rows yet."""
        return TextValues(self.column, self.reading, self.decimal, 0,
                          self.date_format if self.reading != "number" else None)

    def merge(self, other: TextValues) -> None:
        """Add what ``other`` (a ``blank`` of this one) learnt from other rows."""
        self.times = max(self.times, other.times)
        if other.decimals is None:
            self.decimals = None
        self._count(other.decimal_counts)
        if self.date_format is None:
            self.date_format = other.date_format

    def values(self, series: pd.Series) -> np.ndarray:
        """float64 values (dates: seconds since the epoch, UTC), NaN where missing."""
        _, parsed = self._parsed(series)
        out = np.full(len(series), np.nan)
        if self.is_date:
            ticks = parsed.dt.as_unit("ns").array.asi8.astype(np.float64) / _NANOS
            out[series.index.get_indexer(parsed.index)] = ticks
        else:
            out[series.index.get_indexer(parsed.index)] = parsed.to_numpy()
        return out

    def decode(self, values: np.ndarray, mask: np.ndarray | None, dtype: Any) -> pd.Series:
        """Avatar values written as the originals are, in the column's text ``dtype``."""
        if self.is_date:
            step = SECONDS_PER_DAY if self.times == 0 else (60 if self.times == 1 else 1)
            seconds = np.rint(values / step) * step
            times = pd.to_datetime(seconds.astype(np.int64), unit="s")
            written = pd.Series(times.strftime(self.date_format), dtype=object)
        else:
            if self.decimals is None:  # the shortest text that reads back as the value
                written = pd.Series(values).map(lambda v: repr(float(v))).astype(object)
            else:
                written = pd.Series(np.char.mod(f"%.{self.decimals}f",
                                                np.round(values, self.decimals)), dtype=object)
            if self.decimal != ".":
                written = written.str.replace(".", self.decimal, regex=False)
        if mask is not None:
            written[mask] = None
        return written.astype(dtype)

"""SQL column types <-> pandas columns, both ways, by one table of rules.

Each SQL type falls in one family that says how its values are read into pandas (and so which
kind the avatarization gives them: ``encoding.kinds``) and how avatars are written back:

==========  ==================================  ===============  ===========================
family      SQL types                           pandas           kind
==========  ==================================  ===============  ===========================
integer     SMALLINT, INTEGER, BIGINT           int64 (float64   continuous (written back as
                                                with NULLs)      integers)
float       REAL, DOUBLE, FLOAT                 float64          continuous
numeric     NUMERIC, DECIMAL                    float64          continuous (numeric codes
                                                                 stay numbers)
boolean     BOOLEAN                             bool (object     categorical
                                                with NULLs)
date        DATE                                datetime64       continuous
datetime    TIMESTAMP, with or without zone     datetime64       continuous
                                                (UTC if zoned)
interval    INTERVAL                            timedelta64      continuous
uuid        UUID                                str              categorical (identifier
                                                                 as a key: fresh UUIDs)
text        TEXT, VARCHAR, CHAR, ENUM           str (object      categorical
                                                before pandas 3)
==========  ==================================  ===============  ===========================

Other types (JSON, BYTEA, TIME, arrays, geometry...) are refused, naming the column.

Dates and times held as text (SQLite stores them so: ``1980-12-31``, ``31/12/1980``,
``1980-01-01 13:45``, ``2024-03-30T10:00+01:00``) are read by the rules every input path
shares (``gpu_avatar.parsing``), for the whole column at once; a value none reads is refused,
naming the column and the value. UTC offsets that differ between values (daylight saving)
give one instant each, in UTC.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.kinds import is_text
from ..errors import AvatarError, FixableError
from ..parsing import (
    DATE_ORDERS,
    ISO,
    detect_date_reading,
    failed_cells,
    non_missing_text,
    to_datetimes,
)

TEXT_DTYPE = pd.Series(["text"]).dtype  # what pandas gives text: str (pandas 3) or object
TABLES_FIX = {"python": "tables=[...]", "cli": "--tables", "yaml": "include: [...]"}  # read


def family(sql_type: Any, where: str) -> str:
    """The family of a SQLAlchemy type (reflected or generic); ``where``: ``table.column``."""
    import sqlalchemy as sa

    declared = sql_type
    if isinstance(sql_type, sa.types.NullType):
        declared = "(none SQLAlchemy recognises)"
    try:
        sql_type = sql_type.as_generic()  # a dialect's INTERVAL, ENUM...: their generic class
    except NotImplementedError:
        pass
    # the most specific classes first: Enum is a String, Integer is not a Numeric here
    # but Float is one, and a dialect's TIMESTAMP is a DateTime
    for cls, name in (
        (sa.Boolean, "boolean"),
        (sa.Integer, "integer"),
        (sa.Float, "float"),
        (sa.Numeric, "numeric"),
        (sa.DateTime, "datetime"),
        (sa.Date, "date"),
        (sa.Interval, "interval"),
        (sa.Uuid, "uuid"),
        (sa.String, "text"),
        (sa.Enum, "text"),
    ):
        if isinstance(sql_type, cls):
            return name
    raise FixableError(
        f"column {where} has SQL type {declared}, which cannot be avatarized (supported: "
        "integers, floats, numerics, booleans, dates, timestamps, intervals, UUIDs and text)",
        {entry: f"drop or convert the column, or leave its table out with {fix}"
         for entry, fix in TABLES_FIX.items()},
    )


def to_series(values: list, kind: str, name: Any, key: bool = False) -> pd.Series:
    """One column's values as the DBAPI returned them, as a pandas column of its family
    (``key``: a primary or foreign key, whose integers must stay exact); dates and times as
    they came, for ``to_dates`` once the column is whole."""
    if kind in ("integer", "float", "numeric"):
        # SQLite stores what it is given: an INTEGER column may hold reals, kept as floats
        if kind == "integer" and all(type(v) is int for v in values):
            return pd.Series(np.array(values, dtype=np.int64), name=name)
        if key and kind == "integer" and all(v is None or type(v) is int for v in values):
            return pd.Series(pd.array(values, dtype="Int64"), name=name)
        array = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
        return pd.Series(array, name=name)
    if kind == "boolean":
        if None not in values:
            return pd.Series(np.array(values, dtype=bool), name=name)
        return pd.Series(values, name=name, dtype=object)
    if kind in ("date", "datetime"):
        return pd.Series(values, name=name, dtype=object)
    if kind == "interval":
        return pd.Series(pd.to_timedelta(values), name=name)
    if kind == "uuid":
        values = [None if v is None else str(v) for v in values]
    # text as read_csv gives it, whatever the chunk holds (all NULL included)
    return pd.Series(values, name=name, dtype=TEXT_DTYPE)


def to_dates(values: pd.Series, zoned: bool, where: str) -> pd.Series:
    """A whole DATE or TIMESTAMP column (``to_series``'s) as datetime64: the driver's dates
    and times as they are (UTC if ``zoned``), text by the shared rules (module docstring);
    anything else is refused naming ``where`` (``table.column``) and the value's rows."""
    present = values.dropna()
    text = present.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    dates = present.map(lambda v: isinstance(v, datetime.date)).to_numpy(dtype=bool)
    if not (text.all() or dates.all()):  # numbers in an SQLite DATE column, say
        odd = ~text if text.any() else ~dates
        cells, count = failed_cells(values, present, present.where(~odd))
        raise AvatarError(
            f"column {where} holds {cells} that "
            f"{'is not a date' if count == 1 else 'are not dates'}; store its dates as text "
            "(ISO 8601: 1980-12-31 13:45) or convert the column in the database"
        )
    if not text.any():
        return pd.Series(pd.to_datetime(values, utc=zoned), name=values.name)
    strings = non_missing_text(present)
    reading = detect_date_reading(strings, f"column {where}",
                                  "rewriting them as ISO 8601 (1980-12-31) in the database")
    # without one reading for every value: the reading that reads the most, to name a failure
    parsed = max((to_datetimes(strings, r) for r in ([reading] if reading else
                                                      [ISO, *DATE_ORDERS])),
                 key=lambda dates: int(dates.notna().sum()))
    cells, failed = failed_cells(values, strings, parsed)
    if failed:
        raise AvatarError(
            f"column {where} holds {cells} that {'does' if failed == 1 else 'do'} not read "
            "as a date like the others (ISO 8601 1980-12-31 13:45, day first 31/12/1980 or "
            "month first 12/31/1980, one for the whole column); fix or convert it in the "
            "database"
        )
    if parsed.dt.tz is not None:  # one offset for every value: the same instants, in UTC
        parsed = parsed.dt.tz_convert("UTC")
    elif zoned:
        parsed = parsed.dt.tz_localize("UTC")
    return parsed.reindex(values.index).rename(values.name)


def sql_type_of(series: pd.Series):
    """A generic SQL type for a column that came from no database (a DataFrame or a file)."""
    import sqlalchemy as sa

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) and not is_text(dtype):  # numeric codes
        dtype = dtype.categories.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return sa.Boolean()
    if pd.api.types.is_integer_dtype(dtype):
        return sa.BigInteger()
    if pd.api.types.is_float_dtype(dtype):
        return sa.Double()
    if isinstance(dtype, pd.DatetimeTZDtype):
        return sa.DateTime(timezone=True)
    if pd.api.types.is_datetime64_dtype(dtype):
        return sa.DateTime()
    if pd.api.types.is_timedelta64_dtype(dtype):
        return sa.Interval()
    if pd.api.types.infer_dtype(series, skipna=True) == "boolean":
        return sa.Boolean()
    return sa.Text()


def _as_uuid(value: Any, scope: uuid.UUID) -> uuid.UUID:
    """A UUID kept, or a fresh identifier ("avatar_<i>") as a name-based UUID of ``scope``."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return uuid.uuid5(scope, str(value))


def _objects(values: pd.Series, missing: np.ndarray, convert) -> list:
    return [None if m else convert(v) for v, m in zip(values, missing, strict=True)]


def to_values(series: pd.Series, kind: str, scope: uuid.UUID | None = None) -> list:
    """An avatar column as the values the DBAPI takes for its family (None where missing);
    ``scope``: the namespace of a UUID column's fresh values."""
    missing = series.isna().to_numpy()
    if kind == "date":
        return _objects(series, missing, lambda v: v.date())
    if kind == "datetime":  # to microseconds: what SQL timestamps hold
        return _objects(series.dt.floor("us"), missing, lambda v: v.to_pydatetime())
    if kind == "interval":
        return _objects(series.dt.floor("us"), missing, lambda v: v.to_pytimedelta())
    if kind == "boolean":
        return _objects(series, missing, bool)
    if kind == "text":
        return _objects(series, missing, str)
    if kind == "uuid":
        return _objects(series, missing, lambda value: _as_uuid(value, scope))
    if kind == "integer" and pd.api.types.is_integer_dtype(series.dtype) and not missing.any():
        return series.to_numpy(dtype=np.int64).tolist()  # no detour by float64: 64 bits kept
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind == "integer":
        values = np.rint(np.where(missing, 0, values)).astype(np.int64)
    out = values.tolist()
    for position in np.flatnonzero(missing):
        out[position] = None
    return out

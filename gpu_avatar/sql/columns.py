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
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.kinds import is_text
from ..errors import AvatarError

TEXT_DTYPE = pd.Series(["text"]).dtype  # what pandas gives text: str (pandas 3) or object


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
    raise AvatarError(
        f"column {where} has SQL type {declared}, which cannot be avatarized (supported: "
        "integers, floats, numerics, booleans, dates, timestamps, intervals, UUIDs and text); "
        "drop or convert the column, or leave its table out with tables=[...]"
    )


def to_series(values: list, kind: str, name: Any, timezone: bool = False,
              key: bool = False) -> pd.Series:
    """One column's values as the DBAPI returned them, as a pandas column of its family
    (``key``: a primary or foreign key, whose integers must stay exact)."""
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
        return pd.Series(pd.to_datetime(values, utc=timezone), name=name)
    if kind == "interval":
        return pd.Series(pd.to_timedelta(values), name=name)
    if kind == "uuid":
        values = [None if v is None else str(v) for v in values]
    # text as read_csv gives it, whatever the chunk holds (all NULL included)
    return pd.Series(values, name=name, dtype=TEXT_DTYPE)


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

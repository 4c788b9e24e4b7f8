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

from ..errors import AvatarError

FAMILIES = ("integer", "float", "numeric", "boolean", "date", "datetime", "interval", "uuid",
            "text")
# Fresh keys of a UUID column: the library's fresh text identifiers ("avatar_<i>", numbered in
# the release order) turned into name-based UUIDs, the same in a parent and its children.
FRESH_UUIDS = uuid.uuid5(uuid.NAMESPACE_OID, "gpu_avatar.fresh_keys")


def family(sql_type: Any, where: str) -> str:
    """The family of a SQLAlchemy type (reflected or generic); ``where``: ``table.column``."""
    import sqlalchemy as sa

    declared = sql_type
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


def to_series(values: list, kind: str, name: Any, timezone: bool = False) -> pd.Series:
    """One column's values as the DBAPI returned them, as a pandas column of its family."""
    if kind in ("integer", "float", "numeric"):
        # SQLite stores what it is given: an INTEGER column may hold reals, kept as floats
        if kind == "integer" and all(type(v) is int for v in values):
            return pd.Series(np.array(values, dtype=np.int64), name=name)
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
    # text: the dtype pandas infers (str under pandas 3, object before), as read_csv's
    return pd.Series(values, name=name, dtype=None if values else object)


def sql_type_of(series: pd.Series):
    """A generic SQL type for a column that came from no database (a DataFrame or a file)."""
    import sqlalchemy as sa

    dtype = series.dtype
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


def _as_uuid(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:  # a fresh identifier
        return uuid.uuid5(FRESH_UUIDS, str(value))


def _objects(values: pd.Series, missing: np.ndarray, convert) -> list:
    return [None if m else convert(v) for v, m in zip(values, missing, strict=True)]


def to_values(series: pd.Series, kind: str) -> list:
    """An avatar column as the values the DBAPI takes for its family (None where missing)."""
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
        return _objects(series, missing, _as_uuid)
    if kind == "integer" and pd.api.types.is_integer_dtype(series.dtype) and not missing.any():
        return series.to_numpy(dtype=np.int64).tolist()  # no detour by float64: 64 bits kept
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind == "integer":
        values = np.rint(np.where(missing, 0, values)).astype(np.int64)
    out = values.tolist()
    for position in np.flatnonzero(missing):
        out[position] = None
    return out

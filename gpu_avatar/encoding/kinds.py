"""Column kinds and the checks every table passes before it is encoded.

A column is ``continuous`` (numbers; datetimes and timedeltas, as seconds), ``categorical``
(text held as object, str, string or category; booleans; category) or an ``identifier`` (only
when declared: left out of the projection, given fresh values). ``detect_kind`` decides from
the dtype; ``types`` overrides it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import AvatarError, AvatarTypeError
from ..parameters import KINDS

CONTINUOUS, CATEGORICAL, IDENTIFIER = KINDS


def is_datetime(dtype: Any) -> bool:
    return isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype)


def is_timedelta(dtype: Any) -> bool:
    return pd.api.types.is_timedelta64_dtype(dtype)


def is_number(dtype: Any) -> bool:
    """Integers and floats (nullable ones included), not booleans."""
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def is_text(dtype: Any) -> bool:
    """Text held as object, str (pandas 3), string (python or pyarrow) or a category of it."""
    if isinstance(dtype, pd.CategoricalDtype):
        return is_text(dtype.categories.dtype)
    return pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype)


def same_values_kind(fitted: Any, given: Any) -> bool:
    """Whether a column of dtype ``given`` holds the kind of values learnt from ``fitted``:
    the same dtype, text both, numbers both (other widths) or booleans both."""
    if fitted == given or (is_text(fitted) and is_text(given)):
        return True
    if pd.api.types.is_bool_dtype(fitted) or pd.api.types.is_bool_dtype(given):
        return pd.api.types.is_bool_dtype(fitted) and pd.api.types.is_bool_dtype(given)
    numeric = pd.api.types.is_numeric_dtype
    return numeric(fitted) and numeric(given)


def detect_kind(series: pd.Series) -> str:
    """The kind of a column from its dtype (and, for text, its values)."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return CATEGORICAL
    if is_datetime(dtype) or is_timedelta(dtype):
        return CONTINUOUS
    if pd.api.types.is_complex_dtype(dtype):
        raise AvatarError(
            f"column {series.name!r} has complex dtype {dtype}, which is not supported: split it "
            "into real and imaginary columns"
        )
    if pd.api.types.is_numeric_dtype(dtype):
        return CONTINUOUS
    if is_text(dtype):
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        if inferred.startswith("mixed") or inferred in ("complex", "bytes", "decimal", "period"):
            raise AvatarError(
                f"column {series.name!r} holds values of mixed or unsupported types "
                f"({inferred}); convert it to one type (e.g. df[{series.name!r}].astype(str))"
            )
        return CATEGORICAL
    raise AvatarError(
        f"column {series.name!r} has unsupported dtype {dtype}; supported: numbers, bool, "
        "text, category, datetime and timedelta"
    )


def check_structure(df: Any, argument: str = "the table") -> None:
    """A DataFrame with uniquely named columns (what any chunk of a table must be)."""
    if not isinstance(df, pd.DataFrame):
        raise AvatarTypeError(
            f"{argument} must be a pandas (or cuDF) DataFrame, got {type(df).__name__}"
        )
    duplicated = df.columns[df.columns.duplicated()].unique().tolist()
    if duplicated:
        raise AvatarError(f"duplicate column name(s) {duplicated}; rename them to be unique")


def validate_table(df: Any, argument: str = "the table") -> None:
    """Reject what no projection can handle, naming the column and the fix."""
    check_structure(df, argument)
    if df.shape[0] < 3 or df.shape[1] == 0:
        state = "is empty" if 0 in df.shape else f"has {df.shape[0]} row(s)"
        raise AvatarError(
            f"{argument} {state} (shape {df.shape}); give at least 3 rows (a row and its k >= 2 "
            "neighbours) and 1 column"
        )
    all_missing = df.columns[df.isna().all().to_numpy()].tolist()
    if all_missing:
        raise AvatarError(
            f"column(s) {all_missing} have no non-missing value; drop them before avatarizing"
        )

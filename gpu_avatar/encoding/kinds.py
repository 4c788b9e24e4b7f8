"""Column kinds and the checks every table passes before it is encoded.

A column is ``continuous`` (numbers; datetimes and timedeltas, as seconds), ``categorical``
(text held as object, str, string or category; booleans; category); only when declared, an
``identifier`` (left out of the projection, given fresh values or pseudonyms), ``excluded``
(left out of the method, reattached) or ``dropped`` (left out of the release).
``detect_kind`` decides from the dtype; ``types`` overrides it. ``column_scales``: a
continuous column whose spread is negligible against its magnitude is a constant wherever
columns are scaled.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, AvatarTypeError
from ..parameters import KINDS

CONTINUOUS, CATEGORICAL, IDENTIFIER, EXCLUDED, DROPPED = KINDS
VARIABLE_KINDS = (CONTINUOUS, CATEGORICAL)  # the columns the method projects and avatarizes
# Float64 rounding alone spreads a constant: a sum of n values carries a relative error up to
# n * 1.1e-16 (pandas' and numpy's group sums add in sequence), so that averaging, aggregating
# or converting equal values leaves them up to ~1e-9 apart for millions of terms. A recorded
# variable varies in its first nine significant digits.
CONSTANT_SPREAD = 1e-9  # relative to the column's magnitude


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


def column_scales(spread: Any, magnitude: Any) -> np.ndarray:
    """The divisors that scale continuous columns: each one's ``spread`` (a std or a range),
    infinite where that spread is at most ``CONSTANT_SPREAD`` of the column's ``magnitude``
    (its mean) or float64's smallest normal: such a column is a constant, and its scaled
    values are 0, so that rounding noise is never magnified into a variable. Used by the
    projections (avatarization, metrics, scenarios), the k-NN imputation and the attacks."""
    spread = np.asarray(spread, dtype=np.float64)
    negligible = np.maximum(CONSTANT_SPREAD * np.abs(magnitude), np.finfo(np.float64).tiny)
    return np.where(spread <= negligible, np.inf, spread)


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
    """A DataFrame with uniquely named, dense columns (what any chunk of a table must be)."""
    if not isinstance(df, pd.DataFrame):
        module = type(df).__module__.split(".")[0]
        origin = "" if module in ("builtins", "numpy", "pandas") else f" of {module}"
        lazy = ": .compute() it first" if hasattr(df, "compute") else ""
        raise AvatarTypeError(
            f"{argument} must be a pandas (or cuDF) DataFrame, got {type(df).__name__}{origin}"
            f"{lazy}"
        )
    duplicated = df.columns[df.columns.duplicated()].unique().tolist()
    if duplicated:
        raise AvatarError(f"{argument}: duplicate column name(s) {duplicated}; rename them to "
                          "be unique")
    sparse = [c for c, dtype in df.dtypes.items() if isinstance(dtype, pd.SparseDtype)]
    if sparse:
        raise AvatarError(f"{argument}: column(s) {sparse} are sparse; make them dense first: "
                          f"df[{sparse[0]!r}] = df[{sparse[0]!r}].sparse.to_dense()")


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

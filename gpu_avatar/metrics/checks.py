"""Checks shared by the privacy and signal metrics: the avatars must be the original table's
columns, with compatible dtypes (text held as object, str, string or category counts as one),
and variable arguments must name columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import validate_table
from ..encoding.kinds import is_text
from ..errors import AvatarError, AvatarTypeError


def _compatible(original: pd.Series, other: pd.Series) -> bool:
    if original.dtype == other.dtype:
        return True
    return is_text(original.dtype) and is_text(other.dtype)


def check_same_table(
    original: pd.DataFrame, other: pd.DataFrame, other_name: str, same_rows: bool
) -> pd.DataFrame:
    """``other`` with ``original``'s column order, after checking columns, dtypes and rows.
    Text columns held differently (object against str, say) are cast to the original's
    dtype, so that both compare value by value."""
    validate_table(original, "original")
    if not isinstance(other, pd.DataFrame):
        raise AvatarTypeError(
            f"{other_name} must be a pandas DataFrame, got {type(other).__name__}"
        )
    missing = [c for c in original.columns if c not in other.columns]
    extra = [c for c in other.columns if c not in original.columns]
    if missing or extra:
        raise AvatarError(
            f"{other_name} must have the original's columns: missing {missing}, extra {extra}"
        )
    other = other[list(original.columns)]
    differing = {
        c: (str(original[c].dtype), str(other[c].dtype))
        for c in original.columns
        if not _compatible(original[c], other[c])
    }
    if differing:
        raise AvatarError(
            f"{other_name} dtypes differ from the original's (original, {other_name}): "
            f"{differing}; cast them to the original dtypes"
        )
    recast = [c for c in original.columns if original[c].dtype != other[c].dtype]
    if recast:
        other = other.astype({c: _text_dtype(original[c]) for c in recast})
    if len(other) == 0:
        raise AvatarError(f"{other_name} has no rows; give rows of the original table's kind")
    floats = [c for c in original.columns if pd.api.types.is_float_dtype(other[c].dtype)]
    infinite = [c for c in floats if np.isinf(other[c].to_numpy(float, na_value=np.nan)).any()]
    if infinite:
        raise AvatarError(
            f"{other_name} column(s) {infinite} hold infinite values, which no metric can "
            "place (avatars never do): replace them, or pass the avatars gpu_avatar returned"
        )
    if same_rows and len(other) != len(original):
        raise AvatarError(
            f"{other_name} has {len(other)} rows but the original has {len(original)}: "
            "privacy metrics need the unshuffled avatars, row i = avatar of original row i"
        )
    return other


def _text_dtype(original: pd.Series) -> Any:
    """The dtype avatars' text is cast to: the original's, or its categories' (avatar
    modalities absent from the original's categories must not become missing)."""
    if isinstance(original.dtype, pd.CategoricalDtype):
        return original.dtype.categories.dtype
    return original.dtype


def check_variables(original: pd.DataFrame, variables: Any, argument: str) -> list[Any] | None:
    """A list of existing column names (a single name, tuples and numpy scalars included, is
    accepted), or None."""
    if variables is None:
        return None
    if isinstance(variables, str) or _is_column(original, variables):
        names = [variables]
    elif isinstance(variables, Iterable):
        names = list(variables)
    else:
        raise AvatarTypeError(
            f"{argument} must be a column name or a list of them, got {variables!r}"
        )
    unknown = [v for v in names if v not in original.columns]
    if unknown:
        raise AvatarError(f"{argument} names unknown column(s) {unknown}")
    if not names:
        raise AvatarError(f"{argument} is empty; give at least one column or None")
    return names


def _is_column(df: pd.DataFrame, name: Any) -> bool:
    try:
        return name in df.columns
    except TypeError:  # unhashable: a list of names
        return False

"""How rules read and write values: a quantity column (numbers, datetimes, timedeltas) as
float64 numbers and back at the originals' dtype and precision, and the originals an avatar
was drawn from (its neighbours), which repairs draw replacement values from."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import CONTINUOUS, TableEncoder
from ..encoding.encoder import decode_continuous
from ..encoding.kinds import is_datetime, is_number, is_timedelta
from ..encoding.precision import decimals
from ..errors import AvatarError

# Float comparisons of values on a precision grid allow this fraction of a grid step (sums
# and differences of decimal fractions are not exact in binary).
GRID_TOLERANCE = 1e-6


def is_quantity(dtype: Any) -> bool:
    """Numbers (not booleans), datetimes and timedeltas: the values order and arithmetic
    rules work on."""
    return is_number(dtype) or is_datetime(dtype) or is_timedelta(dtype)


class Quantity:
    """A quantity column of the originals: its values as numbers (datetimes: seconds since
    the epoch, UTC; timedeltas: seconds, as the encoder has them) and numbers back as the
    column, at the precision the originals show (``encoding.precision``)."""

    def __init__(self, original: pd.Series) -> None:
        encoder = TableEncoder({original.name: CONTINUOUS}, missing_indicators=False)
        self.spec = encoder.fit(original.to_frame()).specs_[original.name]

    @property
    def step(self) -> float:
        """The originals' grid in numbers: 1 for whole numbers, 10**-d for d decimals, the
        time step in seconds; 0 for values released unrounded."""
        spec = self.spec
        if spec.time_unit is not None:
            return spec.time_step / 1e9
        return 0.0 if spec.decimals is None else 10.0 ** -spec.decimals

    def numbers(self, series: pd.Series) -> np.ndarray:
        """float64 values, NaN where missing."""
        return TableEncoder.continuous_values(self.spec, series)

    def constant(self, value: Any) -> float:
        """A declared constant (a number, or a date or duration for a time column) as a
        number; AvatarError when it is not one."""
        try:
            if self.spec.time_unit is None:
                return float(value)
            if isinstance(value, (int, float, np.number)):  # not a time
                raise TypeError
            kind = pd.Timedelta if is_timedelta(self.spec.dtype) else pd.Timestamp
            value = kind(value)
            if self.spec.tz is not None and value.tz is None:
                value = value.tz_localize(self.spec.tz)
            return float(self.numbers(pd.Series([value]).astype(self.spec.dtype))[0])
        except (TypeError, ValueError) as error:
            raise AvatarError(f"{value!r} is not a value of column {self.spec.name!r} "
                              f"({self.spec.dtype})") from error

    def duration(self, value: Any) -> float:
        """A declared difference or step as a number (a duration for a time column)."""
        if self.spec.time_unit is None:
            return float(value)
        return pd.Timedelta(value).total_seconds()

    def restore(self, values: np.ndarray, index: pd.Index, step: float | None = None) -> pd.Series:
        """``values`` (NaN: missing) as the column: rounded to the originals' precision, or
        to multiples of ``step`` (a number as ``numbers`` gives; then not kept within the
        originals' range)."""
        spec = self.spec
        if step is not None:
            if spec.time_unit is None:
                values = np.round(values / step) * step
            spec = replace(spec, decimals=decimals(np.array([step])), low=None, high=None,
                           time_step=int(round(step * 1e9)))
        missing = np.isnan(values)
        if missing.any() and spec.is_integer and isinstance(spec.dtype, np.dtype):
            spec = replace(spec, dtype=np.dtype(np.float64), is_integer=False)  # NaN needs floats
        restored = decode_continuous(spec, np.where(missing, 0.0, values),
                                     missing if missing.any() else None)
        restored.index = index
        return restored.rename(spec.name)


def same_values(before: pd.Series, after: pd.Series) -> np.ndarray:
    """Per row, whether two versions of a column hold the same value (missing equals
    missing)."""
    if before.dtype != after.dtype:
        before, after = before.astype(object), after.astype(object)
    equal = pd.Series(before.array == after.array).fillna(False)  # NA == NA is NA
    return equal.to_numpy(dtype=bool) | (before.isna().to_numpy() & after.isna().to_numpy())


@dataclass(frozen=True)
class Neighbours:
    """The originals each avatar was drawn from: ``indices[i]`` the row positions (in the
    originals) of avatar i's k neighbours, ``weights[i]`` their weights (summing to 1)."""

    indices: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        indices, weights = np.asarray(self.indices), np.asarray(self.weights, dtype=np.float64)
        if indices.ndim != 2 or indices.shape != weights.shape or not indices.shape[1]:
            raise AvatarError(f"neighbours: indices {indices.shape} and weights {weights.shape} "
                              "must be two arrays of shape (avatars, k >= 1)")
        if not np.issubdtype(indices.dtype, np.integer) or (weights < 0).any():
            raise AvatarError("neighbours: indices must be integers (row positions in the "
                              "originals) and weights non-negative")
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "weights", weights)

    def check(self, n_avatars: int, n_originals: int) -> None:
        """Refuse neighbours that do not belong to these avatars and originals."""
        if len(self.indices) != n_avatars:
            raise AvatarError(f"neighbours: {len(self.indices)} rows for {n_avatars} avatars; "
                              "give one row of neighbours per avatar, in the avatars' order")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_originals):
            raise AvatarError(f"neighbours: indices must be row positions in the originals "
                              f"(0 to {n_originals - 1})")

    def _valid_weights(self, rows: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, ...]:
        indices = self.indices[rows]
        return indices, self.weights[rows] * valid[indices]

    def mean(self, values: np.ndarray, rows: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """For avatars ``rows``, the weighted mean of ``values`` (one per original) over
        their ``valid`` neighbours; NaN where none is valid."""
        indices, weights = self._valid_weights(rows, valid)
        total = weights.sum(axis=1)
        sums = (weights * np.where(weights > 0, values[indices], 0.0)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, sums / total, np.nan)

    def draw(self, rows: np.ndarray, valid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """For avatars ``rows``, one of their ``valid`` neighbours drawn with probability
        proportional to its weight (its row position in the originals); -1 where none is
        valid."""
        indices, weights = self._valid_weights(rows, valid)
        cumulative = np.cumsum(weights, axis=1)
        total = cumulative[:, -1]
        picked = (cumulative > (rng.random(len(rows)) * total)[:, None]).argmax(axis=1)
        return np.where(total > 0, indices[np.arange(len(rows)), picked], -1)

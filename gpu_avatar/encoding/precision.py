"""The precision continuous columns are released at, so that released values look like the
originals (and compare with them as a reader would: 42, not 41.807).

- numbers: the fewest decimals (0 to ``MAX_DECIMALS``) that ``TYPICAL_SHARE`` of the observed
  values show, up to float64 representation error: the typical precision, not the finest (a
  column recorded to 0.1 with a few values to 0.01 is released to 0.1); a whole-number column
  stays whole even as float64 with blanks; beyond ``MAX_DECIMALS``, values are released
  unrounded;
- datetimes and timedeltas: the coarsest of a day (a datetime: midnight, local wall time in its
  timezone), a second, a millisecond and a microsecond every observed value is a whole number of.

Learnt chunk by chunk: a chunk counts the values needing each number of decimals
(``decimal_counts``), a column adds its chunks' counts up (``add_counts``) and for times keeps the
finest step, so a streamed table learns what the whole table would.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

MAX_DECIMALS = 8
TYPICAL_SHARE = 0.95  # of the values that show the decimals released, the rest rounded
# A value "shows" d decimals when rounding it to d moves it by at most a few units in the last
# place of its float type (decimal fractions are not exact in binary; arithmetic adds a few).
_ULPS = 16
DAY_NS = 86_400 * 10**9
_STEPS_NS = (DAY_NS, 10**9, 10**6, 10**3)  # a day, a second, a millisecond, a microsecond


def decimal_counts(values: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """How many finite ``values`` (float64, from a column of ``dtype``: a float32 holds fewer
    digits) show each number of decimals: ``MAX_DECIMALS + 2`` counts, the last of values
    showing more than ``MAX_DECIMALS``."""
    float_type = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    tolerance = _ULPS * np.finfo(float_type if float_type.kind == "f" else np.float64).eps
    remaining = values[np.isfinite(values)]  # infinities are refused before any projection
    counts = np.zeros(MAX_DECIMALS + 2, dtype=np.int64)
    beyond = _more(remaining, MAX_DECIMALS, tolerance)  # settles measured values in a pass
    counts[-1] = int(beyond.sum())
    remaining = remaining[~beyond]
    for d in range(MAX_DECIMALS + 1):
        more = _more(remaining, d, tolerance)
        counts[d] = remaining.size - int(more.sum())
        remaining = remaining[more]
        if not remaining.size:
            break
    return counts


def typical_decimals(counts: np.ndarray) -> int:
    """The fewest decimals that ``TYPICAL_SHARE`` of the values counted show (``counts[d]``:
    the values showing ``d``); 0 for no value (a chunk of blanks)."""
    total = int(counts.sum())
    if not total:
        return 0
    needed = math.ceil(TYPICAL_SHARE * total - 1e-9)
    return int(np.searchsorted(np.cumsum(counts), needed))


def released_decimals(counts: np.ndarray) -> int | None:
    """The decimals numbers with these ``decimal_counts`` are released at: the typical ones;
    None (unrounded) when those are more than ``MAX_DECIMALS``."""
    typical = typical_decimals(counts)
    return None if typical > MAX_DECIMALS else typical


def decimals(values: np.ndarray, dtype: Any = np.float64) -> int | None:
    """The decimals ``values`` (float64, from a column of ``dtype``) are released at."""
    return released_decimals(decimal_counts(values, dtype))


def _more(values: np.ndarray, d: int, tolerance: float) -> np.ndarray:
    """Where ``values`` show more than ``d`` decimals (beyond ``tolerance``, relative)."""
    scaled = values * 10.0**d
    return np.abs(scaled - np.rint(scaled)) > tolerance * np.abs(scaled)


def add_counts(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """Two sets of values' counts per number of decimals, added (None: nothing counted)."""
    if a is None or b is None:
        return b if a is None else a
    width = max(len(a), len(b))
    return np.pad(a, (0, width - len(a))) + np.pad(b, (0, width - len(b)))


def _tick_ns(unit: str) -> int:
    return int(np.timedelta64(1, unit) // np.timedelta64(1, "ns"))


def time_step(series: pd.Series) -> int:
    """The coarsest step (nanoseconds) that every value of the datetime or timedelta ``series``
    is a whole number of: a day (from local midnight for a tz-aware column), a second, a
    millisecond, a microsecond, else one tick of its unit."""
    tick = _tick_ns(series.dt.unit)
    observed = series.dropna()
    wall = observed.dt.tz_localize(None) if getattr(series.dtype, "tz", None) else observed
    for step in _STEPS_NS:
        if step <= tick:
            break
        ticks = (wall if step == DAY_NS else observed).array.asi8
        if not (ticks % (step // tick)).any():
            return step
    return tick


def _round_ticks(ticks: np.ndarray, step: int) -> np.ndarray:
    """int64 ``ticks`` rounded to a multiple of ``step``, half to even (as ``numpy.rint``)."""
    quotient, remainder = np.divmod(ticks, step)
    quotient += (2 * remainder > step) | ((2 * remainder == step) & (quotient % 2 == 1))
    return quotient * step


def round_times(ticks: np.ndarray, step: int, unit: str, tz: Any = None) -> np.ndarray:
    """int64 ``ticks`` of ``unit`` (datetimes: since the epoch, UTC) rounded to ``step``
    nanoseconds; a datetime in timezone ``tz`` to a day at local midnight."""
    if tz is None or step != DAY_NS:  # offsets are whole seconds: UTC rounds like wall time
        return _round_ticks(ticks, step // _tick_ns(unit))
    times = pd.DatetimeIndex(ticks.view(f"M8[{unit}]")).tz_localize("UTC").tz_convert(tz)
    wall = _round_ticks(times.tz_localize(None).asi8, step // _tick_ns(unit))
    local = pd.DatetimeIndex(wall.view(f"M8[{unit}]")).tz_localize(
        tz, ambiguous=np.zeros(len(wall), dtype=bool), nonexistent="shift_forward"
    )
    return local.asi8


def keep_in_range(rounded: np.ndarray, unrounded: np.ndarray, low: Any, high: Any) -> np.ndarray:
    """``rounded``, put back into the observed range [low, high] where the value before rounding
    was in it (rounding never takes a value out of the range; values outside stay as rounded;
    no range, None: nothing observed)."""
    if low is None:
        return rounded
    inside = (unrounded >= low) & (unrounded <= high)
    return np.where(inside, np.clip(rounded, low, high), rounded)

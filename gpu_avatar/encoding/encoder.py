"""The encoder: a pandas table <-> numeric arrays, and back with the original types.

``TableEncoder.partial_fit(chunk)`` learns, chunk by chunk, what decides the encoding of every
column: its kind (``kinds.py``), dtype, datetime or timedelta unit and timezone, whether it holds
a missing value, how a missing value looks, and for a categorical column its modalities with
their counts (so the mode, which fills its missing cells). ``fit(df)`` is the one-chunk case
plus the imputation values of the continuous columns (median or mean of the observed values, or
a k-nearest-neighbours imputer), which ``transform`` needs. ``transform`` gives an
``EncodedTable``:

- ``continuous``: float64 (n, n_continuous), missing cells filled by the imputation value;
  datetimes as seconds since the epoch (UTC), timedeltas as seconds;
- ``categorical``: int64 codes (n, n_categorical) over the modalities learnt (category order,
  else sorted), missing cells filled by the mode (ties: the first modality), followed by one
  binary "is missing" indicator (0 present, 1 missing) for every column that had a missing
  value. Codes of modalities never seen are -1 (they project to zero). Given ``rare``
  (``rare.py``), the rare modalities are grouped: a grouped value takes its group's code, and
  the modalities are the groups' labels.

``decode`` maps such arrays back to a DataFrame with the input's columns and dtypes, putting a
missing value wherever the indicator says "missing". Continuous values come back at the precision
their column showed (learnt chunk by chunk too, with the observed range: ``precision.py``), so
they look like the originals: whole numbers stay whole (float64 with NaN too), a value recorded
to one decimal keeps one, dates stay at midnight, seconds whole.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, among
from ..parameters import IMPUTATIONS, check_choice, check_types, column_kind, is_datetime_kind
from .kinds import (
    CATEGORICAL,
    CONTINUOUS,
    DROPPED,
    EXCLUDED,
    IDENTIFIER,
    VARIABLE_KINDS,
    check_structure,
    column_scales,
    detect_kind,
    is_datetime,
    is_text,
    same_values_kind,
    validate_table,
)
from .precision import (
    DAY_NS,
    add_counts,
    decimal_counts,
    keep_in_range,
    released_decimals,
    round_times,
    time_step,
)
from .rare import RareModalities, ordered
from .text_values import TextValues

_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def seconds_per_tick(unit: str) -> float:
    """Seconds in one tick of a datetime or timedelta unit ("s", "ms", "us", "ns")."""
    return _NANOS_PER_UNIT[unit] / 1e9


def time_ticks(series: pd.Series) -> np.ndarray:
    """A datetime or timedelta column as its int64 ticks (datetimes: since the epoch, UTC;
    NaT: the int64 minimum)."""
    return series.array.asi8


def ticks_to_times(ticks: np.ndarray, dtype: Any) -> pd.Series:
    """int64 ``ticks`` (the int64 minimum: NaT) as a column of the datetime or timedelta
    ``dtype`` (its unit and time zone)."""
    unit = getattr(dtype, "unit", None) or np.datetime_data(dtype)[0]
    kind = "m" if pd.api.types.is_timedelta64_dtype(dtype) else "M"
    series = pd.Series(np.asarray(ticks, dtype=np.int64).view(f"{kind}8[{unit}]"))
    tz = getattr(dtype, "tz", None)
    if tz is not None:
        series = series.dt.tz_localize("UTC").dt.tz_convert(tz)
    return series.astype(dtype)


@dataclass
class ColumnSpec:
    """What the encoder learnt about one input column (merged over the chunks seen)."""

    name: Any
    kind: str
    dtype: Any
    time_unit: str | None = None  # datetime and timedelta columns (continuous)
    tz: Any = None
    is_integer: bool = False  # an integer dtype: released whole, within its limits
    decimals: int | None = 0  # numbers: decimals released (None: unrounded), see precision.py
    decimal_counts: np.ndarray | None = None  # numbers: values per decimals shown (precision.py)
    time_step: int = DAY_NS  # datetimes and timedeltas: step released, in nanoseconds
    low: Any = None  # continuous: observed range (times in int64 ticks), None before a value
    high: Any = None
    rows: int = 0
    missing: int = 0
    missing_value: Any = np.nan  # how a missing cell is written back (object columns)
    counts: dict = field(default_factory=dict)  # categorical: modality -> rows
    text: TextValues | None = None  # text declared continuous or datetime: read and written
    modalities: pd.Index | None = None  # categorical: the released ones, from ``counts``
    values: pd.Index | None = None  # categorical: the values seen (and grouped, ``rare.py``)
    value_codes: np.ndarray | None = None  # the code of each of ``values`` among ``modalities``
    groups: dict = field(default_factory=dict)  # categorical: grouped value -> its label
    released_dtype: Any = None  # categorical: ``dtype``; a category: with the group's name
    fill_value: Any = None  # continuous: imputation value (fit); categorical: the mode's code
    has_missing: bool = False  # an indicator variable is added

    def blank(self) -> ColumnSpec:
        """This column's decisions (kind, dtype, reading) without what its rows showed."""
        text = None if self.text is None else self.text.blank()
        return ColumnSpec(self.name, self.kind, self.dtype, self.time_unit, self.tz,
                          self.is_integer, text=text)

    def merge(self, other: ColumnSpec) -> None:
        """Add what ``other`` (a ``blank`` of this column fed other rows) saw."""
        if (other.kind, other.dtype) != (self.kind, self.dtype):
            raise AvatarError(f"column {self.name!r} is {other.kind} ({other.dtype}) in this "
                              f"part but {self.kind} ({self.dtype}) before")
        if other.missing and not self.missing:
            self.missing_value = other.missing_value
        self.rows += other.rows
        self.missing += other.missing
        for value, count in other.counts.items():
            self.counts[value] = self.counts.get(value, 0) + count
        self.decimal_counts = add_counts(self.decimal_counts, other.decimal_counts)
        if self.decimal_counts is not None:
            self.decimals = released_decimals(self.decimal_counts)
        self.time_step = min(self.time_step, other.time_step)
        if other.low is not None:
            self.low = other.low if self.low is None else min(self.low, other.low)
            self.high = other.high if self.high is None else max(self.high, other.high)
        if self.text is not None:
            self.text.merge(other.text)


@dataclass
class EncodedTable:
    """Numeric view of a table; see the module docstring for the layout."""

    continuous: np.ndarray
    categorical: np.ndarray
    n_modalities: list[int] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return self.continuous.shape[0]


class TableEncoder:
    """Learns how to turn a DataFrame into continuous values and categorical codes.

    ``missing_indicators=False`` imputes missing cells without adding indicator variables
    (the metric projection does so); ``rare`` groups rare modalities (``rare.py``).
    """

    def __init__(
        self,
        types: Mapping[Any, str] | None = None,
        imputation: str = "median",
        missing_indicators: bool = True,
        rare: RareModalities | None = None,
    ) -> None:
        self.types = check_types(types)
        self.imputation = check_choice("imputation", imputation, IMPUTATIONS)
        self.missing_indicators = missing_indicators
        self.rare = rare
        self.specs_: dict[Any, ColumnSpec] = {}
        self.columns_: list[Any] = []
        self._fills = False

    # ------------------------------------------------------------------ fit
    def partial_fit(self, chunk: pd.DataFrame) -> TableEncoder:
        """Merge what ``chunk`` shows of every column (kinds, modalities and counts, missing
        values) into what was learnt from the chunks before; the imputation values of
        continuous columns need ``fit``."""
        self._merge(chunk)
        return self

    def blank(self) -> TableEncoder:
        """A copy that knows what the chunks seen decided (kinds, dtypes, how text reads) but
        none of their rows: each partition of a table learns from one, then ``merge``."""
        out = copy.copy(self)
        out.specs_ = {name: spec.blank() for name, spec in self.specs_.items()}
        out.columns_ = list(self.columns_)
        return out

    def merge(self, other: TableEncoder) -> TableEncoder:
        """Add what ``other`` (a ``blank`` of this encoder's first part, then fed the next
        part) learnt: the same as feeding this encoder that part's chunks."""
        if other.columns_ and other.columns_ != self.columns_:
            raise AvatarError(f"these parts' columns {other.columns_} differ from the first "
                              f"part's {self.columns_}")
        for name, spec in other.specs_.items():
            self.specs_[name].merge(spec)
        self._derive_all()
        return self

    def _derive_all(self) -> None:
        """What every column's counts decide (modality order, rare groups, indicators), again
        after rows were added."""
        for spec in self.specs_.values():
            _derive(spec, self.missing_indicators, self.rare)

    def fit(self, df: pd.DataFrame) -> TableEncoder:
        self._fit(df)
        return self

    def fit_transform(self, df: pd.DataFrame) -> EncodedTable:
        """``fit(df).transform(df)``, reusing the categorical codes found while fitting."""
        return self._encode(df, self._fit(df))

    def _fit(self, df: pd.DataFrame) -> dict[Any, np.ndarray]:
        """Learn everything from ``df`` alone; returns its categorical columns' codes."""
        validate_table(df)
        self.specs_, self.columns_ = {}, []
        codes = self._merge(df)
        self._fit_fills(df)
        return codes

    def _merge(self, chunk: pd.DataFrame) -> dict[Any, np.ndarray]:
        """Merge ``chunk`` into the specs; returns its categorical columns' codes against the
        modalities known after the merge, when they are those of the chunk alone (the first
        chunk: ``fit``), else an empty dict."""
        check_structure(chunk)
        unknown = [c for c in self.types if c not in chunk.columns]
        if unknown:
            raise AvatarError(
                f"types names unknown column(s) {unknown}; available: "
                f"{among(chunk.columns, unknown)}"
            )
        first = not self.columns_
        if first:
            self.columns_ = list(chunk.columns)
            self._check_rare(chunk)
        elif list(chunk.columns) != self.columns_:
            raise AvatarError(
                f"this chunk's columns {list(chunk.columns)} differ from the first chunk's "
                f"{self.columns_}"
            )
        codes = {}
        for name in chunk.columns:
            series = chunk[name]
            spec = self.specs_.get(name) or self._new_spec(series)
            if series.dtype != spec.dtype:
                raise AvatarError(
                    f"column {name!r} is {series.dtype} in this chunk but {spec.dtype} before; "
                    "give every chunk the same dtypes"
                )
            missing = series.isna().to_numpy()
            spec.rows += len(series)
            if missing.any() and not spec.missing:
                spec.missing_value = _first_missing_value(series)
            spec.missing += int(missing.sum())
            if spec.kind == CATEGORICAL:
                chunk_codes = _add_counts(spec, series)
                if first:
                    codes[name] = chunk_codes
            elif spec.text is not None:  # text: its precision is how it is written
                spec.text.add(series)
            elif spec.kind == CONTINUOUS:
                _add_precision(spec, series, missing)
            self.specs_[name] = spec
        self._derive_all()
        return {name: _grouped(self.specs_[name], _positions(self.specs_[name], *column))
                for name, column in codes.items()}

    def _check_rare(self, chunk: pd.DataFrame) -> None:
        """Refuse ``column_rare_modalities`` naming a column that has no modalities."""
        named = list(self.rare.per_column) if self.rare is not None else []
        refused = [c for c in named if c not in chunk.columns
                   or (self.types.get(c) or detect_kind(chunk[c])) != CATEGORICAL]
        if refused:
            raise AvatarError(
                f"column_rare_modalities names column(s) {refused} that are not categorical "
                f"columns of the table; name categorical ones (declare a column categorical "
                f"in types), among {list(chunk.columns)}"
            )

    def _new_spec(self, series: pd.Series) -> ColumnSpec:
        name, dtype = series.name, series.dtype
        declared = self.types.get(name)
        kind = column_kind(declared) or detect_kind(series)
        spec = ColumnSpec(name=name, kind=kind, dtype=dtype)
        plain_text = is_text(dtype) and not isinstance(dtype, pd.CategoricalDtype)
        if kind == CONTINUOUS and plain_text:
            spec.text = TextValues.declared(series, declared)
        elif is_datetime_kind(declared) and not is_datetime(dtype):
            raise AvatarError(
                f"column {name!r} (dtype {dtype}) is declared datetime but holds neither dates "
                "nor text; declare it 'continuous' or 'categorical'"
            )
        elif kind == CONTINUOUS and detect_kind(series) != CONTINUOUS:
            raise AvatarError(
                f"column {name!r} (dtype {dtype}) cannot be continuous; declare it "
                "'categorical'"
            )
        elif kind == CONTINUOUS:
            if is_datetime(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
                spec.time_unit = series.dt.unit
                spec.tz = getattr(dtype, "tz", None)
            else:
                spec.is_integer = pd.api.types.is_integer_dtype(dtype)
        return spec

    def _fit_fills(self, df: pd.DataFrame) -> None:
        """The imputation values of the continuous columns, from ``df``."""
        for name in self.continuous_columns_:
            spec = self.specs_[name]
            values = _finite_or_missing(name, self.continuous_values(spec, df[name]))
            observed = values[~np.isnan(values)]
            spec.fill_value = float(
                np.mean(observed) if self.imputation == "mean" else np.median(observed)
            )
        if self.imputation == "knn" and self.continuous_columns_:
            from sklearn.impute import KNNImputer

            raw = np.column_stack(
                [self.continuous_values(self.specs_[c], df[c]) for c in self.continuous_columns_]
            )
            mean = np.nanmean(raw, axis=0)
            self._knn_scale = (mean, column_scales(np.nanstd(raw, axis=0), mean))
            self._knn_imputer = KNNImputer(n_neighbors=5).fit((raw - mean) / self._knn_scale[1])
        self._fills = True

    def empty_columns(self) -> list[Any]:
        """Variables without a single non-missing value among the rows learnt (a table
        holding one cannot be projected: ``validate_table`` refuses it)."""
        return [c for c in self.columns_ if self.specs_[c].kind in VARIABLE_KINDS
                and self.specs_[c].missing == self.specs_[c].rows]

    # --------------------------------------------------------- properties
    def _names(self, kind: str) -> list[Any]:
        return [c for c in self.columns_ if self.specs_[c].kind == kind]

    @property
    def continuous_columns_(self) -> list[Any]:
        return self._names(CONTINUOUS)

    @property
    def categorical_columns_(self) -> list[Any]:
        return self._names(CATEGORICAL)

    @property
    def identifier_columns_(self) -> list[Any]:
        return self._names(IDENTIFIER)

    @property
    def excluded_columns_(self) -> list[Any]:
        """Columns left out of the method, reattached to the avatars (``types``)."""
        return self._names(EXCLUDED)

    @property
    def dropped_columns_(self) -> list[Any]:
        """Columns left out of the release (``types``)."""
        return self._names(DROPPED)

    @property
    def released_columns_(self) -> list[Any]:
        """The avatars' columns: the input's, less the dropped ones."""
        return [c for c in self.columns_ if self.specs_[c].kind != DROPPED]

    @property
    def indicator_columns_(self) -> list[Any]:
        """Original columns that get a temporary "is missing" indicator."""
        return [c for c in self.columns_ if self.specs_[c].has_missing]

    @property
    def variable_sources_(self) -> list[Any]:
        """For every encoded variable, the input column it comes from."""
        return self.continuous_columns_ + self.categorical_columns_ + self.indicator_columns_

    @property
    def groups_(self) -> dict[Any, dict]:
        """{column: {grouped value: its label}} for the columns whose rare modalities are
        grouped (``rare.py``)."""
        return {c: self.specs_[c].groups for c in self.categorical_columns_
                if self.specs_[c].groups}

    @property
    def n_modalities_(self) -> list[int]:
        return [len(self.specs_[c].modalities) for c in self.categorical_columns_] + [
            2 for _ in self.indicator_columns_
        ]

    # --------------------------------------------------------- transform
    @staticmethod
    def continuous_values(spec: ColumnSpec, series: pd.Series) -> np.ndarray:
        if spec.text is not None:
            return spec.text.values(series)
        if spec.time_unit is not None:
            ticks = time_ticks(series).astype(np.float64)
            ticks[series.isna().to_numpy()] = np.nan
            return ticks * seconds_per_tick(spec.time_unit)
        return series.to_numpy(dtype=np.float64, na_value=np.nan)

    @staticmethod
    def categorical_codes(spec: ColumnSpec, series: pd.Series) -> np.ndarray:
        if isinstance(series.dtype, pd.CategoricalDtype):
            positions = _positions(spec, series.cat.codes.to_numpy(), series.dtype.categories)
        else:
            positions = spec.values.get_indexer(series)
        return _grouped(spec, positions)

    def transform(self, df: pd.DataFrame) -> EncodedTable:
        """Encode ``df`` (same columns as learnt) with the fitted modalities and fills."""
        return self._encode(df, {})

    def encode_codes(self, df: pd.DataFrame) -> np.ndarray:
        """The categorical block of ``transform`` alone (codes, then missing indicators): it
        needs only what ``partial_fit`` learns."""
        self._check_columns(df)
        return self._codes(df, {})

    def _check_columns(self, df: pd.DataFrame) -> None:
        if not self.columns_:
            raise AvatarError("the encoder is not fitted: call fit (or partial_fit) first")
        missing_cols = [c for c in self.columns_ if c not in df.columns]
        if missing_cols:
            raise AvatarError(f"the table lacks the fitted column(s) {missing_cols}")
        differing = {
            c: (str(self.specs_[c].dtype), str(df[c].dtype))
            for c in self.columns_
            if not same_values_kind(self.specs_[c].dtype, df[c].dtype)
        }
        if differing:
            raise AvatarError(
                f"column dtypes differ from the fitted table's (fitted, given): {differing}; "
                "cast them to the fitted dtypes"
            )

    def _codes(self, df: pd.DataFrame, known_codes: Mapping[Any, np.ndarray]) -> np.ndarray:
        categorical_columns = self.categorical_columns_
        indicators = self.indicator_columns_
        codes = np.empty((len(df), len(categorical_columns) + len(indicators)), dtype=np.int64)
        for j, name in enumerate(categorical_columns):
            series = df[name]
            column = known_codes.get(name)
            if column is None:
                column = self.categorical_codes(self.specs_[name], series)
            column[series.isna().to_numpy()] = self.specs_[name].fill_value
            codes[:, j] = column
        for j, name in enumerate(indicators, start=len(categorical_columns)):
            codes[:, j] = df[name].isna().to_numpy()
        return codes

    def _encode(self, df: pd.DataFrame, known_codes: Mapping[Any, np.ndarray]) -> EncodedTable:
        """``transform``, taking a categorical column's codes from ``known_codes`` if there."""
        self._check_columns(df)
        if self.continuous_columns_ and not self._fills:
            raise AvatarError(
                "the encoder learnt its columns chunk by chunk (partial_fit) but not the "
                "imputation values of its continuous columns: fit it on a table first"
            )
        n = len(df)
        continuous = np.empty((n, len(self.continuous_columns_)), dtype=np.float64)
        for j, name in enumerate(self.continuous_columns_):
            values = self.continuous_values(self.specs_[name], df[name])
            continuous[:, j] = _finite_or_missing(name, values)
        continuous_missing = np.isnan(continuous)
        if continuous_missing.any():
            if self.imputation == "knn":
                mean, std = self._knn_scale
                imputed = self._knn_imputer.transform((continuous - mean) / std)
                imputed = imputed * np.where(np.isinf(std), 0.0, std) + mean  # a constant: mean
                continuous = np.where(continuous_missing, imputed, continuous)
            else:
                fills = np.array([self.specs_[c].fill_value for c in self.continuous_columns_])
                continuous = np.where(continuous_missing, fills, continuous)
        return EncodedTable(continuous, self._codes(df, known_codes), self.n_modalities_)

    # ------------------------------------------------------------ decode
    def decode(
        self,
        continuous: np.ndarray,
        categorical: np.ndarray,
        apart: Mapping[Any, np.ndarray] | None = None,
        index: pd.Index | None = None,
    ) -> pd.DataFrame:
        """Rebuild a DataFrame with the input's columns (less the dropped ones) and dtypes
        from encoded arrays.

        Continuous values are rounded, half to even, to their column's precision (integers
        and whole-number floats to whole numbers, decimals to those the originals typically
        show, datetimes and timedeltas to their day, second... or unit); datetimes are put
        back in their timezone.
        ``apart`` gives the values of the columns released apart from the method: the
        identifiers' and the excluded columns' (``pipeline/apart.py``).
        """
        n = continuous.shape[0]
        n_categorical = len(self.categorical_columns_)
        missing_masks = {
            name: categorical[:, n_categorical + j] == 1
            for j, name in enumerate(self.indicator_columns_)
        }
        position = {name: j for j, name in enumerate(self.continuous_columns_)}
        position.update({name: j for j, name in enumerate(self.categorical_columns_)})
        out = {}
        for name in self.released_columns_:
            spec = self.specs_[name]
            mask = missing_masks.get(name)
            if spec.kind == CONTINUOUS:
                out[name] = decode_continuous(spec, continuous[:, position[name]], mask)
            elif spec.kind == CATEGORICAL:
                out[name] = _decode_categorical(spec, categorical[:, position[name]], mask)
            else:
                if apart is None or name not in apart:
                    raise AvatarError(f"internal: no values given for column {name!r}")
                values = pd.Series(apart[name])  # text pseudonyms of numbers stay text
                fits = same_values_kind(spec.dtype, values.dtype)
                out[name] = values.astype(spec.dtype) if fits else values
            out[name].index = index if index is not None else pd.RangeIndex(n)
        return pd.DataFrame(out, columns=self.released_columns_)


# ------------------------------------------------------------------ column statistics
def _add_counts(spec: ColumnSpec, series: pd.Series) -> tuple[np.ndarray, Any]:
    """Add the chunk's modality counts to ``spec``; returns the chunk's values as positions
    (-1: missing) among the distinct values it also returns."""
    if isinstance(spec.dtype, pd.CategoricalDtype):
        raw = series.cat.codes.to_numpy()
        counts = np.bincount(raw[raw >= 0], minlength=len(spec.dtype.categories))
        for code in np.flatnonzero(counts):
            category = spec.dtype.categories[code]
            spec.counts[category] = spec.counts.get(category, 0) + int(counts[code])
        return raw, spec.dtype.categories
    codes, uniques = pd.factorize(series, sort=True)  # -1 where missing
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    for value, count in zip(uniques, counts, strict=True):
        spec.counts[value] = spec.counts.get(value, 0) + int(count)
    return codes, uniques


def _add_precision(spec: ColumnSpec, series: pd.Series, missing: np.ndarray) -> None:
    """Merge the chunk's observed range and precision into those of the continuous ``spec``
    (the widest range; decimals counted, times at the finest step)."""
    if spec.time_unit is not None:
        observed = time_ticks(series)[~missing]
        spec.time_step = min(spec.time_step, time_step(series))
    else:
        observed = series.to_numpy(dtype=np.float64, na_value=np.nan)[~missing]
        if not spec.is_integer:  # integers: 0
            spec.decimal_counts = add_counts(spec.decimal_counts,
                                             decimal_counts(observed, spec.dtype))
            spec.decimals = released_decimals(spec.decimal_counts)
    if observed.size:
        low, high = observed.min().item(), observed.max().item()
        spec.low = low if spec.low is None else min(spec.low, low)
        spec.high = high if spec.high is None else max(spec.high, high)


def _derive(spec: ColumnSpec, missing_indicators: bool, rare: RareModalities | None) -> None:
    """The values, their groups, the released modalities, the mode's code and the indicator
    flag from the merged counts."""
    spec.has_missing = bool(spec.missing) and spec.kind in VARIABLE_KINDS and missing_indicators
    if spec.kind != CATEGORICAL:
        return
    learnt = rare.learnt_values(spec.name) if rare is not None else []  # maybe not in this chunk
    spec.values = _in_order(spec, [*spec.counts, *learnt])
    counts = np.array([spec.counts.get(v, 0) for v in spec.values])
    spec.groups = {} if rare is None else rare.groups(
        spec.name, spec.dtype, dict(zip(spec.values, counts.tolist(), strict=True)), spec.rows)
    spec.released_dtype = spec.dtype
    if (spec.groups and isinstance(spec.dtype, pd.CategoricalDtype) and not ordered(spec.dtype)
            and rare.name not in spec.dtype.categories):
        spec.released_dtype = pd.CategoricalDtype([*spec.dtype.categories, rare.name])
    labels = [spec.groups.get(v, v) for v in spec.values]
    spec.modalities = _in_order(spec, labels, spec.released_dtype)
    spec.value_codes = spec.modalities.get_indexer(labels).astype(np.int64)
    grouped = np.bincount(spec.value_codes, weights=counts, minlength=len(spec.modalities))
    spec.fill_value = int(np.argmax(grouped)) if grouped.size else 0  # ties: the first one


def _in_order(spec: ColumnSpec, values: list, dtype: Any = None) -> pd.Index:
    """The distinct ``values`` of a categorical column, in category order (of ``dtype``,
    default the column's), else sorted."""
    dtype = spec.dtype if dtype is None else dtype
    if isinstance(dtype, pd.CategoricalDtype):
        present = set(values)
        return pd.Index([c for c in dtype.categories if c in present],
                        dtype=dtype.categories.dtype)
    return pd.Index(pd.unique(pd.Series(values, dtype=dtype).sort_values()))


def _positions(spec: ColumnSpec, positions: np.ndarray, uniques: Any) -> np.ndarray:
    """``positions`` among ``uniques`` as positions among ``spec.values`` (-1 stays)."""
    mapping = spec.values.get_indexer(uniques)
    return np.where(positions >= 0, mapping[np.maximum(positions, 0)], -1)


def _grouped(spec: ColumnSpec, positions: np.ndarray) -> np.ndarray:
    """The codes of values given by their ``positions`` among ``spec.values`` (-1: unknown)."""
    return np.where(positions >= 0, spec.value_codes[np.maximum(positions, 0)], -1).astype(
        np.int64)


def _first_missing_value(series: pd.Series) -> Any:
    if series.dtype != object:
        return np.nan
    missing = series[series.isna()]
    return missing.iloc[0] if len(missing) else np.nan


# ------------------------------------------------------------------------ decoding
_LARGEST_VALUE = 1e150  # beyond, squares overflow float64: no variance, no distance


def _finite_or_missing(name: Any, values: np.ndarray) -> np.ndarray:
    """``values``, after refusing infinities and values too large to standardise."""
    if np.isinf(values).any():
        raise AvatarError(
            f"column {name!r} holds infinite values; replace them (by NaN to treat them as "
            "missing, or by a finite value)"
        )
    large = int((np.abs(values) > _LARGEST_VALUE).sum())
    if large:
        raise AvatarError(
            f"column {name!r} holds {large:,} value(s) above {_LARGEST_VALUE:g} in magnitude, "
            "too large to standardise (their squares overflow); rescale it (other units)"
        )
    return values


def decode_continuous(spec: ColumnSpec, values: np.ndarray, mask: np.ndarray | None) -> pd.Series:
    """A continuous column at its learnt precision (``precision.py``; text: as written,
    ``text_values.py``): rounding keeps a value inside the observed range it was in."""
    if spec.text is not None:
        return spec.text.decode(values, mask, spec.dtype)
    if spec.time_unit is not None:
        ints = np.rint(values * (1e9 / _NANOS_PER_UNIT[spec.time_unit])).astype(np.int64)
        rounded = round_times(ints, spec.time_step, spec.time_unit, spec.tz)
        ints = keep_in_range(rounded, ints, spec.low, spec.high)
        if mask is not None:
            ints[mask] = np.iinfo(np.int64).min  # NaT
        return ticks_to_times(ints, spec.dtype)
    if spec.decimals is not None:
        values = keep_in_range(np.round(values, spec.decimals), values, spec.low, spec.high)
    if spec.is_integer:  # within the type (float64 rounds values near its limits out)
        limits = np.iinfo(np.dtype(getattr(spec.dtype, "numpy_dtype", spec.dtype)))
        highest = float(limits.max)
        if int(highest) > limits.max:
            highest = np.nextafter(highest, -np.inf)
        values = np.clip(values, float(limits.min), highest)
    if mask is not None:
        values = np.where(mask, np.nan, values)
    return pd.Series(values).astype(spec.dtype)


def _decode_categorical(spec: ColumnSpec, codes: np.ndarray, mask: np.ndarray | None) -> pd.Series:
    if isinstance(spec.dtype, pd.CategoricalDtype):
        dtype = spec.released_dtype
        full_codes = dtype.categories.get_indexer(spec.modalities)[codes]
        if mask is not None:
            full_codes = np.where(mask, -1, full_codes)
        return pd.Series(pd.Categorical.from_codes(full_codes, dtype=dtype))
    if mask is None or not mask.any():
        if isinstance(spec.dtype, pd.api.extensions.ExtensionDtype):
            # e.g. strings: a take from the few modalities, no per-value conversion
            return pd.Series(pd.array(spec.modalities, dtype=spec.dtype).take(codes))
        return pd.Series(spec.modalities.to_numpy()[codes]).astype(spec.dtype)
    values = spec.modalities.to_numpy()[codes].astype(object)
    values[mask] = spec.missing_value  # in numpy: pandas would turn a None into NaN
    return pd.Series(values, dtype=object).astype(spec.dtype)

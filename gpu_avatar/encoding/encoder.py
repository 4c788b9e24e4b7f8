"""Encoding: a pandas table <-> numeric arrays, and back with the original types.

``TableEncoder.fit`` decides the kind of every column (continuous, categorical, identifier),
records what is needed to restore it (dtype, modalities, timezone, how a missing value looks)
and the temporary imputation values. ``transform`` gives an ``EncodedTable``:

- ``continuous``: float64 (n, n_continuous), missing cells filled by the imputation value;
  datetimes as seconds since the epoch (UTC);
- ``categorical``: int64 codes (n, n_categorical) over the modalities seen at fit time, missing
  cells filled by the mode, followed by one binary "is missing" indicator (0 present, 1 missing)
  for every column that had a missing value at fit time. Codes of modalities unseen at fit
  time are -1 (they project to zero).

``decode`` maps such arrays back to a DataFrame with the input's columns and dtypes, putting a
missing value wherever the indicator says "missing".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError

CONTINUOUS = "continuous"
CATEGORICAL = "categorical"
IDENTIFIER = "identifier"
KINDS = (CONTINUOUS, CATEGORICAL, IDENTIFIER)
IMPUTATIONS = ("median", "mean", "mode", "knn")
_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


@dataclass
class ColumnSpec:
    """What the encoder learned about one input column."""

    name: Any
    kind: str
    dtype: Any
    datetime_unit: str | None = None  # set for datetime columns (continuous)
    tz: Any = None
    is_integer: bool = False  # continuous values are rounded back to integers
    modalities: pd.Index | None = None  # categorical: modalities seen at fit time
    fill_value: Any = None  # temporary imputation (float, or a modality code)
    has_missing: bool = False  # an indicator variable is added
    missing_value: Any = np.nan  # how a missing cell is written back


@dataclass
class EncodedTable:
    """Numeric view of a table; see the module docstring for the layout."""

    continuous: np.ndarray
    categorical: np.ndarray
    n_modalities: list[int] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return self.continuous.shape[0]


def _is_datetime(dtype: Any) -> bool:
    return isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype)


def _detect_kind(series: pd.Series) -> str:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return CATEGORICAL
    if isinstance(dtype, pd.CategoricalDtype):
        return CATEGORICAL
    if _is_datetime(dtype):
        return CONTINUOUS
    if pd.api.types.is_complex_dtype(dtype):
        raise AvatarError(
            f"column {series.name!r} has complex dtype {dtype}, which is not supported: split it "
            "into real and imaginary columns"
        )
    if pd.api.types.is_numeric_dtype(dtype):
        return CONTINUOUS
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        if inferred.startswith("mixed") or inferred in ("complex", "bytes", "decimal", "period"):
            raise AvatarError(
                f"column {series.name!r} holds values of mixed or unsupported types "
                f"({inferred}); convert it to one type (e.g. df[{series.name!r}].astype(str))"
            )
        return CATEGORICAL
    raise AvatarError(
        f"column {series.name!r} has unsupported dtype {dtype}; supported: numbers, bool, "
        "text, category and datetime"
    )


def _mode_code(codes: np.ndarray, n_modalities: int) -> int:
    counts = np.bincount(codes[codes >= 0], minlength=n_modalities)
    return int(np.argmax(counts))  # ties: first modality


def _first_missing_value(series: pd.Series) -> Any:
    if series.dtype != object:
        return np.nan
    missing = series[series.isna()]
    return missing.iloc[0] if len(missing) else np.nan


class TableEncoder:
    """Learns how to turn a DataFrame into continuous values and categorical codes.

    ``missing_indicators=False`` imputes missing cells without adding indicator variables
    (the metric projection does so).
    """

    def __init__(
        self,
        types: Mapping[Any, str] | None = None,
        imputation: str = "median",
        missing_indicators: bool = True,
    ) -> None:
        if imputation not in IMPUTATIONS:
            raise AvatarError(f"imputation={imputation!r} is not one of {IMPUTATIONS}")
        for column, kind in (types or {}).items():
            if kind not in KINDS:
                raise AvatarError(f"types[{column!r}]={kind!r} is not one of {KINDS}")
        self.types = dict(types or {})
        self.imputation = imputation
        self.missing_indicators = missing_indicators

    # ------------------------------------------------------------------ fit
    def fit(self, df: pd.DataFrame) -> TableEncoder:
        self._fit(df)
        return self

    def fit_transform(self, df: pd.DataFrame) -> EncodedTable:
        """``fit(df).transform(df)``, reusing the categorical codes found while fitting."""
        return self._encode(df, self._fit(df))

    def _fit(self, df: pd.DataFrame) -> dict[Any, np.ndarray]:
        """Fit; returns the categorical columns' codes (-1 where missing)."""
        validate_table(df)
        unknown = [c for c in self.types if c not in df.columns]
        if unknown:
            raise AvatarError(
                f"types names unknown column(s) {unknown}; available: {list(df.columns)}"
            )
        self.columns_ = list(df.columns)
        self.specs_: dict[Any, ColumnSpec] = {}
        codes = {}
        for name in df.columns:
            series = df[name]
            kind = self.types.get(name) or _detect_kind(series)
            if kind == CONTINUOUS and _detect_kind(series) != CONTINUOUS:
                raise AvatarError(
                    f"column {name!r} (dtype {series.dtype}) cannot be continuous; declare it "
                    "'categorical' or convert it to numbers first"
                )
            spec = ColumnSpec(name=name, kind=kind, dtype=series.dtype)
            missing = series.isna().to_numpy()
            spec.has_missing = (
                bool(missing.any()) and kind != IDENTIFIER and self.missing_indicators
            )
            spec.missing_value = _first_missing_value(series)
            if kind == CONTINUOUS:
                self._fit_continuous(spec, series, missing)
            elif kind == CATEGORICAL:
                codes[name] = self._fit_categorical(spec, series)
            self.specs_[name] = spec
        if self.imputation == "knn" and self.continuous_columns_:
            self._fit_knn_imputer(df)
        return codes

    def _fit_continuous(self, spec: ColumnSpec, series: pd.Series, missing: np.ndarray) -> None:
        if _is_datetime(spec.dtype):
            spec.datetime_unit = series.dt.unit
            spec.tz = getattr(spec.dtype, "tz", None)
        else:
            spec.is_integer = pd.api.types.is_integer_dtype(spec.dtype)
        values = self.continuous_values(spec, series)
        observed = values[~missing]
        if not np.isfinite(observed).all():
            raise AvatarError(
                f"column {spec.name!r} holds infinite values; replace them (by NaN to treat "
                "them as missing, or by a finite value) before avatarizing"
            )
        spec.fill_value = float(
            np.mean(observed) if self.imputation == "mean" else np.median(observed)
        )

    def _fit_categorical(self, spec: ColumnSpec, series: pd.Series) -> np.ndarray:
        if isinstance(spec.dtype, pd.CategoricalDtype):
            used = np.unique(series.cat.codes.to_numpy())
            spec.modalities = spec.dtype.categories[used[used >= 0]]
            codes = self.categorical_codes(spec, series)
        else:  # sorted factorization: codes into the modalities, -1 where missing
            codes, spec.modalities = pd.factorize(series, sort=True)
            codes = codes.astype(np.int64)
        spec.fill_value = _mode_code(codes, len(spec.modalities))
        return codes

    def _fit_knn_imputer(self, df: pd.DataFrame) -> None:
        from sklearn.impute import KNNImputer

        raw = np.column_stack(
            [self.continuous_values(self.specs_[c], df[c]) for c in self.continuous_columns_]
        )
        self._knn_scale = (np.nanmean(raw, axis=0), np.nanstd(raw, axis=0) + 1e-300)
        mean, std = self._knn_scale
        self._knn_imputer = KNNImputer(n_neighbors=5).fit((raw - mean) / std)

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
    def indicator_columns_(self) -> list[Any]:
        """Original columns that get a temporary "is missing" indicator."""
        return [c for c in self.columns_ if self.specs_[c].has_missing]

    @property
    def variable_sources_(self) -> list[Any]:
        """For every encoded variable, the input column it comes from."""
        return self.continuous_columns_ + self.categorical_columns_ + self.indicator_columns_

    @property
    def n_modalities_(self) -> list[int]:
        return [len(self.specs_[c].modalities) for c in self.categorical_columns_] + [
            2 for _ in self.indicator_columns_
        ]

    # --------------------------------------------------------- transform
    @staticmethod
    def continuous_values(spec: ColumnSpec, series: pd.Series) -> np.ndarray:
        if spec.datetime_unit is not None:
            ticks = series.array.asi8.astype(np.float64)
            ticks[series.isna().to_numpy()] = np.nan
            return ticks * (_NANOS_PER_UNIT[spec.datetime_unit] / 1e9)
        return series.to_numpy(dtype=np.float64, na_value=np.nan)

    @staticmethod
    def categorical_codes(spec: ColumnSpec, series: pd.Series) -> np.ndarray:
        if isinstance(series.dtype, pd.CategoricalDtype):
            mapping = spec.modalities.get_indexer(series.dtype.categories)
            raw = series.cat.codes.to_numpy()
            codes = np.where(raw >= 0, mapping[np.maximum(raw, 0)], -1)
        else:
            codes = spec.modalities.get_indexer(series)
        return codes.astype(np.int64)

    def transform(self, df: pd.DataFrame) -> EncodedTable:
        """Encode ``df`` (same columns as at fit time) with the fitted modalities and fills."""
        return self._encode(df, {})

    def _encode(self, df: pd.DataFrame, known_codes: Mapping[Any, np.ndarray]) -> EncodedTable:
        """``transform``, taking a categorical column's codes from ``known_codes`` if there."""
        missing_cols = [c for c in self.columns_ if c not in df.columns]
        if missing_cols:
            raise AvatarError(f"the table lacks the fitted column(s) {missing_cols}")
        n = len(df)
        continuous = np.empty((n, len(self.continuous_columns_)), dtype=np.float64)
        for j, name in enumerate(self.continuous_columns_):
            continuous[:, j] = self.continuous_values(self.specs_[name], df[name])
        continuous_missing = np.isnan(continuous)
        if continuous_missing.any():
            if self.imputation == "knn":
                mean, std = self._knn_scale
                continuous = self._knn_imputer.transform((continuous - mean) / std) * std + mean
            else:
                fills = np.array([self.specs_[c].fill_value for c in self.continuous_columns_])
                continuous = np.where(continuous_missing, fills, continuous)

        categorical_columns = self.categorical_columns_
        indicators = self.indicator_columns_
        codes = np.empty((n, len(categorical_columns) + len(indicators)), dtype=np.int64)
        for j, name in enumerate(categorical_columns):
            series = df[name]
            column = known_codes.get(name)
            if column is None:
                column = self.categorical_codes(self.specs_[name], series)
            column[series.isna().to_numpy()] = self.specs_[name].fill_value
            codes[:, j] = column
        for j, name in enumerate(indicators, start=len(categorical_columns)):
            codes[:, j] = df[name].isna().to_numpy()
        return EncodedTable(continuous, codes, self.n_modalities_)

    # ------------------------------------------------------------ decode
    def decode(
        self,
        continuous: np.ndarray,
        categorical: np.ndarray,
        identifiers: Mapping[Any, np.ndarray] | None = None,
        index: pd.Index | None = None,
    ) -> pd.DataFrame:
        """Rebuild a DataFrame with the input's columns and dtypes from encoded arrays.

        Integer columns are rounded half to even (``numpy.rint``); datetimes are rounded to
        their unit and put back in their timezone. ``identifiers`` gives the values of the
        identifier columns (see ``fresh_identifiers``).
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
        for name in self.columns_:
            spec = self.specs_[name]
            mask = missing_masks.get(name)
            if spec.kind == CONTINUOUS:
                out[name] = _decode_continuous(spec, continuous[:, position[name]], mask)
            elif spec.kind == CATEGORICAL:
                out[name] = _decode_categorical(spec, categorical[:, position[name]], mask)
            else:
                if identifiers is None or name not in identifiers:
                    raise AvatarError(f"no identifier values given for column {name!r}")
                out[name] = pd.Series(identifiers[name]).astype(spec.dtype)
            out[name].index = index if index is not None else pd.RangeIndex(n)
        return pd.DataFrame(out, columns=self.columns_)


def _decode_continuous(spec: ColumnSpec, values: np.ndarray, mask: np.ndarray | None) -> pd.Series:
    if spec.datetime_unit is not None:
        ticks = np.rint(values * (1e9 / _NANOS_PER_UNIT[spec.datetime_unit]))
        ints = ticks.astype(np.int64)
        if mask is not None:
            ints[mask] = np.iinfo(np.int64).min  # NaT
        series = pd.Series(ints.view(f"M8[{spec.datetime_unit}]"))
        if spec.tz is not None:
            series = series.dt.tz_localize("UTC").dt.tz_convert(spec.tz)
        return series.astype(spec.dtype)
    if spec.is_integer:
        values = np.rint(values)
    if mask is not None:
        values = np.where(mask, np.nan, values)
    return pd.Series(values).astype(spec.dtype)


def _decode_categorical(spec: ColumnSpec, codes: np.ndarray, mask: np.ndarray | None) -> pd.Series:
    if isinstance(spec.dtype, pd.CategoricalDtype):
        full_codes = spec.dtype.categories.get_indexer(spec.modalities)[codes]
        if mask is not None:
            full_codes = np.where(mask, -1, full_codes)
        return pd.Series(pd.Categorical.from_codes(full_codes, dtype=spec.dtype))
    if mask is None or not mask.any():
        if isinstance(spec.dtype, pd.api.extensions.ExtensionDtype):
            # e.g. strings: a take from the few modalities, no per-value conversion
            return pd.Series(pd.array(spec.modalities, dtype=spec.dtype).take(codes))
        return pd.Series(spec.modalities.to_numpy()[codes]).astype(spec.dtype)
    values = spec.modalities.to_numpy()[codes].astype(object)
    values[mask] = spec.missing_value  # in numpy: pandas would turn a None into NaN
    return pd.Series(values, dtype=object).astype(spec.dtype)


def fresh_identifiers(original: pd.Series, n: int) -> np.ndarray:
    """``n`` unique identifiers of the column's type, none equal to an original value.

    Integers: the smallest non-negative integers absent from the column; text: ``avatar_<i>``
    (with a suffix if that ever collides). They carry no information about the individuals.
    """
    taken = set(original.dropna().tolist())
    if pd.api.types.is_numeric_dtype(original.dtype) and not pd.api.types.is_bool_dtype(
        original.dtype
    ):
        candidates = np.arange(n + len(taken))
        values = candidates[~np.isin(candidates, np.array(list(taken), dtype=np.float64))][:n]
        return values
    if pd.api.types.is_string_dtype(original.dtype) or original.dtype == object:
        prefix = "avatar_"
        while any(isinstance(v, str) and v.startswith(prefix) for v in taken):
            prefix = "avatar" + prefix
        return np.array([f"{prefix}{i}" for i in range(n)], dtype=object)
    raise AvatarError(
        f"identifier column {original.name!r} has dtype {original.dtype}; identifiers must be "
        "integers or text"
    )


def validate_table(df: Any) -> None:
    """Reject what no projection can handle, naming the column and the fix."""
    if not isinstance(df, pd.DataFrame):
        raise AvatarError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise AvatarError(
            f"the table is empty (shape {df.shape}); give at least 3 rows and 1 column"
        )
    duplicated = df.columns[df.columns.duplicated()].unique().tolist()
    if duplicated:
        raise AvatarError(f"duplicate column name(s) {duplicated}; rename them to be unique")
    all_missing = df.columns[df.isna().all().to_numpy()].tolist()
    if all_missing:
        raise AvatarError(
            f"column(s) {all_missing} have no non-missing value; drop them before avatarizing"
        )

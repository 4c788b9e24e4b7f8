"""FAMD, PCA and MCA as scikit-learn estimators on DataFrames: encoding (with temporary
imputation of missing values) then the exact projection (``projection.py``).

They follow scikit-learn's conventions: ``__init__`` only stores its arguments (``get_params``,
``set_params`` and ``sklearn.base.clone`` work, and so does a ``Pipeline``); ``fit`` checks
them and learns the ``..._`` attributes; ``transform`` before ``fit`` raises scikit-learn's
``NotFittedError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..backend import Backend, resolve_backend, to_pandas
from ..encoding import EncodedTable, TableEncoder
from ..errors import AvatarError
from ..parameters import check_backend, check_integer
from .projection import (
    FAMD_KIND,
    MCA_KIND,
    PCA_KIND,
    Projection,
    expand_variable_weights,
    projection_kind,
)


class _ProjectionEstimator(TransformerMixin, BaseEstimator):
    """DataFrame-level projection: encoding (with temporary imputation) + ``Projection``."""

    _kind: str | None = None  # None: chosen from the column kinds

    def __init__(
        self,
        n_components: int | None = None,
        column_weights: Mapping[Any, float] | None = None,
        types: Mapping[Any, str] | None = None,
        imputation: str = "median",
        backend: str | Backend = "auto",
    ) -> None:
        self.n_components = n_components
        self.column_weights = column_weights
        self.types = types
        self.imputation = imputation
        self.backend = backend

    def fit(self, X: pd.DataFrame, y: Any = None) -> _ProjectionEstimator:  # noqa: N803
        self._fit_encoded(to_pandas(X))
        return self

    def _fit_encoded(self, df: pd.DataFrame) -> EncodedTable:
        """Fit on ``df``; returns ``df`` encoded (``fit_transform`` needs it again)."""
        if self.n_components is not None:
            check_integer("n_components", self.n_components, 1)
        backend = resolve_backend(check_backend(self.backend))
        encoder = TableEncoder(self.types, self.imputation, missing_indicators=False)
        encoded = encoder.fit_transform(df)
        apart = encoder.identifier_columns_ + encoder.excluded_columns_ + encoder.dropped_columns_
        if apart:
            raise AvatarError(f"column(s) {apart} are not variables and cannot be projected; "
                              "drop them first")
        n_cont = len(encoder.continuous_columns_)
        n_cat = len(encoder.categorical_columns_)
        kind = self._kind or projection_kind(n_cont, n_cat)
        if kind == PCA_KIND and n_cat:
            raise AvatarError(
                f"PCA needs continuous columns only; {encoder.categorical_columns_} are "
                "categorical: use FAMD"
            )
        if kind == MCA_KIND and n_cont:
            raise AvatarError(
                f"MCA needs categorical columns only; {encoder.continuous_columns_} are "
                "continuous: use FAMD, or declare them categorical in types"
            )
        weights = expand_variable_weights(encoder, self.column_weights)
        self.encoder_ = encoder
        self.projection_ = Projection(kind, weights, backend).fit(encoded)
        self.kind_ = kind
        self.eigenvalues_ = self.projection_.eigenvalues_
        self.explained_variance_ratio_ = self.projection_.explained_variance_ratio_
        self.n_features_in_ = df.shape[1]
        self.feature_names_in_ = np.asarray(df.columns, dtype=object)
        return encoded

    @property
    def n_components_(self) -> int:
        check_is_fitted(self, "projection_")
        available = self.projection_.n_components_
        return min(self.n_components or available, available)

    def transform(self, X: pd.DataFrame) -> pd.DataFrame:  # noqa: N803
        """Coordinates of ``X`` in the fitted space, one column per component."""
        check_is_fitted(self, "projection_")
        df = to_pandas(X)
        if isinstance(df, pd.DataFrame) and len(df) == 0:
            raise AvatarError("X has no rows; give at least one row to project")
        return self._coordinates(df, self.encoder_.transform(df))

    def _coordinates(self, df: pd.DataFrame, encoded: EncodedTable) -> pd.DataFrame:
        coordinates = self.projection_.transform(encoded, self.n_components_)
        return pd.DataFrame(
            self.projection_.backend.to_numpy(coordinates),
            index=df.index,
            columns=self.get_feature_names_out(),
        )

    def fit_transform(self, X: pd.DataFrame, y: Any = None, **_: Any) -> pd.DataFrame:  # noqa: N803
        df = to_pandas(X)
        return self._coordinates(df, self._fit_encoded(df))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The coordinates' names: ``Dim. 1``, ``Dim. 2``, ..."""
        return np.array([f"Dim. {i + 1}" for i in range(self.n_components_)], dtype=object)

    def inverse_transform(self, X: pd.DataFrame | np.ndarray) -> pd.DataFrame:  # noqa: N803
        """A table with the fitted columns and dtypes; categories by highest frequency."""
        check_is_fitted(self, "projection_")
        backend = self.projection_.backend
        index = X.index if isinstance(X, pd.DataFrame) else None
        coordinates = np.asarray(X, dtype=np.float64)
        available = self.projection_.n_components_
        if coordinates.ndim != 2 or not 1 <= coordinates.shape[1] <= available:
            raise AvatarError(
                f"X must be coordinates of shape (rows, 1 to {available}) (the fitted "
                f"components), got shape {coordinates.shape}"
            )
        if not np.isfinite(coordinates).all():
            raise AvatarError("X holds missing or infinite coordinates; every one must be finite")
        continuous, frequencies = self.projection_.inverse_transform(coordinates)
        offsets = self.projection_.offsets_
        codes = np.column_stack(
            [
                backend.to_numpy(frequencies[:, offsets[j] : offsets[j + 1]].argmax(axis=1))
                for j in range(len(offsets) - 1)
            ]
            or [np.zeros((len(continuous), 0), dtype=np.int64)]
        )
        return self.encoder_.decode(backend.to_numpy(continuous), codes, index=index)


class FAMD(_ProjectionEstimator):
    """Factor analysis of mixed data (PCA for continuous, MCA-like for categorical columns).

    ``FAMD(n_components=None, column_weights=None).fit(df)`` then ``transform``,
    ``inverse_transform``, ``fit_transform``. Column kinds are detected as in ``avatarize``
    (override with ``types``); missing values are imputed for the projection only.
    """

    _kind = FAMD_KIND


class PCA(_ProjectionEstimator):
    """Principal component analysis of standardised continuous columns (saiph's scaling)."""

    _kind = PCA_KIND


class MCA(_ProjectionEstimator):
    """Multiple correspondence analysis of categorical columns (saiph's scaling)."""

    _kind = MCA_KIND

"""FAMD, PCA and MCA as scikit-learn estimators: encoding (with temporary imputation of
missing values) then the exact projection (``projection.py``).

They follow scikit-learn's conventions and pass its ``check_estimator``: ``__init__`` only
stores its arguments (``get_params``, ``set_params`` and ``sklearn.base.clone`` work, and so
does a ``Pipeline``); ``fit`` checks them and learns the ``..._`` attributes
(``n_features_in_``; ``feature_names_in_`` for a DataFrame whose column names are all
strings); ``transform`` before ``fit`` raises scikit-learn's ``NotFittedError``.

A DataFrame (pandas or cuDF) gives a DataFrame of coordinates with its index. Anything else
array-like (a numpy array, a read-only memmap, a list of rows) is a table whose columns are
named ``x0``, ``x1``, ... as scikit-learn names them: continuous for ``PCA`` and ``FAMD``,
categorical for ``MCA`` (integer codes, or text); its coordinates are a numpy array, or a
DataFrame after ``set_output(transform="pandas")``. Sparse matrices are refused (densify them
with ``.toarray()``). Missing values (NaN) are imputed for the projection, as for a DataFrame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..backend import Backend, resolve_backend, to_pandas
from ..encoding import EncodedTable, TableEncoder
from ..errors import AvatarError, AvatarTypeError
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
    _array_kind = "continuous"  # the kind of an array's columns
    _input_was_frame = True  # set by fit; True for estimators pickled before arrays

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # imputed for the projection
        tags.input_tags.sparse = False  # refused, naming .toarray()
        tags.input_tags.categorical = self._array_kind == "categorical"
        return tags

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        categorical = ["categorical"] if self._array_kind == "categorical" else []
        return {"allow_nan": True, "X_types": ["2darray", *categorical]}

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

    def fit(self, X: Any, y: Any = None) -> _ProjectionEstimator:  # noqa: N803
        """Learn the axes from ``X`` (a DataFrame, or an array: see the module); ``y`` is
        ignored."""
        self._fit_encoded(*self._fit_table(X))
        return self

    def _fit_table(self, X: Any) -> tuple[pd.DataFrame, bool]:  # noqa: N803
        """``X`` as the DataFrame to fit, and whether it was one."""
        df = to_pandas(X)
        if isinstance(df, pd.DataFrame):
            return df, True
        array = self._array(df, text=self._array_kind == "categorical")
        if array.shape[1] == 0:
            raise AvatarError(
                f"X has 0 feature(s) (shape={array.shape}) while a minimum of 1 is required; "
                "give at least one column"
            )
        if array.shape[0] < 3:
            raise AvatarError(
                f"X has {array.shape[0]} sample(s) (shape={array.shape}) while "
                f"{type(self).__name__} needs at least 3 rows; give more rows"
            )
        columns = [f"x{i}" for i in range(array.shape[1])]
        return pd.DataFrame(array, columns=columns, copy=False), False

    def _array(self, X: Any, text: bool) -> np.ndarray:  # noqa: N803
        """``X`` (not a DataFrame) as a 2-D array: numbers, or (``text``) cells of an object
        array that are not all numbers as they are."""
        name = type(self).__name__
        if sparse.issparse(X):
            raise AvatarTypeError(
                f"X is a sparse matrix, which {name} does not accept (sparse input is not "
                "supported): densify it with X.toarray()"
            )
        if hasattr(X, "compute"):
            raise AvatarTypeError(
                f"X must be a DataFrame or a 2-D array, got {type(X).__name__}: .compute() it "
                "first"
            )
        array = np.asarray(X)
        if np.iscomplexobj(array):
            raise AvatarError(
                "X holds complex numbers (Complex data not supported); give real values, "
                "e.g. its real and imaginary parts as two columns"
            )
        if array.ndim != 2:
            raise AvatarError(
                f"X must be 2-D (rows, columns), got {array.ndim} dimension(s); Reshape your "
                "data: X.reshape(-1, 1) for one column, X.reshape(1, -1) for one row"
            )
        if array.dtype.kind == "b" and self._array_kind == "continuous":
            return array.astype(np.float64)
        if array.dtype.kind in "OSU":  # numbers if they all read as numbers, as scikit-learn
            try:
                return array.astype(np.float64)
            except TypeError:
                raise AvatarTypeError(
                    "X holds a cell that is neither a number nor text: every float() argument "
                    "must be a string or a number; convert those cells, or give a DataFrame"
                ) from None
            except ValueError:
                if not text:
                    raise AvatarError(
                        f"X holds text, which {name} cannot read as numbers; give a DataFrame "
                        "(FAMD and MCA take its text columns as categorical) or numbers"
                    ) from None
        return array

    def _fit_encoded(self, df: pd.DataFrame, was_frame: bool) -> EncodedTable:
        """Fit on ``df`` (``was_frame``: given as a DataFrame, not an array); returns ``df``
        encoded (``fit_transform`` needs it again)."""
        if self.n_components is not None:
            check_integer("n_components", self.n_components, 1)
        backend = resolve_backend(check_backend(self.backend))
        types = self.types
        if not was_frame and (types is None or isinstance(types, Mapping)):
            # an array's columns are of _array_kind unless types says otherwise
            types = {**{c: self._array_kind for c in df.columns}, **(types or {})}
        encoder = TableEncoder(types, self.imputation, missing_indicators=False)
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
        self._input_was_frame = was_frame
        self.n_features_in_ = df.shape[1]
        names = list(df.columns)
        if was_frame and names and all(isinstance(c, str) for c in names):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # as scikit-learn: only for string names
            del self.feature_names_in_
        return encoded

    @property
    def n_components_(self) -> int:
        check_is_fitted(self, "projection_")
        available = self.projection_.n_components_
        return min(self.n_components or available, available)

    def transform(self, X: Any) -> pd.DataFrame | np.ndarray:  # noqa: N803
        """Coordinates of ``X`` in the fitted space, one column per component: a DataFrame
        for a DataFrame, else a numpy array."""
        check_is_fitted(self, "projection_")
        df = to_pandas(X)
        frame = isinstance(df, pd.DataFrame)
        if not frame:  # its columns are the fitted ones, by position
            text = self._array_kind == "categorical" or self._input_was_frame
            array = self._array(df, text=text)
            self._check_width(array.shape[1])
            df = pd.DataFrame(array, columns=self.encoder_.columns_, copy=False)
            if self._input_was_frame:  # an object array's numbers as numbers, as fitted
                df = df.infer_objects()
        elif not self._input_was_frame:  # fitted on an array: its columns by position
            self._check_width(df.shape[1])
            df = df.set_axis(self.encoder_.columns_, axis=1)
        if len(df) == 0:
            raise AvatarError("X has no rows; give at least one row to project")
        return self._coordinates(df, self.encoder_.transform(df), frame)

    def _check_width(self, n_columns: int) -> None:
        if n_columns != self.n_features_in_:
            raise AvatarError(
                f"X has {n_columns} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input; give the columns it was fitted on"
            )

    def _coordinates(
        self, df: pd.DataFrame, encoded: EncodedTable, frame: bool
    ) -> pd.DataFrame | np.ndarray:
        coordinates = self.projection_.transform(encoded, self.n_components_)
        coordinates = self.projection_.backend.to_numpy(coordinates)
        if not frame:
            return coordinates
        return pd.DataFrame(coordinates, index=df.index, columns=self.get_feature_names_out())

    def fit_transform(self, X: Any, y: Any = None, **_: Any) -> pd.DataFrame | np.ndarray:  # noqa: N803
        df, was_frame = self._fit_table(X)
        return self._coordinates(df, self._fit_encoded(df, was_frame), was_frame)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The coordinates' names: ``Dim. 1``, ``Dim. 2``, ..."""
        return np.array([f"Dim. {i + 1}" for i in range(self.n_components_)], dtype=object)

    def inverse_transform(self, X: pd.DataFrame | np.ndarray) -> pd.DataFrame | np.ndarray:  # noqa: N803
        """A table with the fitted columns and dtypes; categories by highest frequency (a
        numpy array when fitted on an array)."""
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
        table = self.encoder_.decode(backend.to_numpy(continuous), codes, index=index)
        return table if self._input_was_frame else table.to_numpy()


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
    """Multiple correspondence analysis of categorical columns (saiph's scaling); an array's
    columns are categorical (e.g. integer codes)."""

    _kind = MCA_KIND
    _array_kind = "categorical"

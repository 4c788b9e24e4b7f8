"""The values every attack works on, prepared once: the three tables (originals, avatars,
holdout) as float matrices over the same variables, and the scaling and nearest-avatar search
of anonymeter's mixed-type distance that linkability and inference share."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...backend import Backend
from ...encoding import CATEGORICAL, TableEncoder
from ...encoding.kinds import column_scales
from ...neighbours.references import nearest_references


@dataclass
class Values:
    """The three tables as float matrices over the same variables: numbers (datetimes as
    seconds), categories as shared codes; missing values are NaN."""

    original: np.ndarray
    avatars: np.ndarray
    holdout: np.ndarray
    categorical: np.ndarray  # per variable
    times: np.ndarray  # per variable: datetimes and timedeltas
    variables: list[Any]

    @property
    def constant(self) -> np.ndarray:
        """Per variable: a number constant among the originals (``column_scales``: a std
        negligible against the mean), which no distance should weigh."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
            spread, mean = np.nanstd(self.original, axis=0), np.nanmean(self.original, axis=0)
        return ~self.categorical & np.isinf(column_scales(spread, mean))

    @property
    def exact(self) -> np.ndarray:
        """Per variable: guessed exactly (categories, datetimes, timedeltas)."""
        return self.categorical | self.times


def prepare_values(original, avatars, holdout, variables, types) -> Values:
    """The ``Values`` of ``variables`` of the three tables, encoded together (``types`` as in
    ``avatarize``)."""
    frames = [original[variables], avatars[variables], holdout[variables]]
    encoder = TableEncoder({c: k for c, k in types.items() if c in variables},
                           missing_indicators=False).fit(pd.concat(frames, ignore_index=True))

    def matrix(df):
        columns = []
        for column in variables:
            spec = encoder.specs_[column]
            if spec.kind == CATEGORICAL:
                codes = encoder.categorical_codes(spec, df[column]).astype(np.float64)
                codes[codes < 0] = np.nan
                columns.append(codes)
            else:
                columns.append(encoder.continuous_values(spec, df[column]))
        return np.column_stack(columns) if columns else np.empty((len(df), 0))

    categorical = np.array([encoder.specs_[c].kind == CATEGORICAL for c in variables])
    times = np.array([encoder.specs_[c].time_unit is not None for c in variables])
    return Values(*(matrix(df) for df in frames), categorical, times, list(variables))


def range_scaled(attacked: np.ndarray, avatars: np.ndarray, categorical: np.ndarray,
                 constant: np.ndarray):
    """``(attacked, avatars)`` with each number divided by its column's range over the two
    (anonymeter: a difference is then at most 1, as between two categories), a ``constant``
    one by infinity (it weighs nothing: 0, or NaN where missing); codes unchanged. Column by
    column, so any subset of columns is a slice of it."""
    both = np.vstack([attacked, avatars])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
        span = np.nanmax(both, axis=0) - np.nanmin(both, axis=0)
    span = np.where(categorical | ~np.isfinite(span) | (span == 0), 1.0, span)
    span = np.where(constant, np.inf, span)
    return attacked / span, avatars / span


def nearest_avatars(scaled, columns, categorical, k, backend: Backend):
    """Indices (n, k) of each attacked row's k nearest avatars on ``columns``; ``scaled``:
    ``range_scaled``'s pair for the attacked table."""
    queries, references = (table[:, columns] for table in scaled)
    indices, _ = nearest_references(queries, references, categorical[columns], k, backend)
    return backend.to_numpy(indices)

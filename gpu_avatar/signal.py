"""Signal (utility) metrics: how much of the original's statistics the avatars keep.

Order-free: the released, shuffled avatars are fine, and row counts may differ.

- ``hellinger_per_variable``: ``H(P, Q) = ||sqrt P - sqrt Q||_2 / sqrt 2`` between the original
  and avatar distributions of each variable. Categorical: relative frequencies over the union
  of modalities, missing counted as one more modality. Continuous (datetimes as seconds):
  ``bins`` (default 10) equal-width bins spanning the minimum to the maximum of BOTH samples'
  non-missing values together (one edge set per variable, shared by both), plus one bin for
  missing values; a constant variable is one bin.
- ``hellinger_mean``, ``hellinger_std``: mean and population std over variables.
- ``correlation_difference_ratio``: mean over pairs of continuous variables of
  ``|rho_original - rho_avatar|`` (Pearson, pairwise-complete observations), in %; pairs where
  either correlation is undefined (a constant column) are left out; None with fewer than two
  continuous variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .encoding import CATEGORICAL, CONTINUOUS, TableEncoder
from .errors import AvatarError
from .metrics_common import Target, check_same_table, metrics_frame

SIGNAL_TARGETS = {
    "hellinger_mean": Target("<", 0.1),
    "hellinger_std": Target(),
    "correlation_difference_ratio": Target("<", 10),
}


@dataclass
class SignalMetrics:
    """Signal metric values; per-variable Hellinger distances in ``hellinger_per_variable``."""

    hellinger_mean: float
    hellinger_std: float
    correlation_difference_ratio: float | None
    hellinger_per_variable: dict[str, float] = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value, target, passed."""
        return metrics_frame({name: getattr(self, name) for name in SIGNAL_TARGETS}, SIGNAL_TARGETS)


def hellinger(p: np.ndarray, q: np.ndarray) -> float:
    """Hellinger distance between two probability vectors on the same support."""
    return float(np.sqrt(((np.sqrt(p) - np.sqrt(q)) ** 2).sum() / 2.0))


def categorical_hellinger(original: pd.Series, avatar: pd.Series) -> float:
    p = original.astype(object).value_counts(dropna=False, normalize=True)
    q = avatar.astype(object).value_counts(dropna=False, normalize=True)
    p, q = p.align(q, fill_value=0.0)
    return hellinger(p.to_numpy(), q.to_numpy())


def continuous_hellinger(original: np.ndarray, avatar: np.ndarray, bins: int) -> float:
    pooled = np.concatenate([original, avatar])
    pooled = pooled[~np.isnan(pooled)]
    low, high = pooled.min(), pooled.max()
    edges = np.linspace(low, high, bins + 1) if high > low else np.array([low, low + 1.0])

    def distribution(values: np.ndarray) -> np.ndarray:
        missing = np.isnan(values)
        counts, _ = np.histogram(values[~missing], bins=edges)
        return np.append(counts, missing.sum()) / len(values)

    return hellinger(distribution(original), distribution(avatar))


def correlation_difference_ratio(original: pd.DataFrame, avatar: pd.DataFrame) -> float | None:
    """Mean absolute difference of pairwise Pearson correlations, in % (None if < 2 columns)."""
    if original.shape[1] < 2:
        return None
    upper = np.triu_indices(original.shape[1], k=1)
    difference = np.abs(original.corr().to_numpy()[upper] - avatar.corr().to_numpy()[upper])
    difference = difference[np.isfinite(difference)]
    return float(100.0 * difference.mean()) if difference.size else None


def signal_metrics(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    types: Mapping[Any, str] | None = None,
    bins: int = 10,
) -> SignalMetrics:
    """Signal metrics between ``original`` and ``avatars`` (any row order; see module doc)."""
    if not isinstance(bins, int) or bins < 1:
        raise AvatarError(f"bins must be a positive integer, got {bins!r}")
    avatars = check_same_table(original, avatars, "avatars", same_rows=False)
    encoder = TableEncoder(types, missing_indicators=False).fit(original)
    per_variable, continuous_o, continuous_a = {}, {}, {}
    for column in encoder.columns_:
        spec = encoder.specs_[column]
        if spec.kind == CATEGORICAL:
            per_variable[str(column)] = categorical_hellinger(original[column], avatars[column])
        elif spec.kind == CONTINUOUS:
            values_o = encoder.continuous_values(spec, original[column])
            values_a = encoder.continuous_values(spec, avatars[column])
            per_variable[str(column)] = continuous_hellinger(values_o, values_a, bins)
            continuous_o[column], continuous_a[column] = values_o, values_a
    if not per_variable:
        raise AvatarError("no variable to compare: every column is an identifier")
    distances = np.array(list(per_variable.values()))
    return SignalMetrics(
        hellinger_mean=float(distances.mean()),
        hellinger_std=float(distances.std()),
        correlation_difference_ratio=correlation_difference_ratio(
            pd.DataFrame(continuous_o), pd.DataFrame(continuous_a)
        ),
        hellinger_per_variable=per_variable,
    )

"""Signal (utility) metrics: how much of the original's statistics the avatars keep.

Order-free: the released, shuffled avatars are fine, and row counts may differ.

- ``hellinger_per_variable``: ``H(P, Q) = ||sqrt P - sqrt Q||_2 / sqrt 2`` between the original
  and avatar distributions of each variable. Categorical: relative frequencies over the union
  of modalities, missing counted as one more modality. Continuous (datetimes as seconds):
  ``bins`` (default ``HELLINGER_BINS``) equal-width bins spanning the minimum to the maximum
  of BOTH samples' non-missing values together (one edge set per variable, shared by both),
  plus one bin for missing values; a constant variable (a range negligible against the mean,
  ``encoding.kinds.column_scales``) is one bin.
- ``hellinger_mean``, ``hellinger_std``: mean and population std over variables.
- ``correlation_difference_ratio``: mean over pairs of continuous variables of
  ``|rho_original - rho_avatar|`` (Pearson, pairwise-complete observations), in %; pairs where
  either correlation is undefined (a constant column, as above by its std) are left out; None
  with fewer than two continuous variables.
- ``shares_off``: the shares the avatars do not keep within ``share_tolerance`` (one point,
  or a fifth of the share if that is larger): each modality of a categorical column (missing
  cells as one more value) and the missing share of the other columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import CPU, Backend, resolve_backend, to_pandas
from ..encoding import CATEGORICAL, CONTINUOUS, IDENTIFIER, TableEncoder
from ..encoding.kinds import column_scales
from ..errors import AvatarError
from ..parameters import check_integer, check_types
from .catalogue import SIGNAL_TARGETS, metrics_frame
from .checks import check_same_table, released_part
from .timing import timed

HELLINGER_BINS = 10  # equal-width bins of a continuous variable
SHARE_FLOOR, SHARE_RATIO = 0.01, 0.2  # a share is kept within max(1 point, a fifth of it)
SHARES_OFF_COLUMNS = ["column", "value", "original", "avatars", "tolerance"]  # value None: missing


@dataclass
class SignalMetrics:
    """Signal metric values; per-variable Hellinger distances in ``hellinger_per_variable``."""

    hellinger_mean: float
    hellinger_std: float
    correlation_difference_ratio: float | None
    hellinger_per_variable: dict[str, float] = field(repr=False)
    seconds: float | None = field(default=None, compare=False)  # to compute them
    shares_off: pd.DataFrame = field(  # one row per share not kept: ``SHARES_OFF_COLUMNS``
        default_factory=lambda: pd.DataFrame(columns=SHARES_OFF_COLUMNS), repr=False,
        compare=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value, target, passed."""
        return metrics_frame({name: getattr(self, name) for name in SIGNAL_TARGETS}, SIGNAL_TARGETS)


def hellinger(p, q, xp=np) -> float:
    """Hellinger distance between two probability vectors on the same support."""
    return float(xp.sqrt(((xp.sqrt(p) - xp.sqrt(q)) ** 2).sum() / 2.0))


def categorical_hellinger(original: pd.Series, avatar: pd.Series, backend: Backend = CPU) -> float:
    """Frequencies over the union of modalities, missing counted as one more modality."""
    pooled = pd.concat([original, avatar], ignore_index=True)  # its labels may not repeat
    codes, _ = pd.factorize(pooled.astype(object), use_na_sentinel=False)
    codes = backend.asarray(codes)
    size = int(codes.max()) + 1
    xp = backend.xp
    p = xp.bincount(codes[: len(original)], minlength=size) / len(original)
    q = xp.bincount(codes[len(original) :], minlength=size) / len(avatar)
    return hellinger(p, q, xp)


def continuous_hellinger(original, avatar, bins: int, backend: Backend = CPU) -> float:
    """Histograms on ``bins`` equal-width bins over both samples' range, plus a missing bin."""
    xp = backend.xp
    original, avatar = backend.asarray(original), backend.asarray(avatar)
    pooled = xp.concatenate([original, avatar])
    pooled = pooled[~xp.isnan(pooled)]
    low, high = float(pooled.min()), float(pooled.max())
    varies = np.isfinite(column_scales(high - low, float(pooled.mean())))
    # edges from the host on every backend: a device's linspace may round them differently
    edges = backend.asarray(
        np.linspace(low, high, bins + 1) if varies else np.array([low, high + 1.0])
    )

    def distribution(values):
        missing = xp.isnan(values)
        counts, _ = xp.histogram(values[~missing], bins=edges)
        return xp.concatenate([counts, missing.sum()[None]]) / len(values)

    return hellinger(distribution(original), distribution(avatar), xp)


def share_tolerance(share: Any) -> Any:
    """How far from the original ``share`` an avatar share may be: one point, or a fifth of
    the share if that is larger."""
    return np.maximum(SHARE_FLOOR, SHARE_RATIO * share)


def _shares_off(column: Any, original: pd.Series, avatars: pd.Series, categorical: bool,
                groups: Mapping[Any, Any]) -> list[list[Any]]:
    """The rows of ``shares_off`` for one column, its grouped values (``groups``: value ->
    label) counted as their labels."""
    if categorical:
        if groups:
            original = original.astype(object).map(lambda value: groups.get(value, value))
        shares = pd.DataFrame({
            "original": original.value_counts(normalize=True, dropna=False),
            "avatars": avatars.value_counts(normalize=True, dropna=False),
        }).fillna(0.0)
    else:
        shares = pd.DataFrame({"original": [original.isna().mean()],
                               "avatars": [avatars.isna().mean()]}, index=[None])
    shares["tolerance"] = share_tolerance(shares["original"])
    off = shares[(shares["avatars"] - shares["original"]).abs() > shares["tolerance"] + 1e-12]
    return [[column, None if pd.isna(value) else value, *row]
            for value, row in zip(off.index, off.itertuples(index=False), strict=True)]


def correlation_difference_ratio(original: pd.DataFrame, avatar: pd.DataFrame) -> float | None:
    """Mean absolute difference of pairwise Pearson correlations, in % (None if < 2 columns)."""
    if original.shape[1] < 2:
        return None
    upper = np.triu_indices(original.shape[1], k=1)
    difference = np.abs(_correlations(original)[upper] - _correlations(avatar)[upper])
    difference = difference[np.isfinite(difference)]
    return float(100.0 * difference.mean()) if difference.size else None


def _correlations(frame: pd.DataFrame) -> np.ndarray:
    """Pearson correlations, undefined (NaN) for a constant column."""
    correlations = frame.corr().to_numpy(copy=True)
    constant = np.isinf(column_scales(frame.std(ddof=0).to_numpy(), frame.mean().to_numpy()))
    correlations[constant, :] = np.nan
    correlations[:, constant] = np.nan
    return correlations


@timed
def signal_metrics(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    *,
    types: Mapping[Any, str] | None = None,
    bins: int = HELLINGER_BINS,
    backend: str | Backend = "auto",
    groups: Mapping[Any, Mapping[Any, Any]] | None = None,
) -> SignalMetrics:
    """Signal metrics between ``original`` and ``avatars`` (any row order; see module doc).

    The distributions are counted on ``backend`` (the GPU when "auto" finds one). ``groups``:
    the modalities the avatarization grouped (``AvatarizationResult.grouped_modalities``),
    counted as their labels in ``shares_off`` (the Hellinger distances measure the loss
    against the values as they were)."""
    check_integer("bins", bins, 1)
    types = check_types(types)
    backend = resolve_backend(backend)
    types, original, avatars = released_part(types, to_pandas(original), to_pandas(avatars))
    avatars = check_same_table(original, avatars, "avatars", same_rows=False)
    encoder = TableEncoder(types, missing_indicators=False).fit(original)
    per_variable, continuous_o, continuous_a, off = {}, {}, {}, []
    for column in encoder.columns_:
        spec = encoder.specs_[column]
        if spec.kind != IDENTIFIER:
            off += _shares_off(column, original[column], avatars[column],
                               spec.kind == CATEGORICAL, (groups or {}).get(column, {}))
        if spec.kind == CATEGORICAL:
            per_variable[str(column)] = categorical_hellinger(
                original[column], avatars[column], backend
            )
        elif spec.kind == CONTINUOUS:
            values_o = encoder.continuous_values(spec, original[column])
            values_a = encoder.continuous_values(spec, avatars[column])
            per_variable[str(column)] = continuous_hellinger(values_o, values_a, bins, backend)
            continuous_o[column], continuous_a[column] = values_o, values_a
    if not per_variable:
        raise AvatarError("no variable to compare: every column is an identifier, excluded or "
                          "dropped")
    distances = np.array(list(per_variable.values()))
    return SignalMetrics(
        hellinger_mean=float(distances.mean()),
        hellinger_std=float(distances.std()),
        correlation_difference_ratio=correlation_difference_ratio(
            pd.DataFrame(continuous_o), pd.DataFrame(continuous_a)
        ),
        hellinger_per_variable=per_variable,
        shares_off=pd.DataFrame(off, columns=SHARES_OFF_COLUMNS),
    )

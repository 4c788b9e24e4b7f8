"""The single-table pipeline: encode -> project -> neighbours -> synthesise -> decode."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .backend import Backend, resolve_backend
from .encoding import TableEncoder, fresh_identifiers
from .errors import AvatarError
from .neighbours import nearest_neighbours
from .privacy import PrivacyMetrics, privacy_metrics
from .projection import Projection, expand_variable_weights, projection_kind
from .signal import SignalMetrics, signal_metrics
from .synthesis import CATEGORICAL_RULES, shuffle_order, synthesize

logger = logging.getLogger("gpu_avatar")


@dataclass
class AvatarizationResult:
    """Avatars of one table, with what is needed to evaluate them.

    ``avatars`` is the release: shuffled, fresh identifiers, same columns and dtypes as the
    input. ``sensitive_unshuffled_avatars`` keeps row i = avatar of input row i (same index as
    the input) for the privacy metrics only: releasing it would link avatars to people.
    """

    avatars: pd.DataFrame
    sensitive_unshuffled_avatars: pd.DataFrame
    original: pd.DataFrame = field(repr=False)
    parameters: dict[str, Any]
    seed: int  # entropy of the run's SeedSequence: pass it back as seed= to reproduce the run
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)

    def privacy_metrics(self, **overrides: Any) -> PrivacyMetrics:
        """``ga.privacy_metrics`` on this run's originals and unshuffled avatars, with the
        run's ``ncp``, ``types`` and backend unless overridden."""
        settings = dict(
            ncp=self.parameters["ncp"], types=self.parameters["types"],
            backend=self.parameters["backend"],
        )
        settings.update(overrides)
        return privacy_metrics(self.original, self.sensitive_unshuffled_avatars, **settings)

    def signal_metrics(self, **overrides: Any) -> SignalMetrics:
        """``ga.signal_metrics`` between this run's originals and released avatars."""
        settings = dict(types=self.parameters["types"])
        settings.update(overrides)
        return signal_metrics(self.original, self.avatars, **settings)


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AvatarError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low} <= {name}" + (f" <= {high}" if high is not None else "")
        raise AvatarError(f"{name} = {value} is out of range: need {bound}")
    return int(value)


def seed_sequence(seed: int | np.random.SeedSequence | None) -> np.random.SeedSequence:
    """The run's SeedSequence: fresh entropy when ``seed`` is None."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None:
        _check_int("seed", seed, 0)
    return np.random.SeedSequence(seed)


@contextmanager
def _timed(timings: dict[str, float], step: str):
    start = time.perf_counter()
    yield
    timings[step] = time.perf_counter() - start
    logger.info("%s: %.2f s", step, timings[step])


def avatarize(
    df: pd.DataFrame,
    k: int,
    ncp: int = 5,
    column_weights: Mapping[Any, float] | None = None,
    seed: int | None = None,
    categorical: str = "draw",
    types: Mapping[Any, str] | None = None,
    imputation: str = "median",
    backend: str | Backend = "auto",
    neighbour_engine: str = "auto",
) -> AvatarizationResult:
    """Avatarize one table: one synthetic individual per row, same columns and dtypes.

    ``k`` neighbours (2 <= k < n rows) are searched exactly on the first ``ncp`` axes of a
    FAMD (PCA when every variable is continuous, MCA when every variable is categorical).
    ``types`` maps a column to "continuous", "categorical" or "identifier" (identifiers are not
    variables and get fresh values); ``imputation`` ("median", "mean", "mode" or "knn") fills
    missing cells temporarily, and the missing pattern is avatarized through indicators.
    ``seed`` makes the run reproducible (the result's ``seed`` reproduces an unseeded run).
    """
    if categorical not in CATEGORICAL_RULES:
        raise AvatarError(f"categorical={categorical!r} is not one of {CATEGORICAL_RULES}")
    ncp = _check_int("ncp", ncp, 1)
    sequence = seed_sequence(seed)
    backend = resolve_backend(backend)
    timings: dict[str, float] = {}

    with _timed(timings, "encode"):
        encoder = TableEncoder(types, imputation).fit(df)
        n = len(df)
        k = _check_int("k", k, 2, n - 1)
        encoded = encoder.transform(df)
        if not encoder.variable_sources_:
            raise AvatarError("the table has no variable besides identifier columns")
        weights = expand_variable_weights(encoder, column_weights)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    with _timed(timings, "projection"):
        projection = Projection(kind, weights, backend).fit(encoded)
        used_ncp = min(ncp, projection.n_components_)
        coordinates = projection.transform(encoded, used_ncp)
    with _timed(timings, "neighbours"):
        indices, distances = nearest_neighbours(coordinates, k, backend, neighbour_engine)
    with _timed(timings, "synthesis"):
        continuous, codes = synthesize(
            encoded.continuous, encoded.categorical, encoded.n_modalities,
            indices, distances, sequence, backend, categorical,
        )
    with _timed(timings, "decode"):
        order = shuffle_order(n, sequence)
        identifiers = {}
        for name in encoder.identifier_columns_:
            unshuffled_ids = np.empty(n, dtype=object)
            unshuffled_ids[order] = fresh_identifiers(df[name], n)  # fresh ids in released order
            identifiers[name] = unshuffled_ids
        unshuffled = encoder.decode(
            backend.to_numpy(continuous), backend.to_numpy(codes), identifiers, index=df.index
        )
        avatars = unshuffled.iloc[order].reset_index(drop=True)

    return AvatarizationResult(
        avatars=avatars,
        sensitive_unshuffled_avatars=unshuffled,
        original=df,
        parameters=dict(
            k=k, ncp=used_ncp, column_weights=dict(column_weights or {}), categorical=categorical,
            types=dict(types or {}), imputation=imputation, backend=backend.name,
        ),
        seed=int(sequence.entropy),
        projection_kind=kind,
        timings=timings,
    )

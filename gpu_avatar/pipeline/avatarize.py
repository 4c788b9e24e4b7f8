"""The single-table pipeline: encode -> project -> neighbours -> synthesise -> decode."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend.choice import Backend, ensure_fits, like_input, resolve_backend, to_pandas
from ..encoding.encoder import EncodedTable, TableEncoder, fresh_identifiers, validate_table
from ..errors import AvatarError
from ..metrics.privacy import PrivacyMetrics, privacy_metrics
from ..metrics.signal import SignalMetrics, signal_metrics
from ..neighbours.search import nearest_neighbours
from ..progress import ProgressLike, Steps
from ..projection.projection import Projection, expand_variable_weights, projection_kind
from ..synthesis import CATEGORICAL_RULES, shuffle_order, synthesize
from .batches import batch_seed, check_batch_size, plan_batches

logger = logging.getLogger("gpu_avatar")


@dataclass
class AvatarizationResult:
    """Avatars of one table, with what is needed to evaluate them.

    ``avatars`` is the release: shuffled, fresh identifiers, same columns and dtypes as the
    input (built on first access from the unshuffled avatars and ``release_order``, so a
    caller that only needs the unshuffled ones, as the multi-table pipeline, never holds both).
    ``sensitive_unshuffled_avatars`` keeps row i = avatar of input row i (same index as the
    input) for the privacy metrics only: releasing it would link avatars to people.
    """

    sensitive_unshuffled_avatars: pd.DataFrame
    release_order: np.ndarray = field(repr=False)  # released row r = unshuffled row order[r]
    original: pd.DataFrame = field(repr=False)
    parameters: dict[str, Any]
    seed: int  # entropy of the run's SeedSequence: pass it back as seed= to reproduce the run
    projection_kind: str
    timings: dict[str, float] = field(default_factory=dict)
    batches: list[np.ndarray] | None = field(default=None, repr=False)  # row positions, if batched

    @functools.cached_property
    def avatars(self) -> pd.DataFrame:
        return self.sensitive_unshuffled_avatars.iloc[self.release_order].reset_index(drop=True)

    def privacy_metrics(self, **overrides: Any) -> PrivacyMetrics:
        """``ga.privacy_metrics`` on this run's originals and unshuffled avatars, with the
        run's ``ncp``, ``types`` and backend unless overridden."""
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        return privacy_metrics(self.original, avatars, **self._privacy_settings(overrides))

    def _privacy_settings(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The run's metric settings (ncp, types, backend), overridden by ``overrides``."""
        settings = {key: self.parameters[key] for key in ("ncp", "types", "backend")}
        return {**settings, **overrides}

    def signal_metrics(self, **overrides: Any) -> SignalMetrics:
        """``ga.signal_metrics`` between this run's originals and released avatars."""
        settings = dict(types=self.parameters["types"], backend=self.parameters["backend"])
        settings.update(overrides)
        return signal_metrics(self.original, to_pandas(self.avatars), **settings)

    def batch_privacy_metrics(self, **overrides: Any) -> pd.DataFrame:
        """Privacy metrics of each batch (originals of the batch against their avatars), one
        row per batch, then the ``mean`` and the ``worst`` (lowest for every metric whose
        target is a minimum). A run without batches has a single batch."""
        batches = self.batches or [np.arange(len(self.original))]
        settings = self._privacy_settings(overrides)
        avatars = to_pandas(self.sensitive_unshuffled_avatars)
        rows = {}
        for b, positions in enumerate(batches):
            metrics = privacy_metrics(
                self.original.iloc[positions], avatars.iloc[positions], **settings
            )
            rows[f"batch {b}"] = metrics.to_frame()["value"]
        table = pd.DataFrame(rows).T
        worst = table.min()
        return pd.concat(
            [table, table.mean().rename("mean").to_frame().T, worst.rename("worst").to_frame().T]
        )

    def report(self, path: Any, **options: Any) -> Any:
        """Write a self-contained HTML report of this run to ``path`` (needs matplotlib:
        ``pip install 'gpu_avatar[report]'``); ``options`` as in
        ``gpu_avatar.report.write_table_report``."""
        from ..report.html import write_table_report

        return write_table_report(self, path, **options)


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
def _timed(timings: dict[str, float], step: str, steps: Steps | None = None):
    """Time a step (adding up over batches) and report it to ``steps``."""
    if steps is not None:
        steps.start(step)
    start = time.perf_counter()
    try:
        yield
    except BaseException:
        if steps is not None:
            steps.close()
        raise
    timings[step] = timings.get(step, 0.0) + time.perf_counter() - start
    logger.info("%s: %.2f s", step, time.perf_counter() - start)
    if steps is not None:
        steps.advance()


@dataclass
class AvatarModel:
    """What a run learns once and every batch shares: encoding, projection, settings."""

    encoder: TableEncoder
    projection: Projection
    k: int
    ncp: int
    categorical: str
    neighbour_engine: str

    @property
    def backend(self) -> Backend:
        return self.projection.backend


def fit_model(
    df: pd.DataFrame,
    k: int,
    ncp: int,
    column_weights: Mapping[Any, float] | None,
    types: Mapping[Any, str] | None,
    imputation: str,
    backend: Backend,
    categorical: str = "draw",
    neighbour_engine: str = "auto",
) -> AvatarModel:
    """Fit the encoder and the projection on ``df`` (the whole table, or the first batch)."""
    return _fit_model_encoded(
        df, k, ncp, column_weights, types, imputation, backend, categorical, neighbour_engine
    )[0]


def _fit_model_encoded(
    df, k, ncp, column_weights, types, imputation, backend, categorical, neighbour_engine
) -> tuple[AvatarModel, EncodedTable]:
    """``fit_model``, also returning ``df`` encoded (its first batch needs it again)."""
    encoder = TableEncoder(types, imputation)
    encoded = encoder.fit_transform(df)
    if not encoder.variable_sources_:
        raise AvatarError("the table has no variable besides identifier columns")
    weights = expand_variable_weights(encoder, column_weights)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    projection = Projection(kind, weights, backend).fit(encoded)
    model = AvatarModel(
        encoder, projection, k, min(ncp, projection.n_components_), categorical, neighbour_engine
    )
    return model, encoded


def avatarize_rows(
    model: AvatarModel,
    df: pd.DataFrame,
    sequence: np.random.SeedSequence,
    identifiers: Mapping[Any, np.ndarray] | None = None,
    timings: dict[str, float] | None = None,
    steps: Steps | None = None,
    encoded: EncodedTable | None = None,
) -> pd.DataFrame:
    """Unshuffled avatars of ``df`` (one batch) in the model's space: row i = avatar of row i.
    ``encoded``: ``df`` already encoded by the model's encoder, if at hand."""
    timings = {} if timings is None else timings
    backend = model.backend
    with _timed(timings, "projection", steps):
        encoded = model.encoder.transform(df) if encoded is None else encoded
        coordinates = model.projection.transform(encoded, model.ncp)
    with _timed(timings, "neighbours", steps):
        indices, distances = nearest_neighbours(
            coordinates, model.k, backend, model.neighbour_engine
        )
    with _timed(timings, "synthesis", steps):
        continuous, codes = synthesize(
            encoded.continuous,
            encoded.categorical,
            encoded.n_modalities,
            indices,
            distances,
            sequence,
            backend,
            model.categorical,
        )
    with _timed(timings, "decode", steps):
        return model.encoder.decode(
            backend.to_numpy(continuous), backend.to_numpy(codes), identifiers, index=df.index
        )


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
    progress: ProgressLike = None,
    batch_size: int | None = None,
) -> AvatarizationResult:
    """Avatarize one table: one synthetic individual per row, same columns and dtypes.

    ``k`` neighbours (2 <= k < n rows) are searched exactly on the first ``ncp`` axes of a
    FAMD (PCA when every variable is continuous, MCA when every variable is categorical).
    ``types`` maps a column to "continuous", "categorical" or "identifier" (identifiers are not
    variables and get fresh values); ``imputation`` ("median", "mean", "mode" or "knn") fills
    missing cells temporarily, and the missing pattern is avatarized through indicators.
    ``seed`` makes the run reproducible (the result's ``seed`` reproduces an unseeded run).
    ``batch_size``: above this many rows, the table is split into batches (``batches.py``):
    the projection is fitted on a first batch that shows every modality, and each batch is
    avatarized on its own; memory then follows the batch size. ``progress``: None (silent),
    True (a tqdm bar) or a callable ``(step, done, total)``, see ``gpu_avatar.progress``.
    cuDF input gives cuDF avatars.
    """
    if categorical not in CATEGORICAL_RULES:
        raise AvatarError(f"categorical={categorical!r} is not one of {CATEGORICAL_RULES}")
    ncp = _check_int("ncp", ncp, 1)
    sequence = seed_sequence(seed)
    backend = resolve_backend(backend)
    frame = to_pandas(df)
    validate_table(frame)
    n = len(frame)
    k = _check_int("k", k, 2, n - 1)
    if batch_size is not None:
        check_batch_size(batch_size, k)
    timings: dict[str, float] = {}

    if batch_size is None or n <= batch_size:
        batches, seeds = [np.arange(n)], [sequence]
    else:
        with _timed(timings, "batch plan"):
            codes = TableEncoder(types, imputation).fit_transform(frame).categorical
            batches = plan_batches(codes, batch_size, sequence)
            seeds = [batch_seed(sequence, b) for b in range(len(batches))]
    steps = Steps(progress, "avatarize", total=1 + 4 * len(batches))
    first = frame.iloc[batches[0]]
    check_device_memory(backend, len(first), first.shape[1], k, ncp)
    with _timed(timings, "fit", steps):
        model, first_encoded = _fit_model_encoded(
            first,
            k,
            ncp,
            column_weights,
            types,
            imputation,
            backend,
            categorical,
            neighbour_engine,
        )
    order = shuffle_order(n, sequence)
    identifiers = {}
    for name in model.encoder.identifier_columns_:
        unshuffled_ids = np.empty(n, dtype=object)
        unshuffled_ids[order] = fresh_identifiers(frame[name], n)  # fresh ids in released order
        identifiers[name] = unshuffled_ids
    parts = [
        avatarize_rows(
            model,
            frame.iloc[rows],
            batch_sequence,
            {name: ids[rows] for name, ids in identifiers.items()},
            timings,
            steps,
            encoded=first_encoded if b == 0 else None,
        )
        for b, (rows, batch_sequence) in enumerate(zip(batches, seeds, strict=True))
    ]
    unshuffled = pd.concat(parts) if len(parts) > 1 else parts[0]
    del parts  # the batches' frames: one copy of the avatars at a time
    if len(batches) > 1:  # back to the input's row order
        unshuffled = unshuffled.iloc[np.argsort(np.concatenate(batches))]
    return AvatarizationResult(
        sensitive_unshuffled_avatars=like_input(unshuffled, df),
        release_order=order,
        original=frame,
        parameters=dict(
            k=k,
            ncp=model.ncp,
            column_weights=dict(column_weights or {}),
            categorical=categorical,
            types=dict(types or {}),
            imputation=imputation,
            backend=backend.name,
            batch_size=batch_size,
        ),
        seed=int(sequence.entropy),
        projection_kind=model.projection.kind,
        timings=timings,
        batches=None if len(batches) == 1 else batches,
    )


def check_device_memory(backend: Backend, n_rows: int, n_columns: int, k: int, ncp: int):
    """Refuse, before any work, a batch of ``n_rows`` the device cannot hold. Counted per row
    (8 bytes a value), over the steps' arrays that can be alive together: the encoded table
    and its avatars (at most two variables per column: the value and a missing indicator,
    twice), the coordinates with their chunks and the tree's copy (3 ncp), the tree's order and
    the queries (2), the neighbours' indices and squared distances in the tree's order and in
    the caller's, then the distances (5 k)."""
    per_row = 8 * (4 * n_columns + 3 * ncp + 2 + 5 * k)
    ensure_fits(backend, n_rows, per_row, f"avatarizing {n_rows:,} rows")

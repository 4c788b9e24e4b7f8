"""What a run learns once and every batch shares (``AvatarModel``: the encoder, the projection,
the parameters), and the avatarization of one batch in that space (``avatarize_rows``):
project -> exact neighbours -> synthesis (and calibrated shares) -> decode."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend
from ..backend.memory import ensure_fits
from ..encoding import EncodedTable, TableEncoder
from ..encoding.rare import RareModalities
from ..errors import AvatarError
from ..neighbours import nearest_neighbours
from ..neighbours.search import nearest_reference
from ..parameters import AvatarParameters
from ..progress import Steps
from ..projection.projection import Projection, expand_variable_weights, projection_kind
from ..rules.values import Neighbours
from ..synthesis import synthesize
from .apart import excluded_values, needs_nearest_original
from .calibration import calibrate_shares
from .copies import UniqueCopies, redraw_unique_copies

logger = logging.getLogger("gpu_avatar")


@contextmanager
def timed(timings: dict[str, float], step: str, steps: Steps | None = None):
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
    """The encoder and projection fitted once, and the run's parameters (``ncp`` capped to
    the projection's components)."""

    encoder: TableEncoder
    projection: Projection
    parameters: AvatarParameters

    @property
    def backend(self) -> Backend:
        return self.projection.backend


def avatar_encoder(parameters: AvatarParameters,
                   groups: Mapping[Any, Mapping[Any, Any]] | None = None) -> TableEncoder:
    """The encoder of an avatarization: the rare modalities grouped as ``parameters`` ask,
    or given ``groups`` (learnt on the whole table), those."""
    return TableEncoder(parameters.types, parameters.imputation,
                        rare=RareModalities.of(parameters, groups))


def fit_model(
    df: pd.DataFrame, parameters: AvatarParameters, backend: Backend,
    groups: Mapping[Any, Mapping[Any, Any]] | None = None,
) -> tuple[AvatarModel, EncodedTable]:
    """Fit the encoder and the projection on ``df`` (the whole table, or the first batch, then
    with the ``groups`` of rare modalities learnt on the whole table); returns the model and
    ``df`` encoded (its first batch needs it again)."""
    encoder = avatar_encoder(parameters, groups)
    encoded = encoder.fit_transform(df)
    if not encoder.variable_sources_:
        raise AvatarError("the table has no variable besides identifier columns")
    weights = expand_variable_weights(encoder, parameters.column_weights)
    kind = projection_kind(encoded.continuous.shape[1], encoded.categorical.shape[1])
    projection = Projection(kind, weights, backend).fit(encoded)
    effective = parameters.replace(ncp=min(parameters.ncp, projection.n_components_))
    return AvatarModel(encoder, projection, effective), encoded


def avatarize_rows(
    model: AvatarModel,
    df: pd.DataFrame,
    sequence: np.random.SeedSequence,
    identifiers: Mapping[Any, Any] | None = None,
    timings: dict[str, float] | None = None,
    steps: Steps | None = None,
    encoded: EncodedTable | None = None,
    neighbours: bool = False,
    copies: UniqueCopies | None = None,
) -> tuple[pd.DataFrame, Neighbours | None]:
    """Unshuffled avatars of ``df`` (one batch) in the model's space: row i = avatar of row i,
    and, if ``neighbours``, the rows of ``df`` each was drawn from with their weights (what
    the rules repair from; else None). ``identifiers``: the identifier columns' values
    (``ColumnsApart.identifiers``); the excluded columns are reattached here (``apart.py``).
    ``encoded``: ``df`` already encoded by the model's encoder, if at hand. With
    ``unique_copies="redraw"``, the avatars copying a row one original of ``df`` alone holds
    are drawn again (``copies.py``), their counts added to ``copies`` if given."""
    timings = {} if timings is None else timings
    backend, parameters = model.backend, model.parameters
    with timed(timings, "projection", steps):
        encoded = model.encoder.transform(df) if encoded is None else encoded
        coordinates = model.projection.transform(encoded, parameters.ncp)
    with timed(timings, "neighbours", steps):
        indices, distances = nearest_neighbours(
            coordinates, parameters.k, backend, parameters.engine
        )
    with timed(timings, "synthesis", steps):
        continuous, codes, weights = synthesize_avatars(model, encoded, indices, distances,
                                                        sequence, keep_weights=neighbours)
    with timed(timings, "decode", steps):
        avatars = EncodedTable(continuous, codes, encoded.n_modalities)
        avatars = decode_avatars(model, df, avatars, coordinates, identifiers)
    if parameters.unique_copies == "redraw":
        with timed(timings, "unique copies"):
            avatars, count = redraw_unique_copies(model, df, avatars, encoded, indices,
                                                  distances, coordinates, identifiers,
                                                  sequence, weights)
        if copies is not None:
            copies.add(count)
    drawn_from = Neighbours(backend.to_numpy(indices), weights) if neighbours else None
    return avatars, drawn_from


def decode_avatars(model: AvatarModel, df: pd.DataFrame, avatars: EncodedTable, coordinates: Any,
                   identifiers: Mapping[Any, Any] | None,
                   rows: np.ndarray | None = None) -> pd.DataFrame:
    """The unshuffled avatars of ``df``'s rows (of its ``rows``, if given) as a table:
    ``avatars`` (backend arrays) decoded, the ``identifiers`` given, the excluded columns
    reattached (``apart.py``; by coordinate similarity: against ``df``'s ``coordinates``)."""
    backend, types = model.backend, model.parameters.types
    avatars = EncodedTable(backend.to_numpy(avatars.continuous),
                           backend.to_numpy(avatars.categorical), avatars.n_modalities)
    nearest = None
    if needs_nearest_original(types):
        projected = model.projection.transform(avatars, model.parameters.ncp)
        nearest, _ = nearest_reference(projected, coordinates, backend)
    apart = {**(identifiers or {}), **excluded_values(types, df, nearest, rows)}
    index = df.index if rows is None else df.index[rows]
    return model.encoder.decode(avatars.continuous, avatars.categorical, apart, index=index)


def synthesize_avatars(
    model: AvatarModel, encoded: EncodedTable, indices, distances,
    sequence: np.random.SeedSequence, keep_weights: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The avatars' continuous values and codes (host arrays) from the rows' ``encoded``
    values and their neighbours (``indices`` and ``distances``, on the model's backend): the
    synthesis, then the calibration of shares if the parameters ask for it; and the
    neighbours' weights (host, (n, k)) if ``keep_weights``, else None."""
    backend, parameters = model.backend, model.parameters
    calibrated = parameters.calibrate_shares and encoded.categorical.shape[1] > 0
    continuous, codes, weights = synthesize(
        encoded.continuous, encoded.categorical, encoded.n_modalities, indices, distances,
        sequence, backend, parameters.categorical, parameters.zero_distance,
        keep_weights=calibrated or keep_weights,
    )
    codes = backend.to_numpy(codes)
    if calibrated:
        codes = calibrate_shares(model.encoder, encoded.categorical, codes,
                                 backend.to_numpy(indices), weights, sequence)
    return backend.to_numpy(continuous), codes, weights if keep_weights else None


def check_device_memory(backend: Backend, n_rows: int, n_columns: int, k: int, ncp: int):
    """Refuse, before any work, a batch of ``n_rows`` the device cannot hold. Counted per row
    (8 bytes a value), over the steps' arrays that can be alive together: the encoded table
    and its avatars (at most two variables per column: the value and a missing indicator,
    twice), the coordinates with their chunks and the tree's copy (3 ncp), the tree's order and
    the queries (2), the neighbours' indices and squared distances in the tree's order and in
    the caller's, then the distances (5 k)."""
    per_row = 8 * (4 * n_columns + 3 * ncp + 2 + 5 * k)
    ensure_fits(
        backend, n_rows, per_row, f"avatarizing {n_rows:,} rows", "pass batch_size={rows} or less"
    )

"""Copies of unique rows (``AvatarParameters.unique_copies``): an avatar identical to an
original row that no other original holds tells that person's values as they are, whoever
drew it. With ``"redraw"``, after the synthesis (and the calibration of shares) of a batch,
the avatars identical, over the released columns the direct-match metrics compare
(``privacy.py``: the variables and the excluded columns), to a row one original alone holds
get new weights and draws (``synthesis.redraw``) until none is, at most
``UNIQUE_COPY_ATTEMPTS`` times; those still copies then stay, and are counted. Only those rows
change, so the shares the calibration restored move by at most their number. A batch is
compared with its own rows, as each batch is avatarized on its own (a streamed batch, too,
gives the bits of ``avatarize``'s): a copy of a row of another batch stays, and the metrics
count it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend
from ..encoding import EncodedTable
from ..encoding.kinds import EXCLUDED
from ..metrics.matches import row_codes
from ..parameters import column_kind, is_variable
from ..synthesis import UNIQUE_COPY_ATTEMPTS, redraw


@dataclass
class UniqueCopies:
    """How many avatars copied a row one original alone holds (``redrawn``: drawn again) and
    how many still do after the attempts (``stayed``)."""

    redrawn: int = 0
    stayed: int = 0

    def add(self, other: UniqueCopies) -> None:
        """Add ``other``'s counts (a batch's) to these."""
        self.redrawn += other.redrawn
        self.stayed += other.stayed


def compared_columns(model: Any) -> list[Any]:
    """The released columns the direct-match metrics compare: variables, excluded columns
    (not the identifiers nor the dropped ones)."""
    types = model.parameters.types
    return [c for c in model.encoder.columns_
            if is_variable(types.get(c)) or column_kind(types.get(c)) == EXCLUDED]


def unique_copies(original: pd.DataFrame, avatars: pd.DataFrame, columns: list[Any],
                  backend: Backend) -> np.ndarray:
    """Host bool (len(avatars),): the avatars identical on ``columns`` to a row that one row
    of ``original`` alone holds."""
    codes, size = row_codes(original, avatars, columns, backend)
    n = len(original)
    held = backend.xp.bincount(codes[:n], minlength=size)
    return backend.to_numpy(held.take(codes[n:]) == 1)


def redraw_unique_copies(
    model: Any, df: pd.DataFrame, avatars: pd.DataFrame, encoded: EncodedTable, indices: Any,
    distances: Any, coordinates: Any, identifiers: Mapping[Any, Any] | None,
    sequence: np.random.SeedSequence, weights: np.ndarray | None = None,
) -> tuple[pd.DataFrame, UniqueCopies]:
    """``avatars`` (the decoded, unshuffled avatars of the batch ``df``) with their copies of
    unique rows of ``df`` drawn again (the module docstring), and their count; ``weights``
    (host, the batch's neighbour weights), if given, get the new weights of the rows
    redrawn."""
    from .model import decode_avatars  # model.py calls this module

    backend, parameters = model.backend, model.parameters
    columns = compared_columns(model)
    rows = np.flatnonzero(unique_copies(df, avatars, columns, backend))
    count = UniqueCopies(redrawn=len(rows))
    if not len(rows):
        return avatars, count
    avatars = avatars.copy()
    for attempt in range(UNIQUE_COPY_ATTEMPTS):
        continuous, codes, new_weights = redraw(
            encoded.continuous, encoded.categorical, encoded.n_modalities, indices, distances,
            rows, sequence, attempt, backend, parameters.categorical, parameters.zero_distance)
        mine = {name: np.asarray(ids)[rows] for name, ids in (identifiers or {}).items()}
        redrawn = decode_avatars(model, df, EncodedTable(continuous, codes, encoded.n_modalities),
                                 coordinates, mine, rows)
        for j, column in enumerate(avatars.columns):
            avatars.iloc[rows, j] = redrawn[column].array
        if weights is not None:
            weights[rows] = new_weights
        rows = rows[unique_copies(df, redrawn, columns, backend)]
        if not len(rows):
            break
    count.stayed = len(rows)
    return avatars, count

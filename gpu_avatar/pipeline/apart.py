"""The columns released apart from the method, as the column plan declares them
(``parameters.kinds_listed``), for a batch's unshuffled avatars (row i: the avatar of row i):

- ``identifier``: fresh values by released position (``encoding/identifiers.py``): they tell
  nothing about anyone;
- ``pseudonym:STRATEGY``: the pseudonym of the avatar's original's value
  (``encoding/pseudonyms.py``), one per value, the same in every table that shares the
  ``Pseudonymizer`` (a database's entity), so released tables still join on it. Whoever can
  pseudonymize an original value (the holder of an hmac key; for the drawn strategies, of the
  originals and the run's seed) can tell which person an avatar comes from: a declared release;
- ``excluded:row_order``: the avatar's own original's value (released as is);
- ``excluded:coordinate_similarity``: the value of the original nearest to the avatar in the
  projection (exact, ties to the lowest index): a real value, not the own one;
- ``dropped``: nothing.

``ColumnsApart`` learns what the identifiers need from the originals (``add``: all of them,
chunk by chunk for a stream, or ``merge``: partition summaries in order), before any avatar is
released; ``for_positions`` keeps what one batch needs, to ship to its worker.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..encoding import IDENTIFIER, IdentifierValues, Pseudonymizer
from ..encoding.identifiers import FreshWindow
from ..parameters import column_kind, reattach_method
from ..streams import PSEUDONYMS, child


class ColumnsApart:
    """One table's identifier columns: each one's fresh values or ``Pseudonymizer``.
    ``shared``: pseudonymizers given by the caller (a database's entities), which it fills
    with every table's values. ``rows``: the table's row count when known before its chunks,
    so the fresh columns drop the values that cannot matter as they come
    (``IdentifierValues``)."""

    def __init__(self, types: Mapping[Any, str], columns: list[Any],
                 sequence: np.random.SeedSequence,
                 shared: Mapping[Any, Pseudonymizer] | None = None,
                 rows: int | None = None) -> None:
        shared = shared or {}
        self.fresh: dict[Any, IdentifierValues | FreshWindow] = {}
        self.pseudonymizers: dict[Any, Pseudonymizer] = {}
        for position, column in enumerate(columns):
            declared = types.get(column)
            if column in shared:
                self.pseudonymizers[column] = shared[column]
            elif declared == IDENTIFIER:
                self.fresh[column] = IdentifierValues(column, rows)
            elif column_kind(declared) == IDENTIFIER:
                self.pseudonymizers[column] = Pseudonymizer(
                    declared, column, column_seed(sequence, position))
        self._owned = [c for c in self.pseudonymizers if c not in shared]

    def add(self, chunk: pd.DataFrame) -> ColumnsApart:
        """Learn a chunk of the originals (shared pseudonymizers are their owner's to fill)."""
        for column, fresh in self.fresh.items():
            fresh.add(chunk[column])
        for column in self._owned:
            self.pseudonymizers[column].add(chunk[column])
        return self

    def merge(self, other: ColumnsApart) -> ColumnsApart:
        """Learn what ``other`` (made alike) learnt from the chunks that follow, e.g. a later
        partition's on a worker: the same as adding those chunks here."""
        for column, fresh in self.fresh.items():
            fresh.merge(other.fresh[column])
        for column in self._owned:
            self.pseudonymizers[column].merge(other.pseudonymizers[column])
        return self

    def draw(self) -> ColumnsApart:
        """Draw the pseudonyms and merge the fresh columns' values now, once every chunk is
        added (before shipping to workers)."""
        for pseudonymizer in self.pseudonymizers.values():
            pseudonymizer.draw()
        for fresh in self.fresh.values():
            fresh.finish()
        return self

    def for_positions(self, start: int, stop: int) -> ColumnsApart:
        """What the batch released at positions ``start`` to ``stop`` needs for
        ``identifiers``, small to ship: each fresh column's values there alone
        (``IdentifierValues.restricted``), the pseudonymizers (drawn) whole. Only for
        ``identifiers``: it learns nothing more."""
        window = copy.copy(self)
        window.fresh = self.fresh_for(start, stop)
        return window

    def fresh_for(self, start: int, stop: int) -> dict[Any, Any]:
        """Each fresh column's values at released positions ``start`` to ``stop`` alone
        (``IdentifierValues.restricted``): what a batch task is shipped."""
        return {column: fresh.restricted(start, stop) for column, fresh in self.fresh.items()}

    def identifiers(self, frame: pd.DataFrame, released_order: np.ndarray,
                    offset: int = 0, fresh: Mapping[Any, Any] | None = None) -> dict[Any, Any]:
        """The identifier values of the avatars of ``frame``'s rows, unshuffled; the avatar
        of row ``released_order[j]`` is released at position ``offset + j``. ``fresh``: the
        fresh columns' values for these positions alone (``fresh_for``), else this table's."""
        out: dict[Any, Any] = {}
        for column, values_of in (self.fresh if fresh is None else fresh).items():
            values = values_of.fresh(offset, offset + len(frame))
            unshuffled = np.empty_like(values)
            unshuffled[released_order] = values
            out[column] = unshuffled
        for column, pseudonymizer in self.pseudonymizers.items():
            out[column] = pseudonymizer.pseudonyms(frame[column]).array
        return out


def column_seed(sequence: np.random.SeedSequence, position: int) -> np.random.SeedSequence:
    """The seed of the pseudonyms drawn for the column at ``position``."""
    return child(sequence, PSEUDONYMS, position)


def excluded_values(types: Mapping[Any, str], frame: pd.DataFrame,
                    nearest_original: np.ndarray | None,
                    rows: np.ndarray | None = None) -> dict[Any, np.ndarray]:
    """The excluded columns' values for the avatars of ``frame``'s rows (of its ``rows``, if
    given): the own row's (``row_order``) or the row ``nearest_original[i]``'s
    (``coordinate_similarity``)."""
    out = {}
    for column in frame.columns:
        if column_kind(types.get(column)) != "excluded":
            continue
        values = frame[column].to_numpy()
        if reattach_method(types[column]) == "coordinate_similarity":
            values = values[nearest_original]
        elif rows is not None:
            values = values[rows]
        out[column] = values
    return out


def needs_nearest_original(types: Mapping[Any, str]) -> bool:
    """Whether a column comes back by ``coordinate_similarity``."""
    return any(column_kind(declared) == "excluded"
               and reattach_method(declared) == "coordinate_similarity"
               for declared in types.values())

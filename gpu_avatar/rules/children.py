"""Rules across a parent's children: the rows of a child table that share a parent, named by
the foreign key column ``by``, taken in the order of the column ``order`` (ties, or no
order: the rows' order). They take the child table alone, originals or avatars (relinked:
``by`` holds the avatar parents' keys). CountPerParent, Increasing and BoundedSteps."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AvatarError, AvatarTypeError
from .base import Rule, replaced
from .values import GRID_TOLERANCE, Quantity


def across_children(rule: Rule) -> bool:
    """Whether ``rule`` holds across a parent's children (its ``by``: a foreign key)."""
    return isinstance(rule, (_Sequences, CountPerParent))


def _check_names(rule: str, **names: Any) -> None:
    for name, value in names.items():
        if not isinstance(value, str) and not (name == "order" and value is None):
            raise AvatarTypeError(f"{rule}: {name} must be a column name, got {value!r}")


class _Sequences(Rule):
    """A rule on the sequence of each parent's values of ``column`` (numbers, dates or
    durations), in order; ``by``, ``order`` and ``column`` are the subclass's fields."""

    def __post_init__(self) -> None:
        _check_names(self.kind, column=self.column, by=self.by, order=self.order)
        if len({self.column, self.by, self.order} - {None}) < 2 + (self.order is not None):
            raise AvatarError(f"{self.kind} of {self.column!r}: column, by and order must be "
                              "three different columns")

    columns = property(lambda self: (self.column, self.by) + (
        (self.order,) if self.order is not None else ()))
    written = quantities = property(lambda self: (self.column,))

    def _in_order(self, words_en: str, words_fr: str) -> tuple[str, str]:
        if self.order is None:
            return words_en, words_fr
        return f"{words_en} in {self.order} order", f"{words_fr} dans l'ordre de {self.order}"

    def steps(self, table: pd.DataFrame, originals: pd.DataFrame, exempt: np.ndarray):
        """The rows of the sequences (positions, parent by parent, in order), their parents'
        codes, values (as numbers) and the differences from the previous value of the same
        parent (NaN for a parent's first). Rows with a missing value, parent or order, or
        exempt, are left out."""
        values = Quantity(originals[self.column]).numbers(table[self.column])
        parents = pd.factorize(table[self.by])[0]
        order = (pd.factorize(table[self.order], sort=True)[0] if self.order is not None
                 else np.zeros(len(table), dtype=np.int64))
        rows = np.flatnonzero(~np.isnan(values) & (parents >= 0) & (order >= 0) & ~exempt)
        rows = rows[np.lexsort((rows, order[rows], parents[rows]))]
        parents, values = parents[rows], values[rows]
        differences = np.full(len(rows), np.nan)
        follows = parents[1:] == parents[:-1]
        differences[1:][follows] = np.diff(values)[follows]
        return rows, parents, values, differences

    @abstractmethod
    def _broken_steps(self, differences: np.ndarray, originals: pd.DataFrame) -> np.ndarray:
        """Which differences break the rule (NaN: none)."""

    def broken(self, table, originals, exempt):
        rows, _, _, differences = self.steps(table, originals, exempt)
        broken = np.zeros(len(table), dtype=bool)
        broken[rows[self._broken_steps(differences, originals)]] = True
        return broken

    def _broken_parents(self, avatars, originals, exempt):
        """The sequences of the parents with a broken step: rows, parents, values,
        differences and each row's rank in its parent's sequence."""
        steps = self.steps(avatars, originals, exempt)
        parents, differences = steps[1], steps[3]
        keep = np.isin(parents, parents[self._broken_steps(differences, originals)])
        rows, parents, values, differences = (part[keep] for part in steps)
        ranks = pd.Series(parents).groupby(parents).cumcount().to_numpy()
        return rows, parents, values, differences, ranks


@dataclass(frozen=True)
class Increasing(_Sequences):
    """Each parent's values of ``column`` never decrease (``strict``: always increase) in
    ``order``, as visit dates per patient or a cumulative dose. Repaired by sorting the
    parent's values into order (its values kept, their distribution unchanged); strict:
    values equal to the previous one moved up one step of the column's precision."""

    column: str
    by: str
    order: str | None = None
    strict: bool = False
    kind = "increasing"

    def _words(self) -> tuple[str, str]:
        strictly_en, strictly_fr = ("strictly ", "strictement ") if self.strict else ("", "")
        return self._in_order(f"{self.column} {strictly_en}increasing per {self.by}",
                              f"{self.column} {strictly_fr}croissant par {self.by}")

    def _broken_steps(self, differences, originals):
        return differences <= 0 if self.strict else differences < 0

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows, parents, values, _, ranks = self._broken_parents(avatars, originals, exempt)
        values = values[np.lexsort((values, parents))]  # sorted within each parent
        quantity = Quantity(originals[self.column])
        if self.strict:  # v_i = max(v_i, v_(i-1) + step), over the whole sequence at once
            step = quantity.step or float(np.spacing(np.abs(values).max(initial=1.0)))
            shifted = pd.Series(values - ranks * step).groupby(parents).cummax().to_numpy()
            values = shifted + ranks * step
        restored = quantity.restore(values, avatars.index[rows])
        return {self.column: replaced(avatars[self.column], rows, restored)}


@dataclass(frozen=True)
class BoundedSteps(_Sequences):
    """The difference between consecutive values of ``column`` of a parent (in ``order``)
    lies within [``low``, ``high``] (numbers, or durations for a time column); a bound not
    declared is the originals' smallest or largest difference. Repaired by clipping the
    parent's differences to the bounds (on the column's grid) and adding them up again from
    its first value."""

    column: str
    by: str
    order: str | None = None
    low: Any = None
    high: Any = None
    kind = "bounded_steps"

    def _words(self) -> tuple[str, str]:
        low, high = ("min" if self.low is None else self.low,
                     "max" if self.high is None else self.high)
        return self._in_order(
            f"{low} <= difference of consecutive {self.column} <= {high} per {self.by}",
            f"{self._french(low)} <= écart entre {self.column} consécutifs <= "
            f"{self._french(high)} par {self.by}")

    def check_columns(self, originals: pd.DataFrame) -> None:
        super().check_columns(originals)
        quantity = Quantity(originals[self.column])
        for bound in (b for b in (self.low, self.high) if b is not None):
            try:
                quantity.duration(bound)
            except (TypeError, ValueError):
                raise self.error(f"bound {bound!r} is not a difference of the column",
                                 "declare a number (a duration such as '7D' for dates)"
                                 ) from None
        if None in (self.low, self.high) and not self._observed(originals).size:
            raise self.error("the originals have no parent with two values to take a "
                             "bound from", "declare low and high")

    def _observed(self, originals: pd.DataFrame) -> np.ndarray:
        differences = self.steps(originals, originals, np.zeros(len(originals), bool))[3]
        return differences[~np.isnan(differences)]

    def bounds(self, originals: pd.DataFrame) -> tuple[float, float]:
        quantity = Quantity(originals[self.column])
        if None in (self.low, self.high):
            observed = self._observed(originals)
        low = observed.min() if self.low is None else quantity.duration(self.low)
        high = observed.max() if self.high is None else quantity.duration(self.high)
        return low, high

    def _broken_steps(self, differences, originals):
        low, high = self.bounds(originals)
        tolerance = GRID_TOLERANCE * Quantity(originals[self.column]).step
        return (differences < low - tolerance) | (differences > high + tolerance)

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows, parents, values, differences, ranks = self._broken_parents(avatars, originals,
                                                                          exempt)
        quantity = Quantity(originals[self.column])
        low, high = self.bounds(originals)
        step = quantity.step
        if step:  # bounds on the grid, inside the declared ones
            low = np.ceil(low / step - GRID_TOLERANCE) * step
            high = np.floor(high / step + GRID_TOLERANCE) * step
        steps = np.where(ranks == 0, 0.0, np.clip(differences, low, high))
        first = pd.Series(values).groupby(parents).transform("first").to_numpy()
        values = first + pd.Series(steps).groupby(parents).cumsum().to_numpy()
        restored = quantity.restore(values, avatars.index[rows])
        return {self.column: replaced(avatars[self.column], rows, restored)}


@dataclass(frozen=True)
class CountPerParent(Rule):
    """At most ``at_most`` rows of a parent hold ``value`` in ``column``, as one 'death' row
    per patient. Repaired by recoding the surplus rows (a parent keeps the rows whose
    neighbours weigh most on ``value``, else its first rows) to another value drawn from the
    row's neighbours in proportion to their weights, else from the originals' other
    values."""

    column: str
    value: Any
    by: str
    at_most: int = 1
    kind = "count_per_parent"

    def __post_init__(self) -> None:
        _check_names(self.kind, column=self.column, by=self.by)
        if self.column == self.by:
            raise AvatarError(f"{self.kind}: column and by must be two columns")
        if not isinstance(self.at_most, (int, np.integer)) or isinstance(self.at_most, bool) \
                or self.at_most < 0:
            raise AvatarError(f"{self.kind} of {self.column!r}: at_most must be a whole "
                              f"number >= 0, got {self.at_most!r}")

    columns = property(lambda self: (self.column, self.by))
    written = property(lambda self: (self.column,))

    def _words(self) -> tuple[str, str]:
        return (f"at most {self.at_most} {self.column} = {self.value!r} per {self.by}",
                f"au plus {self.at_most} {self.column} = {self.value!r} par {self.by}")

    def _holds_value(self, series: pd.Series) -> np.ndarray:
        return (series == self.value).to_numpy(dtype=bool, na_value=False)

    def surplus(self, table, originals, exempt, neighbours=None) -> np.ndarray:
        """The rows beyond ``at_most`` of their parent, best kept first."""
        parents = pd.factorize(table[self.by])[0]
        rows = np.flatnonzero(self._holds_value(table[self.column]) & (parents >= 0) & ~exempt)
        score = (neighbours.mean(self._holds_value(originals[self.column]).astype(float), rows,
                                 np.ones(len(originals), dtype=bool))
                 if neighbours is not None else np.zeros(len(rows)))
        rows = rows[np.lexsort((rows, -score, parents[rows]))]
        ranks = pd.Series(parents[rows]).groupby(parents[rows]).cumcount().to_numpy()
        return rows[ranks >= self.at_most]

    def broken(self, table, originals, exempt):
        broken = np.zeros(len(table), dtype=bool)
        broken[self.surplus(table, originals, exempt)] = True
        return broken

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = self.surplus(avatars, originals, exempt, neighbours)
        others = originals[self.column].notna().to_numpy() & ~self._holds_value(
            originals[self.column])
        if not others.any():
            raise self.error(f"the originals hold no other value of {self.column!r} to recode "
                             "a surplus row to", "raise at_most, or drop the rule")
        drawn = (neighbours.draw(rows, others, rng) if neighbours is not None
                 else np.full(len(rows), -1))
        fallback = drawn < 0
        drawn[fallback] = rng.choice(np.flatnonzero(others), size=int(fallback.sum()))
        values = originals[self.column].iloc[drawn]
        return {self.column: replaced(avatars[self.column], rows, values)}

"""Rules within a row or over a table's columns: Inequality, Range, FixedCombinations,
Derived, SumTo, Rounding and GroupMean (see each class for how it is held)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..encoding.kinds import is_datetime, is_number, is_timedelta
from ..errors import AvatarError, AvatarTypeError, foreign_words
from .base import Encodable, Rule, column_names, replaced
from .expressions import Expression
from .values import GRID_TOLERANCE, Neighbours, Quantity, is_quantity, same_values


def _quantity_values(table: pd.DataFrame, originals: pd.DataFrame, side: Any,
                     quantity: Quantity) -> np.ndarray:
    """A column's values as numbers, or a constant's, for every row of ``table``."""
    if isinstance(side, str):
        return Quantity(originals[side]).numbers(table[side])
    return np.full(len(table), quantity.constant(side))


def _checked_constant(rule: Rule, quantity: Quantity, value: Any) -> None:
    try:
        quantity.constant(value)
    except AvatarError as error:
        raise rule.error(str(error), "declare a value of the column's kind") from None


# ----------------------------------------------------------------------------- Inequality
@dataclass(frozen=True)
class Inequality(Encodable):
    """``low < high`` (``strict``) or ``low <= high``: two columns, or a column and a
    constant (a number, a date, a duration; in YAML an unquoted date is a constant, a text a
    column), of numbers, dates or durations.

    Encoded (as SDV does): the column side, ``high`` when both are columns, becomes the log of
    the gap, ``log(high - low + offset)`` (offset 0 when strict, else the smallest positive
    gap of the originals, so equal values encode one step below the smallest gap), and
    decodes to ``low + exp(.) - offset``: an avatar's gap plus offset is then a weighted
    geometric mean of its neighbours', so its gap is valid too. Repaired otherwise: that
    column is set to the anchor plus the weighted mean of the gaps of the avatar's
    neighbours, else the smallest valid gap of the originals, at the column's precision."""

    low: Any
    high: Any
    strict: bool = False
    kind = "inequality"

    def __post_init__(self) -> None:
        if not isinstance(self.low, str) and not isinstance(self.high, str):
            raise AvatarTypeError(f"inequality {self.low!r} < {self.high!r}: one side at least "
                                  "must be a column name")
        if self.low == self.high:
            raise AvatarError(f"inequality: {self.low!r} compared with itself")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(side for side in (self.low, self.high) if isinstance(side, str))

    quantities = columns

    @property
    def target(self) -> str:
        """The column the transform and the repairs change."""
        return self.high if isinstance(self.high, str) else self.low

    @property
    def anchor(self) -> Any:
        return self.low if self.target == self.high else self.high

    @property
    def sign(self) -> int:
        """target = anchor + sign * gap."""
        return 1 if self.target == self.high else -1

    written = encoded_columns = property(lambda self: (self.target,))

    @property
    def decode_needs(self) -> tuple[str, ...]:
        return (self.anchor,) if isinstance(self.anchor, str) else ()

    def _words(self) -> tuple[str, str]:
        text = f"{self.low} {'<' if self.strict else '<='} {self.high}"
        return text, text

    def check_columns(self, originals: pd.DataFrame) -> None:
        super().check_columns(originals)
        quantity = Quantity(originals[self.target])
        if not isinstance(self.anchor, str):
            _checked_constant(self, quantity, self.anchor)
            return
        kinds = {c: (is_number(originals[c].dtype), is_timedelta(originals[c].dtype))
                 for c in self.columns}
        if len(set(kinds.values())) > 1:
            raise self.error(
                f"{self.low!r} ({originals[self.low].dtype}) and {self.high!r} "
                f"({originals[self.high].dtype}) are not the same kind of value",
                "compare columns of one kind: numbers, dates or durations")

    def gaps(self, table: pd.DataFrame, originals: pd.DataFrame) -> np.ndarray:
        """high - low per row (NaN where either is missing)."""
        quantity = Quantity(originals[self.target])
        low, high = (_quantity_values(table, originals, side, quantity)
                     for side in (self.low, self.high))
        return high - low

    def _valid(self, gaps: np.ndarray) -> np.ndarray:
        return gaps > 0 if self.strict else gaps >= 0

    def broken(self, table, originals, exempt):
        gaps = self.gaps(table, originals)
        return ~np.isnan(gaps) & ~self._valid(gaps) & ~exempt

    def can_encode(self, originals: pd.DataFrame) -> bool:
        """Unless the anchor column is missing where the target is not (the target could
        then not be decoded)."""
        if not isinstance(self.anchor, str):
            return True
        return not (originals[self.anchor].isna() & originals[self.target].notna()).any()

    def _offset(self, gaps: np.ndarray) -> float:
        positive = gaps[gaps > 0]
        return 0.0 if self.strict else float(positive.min()) if positive.size else 1.0

    def encode(self, originals):
        gaps = self.gaps(originals, originals)
        with np.errstate(divide="ignore"):
            encoded = np.log(gaps + self._offset(gaps))
        return {self.target: pd.Series(encoded, index=originals.index, name=self.target)}

    def decode(self, avatars, originals):
        quantity = Quantity(originals[self.target])
        gaps = np.exp(avatars[self.target].to_numpy(dtype=np.float64, na_value=np.nan))
        gaps -= self._offset(self.gaps(originals, originals))
        anchor = _quantity_values(avatars, originals, self.anchor, quantity)
        return {self.target: self._placed(anchor, gaps, quantity, avatars.index)}

    def _placed(self, anchor: np.ndarray, gaps: np.ndarray, quantity: Quantity,
                index: pd.Index) -> pd.Series:
        """The target at ``gaps`` from ``anchor``, at its precision; where rounding breaks the
        rule, one grid step (or one float) from the anchor instead."""
        placed = quantity.restore(anchor + self.sign * gaps, index)
        moved = self.sign * (quantity.numbers(placed) - anchor)
        broken = ~np.isnan(moved) & ~self._valid(moved)
        step = quantity.step
        nudged = (anchor + self.sign * step if step
                  else np.nextafter(anchor, self.sign * np.inf))
        return placed.mask(broken, quantity.restore(nudged, index).array)

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        quantity = Quantity(originals[self.target])
        original_gaps = self.gaps(originals, originals)
        valid = self._valid(original_gaps)  # NaN compares False
        gaps = (neighbours.mean(original_gaps, rows, valid) if neighbours is not None
                else np.full(len(rows), np.nan))
        smallest = original_gaps[valid].min() if valid.any() else 0.0
        gaps = np.where(np.isnan(gaps), smallest, gaps)
        anchor = _quantity_values(avatars, originals, self.anchor, quantity)[rows]
        placed = self._placed(anchor, gaps, quantity, avatars.index[rows])
        return {self.target: replaced(avatars[self.target], rows, placed)}


# ----------------------------------------------------------------------------------- Range
@dataclass(frozen=True)
class Range(Rule):
    """``low <= column <= high``; a bound not declared is the originals' minimum or maximum.
    Repaired by moving a value to the bound it passed, at the column's precision. Avatars of
    one table keep the originals' range by construction (barycentres); repairs of other
    rules, relinking and batches may not."""

    column: str
    low: Any = None
    high: Any = None
    kind = "range"

    def __post_init__(self) -> None:
        if comparable(self.low) is not None and comparable(self.high) is not None:
            try:
                inverted = comparable(self.low) > comparable(self.high)
            except TypeError:
                raise AvatarError(f"range of {self.column!r}: bounds {self.low!r} and "
                                  f"{self.high!r} are not of one kind") from None
            if inverted:
                raise AvatarError(f"range of {self.column!r}: low {self.low!r} is above high "
                                  f"{self.high!r}; swap them")

    columns = written = quantities = property(lambda self: (self.column,))

    def _words(self) -> tuple[str, str]:
        low_en, low_fr = ("min(originals)", "min(originaux)") if self.low is None else (
            str(self.low), self._french(self.low))
        high_en, high_fr = ("max(originals)", "max(originaux)") if self.high is None else (
            str(self.high), self._french(self.high))
        return (f"{low_en} <= {self.column} <= {high_en}",
                f"{low_fr} <= {self.column} <= {high_fr}")

    def check_columns(self, originals: pd.DataFrame) -> None:
        super().check_columns(originals)
        quantity = Quantity(originals[self.column])
        for bound in (self.low, self.high):
            if bound is not None:
                _checked_constant(self, quantity, bound)

    def bounds(self, originals: pd.DataFrame) -> tuple[float, float]:
        quantity = Quantity(originals[self.column])
        values = quantity.numbers(originals[self.column])
        low = np.nanmin(values, initial=np.inf) if self.low is None else quantity.constant(
            self.low)
        high = np.nanmax(values, initial=-np.inf) if self.high is None else quantity.constant(
            self.high)
        return low, high

    def broken(self, table, originals, exempt):
        values = Quantity(originals[self.column]).numbers(table[self.column])
        low, high = self.bounds(originals)
        return ((values < low) | (values > high)) & ~exempt

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        quantity = Quantity(originals[self.column])
        low, high = self.bounds(originals)
        index = avatars.index[rows]
        values = np.clip(quantity.numbers(avatars[self.column])[rows], low, high)
        rounded = quantity.numbers(quantity.restore(values, index))
        # where rounding left the range: half a step inside, which rounds onto the bound's side
        half = quantity.step / 2
        values = np.where(rounded < low, low + half, np.where(rounded > high, high - half, values))
        return {self.column: replaced(avatars[self.column], rows,
                                      quantity.restore(values, index))}


def comparable(value: Any) -> Any:
    """A declared bound as a float or a Timestamp (None: none, or not comparable)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    try:
        return pd.Timestamp(value)
    except (TypeError, ValueError):
        return None


# ----------------------------------------------------------------------- FixedCombinations
def combination_keys(table: pd.DataFrame, originals: pd.DataFrame,
                     columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """One integer per combination of ``columns`` (missing counts as a value), shared by the
    rows of ``table`` and ``originals``; and the per-column codes behind them, (rows, columns),
    table rows first."""
    codes = np.column_stack([
        pd.factorize(pd.concat([table[c], originals[c]], ignore_index=True),
                     use_na_sentinel=False)[0] for c in columns])
    keys = np.zeros(len(codes), dtype=np.int64)
    for j in range(codes.shape[1]):
        keys = pd.factorize(keys * (codes[:, j].max() + 1) + codes[:, j])[0]
    return keys, codes


_CANDIDATE_CELLS = 1 << 22  # rows x candidates compared at a time by a repair


@dataclass(frozen=True)
class FixedCombinations(Encodable):
    """The ``columns`` (categorical) take together only combinations seen in the originals
    (missing counts as a value). Encoded: they become one categorical column of combinations
    (named by joining them with "+"), decoded after. Repaired otherwise: an unseen
    combination becomes the seen one that changes the fewest columns, among the avatar's
    neighbours' (the heaviest on ties), else among all the originals' (the most frequent).
    A combination is released whole, as an original holds it: one held by a single person
    too (each value alone may be common): a declared release."""

    columns: tuple[str, ...]
    kind = "fixed_combinations"

    def __post_init__(self) -> None:
        columns = column_names(self.columns, "columns", "fixed combinations")
        if len(set(columns)) < 2:
            raise AvatarError(f"fixed combinations {list(columns)}: name two columns or more")
        object.__setattr__(self, "columns", columns)

    encoded_columns = property(lambda self: self.columns)

    def _words(self) -> tuple[str, str]:
        names = ", ".join(self.columns)
        return (f"({names}): only combinations seen in the originals",
                f"({names}) : seulement les combinaisons vues dans les originaux")

    def _merged_name(self, columns: pd.Index) -> str:
        name = "+".join(self.columns)
        while name in columns:
            name += "+"
        return name

    def broken(self, table, originals, exempt):
        keys, _ = combination_keys(table, originals, self.columns)
        return ~np.isin(keys[: len(table)], keys[len(table):]) & ~exempt

    def encode(self, originals):
        ids = pd.factorize(combination_keys(originals, originals, self.columns)[0][
            : len(originals)])[0]
        merged = pd.Series(pd.Categorical(ids), index=originals.index)
        return {self._merged_name(originals.columns): merged,
                **dict.fromkeys(self.columns)}

    def decode(self, avatars, originals):
        name = self._merged_name(originals.columns)
        ids = pd.factorize(combination_keys(originals, originals, self.columns)[0][
            : len(originals)])[0]
        first = np.unique(ids, return_index=True)[1]  # ids count from 0 in order of appearance
        rows = first[avatars[name].to_numpy(dtype=np.int64)]
        return {name: None, **{c: originals[c].iloc[rows].set_axis(avatars.index)
                               for c in self.columns}}

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        keys, codes = combination_keys(avatars, originals, self.columns)
        avatar_codes, original_codes = codes[: len(avatars)], codes[len(avatars):]
        if neighbours is None:  # every seen combination, weighted by its frequency
            _, first, counts = np.unique(keys[len(avatars):], return_index=True,
                                         return_counts=True)
        width = neighbours.indices.shape[1] if neighbours is not None else len(first)
        block = max(1, _CANDIDATE_CELLS // width)
        chosen = np.empty(len(rows), dtype=np.int64)
        for start in range(0, len(rows), block):  # blocks of rows, bounded memory
            part = rows[start: start + block]
            shape = (len(part), width)
            candidates, weights = ((neighbours.indices[part], neighbours.weights[part])
                                   if neighbours is not None else
                                   (np.broadcast_to(first, shape),
                                    np.broadcast_to(counts / len(originals), shape)))
            changes = (avatar_codes[part][:, None, :] != original_codes[candidates]).sum(axis=2)
            best = np.argmin(changes - weights / 2, axis=1)  # weights < 1 only break ties
            chosen[start: start + block] = candidates[np.arange(len(part)), best]
        return {c: replaced(avatars[c], rows, originals[c].iloc[chosen]) for c in self.columns}


# -------------------------------------------------------------------------------- Derived
@dataclass(frozen=True)
class Derived(Encodable):
    """``column`` is computed from other columns by ``expression`` (``expressions.py``), such
    as ``bwt < 2500`` or ``weight / height ** 2``, at the column's dtype and precision; rows
    where the expression is missing are not constrained. Encoded: the column is dropped
    before the projection (not avatarized) and computed on the avatars; repaired otherwise
    (the originals' exceptions kept) by computing it where it disagrees."""

    column: str
    expression: str
    parsed: Expression = field(init=False, repr=False, compare=False)
    kind = "derived"

    def __post_init__(self) -> None:
        if not isinstance(self.column, str):
            raise AvatarTypeError(f"derived: column must be a column name, got {self.column!r}")
        object.__setattr__(self, "parsed", Expression(self.expression))
        if self.column in self.parsed.columns:
            raise AvatarError(f"derived {self.column!r} = {self.expression}: the column cannot "
                              "be computed from itself")

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.parsed.columns

    columns = property(lambda self: (self.column, *self.inputs))
    written = encoded_columns = property(lambda self: (self.column,))
    decode_needs = inputs

    def _words(self) -> tuple[str, str]:
        text = f"{self.column} = {self.expression}"
        return text, text

    def check_columns(self, originals: pd.DataFrame) -> None:
        fix = "write an expression of the columns' kinds"
        try:
            computed = self._computed(originals)
            like = originals[self.column].dtype
            if is_quantity(like) and _time_kind(computed.dtype) != _time_kind(like):
                raise self.error(f"it computes {computed.dtype} for a column of {like}", fix)
            self.values(originals, originals)
        except (TypeError, ValueError, ArithmeticError) as error:
            raise self.error(f"it does not compute on the originals ({foreign_words(error)})",
                             fix) from None

    def _computed(self, table: pd.DataFrame) -> pd.Series:
        with np.errstate(all="ignore"):
            return self.parsed.evaluate(table)

    def values(self, table: pd.DataFrame, originals: pd.DataFrame) -> pd.Series:
        """The column as computed on ``table``, at the originals' dtype and precision
        (missing where the expression is)."""
        computed = self._computed(table)
        like = originals[self.column]
        if not is_quantity(like.dtype):
            return computed.astype(like.dtype if computed.notna().all() else object)
        quantity = Quantity(like)
        numbers = (quantity.numbers(computed) if is_quantity(computed.dtype)  # else booleans
                   else computed.astype("Float64").to_numpy(np.float64, na_value=np.nan))
        return quantity.restore(numbers, table.index)

    def broken(self, table, originals, exempt):
        values = self.values(table, originals)
        return values.notna().to_numpy() & ~same_values(table[self.column], values) & ~exempt

    def can_encode(self, originals: pd.DataFrame) -> bool:
        """When the expression is defined on every original row."""
        return bool(self._computed(originals).notna().all())

    def encode(self, originals):
        return {self.column: None}

    def decode(self, avatars, originals):
        return {self.column: self.values(avatars, originals)}

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        # computed on those rows alone, where it is never missing: at the column's dtype
        values = self.values(avatars.iloc[rows], originals)
        return {self.column: replaced(avatars[self.column], rows, values)}


def _time_kind(dtype: Any) -> tuple[bool, bool]:
    """Whether ``dtype`` holds datetimes, durations (numbers and booleans: neither)."""
    return is_datetime(dtype), is_timedelta(dtype)


# ---------------------------------------------------------------------------------- SumTo
@dataclass(frozen=True)
class SumTo(Rule):
    """The ``parts`` (numbers) add up to ``total``: a column, or a constant such as 1 for
    shares or 100 for percentages. Avatars keep it up to rounding (a barycentre keeps linear
    equalities); repaired by rescaling the parts in proportion (when their sum is of the
    total's sign; else the shares of the avatar's neighbours, else the originals' mean
    shares), then rounding them to their precision so that they still add up (largest
    remainders). To compute a total from its parts instead, declare it Derived."""

    parts: tuple[str, ...]
    total: Any = 1
    kind = "sum"
    numbers_only = True

    def __post_init__(self) -> None:
        parts = column_names(self.parts, "parts", "sum")
        if len(set(parts)) < 2 or (isinstance(self.total, str) and self.total in parts):
            raise AvatarError(f"sum of {list(parts)} = {self.total!r}: name two parts or more, "
                              "the total not among them")
        if not isinstance(self.total, (str, int, float)) or isinstance(self.total, bool):
            raise AvatarTypeError(f"sum of {list(parts)}: total must be a column name or a "
                                  f"number, got {self.total!r}")
        object.__setattr__(self, "parts", parts)

    columns = quantities = property(
        lambda self: self.parts + ((self.total,) if isinstance(self.total, str) else ()))
    written = property(lambda self: self.parts)

    def _words(self) -> tuple[str, str]:
        parts = " + ".join(self.parts)
        return f"{parts} = {self.total}", f"{parts} = {self._french(self.total)}"

    def _values(self, table: pd.DataFrame, originals: pd.DataFrame):
        parts = np.column_stack([Quantity(originals[p]).numbers(table[p]) for p in self.parts])
        total = (Quantity(originals[self.total]).numbers(table[self.total])
                 if isinstance(self.total, str) else np.full(len(table), float(self.total)))
        return parts, total

    def _grid(self, originals: pd.DataFrame) -> float:
        """The step the parts are rounded to together: the coarsest of theirs."""
        steps = [Quantity(originals[p]).step for p in self.parts]
        return 0.0 if min(steps) == 0 else max(steps)

    def broken(self, table, originals, exempt):
        parts, total = self._values(table, originals)
        grid = self._grid(originals)
        tolerance = GRID_TOLERANCE * grid if grid else 1e-9 * np.maximum(1, np.abs(total))
        with np.errstate(invalid="ignore"):
            return (np.abs(parts.sum(axis=1) - total) > tolerance) & ~exempt

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        parts, total = (values[rows] for values in self._values(avatars, originals))
        sums = parts.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = parts / sums[:, None]
        fallback = ~(sums * total > 0)
        if fallback.any():
            shares[fallback] = self._shares(originals, rows[fallback], neighbours)
        scaled = shares * total[:, None]
        grid = self._grid(originals)
        if grid:
            scaled = _largest_remainders(scaled, total, grid)
        return {p: replaced(avatars[p], rows,
                            Quantity(originals[p]).restore(scaled[:, j], avatars.index[rows]))
                for j, p in enumerate(self.parts)}

    def _shares(self, originals: pd.DataFrame, rows: np.ndarray,
                neighbours: Neighbours | None) -> np.ndarray:
        """Shares for avatars whose parts cannot be rescaled: their neighbours' (weighted
        mean), else the originals' mean, else equal."""
        parts, total = self._values(originals, originals)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = parts / total[:, None]
        valid = np.isfinite(shares).all(axis=1)
        mean = shares[valid].mean(axis=0) if valid.any() else np.full(len(self.parts),
                                                                       1 / len(self.parts))
        drawn = (np.column_stack([neighbours.mean(shares[:, j], rows, valid)
                                  for j in range(len(self.parts))])
                 if neighbours is not None else np.full((len(rows), len(self.parts)), np.nan))
        return np.where(np.isnan(drawn), mean, drawn)


def _largest_remainders(values: np.ndarray, total: np.ndarray, grid: float) -> np.ndarray:
    """``values`` (rows of parts) rounded to multiples of ``grid`` adding up to ``total``:
    each rounded down, then one step more for the largest remainders (rows whose total is
    not a multiple of the grid: left unrounded)."""
    units = values / grid
    floors = np.floor(units + GRID_TOLERANCE)
    wanted = np.round(total / grid)
    missing = wanted - floors.sum(axis=1)
    ranks = np.argsort(np.argsort(floors - units, axis=1, kind="stable"), axis=1)
    rounded = (floors + (ranks < missing[:, None])) * grid
    on_grid = np.abs(total / grid - wanted) <= GRID_TOLERANCE
    return np.where(on_grid[:, None], rounded, values)


# ------------------------------------------------------------------------------- Rounding
@dataclass(frozen=True)
class Rounding(Rule):
    """``column`` holds multiples of ``step`` (a number, or a duration such as "15min" for a
    time column), or, without a step, values at the originals' precision (decimals shown,
    whole days or seconds). Repaired by rounding to the nearest multiple (half to even)."""

    column: str
    step: Any = None
    kind = "rounding"

    def __post_init__(self) -> None:
        if self.step is not None and comparable(self.step) is not None and comparable(
                self.step) <= 0:
            raise AvatarError(f"rounding of {self.column!r}: step {self.step!r} must be "
                              "positive")

    columns = written = quantities = property(lambda self: (self.column,))

    def _words(self) -> tuple[str, str]:
        if self.step is None:
            return (f"{self.column} at the originals' precision",
                    f"{self.column} à la précision des originaux")
        return (f"{self.column} rounded to {self.step}",
                f"{self.column} arrondi à {self._french(self.step)}")

    def check_columns(self, originals: pd.DataFrame) -> None:
        super().check_columns(originals)
        if self.step is not None:
            try:
                step = Quantity(originals[self.column]).duration(self.step)
            except (TypeError, ValueError):
                step = None
            if not step or step <= 0:
                raise self.error(f"step {self.step!r} is not a positive step of the column",
                                 "declare a positive number (a duration such as '1D' for "
                                 "dates)")

    def rounded(self, table: pd.DataFrame, originals: pd.DataFrame) -> pd.Series:
        quantity = Quantity(originals[self.column])
        step = None if self.step is None else quantity.duration(self.step)
        return quantity.restore(quantity.numbers(table[self.column]), table.index, step)

    def broken(self, table, originals, exempt):
        return ~same_values(table[self.column], self.rounded(table, originals)) & ~exempt

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        rounded = self.rounded(avatars, originals).iloc[rows]
        return {self.column: replaced(avatars[self.column], rows, rounded)}


# ------------------------------------------------------------------------------ GroupMean
@dataclass(frozen=True)
class GroupMean(Rule):
    """The mean of ``column`` (numbers) per category of ``by`` (one column or several) is
    the originals' mean in that category, within half a step of the column's precision.
    Repaired by rescaling the category's values (``how="scale"``, multiplying by the ratio
    of the means; "shift" adds their difference, as does "scale" for a mean of zero)."""

    column: str
    by: tuple[str, ...]
    how: str = "scale"
    kind = "group_mean"
    numbers_only = True

    def __post_init__(self) -> None:
        by = column_names(self.by, "by", f"group mean of {self.column!r}")
        if self.column in by:
            raise AvatarError(f"group mean of {self.column!r}: it cannot be its own group")
        if self.how not in ("scale", "shift"):
            raise AvatarError(f"group mean of {self.column!r}: how={self.how!r} is not "
                              "'scale' or 'shift'")
        object.__setattr__(self, "by", by)

    columns = property(lambda self: (self.column, *self.by))
    written = quantities = property(lambda self: (self.column,))

    def _words(self) -> tuple[str, str]:
        by = ", ".join(self.by)
        return (f"mean of {self.column} per {by} as in the originals",
                f"moyenne de {self.column} par {by} comme dans les originaux")

    def _means(self, table: pd.DataFrame, originals: pd.DataFrame):
        """Per row of ``table``: its value, its group's mean and the originals' mean in that
        group (NaN for a group the originals lack), and the tolerance."""
        quantity = Quantity(originals[self.column])
        keys, _ = combination_keys(table, originals, self.by)
        values = quantity.numbers(table[self.column])
        means = pd.Series(values).groupby(keys[: len(table)]).transform("mean").to_numpy()
        targets = pd.Series(quantity.numbers(originals[self.column])).groupby(
            keys[len(table):]).mean().reindex(keys[: len(table)]).to_numpy()
        tolerance = (quantity.step * (0.5 + GRID_TOLERANCE) if quantity.step
                     else 1e-9 * np.abs(targets))
        return values, means, targets, tolerance

    def broken(self, table, originals, exempt):
        values, means, targets, tolerance = self._means(table, originals)
        return ~np.isnan(values) & (np.abs(means - targets) > tolerance) & ~exempt

    def repair(self, avatars, originals, exempt, neighbours, rng):
        rows = np.flatnonzero(self.broken(avatars, originals, exempt))
        values, means, targets = (v[rows] for v in self._means(avatars, originals)[:3])
        scale = (self.how == "scale") & (means != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            new = np.where(scale, values * targets / means, values + targets - means)
        restored = Quantity(originals[self.column]).restore(new, avatars.index[rows])
        return {self.column: replaced(avatars[self.column], rows, restored)}


RULE_CLASSES: Mapping[str, type[Rule]] = {
    cls.kind: cls for cls in (Inequality, Range, FixedCombinations, Derived, SumTo, Rounding,
                              GroupMean)
}

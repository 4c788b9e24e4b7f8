"""Exact matches between the originals and the avatars, on integer codes: the direct-match
metrics of ``privacy.py`` (which values and which rows of the originals appear, identical,
among the avatars).

Equality is the values': a missing value (NaN, None, NaT, pd.NA) equals a missing value and
nothing else; numbers are equal when they are equal as numbers (0.1 + 0.2 is not 0.3, -0.0 is
0.0), text when it is the same text, whatever dtype holds it (object, str, category). These
are the equalities of pandas' row hash (``hash_pandas_object``), which these metrics used
before; here they are exact, not up to a 64-bit hash.

Each column is coded once, originals and avatars together (N = n + m values):

- numbers, booleans, datetimes: integers and booleans whose range is below N are their own
  codes; otherwise their 64-bit patterns (floats as float64 with -0.0 made 0.0 and every NaN
  one NaN; NaT is one integer) go to the backend, where equal values get one code
  (``group``);
- other columns (text, categories, pandas' nullable dtypes) are factorized by pandas on the
  host, each table alone, and the avatars' distinct values looked up among the originals'
  (small arrays; a category column is not read value by value).

Rows (``_Rows``): the columns' codes are packed into a 64-bit word (mixed radix: exact while
the product of the columns' code counts stays below 2^63) until a column needs ``group``;
from then on each row's code is the index of a row alike, and a further column only splits
the rows that still share their code (the columns of floats come first: after one of them,
few rows are alike).

``group`` is a hash table built with array operations: every unresolved row writes its index
into the slot its words hash to, reads back the slot's winner, and takes it as its code when
the winner's words equal its own; the others try again with another hash. Equal words always
share a slot, so they get the same winner, and a row takes a code only after an exact
comparison: the grouping is exact whatever the hash. Each round resolves at least every
winner; with a table of at least twice the rows, about 80 % of distinct values resolve in the
first round. No sort and no Python loop over values: the same code runs on numpy and on
CuPy (on the device), and the counts are bincounts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend

_WORD = 1 << 63  # packed codes stay below 2^63: exact in int64
_MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)  # splitmix64's finaliser
_SALT = 0x9E3779B97F4A7C15  # a new hash for each round
_NAT = np.iinfo(np.int64).min


@dataclass
class Codes:
    """One column (or the rows on several columns), originals then avatars: ``codes`` (N,)
    int64 on the backend in ``[0, size)``, equal exactly where the values are; ``missing``
    (N,) bool where a value is missing, None when none is."""

    codes: Any
    size: int
    missing: Any = None
    rows: bool = False  # whether each code is the index of a row (of N) with the same values


@dataclass
class DirectMatches:
    """``column_protection``: per column (by ``str`` of its name), 100 x (1 - share of
    originals whose value is unique among the originals and appears among the avatars, a
    missing value never counted as appearing); ``row_protection``: % of original rows with
    no identical avatar row; ``exact_copies``: avatars identical to an original row, by how
    many originals hold that row (``{held: avatars}``)."""

    column_protection: dict[str, float]
    row_protection: float
    exact_copies: dict[int, int]


def direct_matches(
    original: pd.DataFrame, avatars: pd.DataFrame, backend: Backend
) -> DirectMatches:
    """The direct-match metrics on all of ``original``'s columns (``avatars`` has the same
    columns and dtypes, ``check_same_table``), in one pass over the columns."""
    xp, n = backend.xp, len(original)
    protection, rows = {}, _Rows(n + len(avatars), backend)
    for position in _most_distinct_first(original):
        column = code_column(original.iloc[:, position], avatars.iloc[:, position], backend)
        protection[position] = _column_protection(column, n, xp)
        rows.add(column)
    codes, size = rows.codes()
    held = xp.bincount(codes[:n], minlength=size)
    shared = held.take(codes[n:])  # per avatar: the originals identical to it
    present = xp.bincount(codes[n:], minlength=size) > 0
    matched = int(xp.count_nonzero(present.take(codes[:n])))
    counts = backend.to_numpy(xp.bincount(shared))
    return DirectMatches(
        column_protection={
            str(name): protection[position] for position, name in enumerate(original.columns)
        },
        row_protection=100.0 * (1.0 - matched / n),
        exact_copies={int(s): int(counts[s]) for s in np.flatnonzero(counts) if s > 0},
    )


def categorical_hidden_rate(
    original: pd.DataFrame, avatars: pd.DataFrame, variables: Sequence[Any], backend: Backend
) -> float:
    """% of originals whose own avatar is not the only avatar equal to them on
    ``variables``."""
    xp, n = backend.xp, len(original)
    codes, size = row_codes(original, avatars, variables, backend)
    own, theirs = codes[:n], codes[n:]
    matching = xp.bincount(theirs, minlength=size).take(own)  # avatars equal to original i
    at_risk = int(xp.count_nonzero((own == theirs) & (matching == 1)))
    return 100.0 * (1.0 - at_risk / n)


def unique_rows(original: pd.DataFrame, variables: Sequence[Any], backend: Backend) -> np.ndarray:
    """Host bool (n,): the originals whose values on ``variables`` no other original has."""
    codes, size = row_codes(original, original.iloc[:0], variables, backend)
    return backend.to_numpy(backend.xp.bincount(codes, minlength=size).take(codes) == 1)


def row_codes(
    original: pd.DataFrame, avatars: pd.DataFrame, variables: Sequence[Any], backend: Backend
) -> tuple[Any, int]:
    """(codes, size): codes (N,) of the rows on ``variables``, originals then avatars, in
    ``[0, size)``, equal exactly where the rows are equal on every variable."""
    original, avatars = original[list(variables)], avatars[list(variables)]
    rows = _Rows(len(original) + len(avatars), backend)
    for position in _most_distinct_first(original):
        rows.add(code_column(original.iloc[:, position], avatars.iloc[:, position], backend))
    return rows.codes()


def _most_distinct_first(table: pd.DataFrame) -> list[int]:
    """Column positions, floats and datetimes first, then integers, then the others: the
    rows are then told apart by the first columns, and later ones only split the few rows
    still alike (``_Rows``)."""
    def rank(dtype: Any) -> int:
        kind = dtype.kind if isinstance(dtype, np.dtype) else "O"
        return 0 if kind in "fmM" else 1 if kind in "iu" else 2

    return sorted(range(table.shape[1]), key=lambda j: rank(table.dtypes.iloc[j]))


def _column_protection(column: Codes, n: int, xp: Any) -> float:
    own, theirs = column.codes[:n], column.codes[n:]
    if column.missing is not None:  # a missing value never counts as appearing
        theirs = theirs[~column.missing[n:]]
    exposed = xp.bincount(own, minlength=column.size) == 1  # unique among the originals
    if theirs.shape[0]:
        exposed &= xp.bincount(theirs, minlength=column.size) > 0
    else:
        exposed[:] = False
    return 100.0 * (1.0 - int(xp.count_nonzero(exposed.take(own))) / n)


# ------------------------------------------------------------------------------ columns
def code_column(original: pd.Series, avatars: pd.Series, backend: Backend) -> Codes:
    """A column's codes, originals then avatars (the module docstring)."""
    dtype = original.dtype
    if isinstance(dtype, np.dtype) and avatars.dtype == dtype and dtype.kind in "biufmM":
        return _code_numbers(
            np.concatenate([original.to_numpy(), avatars.to_numpy()]), dtype.kind, backend
        )
    return _code_values(original, avatars, backend)


def _code_numbers(values: np.ndarray, kind: str, backend: Backend) -> Codes:
    xp, total = backend.xp, len(values)
    if kind == "b":
        return Codes(backend.asarray(values.astype(np.int64)), 2)
    if kind in "mM":
        values = values.view(np.int64)
        missing = values == _NAT  # NaT: one integer, missing
        if not missing.any():
            return _code_numbers(values, "i", backend)
        keys = backend.asarray(values.view(np.uint64))
        return Codes(group([keys], backend), total, backend.asarray(missing), rows=True)
    if kind in "iu":
        low, high = int(values.min()), int(values.max())
        wrapped = values.astype(np.uint64, copy=False)  # two's complement: exact differences
        if high - low < total:
            offset = (wrapped - np.uint64(low % (1 << 64))).astype(np.int64)
            return Codes(backend.asarray(offset), high - low + 1)
        return Codes(group([backend.asarray(wrapped)], backend), total, rows=True)
    numbers = backend.asarray(values.astype(np.float64, copy=False))
    missing = xp.isnan(numbers)
    keys = xp.where(missing, xp.nan, xp.where(numbers == 0, 0.0, numbers))  # -0.0 is 0.0
    codes = group([keys.view(xp.uint64)], backend)
    return Codes(codes, total, missing if bool(xp.any(missing)) else None, rows=True)


def _code_values(original: pd.Series, avatars: pd.Series, backend: Backend) -> Codes:
    """pandas' factorization of each table (missing values: -1), the avatars' distinct values
    looked up among the originals' (new ones after them), missing values last."""
    own, own_values = pd.factorize(original)
    theirs, their_values = pd.factorize(avatars)
    known = pd.Index(np.asarray(own_values, dtype=object), dtype=object)
    found = known.get_indexer(np.asarray(their_values, dtype=object))
    new = found < 0
    found[new] = len(known) + np.arange(int(new.sum()))
    missing_code = len(known) + int(new.sum())
    codes = np.concatenate([own, found[theirs] if len(found) else theirs])
    missing = np.concatenate([own < 0, theirs < 0])
    codes[missing] = missing_code
    return Codes(
        backend.asarray(codes.astype(np.int64, copy=False)),
        missing_code + 1,
        backend.asarray(missing) if missing.any() else None,
    )


# --------------------------------------------------------------------------------- rows
class _Rows:
    """Codes of N rows on the columns added so far. While no column has been grouped, the
    columns' codes are packed into one word (mixed radix: exact while the product of their
    sizes stays below 2^63); then the rows are grouped (``group``: each code the index of a
    row alike), and each further column only splits the rows that share their code with
    another row, a few once a column of distinct numbers has been added (when a grouped
    column leaves fewer rows alike than the codes so far, the two swap roles)."""

    def __init__(self, total: int, backend: Backend) -> None:
        self.total, self.backend = total, backend
        self.word, self.radix = None, 1  # packed codes, not grouped yet
        self.indexed = None  # grouped: each row's code is a row index
        self.alike = None  # rows whose code another row shares

    def add(self, column: Codes) -> None:
        if self.indexed is None:
            if self.word is None and column.rows:
                self._grouped(column.codes.copy())
                return
            if self.word is None or self.radix * column.size < _WORD:
                self.word = column.codes if self.word is None else (
                    self.word * column.size + column.codes
                )
                self.radix *= column.size
                return
            self._grouped(group([self.word.view(self.backend.xp.uint64)], self.backend))
            self.word = None
        self._split(column)

    def codes(self) -> tuple[Any, int]:
        """(codes, size): the rows' codes, in ``[0, size)``."""
        if self.indexed is not None:
            return self.indexed, self.total
        if self.radix <= self.total:
            return self.word, self.radix
        return group([self.word.view(self.backend.xp.uint64)], self.backend), self.total

    def _grouped(self, codes: Any) -> None:
        xp = self.backend.xp
        self.indexed = codes
        alike = xp.bincount(codes, minlength=self.total).take(codes) > 1
        self.alike = xp.flatnonzero(alike)

    def _split(self, column: Codes) -> None:
        xp, alike = self.backend.xp, self.alike
        if column.rows and alike.shape[0] > self.total // 8:  # the column may split fewer
            theirs = xp.flatnonzero(
                xp.bincount(column.codes, minlength=self.total).take(column.codes) > 1
            )
            if theirs.shape[0] < alike.shape[0]:  # the same rows alike on both, either way
                column, self.indexed = Codes(self.indexed, self.total), column.codes.copy()
                self.alike = alike = theirs
        if not alike.shape[0]:
            return
        own, theirs = self.indexed.take(alike), column.codes.take(alike)
        if self.total * column.size < _WORD:
            words = [(own * column.size + theirs).view(xp.uint64)]
        else:
            words = [own.view(xp.uint64), theirs.view(xp.uint64)]
        local = group(words, self.backend)  # indices into ``alike``
        self.indexed[alike] = alike.take(local)
        still = xp.bincount(local, minlength=alike.shape[0]).take(local) > 1
        self.alike = alike[still]


def group(words: Sequence[Any], backend: Backend) -> Any:
    """(N,) int64 codes of N rows of 64-bit ``words`` (a list of (N,) uint64 backend arrays,
    one per word): row i's code is the index of a row whose words all equal row i's (the
    module docstring)."""
    xp = backend.xp
    total = words[0].shape[0]
    if total == 0:
        return xp.empty(0, dtype=xp.int64)
    bits = (2 * total - 1).bit_length()
    mask = xp.uint64((1 << bits) - 1)
    table = xp.empty(1 << bits, dtype=xp.int64)
    hashed = _mix(words[0], xp)
    for word in words[1:]:
        hashed = _mix(hashed ^ word, xp)
    rows = xp.arange(total, dtype=xp.int64)
    slots = (hashed & mask).view(xp.int64)
    table[slots] = rows  # one writer per slot wins
    codes = table.take(slots)  # the winners: final where their words equal the row's
    todo = xp.flatnonzero(~_equal(words, codes, None))
    hashed, salt = hashed.take(todo), 0
    while todo.shape[0]:  # the others, again with another hash
        salt = (salt + _SALT) % (1 << 64)
        hashed = _mix(hashed ^ xp.uint64(salt), xp)
        slots = (hashed & mask).view(xp.int64)
        table[slots] = todo
        winners = table.take(slots)
        codes[todo] = winners
        same = _equal(words, winners, todo)
        todo, hashed = todo[~same], hashed[~same]
    return codes


def _equal(words: Sequence[Any], winners: Any, rows: Any) -> Any:
    """Whether each row's words (all rows when ``rows`` is None) equal its winner's."""
    same = None
    for word in words:
        equal = word.take(winners) == (word if rows is None else word.take(rows))
        same = equal if same is None else same & equal
    return same


def _mix(word: Any, xp: Any) -> Any:
    """splitmix64's finaliser: a new array."""
    h = word ^ (word >> xp.uint64(30))
    h *= xp.uint64(_MIX[0])
    h ^= h >> xp.uint64(27)
    h *= xp.uint64(_MIX[1])
    h ^= h >> xp.uint64(31)
    return h

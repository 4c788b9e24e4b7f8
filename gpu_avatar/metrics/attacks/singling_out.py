"""Singling out: queries built from the avatars alone that match exactly one avatar (univariate:
a value seen once, the minimum or maximum of a column; multivariate: a few columns of an
avatar), a success when a query matches exactly one original; the holdout count is rescaled
to the originals' size by anonymeter's fitted correction. Rows are counted once (people, not
copies), and a query stops being evaluated at its second match."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...backend import Backend
from ...errors import AvatarError
from .results import AttackResult, attack_result
from .values import Values

SINGLING_OUT_QUERIES = 500  # anonymeter's default number of attacks
SINGLING_OUT_COLUMNS = 3  # columns per multivariate query (anonymeter's default)
SINGLING_OUT_MAX_ATTEMPTS = 100_000  # multivariate queries tried before giving up
_QUERY_BATCH = 1000
_FIRST_ROW_CHUNK = 256
_ROW_CHUNK = 8192

# predicate operators of the singling-out queries
EQ, NE, LT, LE, GT, GE, ISNULL, NOTNULL = range(8)
_CATEGORY_OPERATORS = (EQ, NE)
_NUMBER_OPERATORS = (EQ, NE, GT, LT, GE, LE)


@dataclass
class _Queries:
    """Conjunctions of predicates ``column op value``: arrays (n_queries, n_predicates)."""

    columns: np.ndarray
    operators: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return self.columns.shape[0]

    def take(self, keep) -> _Queries:
        return _Queries(self.columns[keep], self.operators[keep], self.values[keep])


def _predicate(x, operator: int, value, xp):
    """Rows of ``x`` (rows, queries) matching ``column op value``; a missing cell matches
    only ``is missing``."""
    if operator == ISNULL:
        return xp.isnan(x)
    if operator == NOTNULL:
        return ~xp.isnan(x)
    if operator == NE:
        return (x != value) & ~xp.isnan(x)
    compare = {EQ: xp.equal, LT: xp.less, LE: xp.less_equal, GT: xp.greater,
               GE: xp.greater_equal}[operator]
    return compare(x, value)


def singles(table, queries: _Queries, backend: Backend) -> np.ndarray:
    """Which queries match exactly one row of ``table`` (a backend array). A query stops
    being evaluated at its second match, so most are settled on the first rows; chunks of
    rows double in size."""
    counts = np.zeros(len(queries), dtype=np.int64)
    alive = np.arange(len(queries))
    start, size = 0, _FIRST_ROW_CHUNK
    while start < table.shape[0] and alive.size:
        counts[alive] += _chunk_counts(table[start : start + size], queries.take(alive), backend)
        alive = alive[counts[alive] < 2]
        start, size = start + size, min(2 * size, _ROW_CHUNK)
    return counts == 1


def _chunk_counts(rows, queries: _Queries, backend: Backend) -> np.ndarray:
    xp = backend.xp
    columns = backend.asarray(queries.columns)
    values = backend.asarray(queries.values)
    match = xp.ones((rows.shape[0], len(queries)), dtype=bool)
    for p in range(queries.columns.shape[1]):
        x = rows[:, columns[:, p]]
        for operator in np.unique(queries.operators[:, p]):
            chosen = np.nonzero(queries.operators[:, p] == operator)[0]
            sel = backend.asarray(chosen)
            match[:, sel] &= _predicate(x[:, sel], int(operator), values[sel, p][None, :], xp)
    return backend.to_numpy(match.sum(axis=0))


def _distinct(queries: _Queries, seen: set) -> np.ndarray:
    """Which queries are new (predicates in column order), adding them to ``seen``."""
    order = np.argsort(queries.columns, axis=1, kind="stable")
    keep = np.zeros(len(queries), dtype=bool)
    for i in range(len(queries)):
        key = tuple(
            (int(queries.columns[i, j]), int(queries.operators[i, j]),
             float(queries.values[i, j]) if queries.values[i, j] == queries.values[i, j]
             else "nan")
            for j in order[i]
        )
        if key not in seen:
            seen.add(key)
            keep[i] = True
    return keep


def _univariate_queries(avatars: np.ndarray, categorical: np.ndarray, rng) -> _Queries:
    """Every single-column query that could single out an avatar: the one missing value,
    the minimum and maximum of numbers, the values seen once."""
    columns, operators, values = [], [], []

    def add(column, operator, value):
        columns.append(column), operators.append(operator), values.append(value)

    for j in range(avatars.shape[1]):
        column = avatars[:, j]
        missing = np.isnan(column)
        if missing.sum() == 1:
            add(j, ISNULL, np.nan)
        present = column[~missing]
        if present.size and not categorical[j]:
            add(j, LE, present.min())
            add(j, GE, present.max())
        levels, counts = np.unique(present, return_counts=True)
        for value in levels[counts == 1]:
            add(j, EQ, value)
    order = rng.permutation(len(columns))
    return _Queries(np.array(columns, dtype=np.int64)[order, None],
                    np.array(operators, dtype=np.int64)[order, None],
                    np.array(values, dtype=np.float64)[order, None])


def _record_queries(avatars, categorical, n_columns: int, size: int, rng) -> _Queries:
    """Queries from random avatars: ``n_columns`` random columns each, ``=`` for categories,
    ``>=`` above the median and ``<=`` otherwise for numbers, ``is missing`` for a gap."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
        medians = np.nanmedian(avatars, axis=0)
    rows = rng.integers(0, avatars.shape[0], size=size)
    columns = np.argsort(rng.random((size, avatars.shape[1])), axis=1)[:, :n_columns]
    values = avatars[rows[:, None], columns]
    operators = np.where(values > medians[columns], GE, LE)
    operators = np.where(categorical[columns], EQ, operators)
    operators = np.where(np.isnan(values), ISNULL, operators)
    return _Queries(columns, operators.astype(np.int64), values)


def _random_queries(avatars, categorical, n_columns: int, size: int, rng) -> _Queries:
    """The baseline: random columns, each with a random avatar value and operator."""
    columns = np.argsort(rng.random((size, avatars.shape[1])), axis=1)[:, :n_columns]
    levels = [np.unique(avatars[:, j]) for j in range(avatars.shape[1])]  # NaN once, last
    values = np.empty(columns.shape)
    operators = np.empty(columns.shape, dtype=np.int64)
    for i, j in np.ndindex(columns.shape):
        column = columns[i, j]
        values[i, j] = rng.choice(levels[column])
        choices = _CATEGORY_OPERATORS if categorical[column] else _NUMBER_OPERATORS
        operators[i, j] = rng.choice(choices)
    gap = np.isnan(values)
    operators[gap] = np.where(operators[gap] == EQ, ISNULL, NOTNULL)
    return _Queries(columns, operators, values)


def _singling_out_queries(avatars, categorical, mode, n_queries, n_columns, max_attempts,
                          backend, rng) -> _Queries:
    """Up to ``n_queries`` distinct queries matching exactly one avatar (``avatars`` on the
    host, to draw from)."""
    table = backend.asarray(avatars)
    seen: set = set()
    found: list[_Queries] = []
    total = 0
    if mode == "univariate":
        candidates = _univariate_queries(avatars, categorical, rng)
        batches = [candidates.take(slice(s, s + _QUERY_BATCH))
                   for s in range(0, len(candidates), _QUERY_BATCH)]
    else:
        batches = (_record_queries(avatars, categorical, n_columns,
                                   min(_QUERY_BATCH, max_attempts - start), rng)
                   for start in range(0, max_attempts, _QUERY_BATCH))
    for batch in batches:
        single = batch.take(singles(table, batch, backend))
        single = single.take(_distinct(single, seen))
        found.append(single.take(slice(0, n_queries - total)))
        total += len(found[-1])
        if total >= n_queries:
            break
    if not found:
        return _Queries(*(np.empty((0, 1)) for _ in range(3)))
    return _Queries(*(np.concatenate([getattr(q, name) for q in found])
                      for name in ("columns", "operators", "values")))


def _size_correction(holdout, queries: _Queries, n_original: int, backend, rng) -> float:
    """anonymeter's correction of the holdout count to the originals' size: the number of
    queries singling out in a population of n, ``norm * P(n, w_eff)``, is fitted on
    subsamples of the holdout and evaluated at both sizes."""
    from scipy.optimize import curve_fit

    n = holdout.shape[0]
    sizes, successes = [], []
    for size in np.linspace(min(1000, n), n, 10).astype(int):
        for _ in range(5):
            rows = rng.choice(n, size=size, replace=False)
            sizes.append(size)
            successes.append(int(singles(holdout[rows], queries, backend).sum()))
    sizes, successes = np.array(sizes, dtype=float), np.array(successes, dtype=float)

    def integral(size, w):  # the singling-out probability integrated over weights [0, w]
        return (1.0 - (size * w + 1.0) * (1.0 - w) ** size) / (size + 1.0)

    def model(size, w, norm):
        return norm * integral(size, w)

    w0 = 1.0 / sizes.max()
    try:
        (w, norm), _ = curve_fit(model, sizes, successes, p0=(w0, 1.0 / integral(sizes.max(), w0)),
                                 bounds=(0, (1, np.inf)))
    except (RuntimeError, ValueError):
        return 1.0
    below = model(n, w, norm)
    return float(model(n_original, w, norm) / below) if below > 0 else 1.0


def _unique_rows(values: np.ndarray) -> np.ndarray:
    """DistinctRows rows, in first-seen order (a missing value equals a missing value)."""
    return values[~pd.DataFrame(values).duplicated().to_numpy()]


@dataclass
class DistinctRows:
    """The distinct rows of the three tables (singling out counts people, not copies):
    the avatars on the host (queries are drawn from them), the others on the backend."""

    avatars: np.ndarray
    original: Any
    holdout: Any

    @classmethod
    def of(cls, values: Values, backend: Backend) -> DistinctRows:
        return cls(_unique_rows(values.avatars), backend.asarray(_unique_rows(values.original)),
                   backend.asarray(_unique_rows(values.holdout)))


def singling_out_attack(distinct: DistinctRows, categorical, mode, n_queries, n_columns,
                        max_attempts, confidence, backend, rng) -> AttackResult:
    """The singling-out attack in ``mode`` (``univariate``, or ``multivariate`` of ``n_columns``
    columns per query, ``max_attempts`` tried at most) with up to ``n_queries`` queries."""
    original, avatars, holdout = distinct.original, distinct.avatars, distinct.holdout
    width = 1 if mode == "univariate" else n_columns
    queries = _singling_out_queries(avatars, categorical, mode, n_queries, n_columns,
                                    max_attempts, backend, rng)
    if len(queries) < n_queries:
        warnings.warn(
            f"singling out ({mode}): only {len(queries)} of {n_queries} queries single out an "
            "avatar; the risk is measured on those", stacklevel=3,
        )
    if len(queries) == 0:
        raise AvatarError(
            f"singling out ({mode}): no query singles out an avatar, so the attack cannot be "
            "measured; leave this mode out (singling_out_modes) or give more columns"
        )
    n = len(queries)
    success = int(singles(original, queries, backend).sum())
    control = float(singles(holdout, queries, backend).sum())
    if holdout.shape[0] != original.shape[0] and control > 0:
        control *= _size_correction(holdout, queries, original.shape[0], backend, rng)
    baseline_queries = _random_queries(avatars, categorical, width, n, rng)
    baseline = int(singles(original, baseline_queries, backend).sum())
    return attack_result(f"singling_out_{mode}", None, n, success, n, min(control, n),
                         baseline, confidence)


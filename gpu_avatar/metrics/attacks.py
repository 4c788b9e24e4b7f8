"""Attack-based risks: singling out, linkability and inference, measured against a holdout.

The definitions are Giomi et al., "A Unified Framework for Quantifying Privacy Risk in
Synthetic Data" (PETS 2023), as the ``anonymeter`` package implements them; the attacks run on
this library's arrays and exact neighbour engines, on every row rather than a sample:

- **singling out**: queries built from the avatars alone (univariate: a value seen once, the
  minimum or maximum of a column; multivariate: ``singling_out_columns`` columns of an avatar,
  each as ``=`` for a category or ``>=``/``<=`` for a number on the avatar's side of the median)
  that match exactly one avatar; success = a query matching exactly one original. The holdout
  count is rescaled to the originals' size by anonymeter's fitted correction.
- **linkability**: the attacker holds two sets of columns of the same people
  (``linkability_columns``, by default the variables split in two halves); an individual is
  linked when one avatar is among the ``n_neighbours`` nearest of both halves.
- **inference**: for each ``secrets`` column, the secret of the nearest avatar on every other
  variable; correct when equal (categories) or within ``INFERENCE_TOLERANCE`` of the guess,
  relatively (numbers).

Distances are anonymeter's mixed-type (Gower-like) distance: per number ``|a - b|`` over the
column's range (over the attacked rows and the avatars), per category 0 when equal and 1
otherwise; a missing value is at 0 from a missing value and at 1 (a whole range) from any
present one (``neighbours/references.py``, exact, ties to the lower avatar index).

Where this differs from anonymeter 1.1.0, on purpose: two missing values count as equal
(anonymeter adds 1, and ranks a number missing against a present one last); the singling-out
rate is over the queries found (anonymeter divides by the number asked for, which lowers the
risk when fewer are found); a number is guessed within the tolerance of ``|guess|`` (anonymeter
divides by the signed guess, so every negative guess counts as right); datetimes and
timedeltas are guessed exactly (anonymeter: exact for every non-numeric column, which they
are in pandas), as a 5 % tolerance on seconds since 1970 would be years.

Each attack also runs against the holdout (people not in the release) and as a random guess
(the baseline). With success rates estimated by Wilson score intervals, the risk is
``(attack - holdout) / (1 - holdout)`` bounded to [0, 1], with its error propagated to a
confidence interval; a risk whose interval starts above 0 is a measurable risk. An attack that
does no better than the random guess, or than on the holdout (one-sided Fisher exact test),
learns nothing from the release, whatever its risk (near a success rate of 1 the risk's formula
magnifies chance differences): it is never the headline.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend, resolve_backend, to_pandas
from ..encoding import CATEGORICAL, IDENTIFIER, TableEncoder
from ..encoding.kinds import column_scales
from ..errors import AvatarError, AvatarTypeError
from ..neighbours.references import most_references, nearest_references
from ..parameters import (
    SINGLING_OUT_MODES,
    check_choice,
    check_integer,
    check_number,
    check_types,
    seed_sequence,
)
from ..progress import ProgressLike, Steps
from .checks import check_same_table, check_variables
from .timing import timed

INFERENCE_TOLERANCE = 0.05  # a number is guessed when within 5 % of the guess (anonymeter)
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


# ------------------------------------------------------------------------- statistics
def probit(confidence_level: float) -> float:
    """The two-sided normal quantile of ``confidence_level``."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 * (1.0 + confidence_level)))


def success_rate(n_total: int, n_success: float, confidence_level: float) -> tuple[float, float]:
    """Wilson score estimate of a success rate and its error bound, ``(rate, error)``."""
    z = probit(confidence_level)
    z2 = z * z
    variance = n_success * (n_total - n_success) / n_total
    denominator = n_total + z2
    rate = (n_success + 0.5 * z2) / denominator
    return rate, (z / denominator) * math.sqrt(max(variance, 0.0) + 0.25 * z2)


def residual_risk(attack: tuple[float, float], control: tuple[float, float]):
    """``(attack - control) / (1 - control)`` and its propagated error."""
    (a, da), (c, dc) = attack, control
    value = (a - c) / (1.0 - c)
    error = math.hypot(da / abs(1.0 - c), dc * (a - 1.0) / (1.0 - c) ** 2)
    return value, error


def _bounded(value: float, error: float) -> tuple[float, float, float]:
    def clip(x):
        return min(max(x, 0.0), 1.0)

    return clip(value), clip(value - error), clip(value + error)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AttackResult:
    """One attack: its counts, success rates and the risk with its confidence interval."""

    attack: str
    secret: Any
    n_attacks: int
    n_success: float
    n_control_attacks: int
    n_control_success: float
    n_baseline_success: float
    attack_rate: float
    control_rate: float
    baseline_rate: float
    risk: float
    risk_low: float
    risk_high: float
    confidence_level: float

    @property
    def measurable(self) -> bool:
        """Whether the risk's confidence interval starts above 0."""
        return self.risk_low > 0.0

    @property
    def better_than_baseline(self) -> bool:
        """Whether the attack beats a random guess (anonymeter: otherwise not to be trusted)."""
        return self.attack_rate > self.baseline_rate

    @property
    def learns_from_release(self) -> bool:
        """Whether the attack learns from the release: it beats a random guess, and succeeds
        on the originals more often than on the holdout beyond chance (one-sided Fisher exact
        test at 1 - ``confidence_level``). The risk's formula cannot tell this near a success
        rate of 1, where it magnifies chance differences into a "measurable" risk."""
        from scipy.stats import fisher_exact

        if not self.better_than_baseline:
            return False
        success, control = round(self.n_success), round(self.n_control_success)
        table = [[success, self.n_attacks - success],
                 [control, self.n_control_attacks - control]]
        return bool(fisher_exact(table, alternative="greater").pvalue
                    < 1.0 - self.confidence_level)

    @property
    def label(self) -> str:
        """The attack, with its secret for an inference: ``inference (age)``."""
        return self.attack if self.secret is None else f"{self.attack} ({self.secret})"


@dataclass
class AttackMetrics:
    """The attack-based risks of a release (see the module docstring)."""

    results: list[AttackResult]
    seconds: float | None = field(default=None, compare=False)  # to run the attacks

    @property
    def measurable_risks(self) -> list[AttackResult]:
        """The measurable risks of the attacks that learn from the release."""
        return [r for r in self.results if r.measurable and r.learns_from_release]

    @property
    def learning_nothing(self) -> list[AttackResult]:
        """The attacks that do no better than a random guess, or than on the holdout: they
        learn nothing from the release, whatever their risk."""
        return [r for r in self.results if not r.learns_from_release]

    def highest(self) -> AttackResult | None:
        """The headline: the highest risk of an attack that learns from the release (None
        when none does)."""
        return max((r for r in self.results if r.learns_from_release), key=lambda r: r.risk,
                   default=None)

    def to_frame(self) -> pd.DataFrame:
        """One row per attack: counts, rates, risk and interval, baseline risk, flags."""
        rows = []
        for result in self.results:
            row = asdict(result)
            row["measurable_risk"] = result.measurable
            row["better_than_baseline"] = result.better_than_baseline
            rows.append(row)
        return pd.DataFrame(rows)

    def risk(self, attack: str, secret: Any = None) -> AttackResult:
        """The result of ``attack`` (and ``secret`` for an inference)."""
        for result in self.results:
            if result.attack == attack and (secret is None or result.secret == secret):
                return result
        raise AvatarError(f"no {attack!r} attack{'' if secret is None else f' on {secret!r}'}")


def _result(attack: str, secret: Any, n: int, success: float, n_control: int,
            control: float, baseline: float, confidence: float) -> AttackResult:
    attack_rate = success_rate(n, success, confidence)
    control_rate = success_rate(n_control, control, confidence)
    baseline_rate = success_rate(n, baseline, confidence)
    risk, low, high = _bounded(*residual_risk(attack_rate, control_rate))
    return AttackResult(
        attack=attack, secret=secret, n_attacks=n, n_success=success,
        n_control_attacks=n_control, n_control_success=control, n_baseline_success=baseline,
        attack_rate=attack_rate[0], control_rate=control_rate[0],
        baseline_rate=baseline_rate[0], risk=risk, risk_low=low, risk_high=high,
        confidence_level=confidence,
    )  # fmt: skip


# ---------------------------------------------------------------------- the values
@dataclass
class _Values:
    """The three tables as float matrices over the same variables: numbers (datetimes as
    seconds), categories as shared codes; missing values are NaN."""

    original: np.ndarray
    avatars: np.ndarray
    holdout: np.ndarray
    categorical: np.ndarray  # per variable
    times: np.ndarray  # per variable: datetimes and timedeltas
    variables: list[Any]

    @property
    def constant(self) -> np.ndarray:
        """Per variable: a number constant among the originals (``column_scales``: a std
        negligible against the mean), which no distance should weigh."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
            spread, mean = np.nanstd(self.original, axis=0), np.nanmean(self.original, axis=0)
        return ~self.categorical & np.isinf(column_scales(spread, mean))

    @property
    def exact(self) -> np.ndarray:
        """Per variable: guessed exactly (categories, datetimes, timedeltas)."""
        return self.categorical | self.times


def _values(original, avatars, holdout, variables, types) -> _Values:
    frames = [original[variables], avatars[variables], holdout[variables]]
    encoder = TableEncoder({c: k for c, k in types.items() if c in variables},
                           missing_indicators=False).fit(pd.concat(frames, ignore_index=True))

    def matrix(df):
        columns = []
        for column in variables:
            spec = encoder.specs_[column]
            if spec.kind == CATEGORICAL:
                codes = encoder.categorical_codes(spec, df[column]).astype(np.float64)
                codes[codes < 0] = np.nan
                columns.append(codes)
            else:
                columns.append(encoder.continuous_values(spec, df[column]))
        return np.column_stack(columns) if columns else np.empty((len(df), 0))

    categorical = np.array([encoder.specs_[c].kind == CATEGORICAL for c in variables])
    times = np.array([encoder.specs_[c].time_unit is not None for c in variables])
    return _Values(*(matrix(df) for df in frames), categorical, times, list(variables))


def _unique_rows(values: np.ndarray) -> np.ndarray:
    """Distinct rows, in first-seen order (a missing value equals a missing value)."""
    return values[~pd.DataFrame(values).duplicated().to_numpy()]


# ------------------------------------------------------------------ mixed-type distance
def _scaled(attacked: np.ndarray, avatars: np.ndarray, categorical: np.ndarray,
            constant: np.ndarray):
    """``(attacked, avatars)`` with each number divided by its column's range over the two
    (anonymeter: a difference is then at most 1, as between two categories), a ``constant``
    one by infinity (it weighs nothing: 0, or NaN where missing); codes unchanged. Column by
    column, so any subset of columns is a slice of it."""
    both = np.vstack([attacked, avatars])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
        span = np.nanmax(both, axis=0) - np.nanmin(both, axis=0)
    span = np.where(categorical | ~np.isfinite(span) | (span == 0), 1.0, span)
    span = np.where(constant, np.inf, span)
    return attacked / span, avatars / span


def _nearest_avatars(scaled, columns, categorical, k, backend: Backend):
    """Indices (n, k) of each attacked row's k nearest avatars on ``columns``; ``scaled``:
    ``_scaled``'s pair for the attacked table."""
    queries, references = (table[:, columns] for table in scaled)
    indices, _ = nearest_references(queries, references, categorical[columns], k, backend)
    return backend.to_numpy(indices)


# ------------------------------------------------------------------------ singling out
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


@dataclass
class _Distinct:
    """The distinct rows of the three tables (singling out counts people, not copies):
    the avatars on the host (queries are drawn from them), the others on the backend."""

    avatars: np.ndarray
    original: Any
    holdout: Any

    @classmethod
    def of(cls, values: _Values, backend: Backend) -> _Distinct:
        return cls(_unique_rows(values.avatars), backend.asarray(_unique_rows(values.original)),
                   backend.asarray(_unique_rows(values.holdout)))


def _singling_out(distinct: _Distinct, categorical, mode, n_queries, n_columns, max_attempts,
                  confidence, backend, rng) -> AttackResult:
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
    return _result(f"singling_out_{mode}", None, n, success, n, min(control, n), baseline,
                   confidence)


# -------------------------------------------------------------------------- linkability
def _linked(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Rows whose two neighbour lists share an avatar."""
    return (first[:, :, None] == second[:, None, :]).any(axis=(1, 2))


def _random_neighbours(n: int, n_avatars: int, k: int, rng) -> np.ndarray:
    """k distinct random avatars per row (redrawing rows with a repeat while repeats are rare,
    one draw without replacement per row otherwise)."""
    if k * k > n_avatars:
        return np.array([rng.choice(n_avatars, size=k, replace=False) for _ in range(n)])
    picks = rng.integers(0, n_avatars, size=(n, k))
    while k > 1:
        ordered = np.sort(picks, axis=1)
        repeated = np.nonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))[0]
        if repeated.size == 0:
            break
        picks[repeated] = rng.integers(0, n_avatars, size=(repeated.size, k))
    return picks


def _linkability(values: _Values, scaled, halves, n_neighbours, confidence, backend, rng):
    def links(pair):
        first, second = (_nearest_avatars(pair, half, values.categorical, n_neighbours,
                                          backend) for half in halves)
        return int(_linked(first, second).sum())

    n, n_control = len(values.original), len(values.holdout)
    n_avatars = len(values.avatars)
    baseline = int(_linked(_random_neighbours(n, n_avatars, n_neighbours, rng),
                           _random_neighbours(n, n_avatars, n_neighbours, rng)).sum())
    return _result("linkability", None, n, links(scaled["original"]), n_control,
                   links(scaled["holdout"]), baseline, confidence)


# ---------------------------------------------------------------------------- inference
def guessed(guesses: np.ndarray, secrets: np.ndarray, exact: bool) -> np.ndarray:
    """Which guesses are right: equal (``exact``: categories, datetimes) or within
    ``INFERENCE_TOLERANCE`` of the guess, relatively (numbers); a missing guess of a missing
    secret is right."""
    both_missing = np.isnan(guesses) & np.isnan(secrets)
    with np.errstate(invalid="ignore"):
        if exact:
            right = guesses == secrets
        else:
            right = np.abs(guesses - secrets) <= INFERENCE_TOLERANCE * (np.abs(guesses) + 1e-12)
    return right | both_missing


def _inference(values: _Values, scaled, secret: int, confidence, backend, rng) -> AttackResult:
    others = np.array([j for j in range(len(values.variables)) if j != secret])
    exact = bool(values.exact[secret])

    def successes(attacked, pair):
        nearest = _nearest_avatars(pair, others, values.categorical, 1, backend)[:, 0]
        return int(guessed(values.avatars[nearest, secret], attacked[:, secret], exact).sum())

    n = len(values.original)
    random_avatars = rng.integers(0, len(values.avatars), size=n)
    baseline = int(guessed(values.avatars[random_avatars, secret], values.original[:, secret],
                           exact).sum())
    return _result("inference", values.variables[secret], n,
                   successes(values.original, scaled["original"]), len(values.holdout),
                   successes(values.holdout, scaled["holdout"]), baseline, confidence)


# ------------------------------------------------------------------------------ entry
@timed
def attack_metrics(
    original: pd.DataFrame,
    avatars: pd.DataFrame,
    holdout: pd.DataFrame,
    *,
    secrets: Any = None,
    linkability_columns: Sequence[Sequence[Any]] | None = None,
    n_neighbours: int = 1,
    singling_out_modes: Sequence[str] = SINGLING_OUT_MODES,
    singling_out_queries: int = SINGLING_OUT_QUERIES,
    singling_out_columns: int = SINGLING_OUT_COLUMNS,
    singling_out_max_attempts: int = SINGLING_OUT_MAX_ATTEMPTS,
    confidence_level: float = 0.95,
    types: Mapping[Any, str] | None = None,
    seed: Any = None,
    backend: str | Backend = "auto",
    progress: ProgressLike = None,
) -> AttackMetrics:
    """Singling-out, linkability and inference risks of the release ``avatars`` (any row
    order) of the training rows ``original``, measured against ``holdout`` (rows of the same
    table kept out of the avatarization: ``split_holdout``). See the module docstring.

    ``secrets``: the columns an inference attack guesses (default: every variable), each from
    all the others; ``linkability_columns``: the attacker's two sets of columns (default: the
    variables split in two halves); ``n_neighbours``: avatars per half a link may go through;
    ``types`` as in ``avatarize`` (identifier columns are left out); ``seed`` draws the
    queries and the baselines.
    """
    original = to_pandas(original)
    avatars = check_same_table(original, to_pandas(avatars), "avatars", same_rows=False)
    holdout = check_same_table(original, to_pandas(holdout), "holdout", same_rows=False)
    types = check_types(types)
    if types:
        check_variables(original, list(types), "types")
    variables = [c for c in original.columns if types.get(c) != IDENTIFIER]
    if len(variables) < 2:
        raise AvatarError(
            f"the attacks need at least 2 variables (an attacker knows some and guesses "
            f"others), got {variables}"
        )
    secret_names = check_variables(original, secrets, "secrets") or variables
    identifiers = [name for name in secret_names if name not in variables]
    if identifiers:
        raise AvatarError(f"secrets cannot be identifier column(s): {identifiers}")
    halves = _linkability_halves(original, variables, linkability_columns)
    modes = [singling_out_modes] if isinstance(singling_out_modes, str) else list(
        singling_out_modes)
    for mode in modes:
        check_choice("singling_out_modes", mode, SINGLING_OUT_MODES)
    n_queries = check_integer("singling_out_queries", singling_out_queries, 1)
    n_columns = check_integer("singling_out_columns", singling_out_columns, 1, len(variables))
    max_attempts = check_integer("singling_out_max_attempts", singling_out_max_attempts, 1)
    confidence = check_number("confidence_level", confidence_level, 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise AvatarError(f"confidence_level must be strictly between 0 and 1, got {confidence}")
    backend = resolve_backend(backend)
    n_neighbours = check_integer("n_neighbours", n_neighbours, 1,
                                 min(len(avatars), most_references(backend)))

    values = _values(original, avatars, holdout, variables, types)
    position = {c: j for j, c in enumerate(variables)}
    sequence = seed_sequence(seed)  # children derived, not spawned: the same seed object
    rngs = [np.random.default_rng(np.random.SeedSequence(  # gives the same draws every time
        sequence.entropy, spawn_key=(*sequence.spawn_key, stream))) for stream in range(3)]
    steps = Steps(progress, "attacks", total=len(modes) + 1 + len(secret_names))
    results = []
    distinct = _Distinct.of(values, backend) if modes else None
    for mode in modes:
        with steps.step(f"singling out ({mode})"):
            results.append(_singling_out(distinct, values.categorical, mode, n_queries,
                                         n_columns, max_attempts, confidence, backend, rngs[0]))
    constant = values.constant
    scaled = {name: _scaled(getattr(values, name), values.avatars, values.categorical, constant)
              for name in ("original", "holdout")}
    with steps.step("linkability"):
        results.append(_linkability(values, scaled,
                                    [[position[c] for c in half] for half in halves],
                                    n_neighbours, confidence, backend, rngs[1]))
    for name in secret_names:
        with steps.step(f"inference of {name}"):
            results.append(_inference(values, scaled, position[name], confidence, backend,
                                      rngs[2]))
    return AttackMetrics(results)


def _linkability_halves(original, variables, columns) -> list[list[Any]]:
    if columns is None:
        middle = len(variables) // 2
        return [variables[:middle], variables[middle:]]
    if isinstance(columns, str) or not isinstance(columns, Sequence) or len(columns) != 2:
        raise AvatarTypeError(
            "linkability_columns must be two lists of columns (what each of the attacker's two "
            f"sources holds), got {columns!r}"
        )
    halves = [check_variables(original, half, "linkability_columns") for half in columns]
    for half in halves:
        if any(name not in variables for name in half):
            raise AvatarError(f"linkability_columns cannot use identifier columns: {half}")
    return halves

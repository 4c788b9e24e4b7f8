"""Time-series links (``add_link(..., method="time_series")``): the child table holds each
individual's curves (a key, a time column, continuous measurements), avatarized with the
individual instead of row by row, so that an avatar's curve keeps a shape, a length and a span.

1. Layout: the rows sorted by (individual, time); per individual its series length, start and
   span (last - first time). Numeric times are used as they are; datetimes and timedeltas as
   their int64 ticks after the originals' first tick (no tick lost), back to the column's
   dtype at the end, clipped to the originals' first and last tick.
2. Grid: per measurement variable, each individual's series linearly interpolated at
   ``n_points`` equally spaced points of its own span (its observed values only: a missing
   value inside a series is interpolated over; before the first or after the last observed
   value the curve is constant). A one-point series is a constant curve; a variable never
   observed in an individual's series has a missing curve (missing scores).
   Vectorised: one ``searchsorted`` per chunk of individuals (``chunk_individuals``).
3. Projection per variable: ``"fpca"`` (functional PCA on the grid values: mean curve, Gram
   matrix of the centred curves on the backend, ``eigh`` on the host as the FAMD does; the
   first ``n_components`` scores, default enough for ``EXPLAINED_VARIANCE`` of the variance and
   at most ``MAX_COMPONENTS``) or ``"flatten"`` (the grid values themselves).
4. Features, joined to the individual's table before its avatarization: length, start, span,
   the scores, and per variable with missing values the share of its points that are missing.
   An individual without a series has length 0 and neutral values (the originals' median
   start and span, the mean curve's scores, no missing share), so that "no series" is
   carried by the length alone, not by a missing indicator per feature.
5. Rebuild, per avatar individual: its curve from its scores (inverse FPCA), sampled at its own
   (rounded) number of points, equally spaced over its own span; the missing share drawn at
   random positions. What the avatarization may push out of the originals' support is brought
   back: lengths within ``[0, longest]``, spans within the originals' spans, times within the
   originals' time range (integer, datetime and timedelta times rounded: at most one point per
   time unit, the tick for datetimes and timedeltas), values clipped to each variable's original
   range and rounded to the decimals its originals typically show (``encoding/precision.py``:
   integers whole, a measurement to 0.1 as 0.1); an avatar whose length rounds to 0 has no
   series.

Limitations: an avatar's times are evenly spaced over its span (the originals' irregular
sampling is not reproduced); its missing values keep their share of the series, at positions
drawn at random.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend
from ..encoding.encoder import ticks_to_times, time_ticks
from ..encoding.kinds import is_datetime, is_number, is_timedelta
from ..encoding.precision import decimals, keep_in_range
from ..errors import AvatarError, FixableError, rows_named
from ..parameters import SERIES_PROJECTIONS, check_choice, check_integer
from ..projection.projection import chunk_rows, sorted_axes

logger = logging.getLogger("gpu_avatar")
MAX_COMPONENTS = 10
EXPLAINED_VARIANCE = 0.95
_TEMPORARIES = 8  # float64 arrays of a curve's size alive per individual in a chunk


def chunk_individuals(n_points: int) -> int:
    """Individuals interpolated, projected or rebuilt at once: their temporaries within the
    library's chunk budget (``projection.chunk_rows``)."""
    return chunk_rows(_TEMPORARIES * 8 * n_points)


# ------------------------------------------------------------------------ declaration
def check_series_options(n_points: Any, n_components: Any, projection: Any) -> tuple:
    """The time-series link options, checked: ``n_points`` (None: the median series length)
    and ``n_components`` (None: 95 % of the variance, at most 10; ``"fpca"`` only) positive
    integers, ``projection`` one of ``SERIES_PROJECTIONS``."""
    projection = check_choice("projection", projection, SERIES_PROJECTIONS)
    if n_points is not None:
        n_points = check_integer("n_points", n_points, 2)
    if n_components is not None:
        if projection == "flatten":
            raise AvatarError(
                f"n_components = {n_components} does not apply to projection='flatten' (its "
                "scores are the n_points grid values): drop n_components or use 'fpca'"
            )
        n_components = check_integer("n_components", n_components, 1, n_points)
    return n_points, n_components, projection


def _is_ticks(dtype: Any) -> bool:
    """Datetimes and timedeltas: times handled as their int64 ticks."""
    return is_datetime(dtype) or is_timedelta(dtype)


def check_series_table(
    where: str, data: pd.DataFrame, primary_key: Any, foreign_key: Any, time: Any,
    types: Mapping[Any, str],
) -> None:
    """Refuse, naming the column, a series table whose time column is its foreign key or not
    numbers, datetimes or timedeltas, whose other columns are not continuous numbers, or
    with a missing time or foreign key, or twice the same time in one series."""
    if time is None:
        raise FixableError(f"{where}: a time-series table needs its time column", {
            "python": "add_table(..., time=COLUMN)", "yaml": "give its tables entry time: COLUMN"
        })
    if time == foreign_key:
        raise AvatarError(
            f"{where}: time={time!r} is the foreign key of the link; name the column that "
            "holds each point's time"
        )
    dtype = data[time].dtype
    if not (_is_ticks(dtype) or is_number(dtype)):
        raise AvatarError(
            f"{where}: time column {time!r} has dtype {dtype}; it must hold numbers, "
            "datetimes or timedeltas"
        )
    for column in data.columns:
        if column in (primary_key, foreign_key, time):
            continue
        kind = types.get(column)
        if kind in ("categorical", "identifier") or not is_number(data[column].dtype):
            move = f"move {column!r} to another table, or link it as an ordinary child table"
            raise FixableError(
                f"{where}: column {column!r} ({kind or data[column].dtype}) is not a continuous "
                f"measurement; a time-series table holds only its keys, the time {time!r} and "
                "continuous measurements", {
                    "python": f"{move} (method='linear_sum_assignment')",
                    "yaml": f"{move} (method: linear_sum_assignment)",
                })
    for column, what in ((time, "time"), (foreign_key, "foreign key")):
        missing = int(data[column].isna().sum())
        if missing:
            raise AvatarError(
                f"{where}: {missing} row(s) have a missing {what} {column!r}; a point of a "
                "series needs its individual and its time: fill or drop them"
            )
    repeated = data.duplicated([foreign_key, time])
    if repeated.any():
        rows = rows_named(np.flatnonzero(repeated.to_numpy())[:3] + 1, int(repeated.sum()))
        raise AvatarError(
            f"{where}: {int(repeated.sum())} row(s) repeat a time within their series "
            f"({rows}, by position); a series has one row per time: aggregate or drop the "
            "repeats"
        )


def tick_range(column: pd.Series) -> tuple[int, int] | None:
    """The first and last int64 tick of a datetime or timedelta column; None for numbers."""
    if not _is_ticks(column.dtype):
        return None
    ticks = time_ticks(column)
    return int(ticks.min()), int(ticks.max())


def series_times(column: pd.Series, ticks: tuple[int, int] | None) -> np.ndarray:
    """The time column as float64: numbers as they are; datetimes and timedeltas as ticks
    after the first of ``ticks`` (subtracted in int64: no tick lost on large epochs)."""
    if ticks is None:
        return column.to_numpy(dtype=np.float64)
    return (time_ticks(column) - ticks[0]).astype(np.float64)


# ----------------------------------------------------------------------------- layout
@dataclass
class Layout:
    """The rows of one link's series sorted by (individual, time)."""

    order: np.ndarray  # child row of each sorted row
    offsets: np.ndarray  # individual i's rows: order[offsets[i] : offsets[i + 1]]
    times: np.ndarray  # sorted, as ``series_times``

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def starts(self) -> np.ndarray:
        """First time of each series, NaN without one."""
        out = np.full(len(self.offsets) - 1, np.nan)
        present = self.lengths > 0
        out[present] = self.times[self.offsets[:-1][present]]
        return out

    def spans(self) -> np.ndarray:
        """Last - first time of each series, NaN without one."""
        out = np.full(len(self.offsets) - 1, np.nan)
        present = self.lengths > 0
        out[present] = (self.times[self.offsets[1:][present] - 1]
                        - self.times[self.offsets[:-1][present]])
        return out


def layout(rows: np.ndarray, times: np.ndarray, n_individuals: int) -> Layout:
    """The series of the child rows whose individual (a position) is ``rows``."""
    order = np.lexsort((times, rows))
    counts = np.bincount(rows, minlength=n_individuals)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Layout(order, offsets, times[order])


def grid_values(series: Layout, values: np.ndarray, n_points: int) -> np.ndarray:
    """(individuals, n_points): each individual's series of ``values`` (sorted as the
    layout) interpolated on ``n_points`` equally spaced points of its span (module step 2)."""
    n = len(series.offsets) - 1
    grid = np.linspace(0.0, 1.0, n_points)
    out = np.full((n, n_points), np.nan)
    starts, spans = series.starts(), series.spans()
    step = chunk_individuals(n_points)
    for first in range(0, n, step):
        last = min(first + step, n)
        rows = slice(series.offsets[first], series.offsets[last])
        local = np.repeat(np.arange(last - first), series.lengths[first:last])
        span = spans[first:last][local]
        tau = np.where(span > 0, series.times[rows] - starts[first:last][local], 0.0)
        tau = np.divide(tau, span, out=tau, where=span > 0)
        observed = ~np.isnan(values[rows])
        local, tau, known = local[observed], tau[observed], values[rows][observed]
        keys = 2.0 * local + tau  # every individual's points within [2i, 2i + 1]
        base = 2.0 * np.arange(last - first)
        begin = np.searchsorted(keys, base, side="left")
        end = np.searchsorted(keys, base + 1.0, side="right") - 1  # the last observed point
        queries = (base[:, None] + grid[None, :]).ravel()
        begin_q, end_q = np.repeat(begin, n_points), np.repeat(end, n_points)
        low = np.clip(np.searchsorted(keys, queries, side="right") - 1, begin_q,
                      np.maximum(end_q - 1, begin_q))
        high = np.minimum(low + 1, end_q)
        empty = end_q < begin_q
        low, high = np.where(empty, 0, low), np.where(empty, 0, high)
        if keys.size:
            gap = tau[high] - tau[low]
            weight = np.divide(np.tile(grid, last - first) - tau[low], gap,
                               out=np.zeros_like(gap), where=gap > 0)
            weight = np.clip(weight, 0.0, 1.0)
            curve = known[low] + weight * (known[high] - known[low])
            out[first:last] = np.where(empty, np.nan, curve).reshape(last - first, n_points)
    return out


def series_curves(series: Layout, data: pd.DataFrame, variables: list[Any], n_points: int
                  ) -> dict[Any, np.ndarray]:
    """Each variable's curves (individuals, ``n_points``) from the rows of ``data``."""
    return {v: grid_values(series, data[v].to_numpy(dtype=np.float64)[series.order], n_points)
            for v in variables}


# ------------------------------------------------------------------------- projection
@dataclass
class CurveProjection:
    """One variable's curves on their grid <-> scores: FPCA (mean curve and axes fitted on
    the individuals with a curve) or ``flatten`` (the grid values)."""

    kind: str
    mean_: np.ndarray
    components_: np.ndarray  # (scores, grid points), orthonormal rows
    neutral_: np.ndarray  # the mean curve's scores (FPCA: 0): an individual without a series

    @classmethod
    def fit(cls, curves: np.ndarray, kind: str, n_components: int | None,
            backend: Backend) -> CurveProjection:
        """Fit on ``curves`` (individuals, grid points; a missing curve is a row of NaN):
        mean and Gram matrix accumulated on the backend chunk by chunk over the complete
        curves, axes by ``eigh`` (numerically null ones dropped: ``sorted_axes``)."""
        width, xp = curves.shape[1], backend.xp
        total, count = xp.zeros(width), 0
        for chunk in _complete_chunks(curves, backend):
            total, count = total + chunk.sum(axis=0), count + chunk.shape[0]
        mean = backend.to_numpy(total) / count
        if kind == "flatten":
            return cls(kind, np.zeros(width), np.eye(width), mean)
        gram, mean_device = xp.zeros((width, width)), backend.asarray(mean)
        for chunk in _complete_chunks(curves, backend):
            centred = chunk - mean_device
            gram = gram + centred.T @ centred
        gram = backend.to_numpy(gram)
        eigenvalues, eigenvectors = sorted_axes((gram + gram.T) / 2.0)
        variance = eigenvalues.sum()
        if n_components is None:
            ratio = eigenvalues / variance if variance > 0 else np.zeros_like(eigenvalues)
            enough = int(np.searchsorted(np.cumsum(ratio), EXPLAINED_VARIANCE - 1e-12)) + 1
            n_components = min(enough, MAX_COMPONENTS)
        elif n_components > len(eigenvalues):
            logger.info("%d FPCA component(s) asked, %d not null: %d kept", n_components,
                        len(eigenvalues), len(eigenvalues))
        components = eigenvectors[:, :n_components].T
        return cls(kind, mean, components, np.zeros(len(components)))

    @property
    def n_scores(self) -> int:
        return self.components_.shape[0]

    def transform(self, curves: np.ndarray, backend: Backend) -> np.ndarray:
        """Scores (individuals, n_scores), NaN for a missing curve; on the backend."""
        return self._chunked(curves, backend, lambda x, mean, axes: (x - mean) @ axes.T)

    def inverse_transform(self, scores: np.ndarray, backend: Backend) -> np.ndarray:
        """Curves on the grid from scores: the mean curve plus the scores times the axes."""
        return self._chunked(scores, backend, lambda s, mean, axes: s @ axes + mean)

    def _chunked(self, rows: np.ndarray, backend: Backend, step) -> np.ndarray:
        mean, axes = backend.asarray(self.mean_), backend.asarray(self.components_)
        size = chunk_individuals(self.mean_.size)
        return np.concatenate([  # no rows: one empty chunk, of the output's width
            backend.to_numpy(step(backend.asarray(rows[start : start + size]), mean, axes))
            for start in range(0, max(len(rows), 1), size)
        ])


def _complete_chunks(curves: np.ndarray, backend: Backend):
    """The curves without a missing grid value, chunk by chunk, on the backend."""
    size = chunk_individuals(curves.shape[1])
    for start in range(0, len(curves), size):
        chunk = curves[start : start + size]
        yield backend.asarray(chunk[~np.isnan(chunk).any(axis=1)])


# ------------------------------------------------------------------------------ model
def length_name(child: str) -> str:
    return f"{child}.length"


@dataclass
class SeriesModel:
    """What a time-series link keeps from the parent's enrichment to the rebuild: the
    variables' projections and the originals' support (times, spans, values)."""

    child: str
    time: Any
    variables: list[Any]
    n_points: int
    projections: dict[Any, CurveProjection]
    ticks: tuple[int, int] | None  # datetimes, timedeltas: first (the origin) and last tick
    time_range: tuple[float, float]  # as ``series_times``
    span_range: tuple[float, float]  # of the series with two points or more
    typical_start: float  # the features of an individual without a series: the medians
    typical_span: float  # (of the series with two points or more)
    value_ranges: dict[Any, tuple[float, float]]
    longest: int
    integer_time: bool  # integers, datetimes and timedeltas: at most one point per unit
    with_missing: list[Any] = field(default_factory=list)
    value_decimals: dict[Any, int | None] = field(default_factory=dict)  # None: unrounded

    def names(self) -> dict[str, Any]:
        """Feature column -> what it is ("length", "start", "span", (variable, "missing"),
        (variable, score index))."""
        out: dict[str, Any] = {length_name(self.child): "length",
                               f"{self.child}.start": "start", f"{self.child}.span": "span"}
        for variable in self.variables:
            if variable in self.with_missing:
                out[f"{self.child}.{variable}.missing"] = (variable, "missing")
            projection = self.projections[variable]
            label = "fpca" if projection.kind == "fpca" else "t"
            for j in range(projection.n_scores):
                out[f"{self.child}.{variable}.{label}{j + 1}"] = (variable, j)
        return out

    def curves(self, data: pd.DataFrame, rows: np.ndarray, n_individuals: int
               ) -> tuple[Layout, dict[Any, np.ndarray]]:
        """The layout of ``data``'s series and each variable's curves on the grid."""
        series = layout(rows, series_times(data[self.time], self.ticks), n_individuals)
        return series, series_curves(series, data, self.variables, self.n_points)

    def features(self, data: pd.DataFrame, rows: np.ndarray, n_individuals: int,
                 backend: Backend) -> pd.DataFrame:
        """One row per individual: the features of its series in ``data`` (module step 4)."""
        series, curves = self.curves(data, rows, n_individuals)
        return self._features(data, series, curves, backend)

    def _features(self, data: pd.DataFrame, series: Layout, curves: dict[Any, np.ndarray],
                  backend: Backend) -> pd.DataFrame:
        """Without a series: length 0 and neutral values (the typical start and span, the
        mean curves' scores, nothing missing); missing: only the scores of a variable never
        observed in an individual's series."""
        lengths = series.lengths.astype(np.float64)
        present = lengths > 0
        individual = np.repeat(np.arange(len(lengths)), series.lengths)
        scores = {v: self.projections[v].transform(curves[v], backend) for v in self.variables}
        columns: dict[str, np.ndarray] = {}
        for name, what in self.names().items():
            if what == "length":
                columns[name] = lengths
            elif what == "start":
                columns[name] = np.where(present, series.starts(), self.typical_start)
            elif what == "span":
                columns[name] = np.where(present, series.spans(), self.typical_span)
            elif what[1] == "missing":
                missing = np.isnan(data[what[0]].to_numpy(dtype=np.float64)[series.order])
                counts = np.bincount(individual, weights=missing, minlength=len(lengths))
                columns[name] = counts / np.maximum(lengths, 1)
            else:
                neutral = self.projections[what[0]].neutral_[what[1]]
                columns[name] = np.where(present, scores[what[0]][:, what[1]], neutral)
        return pd.DataFrame(columns)

    def rebuild(self, features: pd.DataFrame, rng: np.random.Generator, backend: Backend
                ) -> tuple[np.ndarray, np.ndarray, dict[Any, np.ndarray]]:
        """Every avatar individual's series from its features (module step 5): the
        individual (position) of each point, sorted by individual then time, its time (as
        ``series_times``) and its values per variable."""
        names = {what: name for name, what in self.names().items()}

        def feature(what) -> np.ndarray:
            return features[names[what]].to_numpy(dtype=np.float64)

        length = np.clip(np.round(feature("length")), 0, self.longest).astype(int)
        start, span = feature("start"), feature("span")
        low, high = self.time_range
        span = np.where(length > 1, np.clip(span, *self.span_range), 0.0)
        if self.integer_time:
            span = np.floor(span)
            length = np.minimum(length, span.astype(int) + 1)
            start = np.round(start)
        start = np.clip(start, low, high - span)
        offsets = np.concatenate([[0], np.cumsum(length)])
        individual = np.repeat(np.arange(len(length)), length)
        position = np.arange(offsets[-1]) - offsets[:-1][individual]
        where = position / np.maximum(length - 1, 1)[individual]  # on the normalised grid
        times = start[individual] + where * span[individual]
        if self.integer_time:
            times = np.round(times)
        values = {}
        for variable in self.variables:
            projection = self.projections[variable]
            scores = np.column_stack([feature((variable, j)) for j in range(projection.n_scores)])
            curves = projection.inverse_transform(scores, backend)
            x = where * (self.n_points - 1)
            cell = np.minimum(np.floor(x).astype(int), self.n_points - 2)
            fraction = x - cell
            value = (curves[individual, cell] * (1.0 - fraction)
                     + curves[individual, cell + 1] * fraction)
            value = np.clip(value, *self.value_ranges[variable])
            places = self.value_decimals[variable]
            if places is not None:
                value = keep_in_range(np.round(value, places), value,
                                      *self.value_ranges[variable])
            if (variable, "missing") in names:
                share = np.clip(feature((variable, "missing")), 0.0, 1.0)
                rank = np.empty(len(individual), dtype=np.int64)
                rank[np.lexsort((rng.random(len(individual)), individual))] = position
                value[rank < np.round(share * length)[individual]] = np.nan
            values[variable] = value
        return individual, times, values

    def time_column(self, times: np.ndarray, dtype: Any) -> pd.Series:
        """Rebuilt ``times`` in the time column's ``dtype``: datetimes and timedeltas as
        int64 ticks after the origin, clipped in int64 to the originals' first and last."""
        if self.ticks is None:
            return pd.Series(np.round(times) if self.integer_time else times).astype(dtype)
        first, last = self.ticks
        ticks = np.clip(np.rint(times).astype(np.int64) + first, first, last)
        return ticks_to_times(ticks, dtype)


def fit_series(
    child: str, data: pd.DataFrame, time: Any, rows: np.ndarray, n_individuals: int,
    options: tuple, backend: Backend,
) -> tuple[SeriesModel, pd.DataFrame]:
    """The link's model, fitted on the original series (``data``: the time and measurement
    columns; ``rows``: each row's individual), and the individuals' features. ``options``:
    (n_points, n_components, projection) as the link declares them."""
    n_points, n_components, projection = options
    variables = [c for c in data.columns if c != time]
    ticks = tick_range(data[time])
    times = series_times(data[time], ticks)
    series = layout(rows, times, n_individuals)
    lengths = series.lengths
    if n_points is None:
        n_points = max(2, int(np.median(lengths[lengths > 0])))
    if n_components is not None and n_components > n_points:
        raise AvatarError(
            f"link -> {child}: n_components = {n_components} exceeds the grid of n_points = "
            f"{n_points}; lower n_components or raise n_points"
        )
    spans, several = series.spans(), lengths > 1
    model = SeriesModel(
        child, time, variables, n_points, {}, ticks,
        time_range=(float(times.min()), float(times.max())),
        span_range=(float(spans[several].min()), float(spans[several].max()))
        if several.any() else (0.0, 0.0),
        typical_start=float(np.nanmedian(series.starts())),
        typical_span=float(np.median(spans[several])) if several.any() else 0.0,
        value_ranges={}, longest=int(lengths.max()),
        integer_time=ticks is not None or pd.api.types.is_integer_dtype(data[time].dtype),
    )
    curves = series_curves(series, data, variables, n_points)
    for variable in variables:
        values = data[variable].to_numpy(dtype=np.float64)
        if np.isnan(values).all():
            raise AvatarError(f"{child}.{variable}: no observed value; drop the column")
        model.value_ranges[variable] = (float(np.nanmin(values)), float(np.nanmax(values)))
        model.value_decimals[variable] = decimals(values, data[variable].dtype)
        if np.isnan(values).any():
            model.with_missing.append(variable)
        model.projections[variable] = CurveProjection.fit(
            curves[variable], projection, n_components, backend)
    return model, model._features(data, series, curves, backend)

"""Time-series links (``add_link(..., method="time_series")``): the child table holds each
individual's curves (a key, a time column, continuous measurements), avatarized with the
individual instead of row by row, so that an avatar's curve keeps a shape, a length and a span.

1. Layout: the rows sorted by (individual, time); per individual its series length, start and
   span (last - first time). Times are seconds (datetimes: since the epoch; timedeltas: as
   durations), converted back to the column's dtype at the end.
2. Grid: per measurement variable, each individual's series linearly interpolated at
   ``n_points`` equally spaced points of its own span (its observed values only: a missing
   value inside a series is interpolated over; before the first or after the last observed
   value the curve is constant). A one-point series is a constant curve; an individual with no
   series, or a variable never observed in its series, has a missing curve (missing scores).
   Vectorised: one ``searchsorted`` per chunk of ``CHUNK_INDIVIDUALS`` individuals.
3. Projection per variable: ``"fpca"`` (functional PCA on the grid values: mean curve, Gram
   matrix of the centred curves on the backend, ``eigh`` on the host as the FAMD does; the
   first ``n_components`` scores, default enough for ``EXPLAINED_VARIANCE`` of the variance and
   at most ``MAX_COMPONENTS``) or ``"flatten"`` (the grid values themselves).
4. Features, joined to the individual's table before its avatarization: length, start, span,
   the scores, and per variable with missing values the share of its points that are missing.
5. Rebuild, per avatar individual: its curve from its scores (inverse FPCA), sampled at its own
   (rounded) number of points, equally spaced over its own span; the missing share drawn at
   random positions. What the avatarization may push out of the originals' support is brought
   back: lengths within ``[0, longest]``, spans within the originals' spans, times within the
   originals' time range, values clipped to each variable's original range; integer columns
   rounded (integer times: at most one point per time unit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..backend import Backend
from ..errors import AvatarError
from ..parameters import SERIES_PROJECTIONS, check_choice, check_integer
from ..projection.projection import sorted_axes

MAX_COMPONENTS = 10
EXPLAINED_VARIANCE = 0.95
CHUNK_INDIVIDUALS = 1 << 14  # individuals interpolated, projected or rebuilt at once
_NANOS = 1e9


# ------------------------------------------------------------------------ declaration
def check_series_options(n_points: Any, n_components: Any, projection: Any) -> tuple:
    """The time-series link options, checked: ``n_points`` (None: the median series length)
    and ``n_components`` (None: 95 % of the variance, at most 10) positive integers,
    ``projection`` one of ``SERIES_PROJECTIONS``."""
    if n_points is not None:
        n_points = check_integer("n_points", n_points, 2)
    if n_components is not None:
        n_components = check_integer("n_components", n_components, 1, n_points)
    return n_points, n_components, check_choice("projection", projection, SERIES_PROJECTIONS)


def _time_kind(column: pd.Series) -> str | None:
    """"datetime", "timedelta" or "number", None for any other dtype."""
    dtype = column.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "timedelta"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        return "number"
    return None


def check_series_table(
    where: str, data: pd.DataFrame, primary_key: Any, foreign_key: Any, time: Any,
    types: Mapping[Any, str],
) -> None:
    """Refuse, naming the column, a series table whose time column is not numbers, datetimes
    or timedeltas, whose other columns are not continuous numbers, or with a missing time or
    foreign key, or twice the same time in one series."""
    ordinary = "; link it as an ordinary child table (method='linear_sum_assignment')"
    if time is None:
        raise AvatarError(
            f"{where}: a time-series table needs its time column: add_table(..., time=COLUMN)"
        )
    if _time_kind(data[time]) is None:
        raise AvatarError(
            f"{where}: time column {time!r} has dtype {data[time].dtype}; it must hold numbers, "
            "datetimes or timedeltas"
        )
    for column in data.columns:
        if column in (primary_key, foreign_key, time):
            continue
        kind = types.get(column)
        numeric = _time_kind(data[column]) == "number"
        if kind in ("categorical", "identifier") or not numeric:
            raise AvatarError(
                f"{where}: column {column!r} ({kind or data[column].dtype}) is not a continuous "
                f"measurement; a time-series table holds only its keys, the time {time!r} and "
                f"continuous measurements: move {column!r} to another table{ordinary}"
            )
    for column, what in ((time, "time"), (foreign_key, "foreign key")):
        missing = int(data[column].isna().sum())
        if missing:
            raise AvatarError(
                f"{where}: {missing} row(s) have a missing {what} {column!r}; a point of a "
                "series needs its individual and its time: fill or drop them"
            )
    repeated = data.duplicated([foreign_key, time])
    if repeated.any():
        examples = data.loc[repeated, [foreign_key, time]].head(3).to_dict("records")
        raise AvatarError(
            f"{where}: {int(repeated.sum())} row(s) repeat a time within their series "
            f"(e.g. {examples}); a series has one row per time: aggregate or drop the repeats"
        )


def _unit(dtype) -> str:
    """The tick unit of a datetime or timedelta dtype ("s", "ms", "us", "ns")."""
    return getattr(dtype, "unit", None) or np.datetime_data(dtype)[0]


_NANOS_PER = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def time_seconds(column: pd.Series) -> np.ndarray:
    """The time column as float seconds (datetimes since the epoch, in UTC)."""
    if _time_kind(column) == "number":
        return column.to_numpy(dtype=np.float64)
    return column.array.asi8.astype(np.float64) * (_NANOS_PER[_unit(column.dtype)] / _NANOS)


def seconds_to_time(seconds: np.ndarray, like: pd.Series) -> pd.Series:
    """``seconds`` back in the dtype of the time column ``like`` (integers rounded)."""
    kind = _time_kind(like)
    if kind == "number":
        if pd.api.types.is_integer_dtype(like.dtype):
            seconds = np.round(seconds)
        return pd.Series(seconds).astype(like.dtype)
    unit = _unit(like.dtype)
    ticks = np.round(seconds * (_NANOS / _NANOS_PER[unit])).astype(np.int64)
    if kind == "timedelta":
        return pd.Series(ticks.astype(f"timedelta64[{unit}]"))
    values = pd.Series(ticks.astype(f"datetime64[{unit}]"))
    tz = getattr(like.dtype, "tz", None)
    return values.dt.tz_localize("UTC").dt.tz_convert(tz) if tz is not None else values


# ----------------------------------------------------------------------------- layout
@dataclass
class Layout:
    """The rows of one link's series sorted by (individual, time)."""

    order: np.ndarray  # child row of each sorted row
    offsets: np.ndarray  # individual i's rows: order[offsets[i] : offsets[i + 1]]
    times: np.ndarray  # sorted, seconds

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
        out[present] = self.times[self.offsets[1:][present] - 1] - self.starts()[present]
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
    for first in range(0, n, CHUNK_INDIVIDUALS):
        last = min(first + CHUNK_INDIVIDUALS, n)
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

    @classmethod
    def fit(cls, curves: np.ndarray, kind: str, n_components: int | None,
            backend: Backend) -> CurveProjection:
        """Fit on ``curves`` (individuals, grid points; a missing curve is a row of NaN):
        mean and Gram matrix accumulated on the backend chunk by chunk, axes by ``eigh``."""
        present = curves[~np.isnan(curves).any(axis=1)]
        width = curves.shape[1]
        if kind == "flatten":
            return cls(kind, np.zeros(width), np.eye(width))
        xp = backend.xp
        total = xp.zeros(width)
        for start in range(0, len(present), CHUNK_INDIVIDUALS):
            total = total + backend.asarray(present[start : start + CHUNK_INDIVIDUALS]).sum(axis=0)
        mean = backend.to_numpy(total) / len(present)
        gram, mean_device = xp.zeros((width, width)), backend.asarray(mean)
        for start in range(0, len(present), CHUNK_INDIVIDUALS):
            centred = backend.asarray(present[start : start + CHUNK_INDIVIDUALS]) - mean_device
            gram = gram + centred.T @ centred
        gram = backend.to_numpy(gram)
        eigenvalues, eigenvectors = sorted_axes((gram + gram.T) / 2.0)
        variance = eigenvalues.sum()
        ratio = eigenvalues / variance if variance > 0 else np.zeros_like(eigenvalues)
        if n_components is None:
            enough = int(np.searchsorted(np.cumsum(ratio), EXPLAINED_VARIANCE - 1e-12)) + 1
            n_components = max(1, min(enough, MAX_COMPONENTS, width))
        return cls(kind, mean, eigenvectors[:, :n_components].T)

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
        parts = [
            backend.to_numpy(step(backend.asarray(rows[start : start + CHUNK_INDIVIDUALS]),
                                  mean, axes))
            for start in range(0, len(rows), CHUNK_INDIVIDUALS)
        ]
        return np.concatenate(parts) if parts else np.zeros((0, self.components_.shape[0]))


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
    time_range: tuple[float, float]
    span_range: tuple[float, float]  # of the series with two points or more
    value_ranges: dict[Any, tuple[float, float]]
    longest: int
    integer_time: bool
    with_missing: list[Any] = field(default_factory=list)
    medians: dict[str, float] = field(default_factory=dict)  # of every feature, originals

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
        series = layout(rows, time_seconds(data[self.time]), n_individuals)
        return series, series_curves(series, data, self.variables, self.n_points)

    def features(self, data: pd.DataFrame, rows: np.ndarray, n_individuals: int,
                 backend: Backend) -> pd.DataFrame:
        """One row per individual: the features of its series in ``data`` (module step 4)."""
        series, curves = self.curves(data, rows, n_individuals)
        return self._features(data, series, curves, backend)

    def _features(self, data: pd.DataFrame, series: Layout, curves: dict[Any, np.ndarray],
                  backend: Backend) -> pd.DataFrame:
        lengths = series.lengths.astype(np.float64)
        individual = np.repeat(np.arange(len(lengths)), series.lengths)
        scores = {v: self.projections[v].transform(curves[v], backend) for v in self.variables}
        columns: dict[str, np.ndarray] = {}
        for name, what in self.names().items():
            if what == "length":
                columns[name] = lengths
            elif what == "start":
                columns[name] = series.starts()
            elif what == "span":
                columns[name] = series.spans()
            elif what[1] == "missing":
                missing = np.isnan(data[what[0]].to_numpy(dtype=np.float64)[series.order])
                counts = np.bincount(individual, weights=missing, minlength=len(lengths))
                columns[name] = np.where(lengths > 0, counts / np.maximum(lengths, 1), np.nan)
            else:
                columns[name] = scores[what[0]][:, what[1]]
        return pd.DataFrame(columns)

    def rebuild(self, features: pd.DataFrame, rng: np.random.Generator, backend: Backend
                ) -> tuple[np.ndarray, np.ndarray, dict[Any, np.ndarray]]:
        """Every avatar individual's series from its features (module step 5): the
        individual (position) of each point, sorted by individual then time, its time in
        seconds and its values per variable."""
        names = {what: name for name, what in self.names().items()}

        def feature(what) -> np.ndarray:  # a missing value: the originals' median
            values = features[names[what]].to_numpy(dtype=np.float64)
            return np.where(np.isnan(values), self.medians[names[what]], values)

        length = features[names["length"]].to_numpy(dtype=np.float64)
        length = np.clip(np.round(np.nan_to_num(length, nan=0.0)), 0, self.longest).astype(int)
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
            scores = [
                features[names[(variable, j)]].to_numpy(dtype=np.float64)
                if variable in self.with_missing else feature((variable, j))
                for j in range(projection.n_scores)
            ]
            curves = projection.inverse_transform(np.column_stack(scores), backend)
            x = where * (self.n_points - 1)
            cell = np.minimum(np.floor(x).astype(int), self.n_points - 2)
            fraction = x - cell
            value = (curves[individual, cell] * (1.0 - fraction)
                     + curves[individual, cell + 1] * fraction)
            value = np.clip(value, *self.value_ranges[variable])
            if (variable, "missing") in names:
                share = features[names[(variable, "missing")]].to_numpy(dtype=np.float64)
                drop = np.round(np.clip(np.nan_to_num(share), 0.0, 1.0) * length)
                rank = np.empty(len(individual), dtype=np.int64)
                rank[np.lexsort((rng.random(len(individual)), individual))] = position
                value[rank < drop[individual]] = np.nan
            values[variable] = value
        return individual, times, values


def fit_series(
    child: str, data: pd.DataFrame, time: Any, rows: np.ndarray, n_individuals: int,
    options: tuple, backend: Backend,
) -> tuple[SeriesModel, pd.DataFrame]:
    """The link's model, fitted on the original series (``data``: the time and measurement
    columns; ``rows``: each row's individual), and the individuals' features. ``options``:
    (n_points, n_components, projection) as the link declares them."""
    n_points, n_components, projection = options
    variables = [c for c in data.columns if c != time]
    seconds = time_seconds(data[time])
    series = layout(rows, seconds, n_individuals)
    lengths = series.lengths
    if n_points is None:
        n_points = max(2, int(np.median(lengths[lengths > 0])))
    if n_components is not None and n_components > n_points and projection == "fpca":
        raise AvatarError(
            f"link -> {child}: n_components = {n_components} exceeds the grid of n_points = "
            f"{n_points}; lower n_components or raise n_points"
        )
    spans, several = series.spans(), lengths > 1
    model = SeriesModel(
        child, time, variables, n_points, {},
        time_range=(float(seconds.min()), float(seconds.max())),
        span_range=(float(spans[several].min()), float(spans[several].max()))
        if several.any() else (0.0, 0.0),
        value_ranges={}, longest=int(lengths.max()),
        integer_time=pd.api.types.is_integer_dtype(data[time].dtype),
    )
    curves = series_curves(series, data, variables, n_points)
    for variable in variables:
        values = data[variable].to_numpy(dtype=np.float64)
        if np.isnan(values).all():
            raise AvatarError(f"{child}.{variable}: no observed value; drop the column")
        model.value_ranges[variable] = (float(np.nanmin(values)), float(np.nanmax(values)))
        if np.isnan(values).any():
            model.with_missing.append(variable)
        model.projections[variable] = CurveProjection.fit(
            curves[variable], projection, n_components, backend)
    features = model._features(data, series, curves, backend)
    model.medians = {name: float(np.nanmedian(features[name])) for name in features}
    if several.any():  # an avatar series of two points or more: a span of one
        model.medians[f"{child}.span"] = float(np.median(spans[several]))
    return model, features

"""Exact privacy metrics with the distance-rank reduction spread over Dask workers.

``privacy_metrics(original, unshuffled_avatars, client=None, ...)`` is ``ga.privacy_metrics``
with the distance-rank reduction (``reductions.distance_ranks``) partitioned by space, each
part run by the k-d tree walks of the in-memory engine (``kernels/ranks.py``), so that the
work grows as in memory and each task receives its region's rows, not whole arrays:

- local cloaking and hidden flag: the avatars are split into regions (``split_regions``, a few
  per worker); a region's task holds its avatars and every original whose own-distance ball
  may reach the region's box. An original's counts over the regions add up, its flags OR;
- each avatar's two closest originals: the originals are split the same way. A first round
  gives each avatar its two closest among the originals of its own original's region, so an
  upper bound of its second closest; a second round queries it against every other region
  whose box lies within that bound. The two smallest of the rounds' values are the result.

Exact: a point's squared distance to a box (``_beyond``) is computed with the operations of
``distances.py`` on gaps never larger than the pair's differences, and rounding is monotonic,
so it never exceeds the computed squared distance of the point to anything in the box. A part
left out is thus provably beyond the radius, ties included, and the values are bit for bit
those of ``reductions.distance_ranks``.

``client=None`` starts a ``distributed.LocalCluster`` (one single-threaded worker per core) for
the call. Each task's inputs travel in its own graph (a task lost with its worker runs again,
``cluster.RETRIES`` times); a GPU backend's tasks ask for a worker's ``GPU`` resource
(``cluster.task_resources``). Needs ``pip install 'gpu_avatar[dask]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..backend import CPU, Backend, resolve_backend
from ..errors import AvatarError
from ..metrics.privacy import PrivacyMetrics
from ..metrics.privacy import privacy_metrics as local_privacy_metrics
from ..metrics.reductions import DistanceRanks, host_ranks
from ..neighbours.distances import rowwise_squared
from ..parameters import MetricOptions, metric_options
from .cluster import (
    RETRIES,
    client_for,
    cluster_workers,
    distributed_module,
    failure_text,
    on_worker,
    task_resources,
    unrefused,
)

REGIONS_PER_WORKER = 4  # enough to balance the regions' unequal costs


def split_regions(points: np.ndarray, count: int) -> list[np.ndarray]:
    """The rows of ``points`` in ``count`` compact regions of about equal size, each sorted:
    k-d splits at quantiles along the widest spread. Points equal on a split coordinate may
    fall on either side; no result depends on where."""
    parts, regions = [(np.arange(points.shape[0]), count)], []
    while parts:
        rows, k = parts.pop()
        if k == 1:
            regions.append(np.sort(rows))
            continue
        values = points[rows]
        axis = int(np.argmax(values.max(axis=0) - values.min(axis=0)))
        left = k // 2
        cut = rows.size * left // k
        order = np.argpartition(values[:, axis], cut)
        parts += [(rows[order[cut:]], k - left), (rows[order[:cut]], left)]
    return regions


def _beyond(points: np.ndarray, low: np.ndarray, high: np.ndarray, bound: np.ndarray):
    """Rows of ``points`` whose squared distance to every point of the box ``[low, high]`` is
    provably above ``bound`` (per row): the box distance, in the arithmetic of
    ``distances.py``, exceeds it. A NaN is never beyond."""
    total = np.zeros(points.shape[0])
    for d in range(points.shape[1]):
        v = points[:, d]
        gap = np.maximum(np.maximum(low[d] - v, v - high[d]), 0.0)
        total = total + gap * gap
    return total > bound


def rank_region(y, avatar_ids, x, original_ids, own, backend: str):
    """Task: ``(cloaking, hidden)`` of the originals ``x`` against the region's avatars ``y``
    alone (``kernels.ranks_among``)."""
    backend_ = resolve_backend(backend)
    cloaking, hidden = backend_.kernels.ranks_among(
        backend_, backend_.asarray(y), avatar_ids, backend_.asarray(x), original_ids,
        backend_.asarray(own),
    )  # fmt: skip
    return backend_.to_numpy(cloaking), backend_.to_numpy(hidden)


def nearest_two(queries, references, aligned: bool, backend: str):
    """Task: each query's two smallest squared distances to a region's originals
    (``kernels.two_nearest``)."""
    backend_ = resolve_backend(backend)
    first, second = backend_.kernels.two_nearest(
        backend_, backend_.asarray(queries), backend_.asarray(references), aligned
    )
    return backend_.to_numpy(first), backend_.to_numpy(second)


class _Tasks:
    """The tasks of one reduction. ``start`` submits a batch of tasks, each with its inputs
    (recomputable where a worker is lost); ``merge`` waits for tasks, handing
    each result to its merge function as it finishes and naming the task that failed;
    ``cancel`` releases them all."""

    def __init__(self, client: Any, backend: str) -> None:
        self.client, self.backend = client, backend
        workers = cluster_workers(client)
        self.worker_count = len(workers)
        self.resources = task_resources(workers, backend)
        self.labels: dict = {}

    def start(self, batch: list) -> list:
        """``merge(*function(*data, *extra, backend))`` for each ``(label, merge, function,
        data, *extra)`` of ``batch``, once ``merge`` waits for it."""
        futures = []
        for label, merge, function, data, *extra in batch:
            future = self.client.submit(on_worker, function, *data, *extra, self.backend,
                                        pure=False, retries=RETRIES, resources=self.resources)
            self.labels[future] = label, merge
            futures.append(future)
        return futures

    def merge(self, futures: list) -> None:
        for future in distributed_module().as_completed(futures):
            label, merge = self.labels[future]
            try:
                result = unrefused(future.result())
            except Exception as error:
                raise AvatarError(f"{label} failed: {failure_text(error)}") from error
            merge(*result)
            future.release()  # its result is merged: the worker may drop it

    def cancel(self) -> None:
        self.client.cancel(list(self.labels))


def distance_ranks(
    originals: np.ndarray,
    avatars: np.ndarray,
    *,
    client: Any,
    region_rows: int | None = None,
    backend: str | Backend = "cpu",
) -> DistanceRanks:
    """``reductions.distance_ranks`` (identical values) as Dask tasks over regions of space of
    at most ``region_rows`` rows (default: ``REGIONS_PER_WORKER`` regions per worker)."""
    x = np.ascontiguousarray(originals, dtype=np.float64)
    y = np.ascontiguousarray(avatars, dtype=np.float64)
    if x.shape != y.shape:
        raise AvatarError(f"originals {x.shape} and avatars {y.shape} must have the same shape")
    n = x.shape[0]
    if n < 2:
        raise AvatarError("distance metrics need at least 2 rows")
    if region_rows is not None and int(region_rows) < 1:
        raise AvatarError(f"region_rows must be a positive number of rows, not {region_rows}")
    tasks = _Tasks(client, backend.name if isinstance(backend, Backend) else backend)
    if region_rows is None:
        count = REGIONS_PER_WORKER * max(1, tasks.worker_count)
    else:
        count = -(-n // int(region_rows))
    try:
        return _over_regions(tasks, x, y, min(count, n))
    finally:
        tasks.cancel()


def _over_regions(tasks: _Tasks, x: np.ndarray, y: np.ndarray, count: int) -> DistanceRanks:
    """The reduction's tasks and merges (module docstring)."""
    n = x.shape[0]
    own = rowwise_squared(x, y, np)
    cloaking, hidden = np.zeros(n, np.int64), np.zeros(n, bool)
    first, second = np.full(n, np.inf), np.full(n, np.inf)

    def add_counts(rows):
        def merge(counts, flags):
            cloaking[rows] += counts
            hidden[rows] |= flags

        return merge

    def keep_two_smallest(rows):
        def merge(first_r, second_r):
            first[rows], second[rows] = _two_smallest(first[rows], second[rows], first_r,
                                                      second_r)  # fmt: skip

        return merge

    by_originals = split_regions(x, count)
    first_round = [
        (f"the closest originals of original region {r} of {count}", keep_two_smallest(rows),
         nearest_two, (y[rows], x[rows]), True)  # fmt: skip
        for r, rows in enumerate(by_originals)
    ]
    ranks = []  # (originals to count, task)
    for r, rows in enumerate(split_regions(y, count)):
        near = np.flatnonzero(~_beyond(x, y[rows].min(axis=0), y[rows].max(axis=0), own))
        label = (f"the local cloaking of avatar region {r} of {count} ({near.size:,} "
                 f"originals against {rows.size:,} avatars)")  # fmt: skip
        ranks.append((near.size, (label, add_counts(near), rank_region,
                                  (y[rows], rows, x[near], near, own[near]))))  # fmt: skip
    first_round = tasks.start(first_round)  # first: it bounds the second round
    ranks.sort(key=lambda sized: -sized[0])  # the longest first
    rest = tasks.start([task for _, task in ranks])
    tasks.merge(first_round)
    # each avatar's second smallest so far bounds its second closest: it is queried against
    # every other region of originals within that bound
    region_of = np.empty(n, np.int64)
    for r, rows in enumerate(by_originals):
        region_of[rows] = r
    second_round = []
    for r, rows in enumerate(by_originals):
        beyond = _beyond(y, x[rows].min(axis=0), x[rows].max(axis=0), second)
        queries = np.flatnonzero(~beyond & (region_of != r))
        if queries.size:
            label = (f"the closest originals of original region {r} of {count} for "
                     f"{queries.size:,} avatars of other regions")  # fmt: skip
            second_round.append((label, keep_two_smallest(queries), nearest_two,
                                 (y[queries], x[rows]), False))  # fmt: skip
    tasks.merge(rest + tasks.start(second_round))
    return host_ranks(CPU, own, cloaking, hidden, first, second)


def _two_smallest(first_a, second_a, first_b, second_b):
    """The two smallest values of two ordered pairs (of disjoint sets of originals)."""
    return np.minimum(first_a, first_b), np.minimum(
        np.maximum(first_a, first_b), np.minimum(second_a, second_b)
    )


def privacy_metrics(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    options: MetricOptions | Mapping[str, Any] | None = None,
    *,
    client: Any = None,
    types: Mapping[Any, str] | None = None,
    backend: str | Backend = "auto",
    region_rows: int | None = None,
    **settings: Any,
) -> PrivacyMetrics:
    """``ga.privacy_metrics`` (same options, same values) with the distance-rank reduction
    run as Dask tasks on ``client`` (None: a LocalCluster for the call), over regions of at
    most ``region_rows`` rows (default: a few regions per worker). The metric projection and
    the other metrics run on the driver; ``backend`` is resolved on the driver and inside
    every task."""
    options = metric_options(options, **settings)
    resolved = resolve_backend(backend)
    with client_for(client) as active:

        def reduction(x, y, driver_backend):
            return distance_ranks(
                driver_backend.to_numpy(x),
                driver_backend.to_numpy(y),
                client=active,
                region_rows=region_rows,
                backend=backend,
            )

        return local_privacy_metrics(original, unshuffled_avatars, options, types=types,
                                     backend=resolved, reduction=reduction)

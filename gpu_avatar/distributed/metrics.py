"""Exact privacy metrics with the distance-rank reduction spread over Dask workers.

``privacy_metrics(original, unshuffled_avatars, client=None, ...)`` is ``ga.privacy_metrics``
with the distance-rank reduction spread over the workers: the avatar coordinates are broadcast,
the originals split into row blocks, one task per block (local cloaking and hidden flag of its
rows, and for every avatar its two smallest distances to the block's originals); the driver
merges the top-2 distances. The values are exactly those of ``ga.privacy_metrics``.

``client=None`` starts a ``distributed.LocalCluster`` (one single-threaded worker per core) for
the call. GPUs: one worker per GPU with ``dask_cuda`` and ``backend="gpu"``, the same code::

    from dask_cuda import LocalCUDACluster
    from distributed import Client
    import gpu_avatar as ga

    with LocalCUDACluster() as cluster, Client(cluster) as client:
        ga.distributed.avatarize("visits/", "avatars/", client=client, k=20,
                                 batch_size=2_000_000, backend="gpu")

(the model is fitted on the driver's GPU and travels to each worker's own GPU). Needs
``pip install 'gpu_avatar[dask]'``.
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
from ..metrics.reductions import DistanceRanks, default_tile, host_ranks, tile_pass
from ..neighbours.distances import rowwise_squared
from ..parameters import MetricOptions, metric_options
from .cluster import client_for, distributed_module, failure_text


def rank_block(x_block: np.ndarray, y: np.ndarray, start: int, backend: str, tile: int | None):
    """One task of the distributed reduction: originals ``start .. start + len(x_block)``
    against every avatar ``y``, tile by tile (the arithmetic of ``reductions.tile_pass``).

    Returns the block's own squared distances, local cloaking counts and hidden flags, and for
    every avatar the two smallest squared distances to the block's originals (2, n)."""
    backend_ = resolve_backend(backend)
    xp = backend_.xp
    x = backend_.asarray(x_block, dtype=np.float64)
    y = backend_.asarray(y, dtype=np.float64)
    m = x.shape[0]
    own = rowwise_squared(x, y[start : start + m], xp)
    cloaking, hidden, best = tile_pass(
        x, y, own, xp.arange(m), backend_, tile or default_tile(backend_), True, first_row=start
    )
    to_numpy = backend_.to_numpy
    return start, to_numpy(own), to_numpy(cloaking), to_numpy(hidden), to_numpy(best)


def _merge_two_smallest(best: np.ndarray, other: np.ndarray) -> np.ndarray:
    stacked = np.concatenate([best, other], axis=0)
    return np.sort(np.partition(stacked, 1, axis=0)[:2], axis=0)


def distance_ranks(
    originals: np.ndarray,
    avatars: np.ndarray,
    *,
    client: Any,
    block_rows: int | None = None,
    backend: str | Backend = "cpu",
    tile: int | None = None,
) -> DistanceRanks:
    """``reductions.distance_ranks`` with the original rows split into blocks as tasks
    (identical values: every pair gets the same arithmetic)."""
    distributed = distributed_module()
    x = np.ascontiguousarray(originals, dtype=np.float64)
    y = np.ascontiguousarray(avatars, dtype=np.float64)
    if x.shape != y.shape:
        raise AvatarError(f"originals {x.shape} and avatars {y.shape} must have the same shape")
    n = x.shape[0]
    if n < 2:
        raise AvatarError("distance metrics need at least 2 rows")
    if block_rows is None:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        block_rows = -(-n // (4 * workers))
    block_rows = max(1, int(block_rows))
    backend_name = backend.name if isinstance(backend, Backend) else backend
    shared = client.scatter(y, broadcast=True, hash=False)  # not another call's key
    futures = {}
    for start in range(0, n, block_rows):
        future = client.submit(
            rank_block,
            x[start : start + block_rows],
            shared,
            start,
            backend_name,
            tile,
            pure=False,
        )
        futures[future] = start
    own = np.empty(n)
    cloaking = np.empty(n, dtype=np.int64)
    hidden = np.empty(n, dtype=bool)
    best = np.full((2, n), np.inf)
    try:
        for future in distributed.as_completed(futures):
            try:
                start, own_b, cloaking_b, hidden_b, best_b = future.result()
            except Exception as error:
                first = futures[future]
                raise AvatarError(
                    f"the distance-rank block of rows {first:,} to "
                    f"{min(first + block_rows, n) - 1:,} failed: {failure_text(error)}"
                ) from error
            stop = start + own_b.size
            own[start:stop], cloaking[start:stop], hidden[start:stop] = own_b, cloaking_b, hidden_b
            best = _merge_two_smallest(best, best_b)
            future.release()
    finally:
        client.cancel(list(futures))
        client.cancel([shared])
    return host_ranks(CPU, own, cloaking, hidden, best[0], best[1])


def privacy_metrics(
    original: pd.DataFrame,
    unshuffled_avatars: pd.DataFrame,
    options: MetricOptions | Mapping[str, Any] | None = None,
    *,
    client: Any = None,
    types: Mapping[Any, str] | None = None,
    backend: str | Backend = "auto",
    block_rows: int | None = None,
    **settings: Any,
) -> PrivacyMetrics:
    """``ga.privacy_metrics`` (same options, same values) with the distance-rank reduction
    run as Dask tasks on ``client`` (None: a LocalCluster for the call). The metric projection
    and the other metrics run on the driver; ``block_rows`` originals per task (default: four
    blocks per worker); ``backend`` is resolved on the driver and inside every task."""
    options = metric_options(options, **settings)
    resolved = resolve_backend(backend)
    task_backend = backend.name if isinstance(backend, Backend) else backend
    with client_for(client) as active:

        def reduction(x, y, driver_backend):
            return distance_ranks(
                driver_backend.to_numpy(x),
                driver_backend.to_numpy(y),
                client=active,
                block_rows=block_rows,
                backend=task_backend,
            )

        return local_privacy_metrics(original, unshuffled_avatars, options, types=types,
                                     backend=resolved, reduction=reduction)

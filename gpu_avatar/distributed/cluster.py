"""The Dask side of a distributed call: the client (the caller's, or a LocalCluster started
for it), and what every task does first on its worker (numba's threads sized to the
worker's)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import AvatarError, BackendUnavailableError, failure_text, import_extra  # noqa: F401

GPU = "GPU"  # the worker resource a GPU task asks for (one per worker)
RETRIES = 2  # a task run again after a failure (a lost worker), by default; not a refusal


def distributed_module():
    """``distributed``, or the error naming the ``dask`` extra."""
    return import_extra("distributed", "dask", "gpu_avatar.distributed")


@contextmanager
def client_for(client: Any):
    """``client``, or a client of a LocalCluster started for the call and closed after it."""
    if client is not None:
        yield client
        return
    distributed = distributed_module()
    with (
        distributed.LocalCluster(
            n_workers=max(1, os.cpu_count() or 1),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as local_client,
    ):
        yield local_client


def gpu_cluster(**settings: Any):
    """A ``dask_cuda.LocalCUDACluster``: one worker per GPU, each declaring the ``GPU``
    resource the GPU tasks ask for (``pip install 'gpu_avatar[dask-gpu]'``)."""
    dask_cuda = import_extra("dask_cuda", "dask-gpu", "gpu_avatar.distributed on GPUs")
    settings.setdefault("resources", {GPU: 1})
    return dask_cuda.LocalCUDACluster(**settings)


@dataclass(frozen=True)
class Refused:
    """What a task returns instead of raising an ``AvatarError``: a refusal comes again on
    every run, so Dask must not retry it (``RETRIES`` times, a traceback each);
    ``upstream``: the refusal of a task this one took as an argument, passed on."""

    error: AvatarError
    upstream: bool = False


def unrefused(value: Any) -> Any:
    """A task's result, its refusal raised."""
    if isinstance(value, Refused):
        raise value.error
    return value


def on_worker(function: Callable, *arguments: Any) -> Any:
    """Run ``function`` in a Dask task with the CPU kernels' thread pool
    (``parallel.thread_count``, which reads numba's count) on as many threads as the worker has
    (not on every core of the machine, in every worker); an ``AvatarError`` is returned as
    ``Refused``, and so is an argument's refusal."""
    import numba

    refused = next((a for a in arguments if isinstance(a, Refused)), None)
    if refused is not None:
        return Refused(refused.error, upstream=True)
    distributed = distributed_module()
    try:
        threads = distributed.get_worker().state.nthreads
    except ValueError:  # not on a worker: the client's process (a LocalCluster of threads)
        threads = numba.config.NUMBA_NUM_THREADS
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        return function(*arguments)
    except AvatarError as error:
        return Refused(error)
    finally:
        numba.set_num_threads(before)


def cluster_workers(client: Any) -> dict[str, dict]:
    """The scheduler's facts about each worker (address -> threads, resources, ...): one call
    to the scheduler."""
    return client.scheduler_info().get("workers", {})


def task_resources(workers: dict[str, dict], backend: str) -> dict[str, int] | None:
    """``{"GPU": 1}`` for the tasks of ``backend="gpu"`` (refused when none of the
    ``workers``, from ``cluster_workers``, declares a GPU), and of ``"auto"`` where workers
    declare GPUs; None for the CPU."""
    if backend == "cpu":
        return None
    declared = any(w.get("resources", {}).get(GPU) for w in workers.values())
    if backend == "auto":
        return {GPU: 1} if declared else None
    if not declared:
        raise BackendUnavailableError(
            "backend='gpu' on Dask needs workers declaring one GPU each: start them with "
            "ga.distributed.gpu_cluster() (dask_cuda.LocalCUDACluster(resources={'GPU': 1})), "
            "or `dask cuda worker ... --resources GPU=1`; or pass backend='cpu'"
        )
    return {GPU: 1}


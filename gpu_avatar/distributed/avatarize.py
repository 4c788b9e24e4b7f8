"""Dask: batches as tasks across workers, CPUs or GPUs (gpu.md section 5).

``avatarize(source, destination, client=None, ...)`` is ``avatarize_parquet`` with another
scheduler: the scan, the routing and the fit run on the driver (the client's process), the
fitted model is broadcast once to every worker (``client.scatter(..., broadcast=True)``), then
every batch is one task running ``streaming.process_batch``, which reads its spill file, writes
its part and returns its privacy metrics. The output files are those of the local streamed
run for the same seed. A task that fails (or a worker that dies) raises an ``AvatarError``
naming the batch; the destination then stays marked incomplete and ``resume=True`` finishes
it. On a cluster of several machines, ``destination`` must be a folder every worker can read
and write (a shared file system).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..parameters import AvatarParameters, avatar_parameters
from ..progress import ProgressLike
from ..streaming.run import (
    BatchContext,
    BatchTask,
    ParquetAvatarization,
    avatarize_parquet,
    batch_error,
    process_batch,
)
from ..streaming.source import open_source
from .cluster import client_for, distributed_module


class DaskExecutor:
    """The Dask scheduler of ``streaming.avatarize_parquet``: batches as tasks."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __call__(
        self,
        tasks: list[BatchTask],
        context: BatchContext,
        done: Callable[[BatchTask, dict], None],
    ) -> None:
        if not tasks:
            return
        distributed = distributed_module()
        # the model, once per worker, under a key of its own: a content-hashed key would be
        # shared with an earlier run on the same data (resume), whose clean-up cancels it
        shared = self.client.scatter(context, broadcast=True, hash=False)
        run = uuid.uuid4().hex[:12]
        futures = {
            self.client.submit(
                process_batch,
                task,
                shared,
                key=f"gpu-avatar-batch-{task.batch:05d}-{run}",
                pure=False,
            ): task
            for task in tasks
        }
        try:
            for future in distributed.as_completed(futures):
                task = futures[future]
                try:
                    summary = future.result()
                except Exception as error:
                    raise batch_error(task, error, Path(context.destination)) from error
                done(task, summary)
                future.release()
        finally:
            self.client.cancel(list(futures))
            self.client.cancel([shared])


def avatarize(
    source: str | os.PathLike,
    destination: str | os.PathLike,
    *,
    client: Any = None,
    parameters: AvatarParameters | None = None,
    metrics: bool = True,
    resume: bool = False,
    progress: ProgressLike = None,
    rules: Any = None,
    **settings: Any,
) -> ParquetAvatarization:
    """``ga.avatarize_parquet`` with every batch a Dask task on ``client`` (a
    ``distributed.Client``; None: a LocalCluster for the call). Same parameters, same output
    files for the same seed; see the module docstring."""
    open_source(source)  # a wrong path is said before a cluster starts
    avatar_parameters(parameters, **settings)  # and so are wrong parameters
    with client_for(client) as active:
        return avatarize_parquet(
            source,
            destination,
            parameters=parameters,
            metrics=metrics,
            resume=resume,
            progress=progress,
            executor=DaskExecutor(active),
            scheduler="dask",
            rules=rules,
            **settings,
        )

"""The Dask client of a distributed call: the caller's, or a LocalCluster started for it."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any

from ..errors import import_extra


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
        ) as cluster,
        distributed.Client(cluster) as local_client,
    ):
        yield local_client


def failure_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"

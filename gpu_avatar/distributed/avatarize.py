"""``ga.distributed.avatarize``: ``avatarize_parquet`` with every task on a Dask cluster
(docs/spec/gpu.md, section 5).

The driver (the client's process) plans and records; the workers do the data work:
- the scan: one task per partition (whole row groups) summarises its rows; the summaries merge
  on the driver into the batch plan (``streaming/scan.py``, ``plan.py``);
- the route: one task per partition writes its rows into their batches' spill folders in the
  destination (a shuffle through the shared store, ``streaming/route.py``);
- the fit: one task fits the model on batch 0. Its result is a graph key, not scattered data:
  if every worker holding it dies, the scheduler computes it again;
- the batches: one task per batch (``streaming.process_batch``), which writes its part under
  the run's id; the driver moves it into place when the task reports;
- the whole release's exact privacy metrics (``streaming/release.py``): the driver rebuilds
  the unshuffled avatars, and the distance ranks run as tasks (``distributed.metrics``).
Every task retries ``retries`` times on failure. A batch whose workers keep dying (most often
over their memory limit) is reported with a smaller ``batch_size`` to use. Every task first
sizes numba's threads to its worker's (``cluster.on_worker``); with ``backend="gpu"`` every
fit and batch task asks for one ``GPU`` resource, and checks its device's memory before its
batch.

``source``: a Parquet file or folder (a local path, made absolute, or a URL opened by fsspec
with ``storage_options``: ``file://``, ``s3://``, ``gs://``, ``memory://``...), or a
``dask.dataframe``, which the workers first write into ``<destination>/_source`` (removed
with the spill files at the end). ``destination`` must be a store every worker reaches (a
shared file system or an object store; ``memory://`` only with workers in this process). The
output files are those of ``avatarize_parquet`` for the same seed, read back with
``result.to_dask()``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import AvatarError, import_extra
from ..parameters import AvatarParameters, avatar_parameters
from ..progress import ProgressLike
from ..streaming.run import (
    MANIFEST,
    SOURCE,
    SUCCESS,
    BatchContext,
    BatchTask,
    ParquetAvatarization,
    avatarize_parquet,
    batch_error,
    finished_run,
    fit_context,
    process_batch,
)
from ..streaming.source import open_source
from ..streaming.store import Store
from .cluster import (
    RETRIES,
    Refused,
    client_for,
    cluster_workers,
    distributed_module,
    failure_text,
    on_worker,
    task_resources,
    unrefused,
)

DYING = "its workers kept dying, most often over their memory limit"
SOURCE_WRITTEN = "_WRITTEN"  # the dask.dataframe source is whole: its token (a resume reuses it)


class DaskScheduler:
    """The tasks of ``avatarize_parquet`` on a Dask cluster (see the module docstring)."""

    name = "dask"

    def __init__(self, client: Any, backend: str = "auto", retries: int = RETRIES,
                 written_source: bool = False) -> None:
        self.client = client
        self.retries = retries
        self.resources = task_resources(cluster_workers(client), backend)
        self.written_source = written_source  # the source is <destination>/_source, ours
        self.run = uuid.uuid4().hex[:12]
        self.maps = 0  # keys stay unique over the calls of ``map``
        self.location, self.first = "", None  # the destination and batch 0, once known

    def _submit(self, key: str, function: Callable, *arguments: Any, resources=None):
        return self.client.submit(on_worker, function, *arguments, key=f"gpu-avatar-{key}-"
                                  f"{self.run}", pure=False, retries=self.retries,
                                  resources=resources)

    def map(self, function: Callable, items: list, *arguments: Any) -> list:
        """``[function(item, *arguments)]``, one task per item, in order; the ``arguments``
        travel once, as graph keys of their own (recomputed where lost), not with every task."""
        distributed = distributed_module()
        step = getattr(function, "__name__", "task").strip("_").replace("_", "-")
        self.maps += 1
        shared = [self.client.submit(_value, argument, key=f"gpu-avatar-{step}-{self.maps}-"
                                     f"argument-{j}-{self.run}", pure=False)
                  for j, argument in enumerate(arguments)]
        futures = [self._submit(f"{step}-{self.maps}-{i:05d}", function, item, *shared)
                   for i, item in enumerate(items)]
        try:
            return [unrefused(value) for value in self.client.gather(futures)]
        except distributed.KilledWorker as error:
            raise AvatarError(f"a {step} task failed, {DYING} ({failure_text(error)}): give "
                              "the workers more memory") from error
        finally:
            self.client.cancel([*futures, *shared])

    def fit(self, task: BatchTask, context: BatchContext, parameters: AvatarParameters,
            groups: Mapping | None):
        """The fitted context as a future: a graph key, recomputed wherever it is lost."""
        self.location, self.first = context.store.location, task  # for the errors
        return self._submit("model", fit_context, task, context, parameters, groups,
                            resources=self.resources)

    def batches(self, tasks: list[BatchTask], context: Any,
                done: Callable[[BatchTask, dict], None]) -> None:
        if not tasks:
            return
        distributed = distributed_module()
        futures = {self._submit(f"batch-{task.batch:05d}", process_batch, task, context,
                                resources=self.resources): task for task in tasks}
        try:
            for future in distributed.as_completed(futures):
                task = futures[future]
                try:
                    summary = future.result()
                except Exception as error:
                    raise self._error(task, context, error) from error
                if isinstance(summary, Refused):  # upstream: the fit's
                    raise batch_error(self.first if summary.upstream else task, summary.error,
                                      self.location, fit=summary.upstream) from summary.error
                done(task, summary)
                future.release()
        finally:
            self.client.cancel([*futures, context])

    def release_metrics(self, original: Any, avatars: Any, options: Any, types: dict,
                        backend: str) -> Any:
        """The whole release's privacy metrics, the distance ranks as tasks on the cluster
        (``distributed.metrics``: the values of ``ga.privacy_metrics``)."""
        from .metrics import privacy_metrics

        return privacy_metrics(original, avatars, options, client=self.client, types=types,
                               backend=backend)

    def _error(self, task: BatchTask, context: Any, error: BaseException) -> AvatarError:
        """A failed batch, or the fit it waited for, said with how to finish the run."""
        fit = context.status == "error"
        if fit:
            task, error = self.first, context.exception()
        hint = DYING if isinstance(error, distributed_module().KilledWorker) else None
        return batch_error(task, error, self.location, hint, fit)


def _value(value: Any) -> Any:
    return value


def _written_source(frame: Any, store: Store, storage_options: Mapping | None,
                    resume: bool) -> str:
    """A ``dask.dataframe`` written by the workers as Parquet into ``<destination>/_source``
    (its files named in partition order), or the one a run to resume wrote there."""
    dask = import_extra("dask", "dask", "gpu_avatar.distributed")
    token = dask.base.tokenize(frame)
    url = store.fs.unstrip_protocol(store.path(SOURCE))
    if resume and store.exists(SOURCE, SOURCE_WRITTEN):
        if store.read_text(SOURCE, SOURCE_WRITTEN) != token:
            raise AvatarError(
                f"{store.location} holds the unfinished run of another dask.dataframe: pass "
                "the same frame (same graph) to resume it, or give a new destination")
        return url
    if store.exists(SUCCESS):
        raise AvatarError(f"the destination {store.location} holds a finished run ({SUCCESS}): "
                          "read it, or give a new folder")
    if store.listdir():
        raise AvatarError(f"the destination {store.location} is not empty; give an empty or new "
                          "folder" + ("" if resume else ", or resume=True to finish a run there"))
    frame.to_parquet(url, storage_options=dict(storage_options or {}) or None,
                     write_index=False, name_function=lambda i: f"part.{i:08d}.parquet")
    store.write_text(token, SOURCE, SOURCE_WRITTEN)
    return url


def _refuse_process_local(places: list[tuple[Any, Any]], client: Any) -> None:
    """``memory://`` lives in one process: refuse it when workers run in others. ``places``:
    the (filesystem, location) of the source and the destination, already open."""
    local = [location for fs, location in places if "memory" in str(fs.protocol)]
    if not local:
        return
    here = os.getpid()
    if any(pid != here for pid in client.run(os.getpid).values()):
        raise AvatarError(
            f"{local[0]} is a memory:// store, which only this process sees, but the workers "
            "run in other processes: use a shared folder or an object store (s3://, gs://), "
            "or a cluster of threads (LocalCluster(processes=False))"
        )


def avatarize(
    source: Any,
    destination: str | os.PathLike,
    *,
    client: Any = None,
    parameters: AvatarParameters | None = None,
    metrics: bool = True,
    resume: bool = False,
    progress: ProgressLike = None,
    rules: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    retries: int = RETRIES,
    plan: Any = None,
    **settings: Any,
) -> ParquetAvatarization:
    """``ga.avatarize_parquet`` with every task on ``client`` (a ``distributed.Client``;
    None: a LocalCluster for the call). ``source``: a Parquet path or URL, or a
    ``dask.dataframe``. Same parameters, same output files for the same seed; ``retries``:
    how many times a failed task runs again; ``plan``: as ``avatarize`` takes it. See the
    module docstring."""
    frame = None if isinstance(source, (str, os.PathLike)) else source
    if frame is None:
        source = open_source(source, storage_options)  # said before a cluster starts
    elif not hasattr(frame, "to_parquet") or not hasattr(frame, "npartitions"):
        raise AvatarError(
            f"source is a {type(source).__name__}: give a Parquet path or URL, or a "
            "dask.dataframe (for a pandas DataFrame, use ga.avatarize or dd.from_pandas)"
        )
    parameters = avatar_parameters(parameters, **settings)
    with client_for(client) as active:
        store = Store.open(destination, storage_options)
        _refuse_process_local(([] if frame is not None else [(source.fs, source.location)])
                              + [(store.fs, destination)], active)  # fmt: skip
        scheduler = DaskScheduler(active, parameters.backend, retries, frame is not None)
        if frame is not None and resume and store.exists(SUCCESS):  # nothing to write again
            return finished_run(store, parameters, metrics, storage_options)
        if frame is not None:
            source = _written_source(frame, store, storage_options, resume)
        try:
            return avatarize_parquet(
                source,
                destination,
                parameters=parameters,
                metrics=metrics,
                resume=resume,
                progress=progress,
                rules=rules,
                storage_options=storage_options,
                scheduler=scheduler,
                plan=plan,
            )
        except BaseException:
            if frame is not None and not store.exists(MANIFEST):  # no run to resume: no rows
                store.remove(SOURCE)
            raise

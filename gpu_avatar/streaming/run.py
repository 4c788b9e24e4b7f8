"""``avatarize_parquet``: a Parquet dataset avatarized batch by batch
(docs/spec/method.md, section 5), holding about one batch in memory at a time. The batches
are exactly those of the in-memory ``avatarize(df, batch_size=...)`` for the same seed (same
rows, same order inside each batch, same per-batch seeds), so both give the same avatar rows:

1. **scan** (``scan.py``): the row count comes from the Parquet footers; every partition
   (whole row groups, ``source.Partition``) is summarised by a task (encoder, identifiers, the
   first plan rank of every value) and the summaries merged: the batch plan (``plan.py``) is
   the in-memory one;
2. **route** (``route.py``): every partition writes its rows into the spill folder of their
   batch (under ``<destination>/_spill``) with their positions inside it. A run that fits in
   one batch skips this and reads the source directly, rows in input order;
3. **fit**: a task fits the encoder and the projection on batch 0 (``pipeline.model``);
4. **batches**: ``process_batch`` loads one batch, avatarizes it in the shared space with
   ``avatarize_rows`` and the batch's own seed, computes its privacy metrics (``metrics=True``),
   releases its rows in ``shuffle_order(len(batch), seed)`` and writes its part under
   ``_runs/<run id>``; the driver moves it into place when the task reports, so that a task
   left over from another run never replaces a part;
5. **release metrics** (``metrics=True``, ``release.py``): the exact privacy metrics of the
   whole release, every avatar against every original (a batch's metrics see only its own
   rows, and may pass or fail where the release does not), and the release verdict. The
   driver holds the whole table twice for this step.

A ``Scheduler`` runs the tasks: ``LocalScheduler`` one after the other in this process;
``gpu_avatar.distributed`` as Dask tasks on a cluster, the same functions. Source and
destination are local paths or URLs (``store.py``: fsspec, with ``storage_options``).

Output: ``part-00000.parquet``, ... (schema = the input's; a column read as pandas ``Int64``
because it holds missing integers is written back as the input's integer type), and
``_manifest.json`` (parameters, seed entropy, rows per part, the batches done and their privacy
metrics, mean and worst; ``release``: the whole release's metrics and verdict), and
``_VERDICT.txt``, the verdict's sentences. ``_INCOMPLETE`` is present while a run is
unfinished (also after a failure); ``_SUCCESS`` replaces it at the end. A release that misses
a decisive target is still written, and said: a ``UserWarning``, ``"failed": true`` in the
manifest's verdict, and the verdict's first line. ``resume=True`` continues an unfinished run,
skipping the batches the manifest records as done.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import parallel
from ..backend import resolve_backend
from ..encoding.rare import RareModalities
from ..errors import AvatarError, failure_text
from ..metrics import privacy_metrics
from ..metrics.catalogue import mean_and_worst
from ..metrics.privacy import PrivacyMetrics
from ..metrics.verdict import FAILS, ReleaseVerdict, release_verdict
from ..parameters import AvatarParameters, MetricOptions, avatar_parameters, seed_sequence
from ..pipeline.apart import ColumnsApart
from ..pipeline.batches import batch_seed
from ..pipeline.model import AvatarModel, avatarize_rows, check_device_memory, fit_model
from ..pipeline.rules import refuse_non_variables, rules_seed, without_dropped
from ..planning.model import planned_parameters
from ..progress import ProgressLike, Steps
from ..rules import RuleSet, across_children
from ..synthesis import shuffle_order
from .plan import make_plan
from .release import VERDICT, record, release_frames, restored, verdict_record
from .route import SPILL, read_spill, route_partition, spills_intact
from .scan import map_locally
from .source import ParquetSource, _pyarrow, arrow_filesystem, open_source, to_frame
from .store import Store

if TYPE_CHECKING:
    import pyarrow as pa

MANIFEST = "_manifest.json"
INCOMPLETE = "_INCOMPLETE"
SUCCESS = "_SUCCESS"
RUNS = "_runs"  # each run's parts, moved into place as their tasks report
SOURCE = "_source"  # a dask.dataframe source, written there by the workers (distributed)
MANIFEST_FORMAT = "gpu_avatar.avatarize_parquet/2"


def part_name(batch: int) -> str:
    return f"part-{batch:05d}.parquet"


# --------------------------------------------------------------------- one batch
@dataclass
class BatchTask:
    """One batch: how many rows, its seed, where its part goes."""

    batch: int
    n_batches: int
    rows: int
    offset: int  # position of the batch's first released row in the whole output
    sequence: np.random.SeedSequence
    batched: bool  # False: the whole source is the batch
    run: str  # the run's id: its parts are written under _runs/<run>
    spill: str = ""  # the route's id: its rows are under _spill/<spill>/batch-<batch>
    fresh: dict = field(default_factory=dict)  # fresh identifiers of its positions alone

    @property
    def written(self) -> tuple[str, str, str]:
        return RUNS, self.run, part_name(self.batch)


@dataclass
class BatchContext:
    """What every batch shares (one graph key on Dask): the model and the output format."""

    model: AvatarModel | None
    source: ParquetSource
    dtypes: dict[str, Any]
    apart: ColumnsApart
    store: Store
    metrics: bool
    rules: RuleSet | None = None  # held on each batch's rows, by repairs


def load_batch(task: BatchTask, context: BatchContext) -> pd.DataFrame:
    """The originals of a batch, in plan order, with the dataset's dtypes."""
    if not task.batched:
        frame = to_frame(context.source.read_all(), context.dtypes)
    else:
        table, slots = read_spill(context.store, task.spill, task.batch, context.source.schema)
        frame = to_frame(table, context.dtypes)
        in_plan_order = np.empty(slots.size, dtype=np.int64)
        in_plan_order[slots] = np.arange(slots.size)
        frame = frame.take(in_plan_order).reset_index(drop=True)
    if len(frame) != task.rows:
        raise AvatarError(
            f"batch {task.batch} holds {len(frame)} rows instead of {task.rows}: the source "
            "changed during the run"
        )
    return frame


def fit_context(task: BatchTask, context: BatchContext, parameters: AvatarParameters,
                groups: Mapping[Any, Mapping] | None) -> BatchContext:
    """``context`` with its model, fitted on the first batch (a task: on Dask, a graph key
    recomputed wherever it is lost)."""
    first = load_batch(task, context)
    backend = resolve_backend(parameters.backend)
    check_device_memory(backend, len(first), first.shape[1], parameters.k, parameters.ncp)
    model, _ = fit_model(first, parameters, backend, groups)
    return BatchContext(model, context.source, context.dtypes, context.apart, context.store,
                        context.metrics, context.rules)


def metric_values(metrics: Any) -> dict[str, float | None]:
    values = metrics.to_frame()["value"]
    out = {}
    for name, value in values.items():
        number = None if value is None else float(value)
        out[str(name)] = None if number is None or np.isnan(number) else number
    return out


def write_part(frame: pd.DataFrame, schema: pa.Schema, store: Store, names: tuple[str, ...],
               pseudonymized: tuple = ()) -> None:
    """Write ``frame`` with the input's schema, atomically: the fields of its columns (dropped
    ones left out), a ``pseudonymized`` column's as its pseudonyms are (integers, or text)."""
    pa, pq, _ = _pyarrow()
    fields = [pa.field(f.name, pa.int64() if frame[f.name].dtype.kind in "iu" or str(
                  frame[f.name].dtype) == "Int64" else pa.string())
              if f.name in pseudonymized else f
              for f in schema if f.name in frame.columns]  # fields only: no pandas metadata
    table = pa.Table.from_pandas(frame, schema=pa.schema(fields), preserve_index=False)
    with store.writing(*names) as temporary:
        pq.write_table(table, temporary, filesystem=arrow_filesystem(store.fs))


def process_batch(task: BatchTask, context: BatchContext) -> dict[str, Any]:
    """Avatarize one batch and write its part under ``task.written``; returns its summary
    (rows, metrics, timings). Run by the local loop and, unchanged, by the Dask tasks."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    frame = load_batch(task, context)
    model = context.model
    check_device_memory(model.backend, len(frame), frame.shape[1], model.parameters.k,
                        model.parameters.ncp)
    timings["read"] = time.perf_counter() - started
    released_order = shuffle_order(task.rows, task.sequence)
    identifiers = context.apart.identifiers(frame, released_order, task.offset, task.fresh)
    avatars, neighbours = avatarize_rows(model, frame, task.sequence, identifiers,
                                         timings, neighbours=context.rules is not None)
    repaired = None
    if context.rules is not None:
        tick = time.perf_counter()
        kept = context.rules.apply(without_dropped(frame, model.parameters.types), avatars,
                                   neighbours=neighbours,
                                   seed=rules_seed(task.sequence))
        avatars = kept.avatars
        repaired = {r.rule.describe(): r.rows_repaired for r in kept.reports}
        timings["rules"] = time.perf_counter() - tick
    metrics = None
    if context.metrics:
        tick = time.perf_counter()
        parameters = model.parameters
        metrics = metric_values(
            privacy_metrics(
                frame,
                avatars,
                MetricOptions(ncp=parameters.ncp, check_alignment=False),  # its own avatars
                types=dict(parameters.types),
                backend=model.backend,
            )
        )
        timings["metrics"] = time.perf_counter() - tick
    del frame
    tick = time.perf_counter()
    released = avatars.iloc[released_order].reset_index(drop=True)
    write_part(released, context.source.schema, context.store, task.written,
               tuple(context.apart.pseudonymizers))
    timings["write"] = time.perf_counter() - tick
    return {
        "batch": task.batch,
        "rows": task.rows,
        "part": part_name(task.batch),
        "metrics": metrics,
        **({} if repaired is None else {"rules_rows_repaired": repaired}),
        "seconds": time.perf_counter() - started,
        "timings": timings,
        "threads": parallel.thread_count(),  # the CPU kernels' pool, on this worker
    }


def _finish_hint(rows: int, error: BaseException, hint: str | None) -> str:
    """How to finish the run after ``error`` in a step over ``rows`` rows: out of memory,
    with the ``batch_size`` to use (a new run: a resumed one keeps its batches)."""
    if hint is None and isinstance(error, MemoryError):
        hint = "the process ran out of memory"
    if hint is None:
        return "fix the cause and rerun with resume=True to finish the other batches"
    return (f"{hint}: rerun into a new destination with batch_size={max(1, rows // 2):,} (half "
            "of this batch; a resumed run keeps its batches), or give it more memory and rerun "
            "with resume=True")


def batch_error(task: BatchTask, error: BaseException, destination: str,
                hint: str | None = None, fit: bool = False) -> AvatarError:
    """The error of a failed batch (``fit``: of the fit on it): which one, why, and how to
    finish the run."""
    what = (f"fitting the model on batch 0 ({task.rows:,} rows)" if fit else
            f"batch {task.batch} (of {task.n_batches}, {task.rows:,} rows)")
    return AvatarError(
        f"{what} failed: {failure_text(error)}. {destination} is left marked "
        f"incomplete ({INCOMPLETE}); {_finish_hint(task.rows, error, hint)}"
    )


# -------------------------------------------------------------------------- schedulers
class LocalScheduler:
    """Every task in this process, one after the other."""

    name = "local"
    written_source = False  # the source is the caller's, never removed
    map = staticmethod(map_locally)

    def fit(self, task: BatchTask, context: BatchContext, parameters: AvatarParameters,
            groups: Mapping | None) -> BatchContext:
        try:
            return fit_context(task, context, parameters, groups)
        except Exception as error:
            raise batch_error(task, error, context.store.location, fit=True) from error

    def batches(self, tasks: list[BatchTask], context: BatchContext,
                done: Callable[[BatchTask, dict], None]) -> None:
        for task in tasks:
            try:
                summary = process_batch(task, context)
            except Exception as error:
                raise batch_error(task, error, context.store.location) from error
            done(task, summary)

    def release_metrics(self, original: pd.DataFrame, avatars: pd.DataFrame,
                        options: MetricOptions, types: dict, backend: str) -> PrivacyMetrics:
        """``ga.privacy_metrics`` of the whole release, in this process."""
        return privacy_metrics(original, avatars, options, types=types, backend=backend)


# -------------------------------------------------------------------------- manifest
def read_manifest(destination: str | os.PathLike,
                  storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_manifest.json`` of an ``avatarize_parquet`` destination."""
    store = Store.open(destination, storage_options)
    try:
        return json.loads(store.read_text(MANIFEST))
    except FileNotFoundError as error:
        raise AvatarError(f"{destination} has no {MANIFEST}") from error
    except (OSError, ValueError) as error:
        raise AvatarError(f"cannot read {store.path(MANIFEST)}: {error}") from error


def _write_json(store: Store, data: dict[str, Any]) -> None:
    store.write_text(json.dumps(data, indent=1, sort_keys=False), MANIFEST)


@dataclass
class ParquetAvatarization:
    """Outcome of ``avatarize_parquet`` (also in ``<destination>/_manifest.json``)."""

    destination: str
    parts: list[str]
    n_rows: int
    seed: int  # entropy of the run's SeedSequence: pass it back as seed= to reproduce the run
    manifest: dict[str, Any] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    release_metrics: PrivacyMetrics | None = field(default=None, repr=False)  # this run's

    @property
    def n_batches(self) -> int:
        return len(self.parts)

    def privacy_metrics(self) -> PrivacyMetrics | None:
        """The exact privacy metrics of the whole release (every avatar against every
        original, ``streaming/release.py``): what ``ga.release_verdict`` judges. Read back from
        the manifest (a resumed finished run), its per-row vectors are empty. None for a run
        with ``metrics=False``."""
        if self.release_metrics is not None:
            return self.release_metrics
        figures = (self.manifest.get("release") or {}).get("privacy_metrics")
        return None if figures is None else restored(figures)

    def verdict(self) -> ReleaseVerdict | None:
        """``ga.release_verdict`` of the whole release (None for a run with
        ``metrics=False``), as ``_VERDICT.txt`` words it."""
        metrics = self.privacy_metrics()
        return None if metrics is None else release_verdict(metrics)

    def batch_privacy_metrics(self) -> pd.DataFrame | None:
        """One row per batch, then ``mean`` and ``worst`` (as
        ``AvatarizationResult.batch_privacy_metrics``); None for a run with ``metrics=False``."""
        if not self.manifest["parameters"]["metrics"]:
            return None
        batches = self.manifest["batches"]
        rows = {f"batch {b}": batches[str(b)]["metrics"] for b in range(self.n_batches)}
        summary = self.manifest["privacy_metrics"]
        rows.update(mean=summary["mean"], worst=summary["worst"])
        return pd.DataFrame(rows).T.astype(float)

    def to_dask(self):
        """The avatars as a ``dask.dataframe`` (one partition per part), read by the workers."""
        from ..errors import import_extra

        dd = import_extra("dask.dataframe", "dask", "Reading the avatars with Dask")
        return dd.read_parquet(self.destination, storage_options=self.storage_options or None)


# ------------------------------------------------------------------------ the run
def _prepare_destination(store: Store, source: ParquetSource, resume: bool,
                         written_source: bool) -> dict | None:
    """The manifest of the run to resume, or None for a fresh run (checks the folder).
    ``written_source``: the source is ``<destination>/_source``, written there for this run."""
    own_source = written_source and source.path.rstrip("/") == store.path(SOURCE)
    if store.overlaps(source.fs, source.path) and not own_source:
        raise AvatarError(
            f"the destination {store.location} and the source {source.location} overlap; "
            "write the avatars to a folder outside the source"
        )
    if store.exists() and not store.isdir():
        raise AvatarError(f"the destination {store.location} exists and is not a folder")
    if [name for name in store.listdir() if name != SOURCE or not own_source]:
        if not resume and store.exists(SUCCESS):
            raise AvatarError(f"the destination {store.location} holds a finished run "
                              f"({SUCCESS}): read it, or give a new folder")
        if resume and store.exists(MANIFEST):
            return json.loads(store.read_text(MANIFEST))
        if resume and store.exists(INCOMPLETE):
            return None  # stopped before its first manifest: start again
        raise AvatarError(
            f"the destination {store.location} is not empty"
            + (" and holds no manifest to resume from" if resume else "")
            + "; give an empty or new folder"
            + ("" if resume else ", or resume=True to finish an interrupted run there")
        )
    return None


def _check_resumable(previous: dict, manifest: dict) -> None:
    differences = [
        key
        for key in ("format", "parameters", "seed", "source", "rows_per_part")
        if previous.get(key) != manifest[key]
    ]
    if differences:
        raise AvatarError(
            f"cannot resume: the run recorded in {MANIFEST} differs in {differences} (same "
            "source files, parameters and seed needed; seed=None takes the recorded seed)"
        )


def avatarize_parquet(
    source: str | os.PathLike | ParquetSource,
    destination: str | os.PathLike,
    *,
    parameters: AvatarParameters | None = None,
    metrics: bool = True,
    resume: bool = False,
    progress: ProgressLike = None,
    rules: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    scheduler: Any = None,
    plan: Any = None,
    **settings: Any,
) -> ParquetAvatarization:
    """Avatarize a Parquet file or directory into ``destination``, ``batch_size`` rows at a
    time, with bounded memory (see the module docstring for the passes and the outputs).

    Parameters as in ``avatarize`` (``AvatarParameters``, or keywords of the same names), with
    ``batch_size`` required (>= 2k + 1 rows per batch; a covering first batch shows every
    modality; the projection is fitted on it). The avatar rows are those of
    ``avatarize(df, batch_size=batch_size)`` on the same table and seed (identifiers are fresh
    values unique over the whole output; rows are released batch by batch, each batch
    shuffled). ``source`` and ``destination``: local paths or URLs (``file://``, ``s3://``,
    ``gs://``, ``memory://``..., opened by fsspec with ``storage_options``). ``metrics``: the
    privacy metrics of every batch (with their mean and worst) and the exact ones of the whole
    release (``result.privacy_metrics()``, judged by ``result.verdict()``), recorded in the
    manifest; the verdict is written to ``_VERDICT.txt``, printed with ``progress=True``, and
    a release that misses a decisive target warns. The whole release's metrics hold the
    originals and the avatars in memory at once: ``metrics=False`` keeps to one batch.
    ``resume``: finish an interrupted run in ``destination`` (same source, parameters and
    seed; ``seed=None`` takes the recorded one). ``progress`` as in ``avatarize``. Returns a
    ``ParquetAvatarization``. Needs pyarrow (``pip install 'gpu_avatar[parquet]'``).
    ``scheduler``: how the tasks run (None: here, one after the other; ``gpu_avatar.distributed``
    passes its Dask scheduler). ``rules`` (as ``avatarize`` takes them) hold on every row: each
    batch's avatars repaired against the batch's originals (checked there) from their
    neighbours, the rows repaired recorded per batch; none across a parent's children, as a
    stream is one table. ``plan``: as ``avatarize`` takes it.
    """
    parameters = avatar_parameters(parameters, **settings)
    source_ = (source if isinstance(source, ParquetSource)  # opened by the caller
               else open_source(source, storage_options))
    parameters = planned_parameters(parameters, plan, source_.columns)
    rules = RuleSet.of(rules)
    if rules is not None:
        refuse_non_variables(rules, parameters.types)
        across = [r.describe() for r in rules.rules if across_children(r)]
        if across:
            raise AvatarError(f"rules {across} hold across a parent's children, which a "
                              "streamed table has not; avatarize a Database instead")
    batch_size = parameters.batch_size
    if batch_size is None:
        raise AvatarError("batch_size is required: the number of rows avatarized at once")
    scheduler = scheduler or LocalScheduler()
    backend_ = resolve_backend(parameters.backend)
    timings: dict[str, float] = {}
    source_.partition_rows = min(source_.partition_rows, batch_size)  # a task's memory
    n = source_.n_rows
    parameters.for_rows(n)
    store = Store.open(destination, storage_options)
    previous = _prepare_destination(store, source_, resume, scheduler.written_source)
    if previous is not None and parameters.seed is None:
        parameters = parameters.replace(seed=int(previous["seed"]))
    sequence = seed_sequence(parameters.seed)

    steps = Steps(progress, "avatarize_parquet",
                  total=3 + bool(metrics) + max(1, -(-n // batch_size)))
    tick = time.perf_counter()
    with steps.step("scan"):
        batch_plan, scan = make_plan(
            source_, batch_size, sequence, parameters.types, parameters.imputation,
            RareModalities.of(parameters), scheduler.map,
        )
    timings["scan"] = time.perf_counter() - tick
    manifest = {
        "format": MANIFEST_FORMAT,
        "source": {"path": source_.fs.unstrip_protocol(source_.path),
                   "files": source_.fingerprint(), "rows": n},
        "parameters": _recorded_parameters(parameters, backend_.name, metrics),
        "seed": int(sequence.entropy),
        "rows_per_part": batch_plan.sizes,
        "parts": [part_name(b) for b in range(batch_plan.n_batches)],
        # columns that could identify a person, released because their kind was declared
        "knowingly_released": [f"{c.name}: {c.reason}" for c in scan.knowingly_released],
    }
    if previous is not None:
        _check_resumable(previous, manifest)
        if previous.get("complete") and store.exists(SUCCESS):
            steps.close()
            return _result(store, previous, timings, storage_options)
    store.fs.makedirs(store.root, exist_ok=True)
    store.remove(SUCCESS)
    store.remove(VERDICT)
    store.write_text(
        "This avatar dataset is unfinished: rerun avatarize_parquet(..., resume=True).\n",
        INCOMPLETE,
    )
    store.remove(RUNS)  # parts of an earlier run that never reported
    run = uuid.uuid4().hex[:12]
    done_before = (previous or {}).get("batches", {})
    manifest.update(
        scheduler=scheduler.name,
        run=run,
        spill=(previous or {}).get("spill") or run,
        batches={b: summary for b, summary in done_before.items()
                 if store.exists(summary["part"])},
        complete=False,
    )
    _write_json(store, manifest)

    batched = batch_plan.n_batches > 1
    with steps.step("route"):
        tick = time.perf_counter()
        manifest["routed"] = bool((previous or {}).get("routed")) and spills_intact(
            store, manifest["spill"], batch_plan.sizes)
        if batched and not manifest["routed"]:
            store.remove(SPILL)
            manifest["spill"] = run
            scheduler.map(route_partition, source_.partitions(), source_, batch_plan, store, run)
            manifest["routed"] = True
            _write_json(store, manifest)
        timings["route"] = time.perf_counter() - tick
    offsets = batch_plan.offsets
    tasks = [
        BatchTask(
            batch=b,
            n_batches=batch_plan.n_batches,
            rows=batch_plan.sizes[b],
            offset=offsets[b],
            sequence=batch_seed(sequence, b) if batched else sequence,
            batched=batched,
            run=run,
            spill=manifest["spill"],
            fresh=scan.apart.fresh_for(offsets[b], offsets[b] + batch_plan.sizes[b]),
        )
        for b in range(batch_plan.n_batches)
    ]
    shared = scan.apart.for_positions(0, 0)  # the pseudonyms: each batch its own identifiers
    context = BatchContext(None, source_, scan.dtypes, shared, store, bool(metrics), rules)

    def done(task: BatchTask, summary: dict) -> None:
        store.move(task.written, (part_name(task.batch),))
        manifest["batches"][str(task.batch)] = {
            "rows": summary["rows"],
            "part": summary["part"],
            "metrics": summary["metrics"],
            "seconds": round(summary["seconds"], 3),
            **{k: summary[k] for k in ("rules_rows_repaired", "threads") if k in summary},
        }
        for step, seconds in summary["timings"].items():
            timings[f"batches: {step}"] = timings.get(f"batches: {step}", 0.0) + seconds
        _write_json(store, manifest)
        steps.start(f"batch {task.batch}")
        steps.advance()

    pending = [t for t in tasks if str(t.batch) not in manifest["batches"]]
    for task in tasks:
        if task not in pending:
            steps.start(f"batch {task.batch} (done before)")
            steps.advance()
    with steps.step("fit"):
        tick = time.perf_counter()
        fitted = (scheduler.fit(tasks[0], context, parameters, scan.groups) if pending
                  else None)
        timings["fit"] = time.perf_counter() - tick
    tick = time.perf_counter()
    release = None
    try:
        scheduler.batches(pending, fitted, done)
        timings["batches"] = time.perf_counter() - tick
        if metrics:
            with steps.step("release metrics"):
                tick = time.perf_counter()
                release = _release_metrics(store, manifest["parts"], tasks, batch_plan, batch_size,
                                           context, parameters, scheduler)
                timings["release metrics"] = time.perf_counter() - tick
    finally:
        steps.close()

    verdict = None
    if metrics:
        manifest["privacy_metrics"] = mean_and_worst(
            [manifest["batches"][str(b)]["metrics"] for b in range(len(tasks))]
        )
        verdict = release_verdict(release)
        manifest["release"] = {"privacy_metrics": record(release),
                               "verdict": verdict_record(verdict)}
    manifest["complete"] = True
    manifest["batches"] = {str(b): manifest["batches"][str(b)] for b in range(len(tasks))}
    manifest["timings"] = {step: round(seconds, 3) for step, seconds in timings.items()}
    _write_json(store, manifest)
    for private in (SPILL, RUNS, *([SOURCE] if scheduler.written_source else [])):
        store.remove(private)
    if verdict is not None:
        store.write_text(str(verdict) + "\n", VERDICT)
    store.write_text("", SUCCESS)
    store.remove(INCOMPLETE)
    if verdict is not None:
        _tell(verdict, store, progress)
    return _result(store, manifest, timings, storage_options, release)


def _release_metrics(store: Store, parts: list[str], tasks: list[BatchTask], plan: Any,
                     batch_size: int, context: BatchContext, parameters: AvatarParameters,
                     scheduler: Any) -> PrivacyMetrics:
    """The exact privacy metrics of the whole release, by ``scheduler`` (the in-memory
    run's options: its ``ncp``, no alignment test, its ``types``)."""
    try:
        original, avatars = release_frames(store, parts, tasks, plan, batch_size,
                                           context.source, context.dtypes,
                                           tuple(context.apart.pseudonymizers))
        return scheduler.release_metrics(
            original, avatars, MetricOptions(ncp=parameters.ncp, check_alignment=False),
            dict(parameters.types), parameters.backend)
    except Exception as error:
        raise AvatarError(
            f"the privacy metrics of the whole release failed: {failure_text(error)}. "
            f"{store.location} is left marked incomplete ({INCOMPLETE}), every part written: "
            "fix the cause and rerun with resume=True to measure them"
        ) from error


def _tell(verdict: ReleaseVerdict, store: Store, progress: ProgressLike) -> None:
    """The verdict on stderr (``progress=True``), and a warning when the release misses a
    decisive target."""
    if progress is True:
        print(f"{store.location}: {verdict}", file=sys.stderr, flush=True)
    if verdict.answer == FAILS:
        missed = ", ".join(f.name for f in verdict.reasons if f.decisive)
        warnings.warn(f"the release in {store.location} {FAILS} (missed: {missed}); see "
                      f"{VERDICT} and the manifest's release verdict", UserWarning,
                      stacklevel=3)


def finished_run(store: Store, parameters: AvatarParameters, metrics: bool,
                 storage_options: Mapping[str, Any] | None) -> ParquetAvatarization:
    """The run ``store`` holds, finished, when it was made with these parameters (what a
    resume of a finished run returns), else the error saying what differs."""
    manifest = json.loads(store.read_text(MANIFEST))
    asked = _recorded_parameters(parameters, resolve_backend(parameters.backend).name, metrics)
    if parameters.seed is None:
        asked["seed"] = manifest["parameters"].get("seed")
    differences = sorted(k for k in asked if manifest["parameters"].get(k) != asked[k])
    if differences:
        raise AvatarError(f"cannot resume: the finished run in {store.location} differs in "
                          f"parameters {differences}; give a new destination")
    return _result(store, manifest, {}, storage_options)


def _recorded_parameters(parameters: AvatarParameters, backend: str,
                         metrics: bool) -> dict[str, Any]:  # fmt: skip
    """The parameters as the manifest records them (JSON: column names as text), with the
    backend resolved and whether the batches' metrics were measured."""
    values = {**parameters.replace(backend=backend).as_dict(), "metrics": bool(metrics)}
    values["types"] = {str(c): v for c, v in values["types"].items()}
    values["column_weights"] = {str(c): w for c, w in values["column_weights"].items()}
    return values


def _result(store: Store, manifest: dict, timings: dict,
            storage_options: Mapping[str, Any] | None,
            release: PrivacyMetrics | None = None) -> ParquetAvatarization:
    return ParquetAvatarization(
        destination=store.location,
        parts=list(manifest["parts"]),
        n_rows=int(manifest["source"]["rows"]),
        seed=int(manifest["seed"]),
        manifest=manifest,
        timings=timings,
        storage_options=dict(storage_options or {}),
        release_metrics=release,
    )

"""``avatarize_parquet``: a Parquet dataset avatarized batch by batch (avatar-method.md
section 5), holding about one batch in memory at a time. The batches are exactly those of the
in-memory ``avatarize(df, batch_size=...)`` for the same seed (same rows, same order inside
each batch, same per-batch seeds), so both give the same avatar rows:

1. **scan** (``scan.py``): the row count comes from the Parquet footers, the seeded order is
   ``batches.plan_order``; the encoder learns the whole dataset chunk by chunk and the covering
   rows are found with the in-memory rules (``plan.py``);
2. **route** (``route.py``): every row is appended to the spill file of its batch (under
   ``<destination>/_spill``) with its position inside the batch. A run that fits in one batch
   skips this and reads the source directly, rows in input order;
3. **fit**: the encoder and the projection are fitted on batch 0 (``pipeline.model``);
4. **batches**: ``process_batch`` loads one batch, avatarizes it in the shared space with
   ``avatarize_rows`` and the batch's own seed, computes its privacy metrics (``metrics=True``),
   releases its rows in ``shuffle_order(len(batch), seed)`` and writes ``part-<b>.parquet``.
   ``gpu_avatar.distributed`` runs the same ``process_batch`` as Dask tasks.

Output: ``part-00000.parquet``, ... (schema = the input's; a column read as pandas ``Int64``
because it holds missing integers is written back as the input's integer type), and
``_manifest.json`` (parameters, seed entropy, rows per part, the batches done and their privacy
metrics, mean and worst). ``_INCOMPLETE`` is present while a run is unfinished (also after a
failure); ``_SUCCESS`` replaces it at the end. ``resume=True`` continues an unfinished run,
skipping the batches the manifest records as done.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..backend import resolve_backend
from ..encoding.rare import RareModalities
from ..errors import AvatarError
from ..metrics import privacy_metrics
from ..metrics.catalogue import mean_and_worst
from ..outputs import atomic_path
from ..parameters import AvatarParameters, MetricOptions, avatar_parameters, seed_sequence
from ..pipeline.apart import ColumnsApart
from ..pipeline.batches import batch_seed
from ..pipeline.model import AvatarModel, avatarize_rows, check_device_memory, fit_model
from ..pipeline.rules import refuse_non_variables, rules_seed
from ..progress import ProgressLike, Steps
from ..rules import RuleSet, across_children
from ..synthesis import shuffle_order
from .plan import make_plan
from .route import route, spill_name
from .source import SLOT, ParquetSource, _pyarrow, open_source, to_frame

if TYPE_CHECKING:
    import pyarrow as pa

MANIFEST = "_manifest.json"
INCOMPLETE = "_INCOMPLETE"
SUCCESS = "_SUCCESS"
SPILL = "_spill"
MANIFEST_FORMAT = "gpu_avatar.avatarize_parquet/1"


def part_name(batch: int) -> str:
    return f"part-{batch:05d}.parquet"


# --------------------------------------------------------------------- one batch
@dataclass
class BatchTask:
    """One batch: where its rows are, how many, its seed and its part file."""

    batch: int
    n_batches: int
    rows: int
    offset: int  # position of the batch's first released row in the whole output
    sequence: np.random.SeedSequence
    spill: str | None  # the batch's spill file; None: the whole source is the batch


@dataclass
class BatchContext:
    """What every batch shares (Dask broadcasts it once): the model and the output format."""

    model: AvatarModel
    source: ParquetSource
    dtypes: dict[str, Any]
    apart: ColumnsApart
    destination: str
    metrics: bool
    rules: RuleSet | None = None  # held on each batch's rows, by repairs


def load_batch(task: BatchTask, context: BatchContext) -> pd.DataFrame:
    """The originals of a batch, in plan order, with the dataset's dtypes."""
    _, pq, _ = _pyarrow()
    if task.spill is None:
        frame = to_frame(context.source.read_all(), context.dtypes)
    else:
        table = pq.read_table(task.spill)
        slots = table.column(SLOT).to_numpy()
        table = table.drop_columns([SLOT]).replace_schema_metadata(context.source.schema.metadata)
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


def metric_values(metrics: Any) -> dict[str, float | None]:
    values = metrics.to_frame()["value"]
    out = {}
    for name, value in values.items():
        number = None if value is None else float(value)
        out[str(name)] = None if number is None or np.isnan(number) else number
    return out


def write_part(frame: pd.DataFrame, schema: pa.Schema, path: Path,
               pseudonymized: tuple = ()) -> None:
    """Write ``frame`` with the input's schema, atomically (``outputs.atomic_path``): the
    fields of its columns (dropped ones left out), a ``pseudonymized`` column's as its
    pseudonyms are (integers, or text)."""
    pa, pq, _ = _pyarrow()
    fields = [pa.field(f.name, pa.int64() if frame[f.name].dtype.kind in "iu" or str(
                  frame[f.name].dtype) == "Int64" else pa.string())
              if f.name in pseudonymized else f
              for f in schema if f.name in frame.columns]  # fields only: no pandas metadata
    table = pa.Table.from_pandas(frame, schema=pa.schema(fields), preserve_index=False)
    with atomic_path(path, alone=True) as temporary:
        pq.write_table(table, temporary)


def process_batch(task: BatchTask, context: BatchContext) -> dict[str, Any]:
    """Avatarize one batch and write its part; returns its summary (rows, metrics, timings).
    Run by the local loop and, unchanged, by the Dask tasks."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    frame = load_batch(task, context)
    timings["read"] = time.perf_counter() - started
    released_order = shuffle_order(task.rows, task.sequence)
    identifiers = context.apart.identifiers(frame, released_order, task.offset)
    avatars, neighbours = avatarize_rows(context.model, frame, task.sequence, identifiers,
                                         timings, neighbours=context.rules is not None)
    repaired = None
    if context.rules is not None:
        tick = time.perf_counter()
        kept = context.rules.apply(frame, avatars, neighbours=neighbours,
                                   seed=rules_seed(task.sequence))
        avatars = kept.avatars
        repaired = {r.rule.describe(): r.rows_repaired for r in kept.reports}
        timings["rules"] = time.perf_counter() - tick
    metrics = None
    if context.metrics:
        tick = time.perf_counter()
        parameters = context.model.parameters
        metrics = metric_values(
            privacy_metrics(
                frame,
                avatars,
                MetricOptions(ncp=parameters.ncp, check_alignment=False),  # its own avatars
                types=dict(parameters.types),
                backend=context.model.backend,
            )
        )
        timings["metrics"] = time.perf_counter() - tick
    del frame
    tick = time.perf_counter()
    released = avatars.iloc[released_order].reset_index(drop=True)
    write_part(released, context.source.schema, Path(context.destination) / part_name(task.batch),
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
    }


def batch_error(task: BatchTask, error: BaseException, destination: Path) -> AvatarError:
    return AvatarError(
        f"batch {task.batch} (of {task.n_batches}, {task.rows:,} rows) failed: "
        f"{type(error).__name__}: {error}. {destination} is left marked incomplete "
        f"({INCOMPLETE}); fix the cause and rerun with resume=True to finish the other batches"
    )


# -------------------------------------------------------------------------- manifest
def read_manifest(destination: str | os.PathLike) -> dict[str, Any]:
    """The ``_manifest.json`` of an ``avatarize_parquet`` destination."""
    path = Path(destination) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as error:
        raise AvatarError(f"{destination} has no {MANIFEST}") from error
    except (OSError, ValueError) as error:
        raise AvatarError(f"cannot read {path}: {error}") from error


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with atomic_path(path, alone=True) as temporary:
        temporary.write_text(json.dumps(data, indent=1, sort_keys=False))


@dataclass
class ParquetAvatarization:
    """Outcome of ``avatarize_parquet`` (also in ``<destination>/_manifest.json``)."""

    destination: Path
    parts: list[str]
    n_rows: int
    seed: int  # entropy of the run's SeedSequence: pass it back as seed= to reproduce the run
    manifest: dict[str, Any] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def n_batches(self) -> int:
        return len(self.parts)

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


# ------------------------------------------------------------------------ the run
Executor = Callable[[list[BatchTask], BatchContext, Callable[[BatchTask, dict], None]], None]


def run_locally(
    tasks: list[BatchTask], context: BatchContext, done: Callable[[BatchTask, dict], None]
) -> None:
    """The single-process scheduler: one batch after the other."""
    for task in tasks:
        try:
            summary = process_batch(task, context)
        except Exception as error:
            raise batch_error(task, error, Path(context.destination)) from error
        done(task, summary)


def _prepare_destination(destination: Path, source: ParquetSource, resume: bool) -> dict | None:
    """The manifest of the run to resume, or None for a fresh run (checks the folder)."""
    resolved, source_path = destination.resolve(), source.path.resolve()
    if (
        resolved == source_path
        or source_path in resolved.parents
        or resolved in (source_path.parents)
    ):
        raise AvatarError(
            f"the destination {destination} and the source {source.path} overlap; write the "
            "avatars to a folder outside the source"
        )
    if destination.exists() and not destination.is_dir():
        raise AvatarError(f"the destination {destination} exists and is not a folder")
    if destination.is_dir() and any(destination.iterdir()):
        if resume and (destination / MANIFEST).is_file():
            return read_manifest(destination)
        if resume and (destination / INCOMPLETE).is_file():
            return None  # stopped before its first manifest: start again
        raise AvatarError(
            f"the destination {destination} is not empty"
            + (" and holds no manifest to resume from" if resume else "")
            + "; give an empty or new folder"
            + ("" if resume else ", or resume=True to finish an interrupted run there")
        )
    return None


def _spills_intact(spill: Path, sizes: Sequence[int]) -> bool:
    """Whether every spill file of a resumed run is readable and holds its batch's rows."""
    _, pq, _ = _pyarrow()
    try:
        return all(
            pq.read_metadata(spill / spill_name(b)).num_rows == size for b, size in enumerate(sizes)
        )
    except Exception:  # missing or damaged: route again
        return False


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
    source: str | os.PathLike,
    destination: str | os.PathLike,
    *,
    parameters: AvatarParameters | None = None,
    metrics: bool = True,
    resume: bool = False,
    progress: ProgressLike = None,
    executor: Executor = run_locally,
    scheduler: str = "local",
    rules: Any = None,
    **settings: Any,
) -> ParquetAvatarization:
    """Avatarize a Parquet file or directory into ``destination``, ``batch_size`` rows at a
    time, with bounded memory (see the module docstring for the passes and the outputs).

    Parameters as in ``avatarize`` (``AvatarParameters``, or keywords of the same names), with
    ``batch_size`` required (>= 2k + 1 rows per batch; a covering first batch shows every
    modality; the projection is fitted on it). The avatar rows are those of
    ``avatarize(df, batch_size=batch_size)`` on the same table and seed (identifiers are fresh
    values unique over the whole output; rows are released batch by batch, each batch
    shuffled). ``metrics``: the privacy metrics of every batch, recorded in the manifest with
    their mean and worst. ``resume``: finish an interrupted run in ``destination`` (same
    source, parameters and seed; ``seed=None`` takes the recorded one). ``progress`` as in
    ``avatarize``. Returns a ``ParquetAvatarization``. Needs pyarrow
    (``pip install 'gpu_avatar[parquet]'``). ``executor``/``scheduler``: how batches run (a
    local loop; ``gpu_avatar.distributed`` passes its Dask executor). ``rules`` (as
    ``avatarize`` takes them) hold on every row: each batch's avatars repaired against the
    batch's originals (checked there) from their neighbours, the rows repaired recorded per
    batch; none across a parent's children, as a stream is one table.
    """
    parameters = avatar_parameters(parameters, **settings)
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
    backend_ = resolve_backend(parameters.backend)
    timings: dict[str, float] = {}
    source_ = open_source(source)
    n = source_.n_rows
    parameters.for_rows(n)
    destination = Path(destination)
    previous = _prepare_destination(destination, source_, resume)
    if previous is not None and parameters.seed is None:
        parameters = parameters.replace(seed=int(previous["seed"]))
    sequence = seed_sequence(parameters.seed)

    steps = Steps(progress, "avatarize_parquet", total=3 + max(1, -(-n // batch_size)))
    tick = time.perf_counter()
    with steps.step("scan"):
        plan, scan, _ = make_plan(
            source_, batch_size, sequence, parameters.types, parameters.imputation,
            rare=RareModalities.of(parameters),
        )
    timings["scan"] = time.perf_counter() - tick
    manifest = {
        "format": MANIFEST_FORMAT,
        "source": {"path": str(source_.path.resolve()), "files": source_.fingerprint(), "rows": n},
        "parameters": {
            **_json_parameters(parameters.replace(backend=backend_.name)),
            "metrics": bool(metrics),
        },
        "seed": int(sequence.entropy),
        "rows_per_part": plan.sizes,
        "parts": [part_name(b) for b in range(plan.n_batches)],
        # columns that could identify a person, released because their kind was declared
        "knowingly_released": [f"{c.name}: {c.reason}" for c in scan.knowingly_released],
    }
    if previous is not None:
        _check_resumable(previous, manifest)
        if previous.get("complete") and (destination / SUCCESS).is_file():
            steps.close()
            return _result(destination, previous, timings)
    destination.mkdir(parents=True, exist_ok=True)
    (destination / SUCCESS).unlink(missing_ok=True)
    (destination / INCOMPLETE).write_text(
        "This avatar dataset is unfinished: rerun avatarize_parquet(..., resume=True).\n"
    )
    spill = destination / SPILL
    done_before = (previous or {}).get("batches", {})
    manifest.update(
        scheduler=scheduler,
        routed=bool((previous or {}).get("routed")),
        batches={
            b: summary
            for b, summary in done_before.items()
            if (destination / summary["part"]).is_file()
        },
        complete=False,
    )
    _write_json(destination / MANIFEST, manifest)

    batched = plan.n_batches > 1
    with steps.step("route"):
        tick = time.perf_counter()
        if batched and not (manifest["routed"] and _spills_intact(spill, plan.sizes)):
            shutil.rmtree(spill, ignore_errors=True)
            route(source_, plan, spill)
            manifest["routed"] = True
            _write_json(destination / MANIFEST, manifest)
        timings["route"] = time.perf_counter() - tick
    offsets = plan.offsets
    tasks = [
        BatchTask(
            batch=b,
            n_batches=plan.n_batches,
            rows=plan.sizes[b],
            offset=offsets[b],
            sequence=batch_seed(sequence, b) if batched else sequence,
            spill=str(spill / spill_name(b)) if batched else None,
        )
        for b in range(plan.n_batches)
    ]
    del plan  # the per-row arrays are not needed any more
    context = BatchContext(
        model=None,  # type: ignore[arg-type]  (fitted below)
        source=source_,
        dtypes=scan.dtypes,
        apart=scan.apart,
        destination=str(destination),
        metrics=bool(metrics),
        rules=rules,
    )
    with steps.step("fit"):
        tick = time.perf_counter()
        first = load_batch(tasks[0], context)
        check_device_memory(backend_, len(first), first.shape[1], parameters.k, parameters.ncp)
        context.model, _ = fit_model(first, parameters, backend_, scan.groups)
        del first
        timings["fit"] = time.perf_counter() - tick

    def done(task: BatchTask, summary: dict) -> None:
        manifest["batches"][str(task.batch)] = {
            "rows": summary["rows"],
            "part": summary["part"],
            "metrics": summary["metrics"],
            "seconds": round(summary["seconds"], 3),
            **{k: summary[k] for k in ("rules_rows_repaired",) if k in summary},
        }
        for step, seconds in summary["timings"].items():
            timings[f"batches: {step}"] = timings.get(f"batches: {step}", 0.0) + seconds
        _write_json(destination / MANIFEST, manifest)
        steps.start(f"batch {task.batch}")
        steps.advance()

    pending = [t for t in tasks if str(t.batch) not in manifest["batches"]]
    for task in tasks:
        if task not in pending:
            steps.start(f"batch {task.batch} (done before)")
            steps.advance()
    tick = time.perf_counter()
    try:
        executor(pending, context, done)
    finally:
        steps.close()
    timings["batches"] = time.perf_counter() - tick

    if metrics:
        manifest["privacy_metrics"] = mean_and_worst(
            [manifest["batches"][str(b)]["metrics"] for b in range(len(tasks))]
        )
    manifest["complete"] = True
    manifest["batches"] = {str(b): manifest["batches"][str(b)] for b in range(len(tasks))}
    manifest["timings"] = {step: round(seconds, 3) for step, seconds in timings.items()}
    _write_json(destination / MANIFEST, manifest)
    shutil.rmtree(spill, ignore_errors=True)
    (destination / SUCCESS).write_text("")
    (destination / INCOMPLETE).unlink(missing_ok=True)
    return _result(destination, manifest, timings)


def _json_parameters(parameters: AvatarParameters) -> dict[str, Any]:
    """The parameters as the manifest records them (JSON: column names as text)."""
    values = parameters.as_dict()
    values["types"] = {str(c): v for c, v in values["types"].items()}
    values["column_weights"] = {str(c): w for c, w in values["column_weights"].items()}
    return values


def _result(destination: Path, manifest: dict, timings: dict) -> ParquetAvatarization:
    return ParquetAvatarization(
        destination=destination,
        parts=list(manifest["parts"]),
        n_rows=int(manifest["source"]["rows"]),
        seed=int(manifest["seed"]),
        manifest=manifest,
        timings=timings,
    )

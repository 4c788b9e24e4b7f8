"""Pass 2 of a batched streamed run: every partition writes its rows, batch by batch, into the
spill folder of each batch (``_spill/<route id>/batch-<b>/part-<p>-<f>.parquet``), with their
positions in the batch; a batch then reads its folder. The route's id (kept by a resumed run
whose spill is whole) keeps a task left over from another run out of this one's folders.
Each partition is one task (a Dask shuffle through the destination's file system): the driver
never holds the rows."""

from __future__ import annotations

import numpy as np

from ..pipeline.batches import plan_ranks
from .plan import StreamPlan
from .source import CHUNK_ROWS, SLOT, ParquetSource, Partition, _pyarrow, arrow_filesystem
from .store import Store

SPILL = "_spill"


def spill_folder(batch: int) -> str:
    return f"batch-{batch:05d}"


def piece_name(partition: int, flush: int) -> str:
    return f"part-{partition:05d}-{flush:03d}.parquet"


def route_partition(partition: Partition, source: ParquetSource, plan: StreamPlan,
                    store: Store, spill: str) -> None:
    """Write ``partition``'s rows to the spill folders of their batches, ``partition_rows``
    rows held at most (a row group may be larger). A task run again (a retry, a resumed run)
    writes the same files again."""
    pa, pq, _ = _pyarrow()
    slot_type = pa.int64()
    schema = pa.schema([*source.schema, pa.field(SLOT, slot_type)], metadata=source.schema.metadata)
    filesystem = arrow_filesystem(store.fs)
    pieces: dict[int, list] = {}
    held = flushes = 0

    def flush() -> None:
        for batch, tables in pieces.items():
            names = SPILL, spill, spill_folder(batch), piece_name(partition.index, flushes)
            with store.writing(*names) as temporary:
                pq.write_table(pa.concat_tables(tables), temporary, filesystem=filesystem)
        pieces.clear()

    for start, table in source.chunks(partition, chunk_rows=min(CHUNK_ROWS, source.partition_rows)):
        rows = np.arange(start, start + table.num_rows)
        batches, slots = plan.batches.locate(rows, plan_ranks(rows, plan.n_rows, plan.sequence))
        order = np.argsort(batches, kind="stable")
        taken = table.take(pa.array(order))
        taken = pa.Table.from_arrays([*taken.columns, pa.array(slots[order], type=slot_type)],
                                     schema=schema)
        ids = batches[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), ids.size], strict=True):
            pieces.setdefault(int(ids[lo]), []).append(taken.slice(lo, hi - lo))
        held += table.num_rows
        if held >= source.partition_rows:
            flush()
            held, flushes = 0, flushes + 1
    flush()


def read_spill(store: Store, spill: str, batch: int, schema) -> tuple:
    """(table of the batch's rows, their positions in the batch) from its spill folder."""
    pa, pq, _ = _pyarrow()
    filesystem = arrow_filesystem(store.fs)
    folder = SPILL, spill, spill_folder(batch)
    tables = [pq.read_table(store.path(*folder, n), filesystem=filesystem)
              for n in store.listdir(*folder) if n.endswith(".parquet")]
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    slots = table.column(SLOT).to_numpy() if tables else np.zeros(0, np.int64)
    return table.drop_columns([SLOT]).replace_schema_metadata(schema.metadata), slots


def spills_intact(store: Store, spill: str, sizes: list[int]) -> bool:
    """Whether every batch's spill folder is readable and holds its batch's rows."""
    _, pq, _ = _pyarrow()
    filesystem = arrow_filesystem(store.fs)
    try:
        for batch, size in enumerate(sizes):
            folder = (SPILL, spill, spill_folder(batch))
            rows = sum(pq.read_metadata(store.path(*folder, n), filesystem=filesystem).num_rows
                       for n in store.listdir(*folder) if n.endswith(".parquet"))
            if rows != size:
                return False
    except Exception:  # missing or damaged: route again
        return False
    return True

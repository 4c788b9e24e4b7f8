"""Pass 2 of a batched streamed run: every row appended to its batch's spill file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .plan import StreamPlan
from .source import SLOT, ParquetSource, _pyarrow

MAX_OPEN_SPILLS = 256  # spill writers open at once; more batches: several routing passes


def spill_name(batch: int) -> str:
    return f"batch-{batch:05d}.parquet"


def route(source: ParquetSource, plan: StreamPlan, spill: Path) -> None:
    """Pass 2: append every row to its batch's spill file, with its position in the batch."""
    pa, pq, _ = _pyarrow()
    spill.mkdir(parents=True, exist_ok=True)
    slot_type = pa.from_numpy_dtype(plan.slot.dtype)
    schema = pa.schema([*source.schema, pa.field(SLOT, slot_type)], metadata=source.schema.metadata)
    for first in range(0, plan.n_batches, MAX_OPEN_SPILLS):
        last = min(first + MAX_OPEN_SPILLS, plan.n_batches)
        writers = {b: pq.ParquetWriter(spill / spill_name(b), schema) for b in range(first, last)}
        try:
            for start, table in source.chunks():
                batches = plan.batch_of[start : start + table.num_rows]
                rows = np.flatnonzero((batches >= first) & (batches < last))
                rows = rows[np.argsort(batches[rows], kind="stable")]
                if not rows.size:
                    continue
                taken = table.take(pa.array(rows))
                slots = pa.array(plan.slot[start + rows], type=slot_type)
                taken = pa.Table.from_arrays([*taken.columns, slots], schema=schema)
                ids = batches[rows]
                bounds = np.flatnonzero(np.diff(ids)) + 1
                for lo, hi in zip(
                    [0, *bounds.tolist()], [*bounds.tolist(), rows.size], strict=True
                ):
                    writers[int(ids[lo])].write_table(taken.slice(lo, hi - lo))
        finally:
            for writer in writers.values():
                writer.close()

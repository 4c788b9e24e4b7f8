"""The whole release of a streamed run, judged as one table: its exact privacy metrics (every
avatar against every original, not only its batch's) and the release verdict.

Each part holds a batch's avatars in ``shuffle_order(rows, batch seed)``, and the batch's rows
are the plan's (``plan.py``: ``split_plan`` of ``plan_order``). Inverting both gives every
original's own avatar, so the metrics are ``ga.privacy_metrics`` on the originals (input
order) and their unshuffled avatars, the values of the in-memory run on the same table and
seed. The driver holds, for that step, the originals and the avatars as two pandas tables
(the projection is fitted on all the originals, as in memory) and the metric space's
coordinates (``7 ncp + 16`` floats a row); on Dask, the distance ranks run on the workers.

The figures (not the per-row vectors) and the verdict go into the manifest; the verdict's
sentences into ``_VERDICT.txt``, beside ``_SUCCESS``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..metrics.privacy import PrivacyMetrics
from ..metrics.verdict import FAILS, ReleaseVerdict
from ..pipeline.batches import plan_order, split_plan
from ..synthesis import shuffle_order
from .source import _pyarrow, arrow_filesystem, to_frame
from .store import Store

VERDICT = "_VERDICT.txt"


def release_frames(store: Store, parts: list[str], tasks: list, plan: Any, batch_size: int,
                   source: Any, dtypes: Mapping[str, Any],
                   pseudonymized: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The originals in input order and, row for row, their avatars read back from the
    ``parts`` (one per task, in batch order), unshuffled. The ``pseudonymized`` columns keep
    their pseudonyms' dtype (the metrics leave identifiers out)."""
    _, pq, _ = _pyarrow()
    n = plan.n_rows
    if plan.batches is None:
        batches = [np.arange(n)]
    else:
        batches = split_plan(plan_order(n, plan.sequence), plan.batches.covering_rows,
                             batch_size)
    released_types = {c: d for c, d in dtypes.items() if c not in pseudonymized}
    filesystem = arrow_filesystem(store.fs)
    frames, take = [], np.empty(n, dtype=np.int64)
    for task, part, positions in zip(tasks, parts, batches, strict=True):
        frames.append(to_frame(pq.read_table(store.path(part), filesystem=filesystem),
                               released_types))
        shuffled = shuffle_order(task.rows, task.sequence)  # part row i = avatar shuffled[i]
        in_plan_order = np.empty(task.rows, dtype=np.int64)
        in_plan_order[shuffled] = np.arange(task.rows)
        take[positions] = task.offset + in_plan_order
    avatars = pd.concat(frames, ignore_index=True).take(take).reset_index(drop=True)
    return to_frame(source.read_all(), dtypes), avatars


def record(metrics: PrivacyMetrics) -> dict[str, Any]:
    """The figures of ``metrics`` as JSON values (per-row vectors and the time taken left out;
    NaN as null)."""
    out = {}
    for item in dataclasses.fields(metrics):
        value = getattr(metrics, item.name)
        if isinstance(value, np.ndarray) or not item.compare:  # vectors, the time taken
            continue
        if isinstance(value, dict):
            value = {str(k): _plain(v) for k, v in value.items()}
        out[item.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """A JSON value: NumPy scalars as Python's (a GPU run's counts), NaN as null."""
    value = value.item() if isinstance(value, np.generic) else value
    return None if isinstance(value, float) and np.isnan(value) else value


def restored(figures: Mapping[str, Any]) -> PrivacyMetrics:
    """A ``PrivacyMetrics`` from ``record``'s figures, its per-row vectors empty."""
    values = dict(figures)
    for item in dataclasses.fields(PrivacyMetrics):
        if item.name not in values and item.default is dataclasses.MISSING:
            values[item.name] = np.empty(0)
    values["exact_copies_shared"] = {int(k): v for k, v in values["exact_copies_shared"].items()}
    return PrivacyMetrics(**values)


def verdict_record(verdict: ReleaseVerdict) -> dict[str, Any]:
    """The verdict as the manifest records it: its answer, whether it fails, its sentences."""
    return {"answer": verdict.answer, "failed": verdict.answer == FAILS,
            "lines": verdict.lines()}

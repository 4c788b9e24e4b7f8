"""The columns released apart (pipeline/apart.py): partitions' summaries merged in order give
what the chunks added in order give; a batch is shipped only what its positions need."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd

from gpu_avatar.pipeline.apart import ColumnsApart

TYPES = {"id": "identifier", "code": "identifier", "patient": "pseudonym:integer",
         "visit": "pseudonym:pattern:V{:04d}"}


def _originals(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    ids = pd.Series(rng.integers(-50, 2 * n, n), dtype="Int64").mask(rng.random(n) < 0.05)
    return pd.DataFrame({
        "id": ids,
        "code": rng.choice(["a", "avatar_3", "b", None], n),
        "patient": rng.integers(0, n // 4, n),
        "visit": rng.choice([f"V{i:04d}" for i in range(40)] + ["x", "7"], n),
        "x": rng.normal(size=n),
    })


def _apart(rows: int | None = None) -> ColumnsApart:
    return ColumnsApart(TYPES, ["id", "code", "patient", "visit", "x"],
                        np.random.SeedSequence(11), rows=rows)


def test_partitions_merged_in_order_and_windows_give_what_chunks_in_order_give():
    frame = _originals()
    whole = _apart()
    for start in range(0, len(frame), 400):
        whole.add(frame.iloc[start:start + 400])
    whole.draw()
    for rows in (None, len(frame)):  # the rows declared or not: the same values
        partitions = [_apart(rows).add(frame.iloc[a:b]).add(frame.iloc[b:c])
                      for a, b, c in ((0, 500, 1100), (1100, 1200, 2000), (2000, 2999, 3000))]
        merged = partitions[0]
        for partition in partitions[1:]:
            merged.merge(partition)
        merged.draw()
        for start in range(0, len(frame), 700):
            batch = frame.iloc[start:start + 700].reset_index(drop=True)
            order = np.random.default_rng(start).permutation(len(batch))
            expected = whole.identifiers(batch, order, start)
            window = merged.for_positions(start, start + len(batch))
            shipped = pickle.loads(pickle.dumps(window))
            got = shipped.identifiers(batch, order, start)
            assert got.keys() == expected.keys()
            for column, values in expected.items():
                assert np.array_equal(np.asarray(got[column], dtype=object),
                                      np.asarray(values, dtype=object)), column
            assert len(pickle.dumps(window)) < len(pickle.dumps(whole))

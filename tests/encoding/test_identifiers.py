"""Fresh identifiers: the smallest non-negative integers absent from the column, by position,
whatever the chunks, the partitions merged and the windows asked for; linear in the rows."""

from __future__ import annotations

import math
import pickle
import time
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpu_avatar as ga
from gpu_avatar.encoding import IdentifierValues, identifiers


def simple_fresh(values: list, n: int) -> list[int]:
    """The definition: the n smallest non-negative integers no original equals."""
    taken = {int(v) for v in values
             if v is not None and not (isinstance(v, float) and math.isnan(v))
             and v >= 0 and float(v).is_integer()}
    out, candidate = [], 0
    while len(out) < n:
        if candidate not in taken:
            out.append(candidate)
        candidate += 1
    return out


@st.composite
def columns(draw):
    """A column (dtype int64, nullable Int64 or float64, duplicates, negatives, missing values,
    non-whole and huge numbers), cut into chunks and the chunks into partitions."""
    kind = draw(st.sampled_from(["int64", "Int64", "float64"]))
    small = st.integers(-5, 60)  # dense stretches, repeats
    big = st.integers(-(2**62), 2**63 - 1)
    if kind == "float64":
        number = st.one_of(small.map(float), st.sampled_from([2.5, -0.5, 1e30, math.nan]))
    elif kind == "Int64":
        number = st.one_of(small, st.none())
    else:
        number = st.one_of(small, big)
    values = draw(st.lists(number, max_size=60))
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=6)))
    bounds = [0, *cuts, len(values)]
    chunks = [pd.Series(values[a:b], dtype=kind) for a, b in zip(bounds, bounds[1:], strict=False)]
    groups = sorted(draw(st.lists(st.integers(0, len(chunks)), max_size=3)))
    edges = [0, *groups, len(chunks)]
    partitions = [chunks[a:b] for a, b in zip(edges, edges[1:], strict=False)]
    return values, partitions


@settings(max_examples=300, deadline=None)
@given(columns(), st.booleans(), st.booleans(), st.data())
def test_fresh_values_match_the_definition_whatever_the_chunks_partitions_and_windows(
        column, declared, merge_often, data):
    values, partitions = column
    rows = len(values)
    n = rows if declared else data.draw(st.integers(0, rows + 20))
    with mock.patch.object(identifiers, "_MERGE_EVERY", 1 if merge_often else 1 << 20):
        summaries = []
        for chunks in partitions:  # each partition summarized on its own, as on a worker
            summary = IdentifierValues("id", rows if declared else None)
            for chunk in chunks:
                summary.add(chunk)
            summaries.append(summary)
        merged = summaries[0]
        for summary in summaries[1:]:
            merged.merge(summary)
    expected = simple_fresh(values, n)
    assert merged.fresh(0, n).tolist() == expected
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    for start, stop in zip([0, *cuts], [*cuts, n], strict=True):
        window = pickle.loads(pickle.dumps(merged.restricted(start, stop)))
        assert window.fresh(start, stop).tolist() == expected[start:stop]
        assert window.gaps.size <= stop - start + 1  # the runs among these positions only


def test_a_window_or_declared_rows_refuse_positions_they_cannot_answer():
    values = IdentifierValues("id").add(pd.Series([0, 1, 2, 9]))
    window = values.restricted(2, 5)
    assert window.fresh(3, 5).tolist() == [6, 7]
    with pytest.raises(ga.AvatarError, match="positions 4 to 6 were asked of a window holding 2"):
        window.fresh(4, 6)
    declared = IdentifierValues("id", rows=4).add(pd.Series([0, 1, 2, 9]))  # 9 >= 2 * 4: dropped
    assert declared.fresh(0, 4).tolist() == [3, 4, 5, 6]
    with pytest.raises(ga.AvatarError, match="more positions were asked for than the rows"):
        declared.fresh(0, 6)  # the sixth would be 9, which was dropped
    with pytest.raises(ga.AvatarError, match="5 rows added, more than the 4 declared"):
        declared.add(pd.Series([3]))
    with pytest.raises(ga.AvatarError, match="cannot be merged"):
        IdentifierValues("id").merge(IdentifierValues("id", rows=4))


def _fresh_by_batch(ids: np.ndarray, chunk: int = 1 << 18,
                    batch: int = 200_000) -> tuple[float, np.ndarray, int]:
    """Seconds to add ``ids`` by chunk and make every batch's window and fresh values; the
    values; the largest window pickled, in bytes."""
    started = time.perf_counter()
    values = IdentifierValues("id")
    for start in range(0, ids.size, chunk):
        values.add(pd.Series(ids[start:start + chunk]))
    values.finish()
    windows = [values.restricted(start, min(ids.size, start + batch))
               for start in range(0, ids.size, batch)]
    got = np.concatenate([w.fresh(w.start, w.stop) for w in windows])
    return time.perf_counter() - started, got, max(len(pickle.dumps(w)) for w in windows)


@pytest.mark.parametrize("kind", ["repeated", "shuffled_dense", "sparse_64_bits"])
def test_fresh_identifiers_take_time_linear_in_the_rows(kind):
    """Chunks of 2^18 rows, as the streamed scan reads them, batches of 2 * 10^5 positions:
    twice the rows take about twice the time (the former merges took 0.2 s at 10^6 rows and
    34 s at 4 * 10^6), and a batch is shipped the runs among its positions only."""
    rng = np.random.default_rng(0)
    make = {
        "repeated": lambda n: rng.integers(0, 2 * n, n),
        "shuffled_dense": lambda n: rng.permutation(n) + 1,
        "sparse_64_bits": lambda n: rng.integers(0, 2**63 - 1, n, dtype=np.int64),
    }[kind]
    seconds = {}
    for n in (1_000_000, 2_000_000):
        ids = make(n)
        seconds[n], got, shipped = _fresh_by_batch(ids)
        seconds[n] = min(seconds[n], *(_fresh_by_batch(ids)[0] for _ in range(2)))  # noise
        taken = np.sort(ids)  # the definition, apart: position + the taken values below
        taken = taken[np.concatenate([[True], taken[1:] != taken[:-1]]) & (taken >= 0)]
        positions = np.arange(n)
        expected = positions + np.searchsorted(taken - np.arange(taken.size), positions, "right")
        assert np.array_equal(got, expected)
        assert shipped < (16 * 200_000 if kind == "repeated" else 2000)  # vs 8 bytes a row
    assert seconds[2_000_000] < 3.5 * seconds[1_000_000] + 0.05, seconds  # + timer noise

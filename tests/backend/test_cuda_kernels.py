"""The CUDA kernels' own logic, run where the suite runs: in numba's CUDA simulator on the CuPy
stand-in without a GPU, on the device with one. Each kernel must equal the CPU engine row for
row (same counts, same flags, same neighbours, the same distance bits) on random, tie-heavy and
duplicated points, on deep trees (leaves of 1, 2 and 5 points: every pruning and whole-node
rule is exercised) and for a subset of query rows.

The inputs are small because the simulator runs every thread as Python.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from gpu_avatar.kernels import knn, mixed, ranks, tree
from gpu_avatar.neighbours.distances import pairwise_squared, rowwise_squared

cuda_kernels = pytest.importorskip("gpu_avatar.kernels.cuda")


def _points(name: str, n: int = 240) -> np.ndarray:
    rng = np.random.default_rng(len(name))
    if name == "random":
        return rng.normal(size=(n, 3))
    if name == "integer ties":  # few distinct values: exact ties at every radius
        return rng.integers(0, 3, size=(n, 2)).astype(np.float64)
    return np.repeat(rng.normal(size=(n // 12, 2)), 12, axis=0)  # duplicated rows


POINT_SETS = ("random", "integer ties", "duplicates")


@pytest.mark.parametrize("leaf_size", [tree.LEAF_SIZE, 1, 5])
@pytest.mark.parametrize("name", POINT_SETS)
def test_rank_kernels_equal_the_cpu_walk(gpu, name, leaf_size):
    x = _points(name)
    rng = np.random.default_rng(1)
    y = x[rng.permutation(len(x))] * 0.5 + x * 0.5
    if name != "random":  # keep the ties exact
        y = x[rng.permutation(len(x))]
    own = rowwise_squared(x, y, np)
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        expected = ranks.distance_ranks(x, y, own)
        got = cuda_kernels.distance_ranks(gpu, gpu.asarray(x), gpu.asarray(y), gpu.asarray(own))
    labels = ("cloaking", "hidden", "first", "second")
    for label, value, reference in zip(labels, got, expected, strict=True):
        np.testing.assert_array_equal(gpu.to_numpy(value), reference, err_msg=label)


@pytest.mark.parametrize("name", POINT_SETS)
def test_rank_kernels_over_parts_add_up_to_the_whole(gpu, name):
    """Avatars in disjoint parts, all originals (in any order) against each: counts add up,
    flags OR and the two smallest values merge to those of the whole walk, on both drivers."""
    x = _points(name, 120)
    rng = np.random.default_rng(3)
    y = x[rng.permutation(len(x))]
    own = rowwise_squared(x, y, np)
    cloaking, hidden = np.zeros(len(x), np.int64), np.zeros(len(x), bool)
    smallest = np.full((2, len(x)), np.inf)
    for part in np.array_split(rng.permutation(len(x)), 3):
        avatar_ids, original_ids = np.sort(part), rng.permutation(len(x))
        args = y[avatar_ids], avatar_ids, x[original_ids], original_ids, own[original_ids]
        counts, flags = ranks.ranks_among(*args)
        on_device = cuda_kernels.ranks_among(gpu, gpu.asarray(args[0]), avatar_ids,
                                             gpu.asarray(args[2]), original_ids,
                                             gpu.asarray(args[4]))  # fmt: skip
        np.testing.assert_array_equal(gpu.to_numpy(on_device[0]), counts)
        np.testing.assert_array_equal(gpu.to_numpy(on_device[1]), flags)
        cloaking[original_ids] += counts
        hidden[original_ids] |= flags
        two = ranks.two_nearest(y, x[part])  # every avatar against a part of the originals
        on_device = cuda_kernels.two_nearest(gpu, gpu.asarray(y), gpu.asarray(x[part]))
        for value, reference in zip(on_device, two, strict=True):
            np.testing.assert_array_equal(gpu.to_numpy(value), reference)
        smallest = np.sort(np.vstack([smallest, two]), axis=0)[:2]
    labels = ("cloaking", "hidden", "first", "second")
    merged = (cloaking, hidden, *smallest)
    for label, value, reference in zip(labels, merged, ranks.distance_ranks(x, y, own),
                                       strict=True):  # fmt: skip
        np.testing.assert_array_equal(value, reference, err_msg=label)


@pytest.mark.parametrize("k", [1, 7, 20])
@pytest.mark.parametrize("name", POINT_SETS)
def test_knn_kernel_equals_the_cpu_walk(gpu, name, k):
    points = _points(name)
    expected_indices, expected_squared = knn.nearest_others(points, k)
    indices, squared = cuda_kernels.nearest_others(gpu, gpu.asarray(points), k)
    np.testing.assert_array_equal(gpu.to_numpy(indices), expected_indices)
    np.testing.assert_array_equal(gpu.to_numpy(squared), expected_squared)


@pytest.mark.parametrize("leaf_size", [1, 2])
def test_knn_kernel_on_deep_trees_and_a_subset_of_rows(gpu, leaf_size):
    points = _points("integer ties", 150)
    rows = np.array([149, 0, 77, 3, 3])  # any order, repeats allowed
    expected_indices, expected_squared = knn.nearest_others(points, 9)
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        on_device = gpu.asarray(points), 9, gpu.asarray(rows)
        indices, squared = cuda_kernels.nearest_others(gpu, *on_device)
        cpu_indices, cpu_squared = knn.nearest_others_of(points, rows, 9)
    np.testing.assert_array_equal(gpu.to_numpy(indices), expected_indices[rows])
    np.testing.assert_array_equal(gpu.to_numpy(squared), expected_squared[rows])
    np.testing.assert_array_equal(cpu_indices, expected_indices[rows])
    np.testing.assert_array_equal(cpu_squared, expected_squared[rows])


def test_every_capacity_holds_k_and_larger_k_is_refused():
    assert [cuda_kernels.capacity_for(k) for k in (1, 16, 17, 64, 65, 128)] == [
        16, 16, 32, 64, 128, 128,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="capacity"):
        cuda_kernels.capacity_for(cuda_kernels.MAX_K + 1)


@pytest.mark.parametrize("exhaustive", [False, True])
@pytest.mark.parametrize("name", POINT_SETS)
def test_verify_kernel_equals_the_cpu_pass(gpu, name, exhaustive):
    """Index candidates in any order, the row itself among them or not, re-checked exactly:
    the same neighbours, distance bits and uncertain rows."""
    n, k = (24, 6) if exhaustive else (120, 5)
    points = _points(name, n)
    rng = np.random.default_rng(2)
    width = n if exhaustive else k + 2
    candidates = np.stack([rng.permutation(n)[:width] for _ in range(n)])
    far = rng.uniform(0.0, 2.0, n)
    margin = np.full(n, 1e-9)
    expected = knn.verify_candidates(points, candidates, far, margin, k)
    got = cuda_kernels.verify_candidates(gpu, *(gpu.asarray(a) for a in (points, candidates,
                                                                         far, margin)), k)
    for label, value, reference in zip(("indices", "squared", "uncertain"), got, expected,
                                       strict=True):  # fmt: skip
        np.testing.assert_array_equal(gpu.to_numpy(value), reference, err_msg=label)


@pytest.mark.parametrize("n_codes", [0, 3])
def test_synthesis_kernel_equals_the_cpu_pass(gpu, n_codes):
    from gpu_avatar import synthesis_kernels

    rng = np.random.default_rng(4)
    n, k = 150, 7
    weights = rng.exponential(size=(n, k))
    arrays = (rng.normal(size=(n, 4)), rng.integers(0, 5, size=(n, n_codes)),
              rng.integers(0, n, size=(n, k)), weights / weights.sum(axis=1, keepdims=True),
              rng.random((n, n_codes)))  # fmt: skip
    expected = synthesis_kernels.synthesize_block(*arrays)
    got = cuda_kernels.synthesize_block(gpu, *(gpu.asarray(a) for a in arrays))
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_array_equal(gpu.to_numpy(value), reference)


@pytest.mark.parametrize("leaf_size", [tree.LEAF_SIZE, 1])
@pytest.mark.parametrize("name", POINT_SETS)
def test_nearest_reference_kernel_equals_the_cpu_walk(gpu, name, leaf_size):
    """Each query's nearest reference, the lowest index among equally near ones (queries and
    references of different sizes)."""
    references = _points(name)
    queries = np.vstack([_points(name, 96)[::-1] + 0.25, references[::20]])
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        expected = ranks.nearest_reference(queries, references)
        got = cuda_kernels.nearest_reference(gpu, gpu.asarray(queries), gpu.asarray(references))
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_array_equal(gpu.to_numpy(value), reference)
    squared = pairwise_squared(queries, references, np)
    np.testing.assert_array_equal(expected[0], squared.argmin(axis=1))
    np.testing.assert_array_equal(expected[1], squared.min(axis=1))


@pytest.mark.parametrize("limit", [2, 1000])
@pytest.mark.parametrize("leaf_size", [tree.LEAF_SIZE, 1])
@pytest.mark.parametrize("name", POINT_SETS)
def test_count_within_kernel_equals_the_cpu_walk(gpu, name, leaf_size, limit):
    """The references within a Chebyshev radius, counted up to a limit: radii at which the
    integer points tie exactly, a missing coordinate on each side."""
    references = _points(name)
    queries = _points(name, 96)[::-1] + 0.5
    references[3, 0], queries[5, 1] = np.nan, np.nan
    for radius in (0.5, 1.5):
        with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
            expected = ranks.count_within(queries, references, radius, limit)
            got = cuda_kernels.count_within(gpu, gpu.asarray(queries), gpu.asarray(references),
                                            radius, limit)  # fmt: skip
        np.testing.assert_array_equal(gpu.to_numpy(got), expected)

def _mixed_data(columns: int, n_queries: int, n_references: int):
    """Numbers and category codes of three values (exact ties at every distance, many at 0),
    missing values on both sides, and every fifth query far from every reference (its k-th
    distance never reaches 0, so its block scans every tile)."""
    rng = np.random.default_rng(columns)
    categorical = np.arange(columns) % 2 == 1
    references = rng.integers(0, 3, size=(n_references, columns)) / 2
    queries = rng.integers(0, 3, size=(n_queries, columns)) / 2
    for table in (references, queries):
        table[rng.random(table.shape) < 0.1] = np.nan
    queries[::5, ~categorical] += 10.0
    return references, categorical, queries


@pytest.mark.parametrize("k", [1, 5, 17])
@pytest.mark.parametrize(("columns", "tile_values"), [
    (3, 12),  # tiles of 4 rows: 30 references are 7 tiles and 2 rows
    (5, 2048),  # one partial tile
    (3, 2),  # rows wider than a tile: read from device memory
    (0, 12),  # no column: every distance 0
])  # fmt: skip
def test_mixed_kernel_equals_the_cpu_scan(gpu, columns, tile_values, k):
    """Blocks of 4 threads, a device said to hold 2 threads (so each thread takes as many
    queries as its local memory holds: 8 for k <= 16, 4 for k = 17) and launches of one block:
    53 queries fill neither a thread's slots nor a block, over several launches."""
    references, categorical, queries = _mixed_data(columns, 53, 30)
    expected = mixed.nearest_mixed(references, categorical, queries, k)
    with mock.patch.multiple(cuda_kernels, THREADS=4, MIXED_TILE_VALUES=tile_values,
                             MIXED_CHUNK_PAIRS=0, resident_threads=lambda backend: 2):
        got = cuda_kernels.nearest_mixed(gpu, gpu.asarray(references), categorical,
                                         gpu.asarray(queries), k)  # fmt: skip
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_array_equal(gpu.to_numpy(value), reference)

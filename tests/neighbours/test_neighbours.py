"""Exact k nearest neighbours: every engine equals a naive O(n^2) reference, index for index.

Contract: Euclidean distance ``sqrt(sum_d (x_d - y_d)^2)`` in float64, the point itself excluded
by index (its exact duplicates are not), neighbours ordered by (distance, index) so that ties go
to the lower row index.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

import gpu_avatar as ga
from gpu_avatar.backend import CPU
from gpu_avatar.neighbours import search as nb

try:  # faiss-cpu (a dev dependency) exercises the float32 index path and its exact re-check
    import faiss  # noqa: F401

    ENGINES = ("kdtree", "brute", "faiss")
except ImportError:
    ENGINES = ("kdtree", "brute")


def naive_neighbours(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort every other point by (distance, index); O(n^2) memory, for small n only."""
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k))
    others = np.arange(n)
    for i in range(n):
        squared = ((points - points[i]) ** 2).sum(axis=1)
        order = np.lexsort((others, squared))
        order = order[order != i][:k]
        indices[i] = order
        distances[i] = np.sqrt(squared[order])
    return indices, distances


def random_float(n=400, dim=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim))


def integer_ties(n=400, dim=3, seed=1):
    """Few distinct integer values: huge numbers of exactly tied distances."""
    return np.random.default_rng(seed).integers(0, 3, size=(n, dim)).astype(np.float64)


def duplicate_rows(n=400, distinct=40, dim=2, seed=2):
    """Many exact duplicates of a few points (like MCA coordinates of a categorical table)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(distinct, dim))
    return base[rng.integers(0, distinct, size=n)]


def few_points(n=600, distinct=4, dim=3, seed=3):
    """Copies of a handful of points, far more than a tree leaf holds: whole subtrees of one
    point, where ties at distance 0 are decided by index alone."""
    return duplicate_rows(n, distinct, dim, seed)


DATA = {
    "random_float": random_float,
    "integer_ties": integer_ties,
    "duplicate_rows": duplicate_rows,
    "few_points": few_points,
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("k", [1, 5, 20])
def test_engine_equals_naive_reference(engine, data, k):
    points = DATA[data]()
    expected_idx, expected_dist = naive_neighbours(points, k)
    indices, distances = nb.nearest_neighbours(points, k, CPU, engine)
    indices, distances = np.asarray(indices), np.asarray(distances)
    assert indices.shape == distances.shape == (len(points), k)
    assert indices.dtype == np.int64 and distances.dtype == np.float64
    mismatched = np.flatnonzero((indices != expected_idx).any(axis=1))
    assert mismatched.size == 0, (
        f"{engine} on {data}: {mismatched.size} rows differ, e.g. row {mismatched[:1]}: "
        f"{indices[mismatched[:1]]} vs {expected_idx[mismatched[:1]]}"
    )
    np.testing.assert_array_equal(distances, expected_dist)


@pytest.mark.parametrize("engine", ENGINES)
def test_self_is_excluded_but_duplicates_are_not(engine):
    points = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [9.0, 9.0]])
    indices, distances = nb.nearest_neighbours(points, 2, CPU, engine)
    indices, distances = np.asarray(indices), np.asarray(distances)
    np.testing.assert_array_equal(indices[:3], [[1, 2], [0, 2], [0, 1]])
    np.testing.assert_array_equal(distances[:3], 0.0)
    assert (indices != np.arange(5)[:, None]).all()
    np.testing.assert_array_equal(indices[3], [4, 0])  # d = 5.66 to row 4 and to rows 0-2


@pytest.mark.parametrize("engine", ENGINES)
def test_k_equal_n_minus_one_lists_every_other_point(engine):
    points = integer_ties(n=30, dim=2)
    indices, _ = nb.nearest_neighbours(points, 29, CPU, engine)
    indices = np.asarray(indices)
    expected, _ = naive_neighbours(points, 29)
    np.testing.assert_array_equal(indices, expected)
    for i, row in enumerate(indices):
        assert sorted(row) == [j for j in range(30) if j != i]


def test_tree_and_brute_tiles_past_1024_rows_match_the_reference():
    points = duplicate_rows(n=1500, distinct=200, dim=3, seed=5)
    expected, _ = naive_neighbours(points, 7)
    kd_idx, _ = nb.nearest_neighbours(points, 7, CPU, "kdtree")
    np.testing.assert_array_equal(kd_idx, expected)
    brute_idx, _ = nb.nearest_neighbours(points, 7, CPU, "brute")
    np.testing.assert_array_equal(np.asarray(brute_idx), expected)


def test_wbcd_coordinates(wbcd):
    """Real projected coordinates with many exact duplicate rows."""
    coordinates = ga.MCA(n_components=2, types=wbcd.types).fit_transform(wbcd.df).to_numpy()
    # 683 rows, 449 distinct: duplicated records give bit-identical coordinates.
    assert len(np.unique(coordinates, axis=0)) == len(wbcd.df.drop_duplicates()) < 500
    expected, expected_dist = naive_neighbours(coordinates, 20)
    for engine in ENGINES:
        indices, distances = nb.nearest_neighbours(coordinates, 20, CPU, engine)
        np.testing.assert_array_equal(np.asarray(indices), expected, err_msg=engine)
        np.testing.assert_array_equal(np.asarray(distances), expected_dist, err_msg=engine)


def test_auto_engine_is_exact():
    points = integer_ties(n=200, dim=4, seed=9)
    expected, _ = naive_neighbours(points, 10)
    indices, _ = nb.nearest_neighbours(points, 10)
    np.testing.assert_array_equal(np.asarray(indices), expected)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k", [0, -1, 10, 11])
def test_k_out_of_range_is_rejected(engine, k):
    points = random_float(n=10, dim=2)
    with pytest.raises(ga.AvatarError, match="k"):
        nb.nearest_neighbours(points, k, CPU, engine)


@pytest.mark.parametrize("leaf_size", [1, 2, 5])
@pytest.mark.parametrize("data", sorted(DATA))
def test_compiled_walk_on_deep_trees_equals_naive_reference(leaf_size, data):
    """Tiny leaves: many nodes pruned by box, queries spread over many leaves."""
    from gpu_avatar.kernels import tree

    points = DATA[data](n=300)
    expected_idx, expected_dist = naive_neighbours(points, 9)
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        indices, distances = nb.nearest_neighbours(points, 9, CPU, "numba")
    np.testing.assert_array_equal(indices, expected_idx)
    np.testing.assert_array_equal(distances, expected_dist)


@pytest.mark.parametrize("leaf_size", [2, 32])
def test_a_point_with_a_missing_coordinate_is_no_ones_neighbour(leaf_size):
    """A NaN distance is no neighbour, in the walk the queries of a leaf share and in the walk
    per query (the GPU's, and the CPU's for rows an index could not certify): the finite
    points get their neighbours among the finite ones, by both walks alike."""
    from gpu_avatar.kernels import knn, tree

    points = random_float(n=300, dim=3)
    points[[4, 150], 1] = np.nan
    finite = np.setdiff1d(np.arange(300), [4, 150])
    expected, expected_squared = naive_neighbours(points[finite], 6)
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        shared = knn.nearest_others(points, 6)
        per_query = knn.nearest_others_of(points, finite, 6)
    for indices, squared in (tuple(a[finite] for a in shared), per_query):
        np.testing.assert_array_equal(indices, finite[expected])
        np.testing.assert_array_equal(np.sqrt(squared), expected_squared)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_missing_or_infinite_coordinate_is_refused(engine, value):
    points = random_float(n=50, dim=3)
    points[7, 2] = value
    with pytest.raises(ga.AvatarError, match="impute or drop"):
        nb.nearest_neighbours(points, 3, CPU, engine)


def test_numba_names_the_compiled_tree():
    points = random_float(n=60, dim=3)
    for got, expected in zip(nb.nearest_neighbours(points, 4, CPU, "numba"),
                             nb.nearest_neighbours(points, 4, CPU, "kdtree"), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_unknown_engine_is_rejected():
    with pytest.raises(ga.AvatarError, match="engine"):
        nb.nearest_neighbours(random_float(n=10, dim=2), 3, CPU, "faiss-gpu-ivf")

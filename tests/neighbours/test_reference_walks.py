"""Each query's nearest reference, and how many references lie within a Chebyshev radius of
it: the compiled walks of ``kernels/ranks.py`` (CPU driver) against their definitions, on
tie-heavy data and on deep trees (leaves of 1 and 2 points: every whole-node rule runs).
scipy's cKDTree, which these walks replace in the privacy metrics and the linking, is an
oracle here for the radius counts."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from scipy.spatial import cKDTree

from gpu_avatar.backend import CPU
from gpu_avatar.kernels import ranks, tree
from gpu_avatar.neighbours.distances import pairwise_squared
from gpu_avatar.neighbours.search import nearest_reference


def _grid(n: int, seed: int, values: int = 4, step: float = 1.0) -> np.ndarray:
    """Points on a grid of ``values`` steps a side: duplicates and exact ties at every
    distance."""
    return np.random.default_rng(seed).integers(0, values, size=(n, 3)) * step


@pytest.mark.parametrize("leaf_size", [tree.LEAF_SIZE, 1, 2])
def test_nearest_reference_is_the_lowest_index_among_the_nearest(leaf_size):
    references = _grid(300, 0)
    queries = np.vstack([_grid(80, 1), _grid(40, 2) + 0.5, references[::10]])
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        index, distance = nearest_reference(queries, references, CPU)
    squared = pairwise_squared(queries, references, np)
    np.testing.assert_array_equal(index, squared.argmin(axis=1))  # the first of the minima
    np.testing.assert_array_equal(distance, np.sqrt(squared.min(axis=1)))


def test_a_missing_reference_is_never_the_nearest_and_no_query_gets_no_answer():
    """The queries share walks from the box of their own tree's leaf: a NaN reference (whose
    node's box is NaN) is never taken, a query beside it still finds its nearest; an empty
    table of queries (its tree one empty leaf) gets empty answers."""
    references = _grid(200, 5)
    queries = references[:40] + 0.25
    references[[0, 7, 33], 1] = np.nan
    index, distance = nearest_reference(queries, references, CPU)
    with np.errstate(invalid="ignore"):
        squared = np.where(np.isnan(references).any(axis=1), np.inf,
                           pairwise_squared(queries, np.nan_to_num(references), np))
    np.testing.assert_array_equal(index, squared.argmin(axis=1))
    np.testing.assert_array_equal(distance, np.sqrt(squared.min(axis=1)))
    assert not {0, 7, 33} & set(index)
    index, distance = nearest_reference(np.empty((0, 3)), references, CPU)
    assert index.shape == distance.shape == (0,)


def test_queries_of_another_width_are_refused_and_no_avatar_ranks_nothing():
    """The shared walk reads every query coordinate the references have: a narrower table is
    refused, not read past its end. Against no avatar, an original counts none and is hidden
    by none (the rank walk of an empty tree)."""
    with pytest.raises(ValueError, match="same columns"):
        nearest_reference(np.zeros((5, 2)), np.ones((10, 3)), CPU)
    originals = _grid(7, 6)
    cloaking, hidden = ranks.ranks_among(np.empty((0, 3)), np.empty(0, np.int64), originals,
                                         np.arange(7), np.ones(7))  # fmt: skip
    assert cloaking.tolist() == [0] * 7 and not hidden.any()


def _within(queries, references, radius, limit):
    """The definition: references whose every coordinate differs by at most ``radius`` (a
    NaN difference never does), counted up to ``limit``."""
    with np.errstate(invalid="ignore"):
        close = (np.abs(queries[:, None, :] - references[None, :, :]) <= radius).all(axis=2)
    return np.minimum(close.sum(axis=1), limit)


@pytest.mark.parametrize("limit", [1, 2, 10**6])
@pytest.mark.parametrize("leaf_size", [tree.LEAF_SIZE, 1, 2])
def test_count_within_equals_the_definition_and_the_kd_tree(leaf_size, limit):
    """Differences of exactly the radius count (0.1-steps: rounding decides many pairs, as
    the subtraction does); a missing coordinate matches nothing. Queries match 0, 1 or
    several references."""
    references, queries = _grid(400, 3, 20, 0.1), _grid(150, 4, 20, 0.1)
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        got = ranks.count_within(queries, references, 0.1, limit)
    np.testing.assert_array_equal(got, _within(queries, references, 0.1, limit))
    found = cKDTree(references).query_ball_point(queries, r=0.1, p=np.inf, return_length=True)
    np.testing.assert_array_equal(got, np.minimum(found, limit))
    assert {0, 1, 2} < set(found)
    references[5, 1], queries[7, 0] = np.nan, np.nan
    with mock.patch.object(tree, "LEAF_SIZE", leaf_size):
        got = ranks.count_within(queries, references, 0.1, limit)
    np.testing.assert_array_equal(got, _within(queries, references, 0.1, limit))
    assert got[7] == 0

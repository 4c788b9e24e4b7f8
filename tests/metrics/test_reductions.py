"""Every distance-rank engine equals a plain O(n^2) float64 reference, ties included.

The reference below is written independently of ``gpu_avatar``: the full originals x avatars
matrix of squared distances, accumulated dimension by dimension (the arithmetic that
``distances.py`` documents, so that exact ties are decided on the same values), then

- ``local_cloaking[i] = #{j != i : d2[i, j] <= d2[i, i]}`` (the own avatar excluded by index);
- ``hidden[i]``: the first index of the row minimum is not ``i`` (another avatar at exactly the
  own distance hides ``i`` only when its index is lower);
- ``closest[a]`` / ``second_closest[a]``: the two smallest distances in column ``a``.

Integer counts and hidden flags must be identical; distances equal to 1e-12.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_avatar import AvatarError
from gpu_avatar.metrics import reductions
from gpu_avatar.metrics.reductions import distance_ranks

TILES = (1, 2, 7, 64)
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def reference_ranks(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Brute-force float64 reference on the full n x n matrix."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    squared = np.zeros((n, n))
    for d in range(x.shape[1]):
        diff = x[:, d][:, None] - y[:, d][None, :]
        squared = squared + diff * diff
    own = np.diag(squared).copy()
    rows = np.arange(n)
    # the own avatar always satisfies d2 <= own; count everything else
    cloaking = (squared <= own[:, None]).sum(axis=1) - 1
    hidden = np.argmin(squared, axis=1) != rows  # argmin: first index on ties
    by_avatar = np.sort(squared, axis=0)
    return {
        "own_distance": np.sqrt(own),
        "local_cloaking": cloaking,
        "hidden": hidden,
        "closest": np.sqrt(by_avatar[0]),
        "second_closest": np.sqrt(by_avatar[1]),
    }


def engine_runs(x: np.ndarray, y: np.ndarray):
    """(label, DistanceRanks) for every engine and several tile sizes."""
    for tile in TILES:
        yield f"brute tile={tile}", distance_ranks(x, y, engine="brute", tile=tile)
    yield "brute default tile", distance_ranks(x, y, engine="brute")
    yield from compiled_runs(x, y)
    yield "auto", distance_ranks(x, y, engine="auto")


def compiled_runs(x: np.ndarray, y: np.ndarray):
    """(label, DistanceRanks) of the compiled engine on deep trees (leaves of 1, 2, 5 points:
    pruning, whole nodes and mostly padded leaf slots) and shallow ones, with one shared walk
    or several (blocks of 3 originals)."""
    from gpu_avatar.kernels import ranks, tree

    for leaf_size in (tree.LEAF_SIZE, 1, 2, 5):
        for block in (ranks._RANK_BLOCK, 3):
            with (
                mock.patch.object(tree, "LEAF_SIZE", leaf_size),
                mock.patch.object(ranks, "_RANK_BLOCK", block),
            ):
                yield f"tree leaf={leaf_size} block={block}", distance_ranks(x, y, engine="kdtree")


def assert_matches_reference(x: np.ndarray, y: np.ndarray) -> None:
    expected = reference_ranks(x, y)
    for label, got in engine_runs(x, y):
        np.testing.assert_array_equal(
            got.local_cloaking, expected["local_cloaking"], err_msg=f"{label}: local cloaking"
        )
        assert got.local_cloaking.dtype.kind == "i", label
        np.testing.assert_array_equal(got.hidden, expected["hidden"], err_msg=f"{label}: hidden")
        assert got.hidden.dtype == bool, label
        for name in ("own_distance", "closest", "second_closest"):
            np.testing.assert_allclose(
                getattr(got, name),
                expected[name],
                rtol=1e-12,
                atol=1e-12,
                err_msg=f"{label}: {name}",
            )


# ------------------------------------------------------------------------ strategies
@st.composite
def random_pairs(draw):
    """Continuous coordinates, avatars = originals + noise of a random scale."""
    n = draw(st.integers(2, 40))
    d = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1e-6, 1e-2, 0.3, 1.0, 10.0]))
    offset = draw(st.sampled_from([0.0, 1.0, 1e4]))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) + offset
    y = x + scale * rng.standard_normal((n, d))
    return x, y


coordinate = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def arbitrary_floats(draw):
    """Coordinates chosen by hypothesis itself (it likes 0, repeats and boundary values)."""
    n = draw(st.integers(2, 12))
    d = draw(st.integers(1, 3))
    values = st.lists(coordinate, min_size=n * d, max_size=n * d)
    x = np.array(draw(values)).reshape(n, d)
    y = np.array(draw(values)).reshape(n, d)
    return x, y


@st.composite
def tie_heavy_pairs(draw):
    """Integer-valued coordinates in a tiny range, duplicated rows, avatars equal to their
    originals (d_own = 0) or to other originals, optionally rescaled by an inexact factor so
    that exact ties become float near-ties."""
    n = draw(st.integers(2, 40))
    d = draw(st.integers(1, 3))
    width = draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pool = rng.integers(-width, width + 1, size=(max(1, n // 3), d))
    x = pool[rng.integers(0, len(pool), size=n)].astype(np.float64)  # duplicated rows
    y = rng.integers(-width, width + 1, size=(n, d)).astype(np.float64)
    kind = rng.integers(0, 3, size=n)  # 0: random, 1: equal to own original, 2: another original
    y[kind == 1] = x[kind == 1]
    others = rng.integers(0, n, size=n)
    y[kind == 2] = x[others[kind == 2]]
    scale = draw(st.sampled_from([1.0, 0.1, 1.0 / 3.0, 1e3]))
    shift = draw(st.sampled_from([0.0, 0.7, 1e3]))
    return x * scale + shift, y * scale + shift


@given(random_pairs())
@PROPERTY_SETTINGS
def test_engines_equal_reference_on_random_inputs(pair):
    assert_matches_reference(*pair)


@given(arbitrary_floats())
@PROPERTY_SETTINGS
def test_engines_equal_reference_on_arbitrary_floats(pair):
    assert_matches_reference(*pair)


@given(tie_heavy_pairs())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_engines_equal_reference_on_tie_heavy_inputs(pair):
    assert_matches_reference(*pair)


# ------------------------------------------------------------------- explicit cases
def test_avatars_equal_to_originals_are_never_hidden_and_have_zero_cloaking():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 3))
    for _, got in engine_runs(x, x.copy()):
        assert not got.hidden.any()
        assert (got.local_cloaking == 0).all()
        assert (got.own_distance == 0).all()
        assert (got.closest == 0).all()
        assert (got.second_closest > 0).all()


def test_all_points_identical_ties_go_to_the_lower_index():
    # every distance is 0: every avatar ties with the own one; only row 0 has no lower index
    x = np.zeros((6, 2))
    expected_hidden = np.array([False, True, True, True, True, True])
    for label, got in engine_runs(x, x.copy()):
        np.testing.assert_array_equal(got.hidden, expected_hidden, err_msg=label)
        np.testing.assert_array_equal(got.local_cloaking, np.full(6, 5), err_msg=label)
        np.testing.assert_array_equal(got.second_closest, np.zeros(6), err_msg=label)


def test_hand_computed_one_dimensional_case():
    # originals 0, 1, 2, 3; avatars 0.5, 1, 1.5, 10 (1-D)
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([[0.5], [1.0], [1.5], [10.0]])
    # own distances 0.5, 0, 0.5, 7
    # row 0: avatar 1 at 1 > 0.5 -> cloaking 0, not hidden
    # row 1: own at 0, nothing else at 0 -> 0, not hidden
    # row 2: avatar 1 at 1 > 0.5 -> 0 and not hidden
    # row 3: avatars 0 (2.5), 1 (2), 2 (1.5) within 7 -> 3, hidden
    for label, got in engine_runs(x, y):
        np.testing.assert_array_equal(got.local_cloaking, [0, 0, 0, 3], err_msg=label)
        np.testing.assert_array_equal(got.hidden, [False, False, False, True], err_msg=label)
        np.testing.assert_allclose(got.closest, [0.5, 0.0, 0.5, 7.0], err_msg=label)
        np.testing.assert_allclose(got.second_closest, [0.5, 1.0, 0.5, 8.0], err_msg=label)


def test_tie_with_a_higher_index_does_not_hide_but_counts_in_cloaking():
    # original 0 at 0; its own avatar at +1, avatar 1 at -1: tied, higher index -> not hidden.
    # original 1 at 10; its own avatar at -1 (distance 11), avatar 0 at +1 (distance 9) -> hidden
    x = np.array([[0.0], [10.0], [20.0]])
    y = np.array([[1.0], [-1.0], [22.0]])
    for label, got in engine_runs(x, y):
        np.testing.assert_array_equal(got.hidden, [False, True, False], err_msg=label)
        np.testing.assert_array_equal(got.local_cloaking, [1, 1, 0], err_msg=label)
    # the same tie with the lower index hides
    x2 = np.array([[10.0], [0.0], [20.0]])
    y2 = np.array([[-1.0], [1.0], [22.0]])
    for label, got in engine_runs(x2, y2):
        assert got.hidden[1], label


def test_larger_tie_heavy_case_all_engines_identical():
    # WBCD-like: many duplicated integer rows, a few hundred points, heavy ties at every radius
    rng = np.random.default_rng(7)
    n = 1500
    x = rng.integers(0, 4, size=(n, 2)).astype(np.float64)
    y = x.copy()
    moved = rng.random(n) < 0.7
    y[moved] = rng.integers(0, 4, size=(moved.sum(), 2))
    expected = reference_ranks(x, y)
    for engine, tile in (("brute", 97), ("brute", None), ("kdtree", None)):
        got = distance_ranks(x, y, engine=engine, tile=tile)
        np.testing.assert_array_equal(got.local_cloaking, expected["local_cloaking"])
        np.testing.assert_array_equal(got.hidden, expected["hidden"])
        np.testing.assert_array_equal(got.closest, expected["closest"])
        np.testing.assert_array_equal(got.second_closest, expected["second_closest"])


def test_a_missing_coordinate_counts_nothing_in_the_compiled_engine_as_in_the_tiles():
    """A NaN compares false: its row counts and hides nothing, and a NaN avatar is inside no
    ball, in the compiled walk (blocks of originals, duplicated points) as in the tiles."""
    from gpu_avatar.kernels import ranks

    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, size=(300, 3)).astype(np.float64)
    y = x + rng.integers(0, 2, size=x.shape)
    x[5, 1] = np.nan
    y[[7, 200], 0] = np.nan
    tiles = distance_ranks(x, y, engine="brute")
    with mock.patch.object(ranks, "_RANK_BLOCK", 64):
        walk = distance_ranks(x, y, engine="kdtree")
    assert tiles.local_cloaking[5] == 0 and not tiles.hidden[5]
    np.testing.assert_array_equal(walk.local_cloaking, tiles.local_cloaking)
    np.testing.assert_array_equal(walk.hidden, tiles.hidden)


def _missing_cases():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 2))
    y = x + 0.3 * rng.normal(size=x.shape)
    y[0, 0] = np.nan  # the first stored avatar: every box used to start from it
    yield "first avatar", x, y
    x = rng.normal(size=(200, 2))
    y = x + 2.0 * rng.normal(size=x.shape)
    y[:40] = 0.1
    y[40] = [0.1, np.nan]  # a NaN copy among 40 duplicates, inside large balls
    yield "among duplicates", x, y
    x = 3.0 * rng.normal(size=(300, 2))
    y = x + 3.0 * rng.normal(size=x.shape)
    y[:60] = 0.01 * rng.normal(size=(60, 2))
    y[30, 1] = np.nan  # in a tight cluster that large balls hold whole
    yield "in a node held whole", x, y


@pytest.mark.parametrize("case", ["first avatar", "among duplicates", "in a node held whole"])
def test_a_missing_avatar_is_in_no_ball_and_hides_no_finite_one(case):
    """A node holding a NaN avatar is never skipped, counted whole or taken for duplicates:
    every finite avatar in it counts as in the tiles, the NaN one nowhere."""
    x, y = next((x, y) for label, x, y in _missing_cases() if label == case)
    tiles = distance_ranks(x, y, engine="brute")
    assert tiles.local_cloaking.max() > 0
    for label, got in compiled_runs(x, y):
        np.testing.assert_array_equal(got.local_cloaking, tiles.local_cloaking, err_msg=label)
        np.testing.assert_array_equal(got.hidden, tiles.hidden, err_msg=label)


def test_wide_coordinates_give_the_same_ranks_scanned_row_by_row():
    """Above ``SLOT_DIMENSIONS`` the compiled walk scans leaves row by row, same results."""
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, size=(120, 14)).astype(np.float64)
    y = x + rng.integers(-1, 2, size=x.shape)
    assert_matches_reference(x, y)


def test_expanded_formula_shortcut_would_disagree():
    """Guard the reason for the engine: |x|^2 + |y|^2 - 2 x.y with "minus one for the own
    avatar" miscounts; the engine matches the exact reference where the shortcut does not."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, size=(300, 3)).astype(np.float64) / 3.0 + 100.0
    y = x.copy()
    y[::2] = x[rng.permutation(300)][::2]
    expanded = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    shortcut = (expanded <= np.diag(expanded)[:, None]).sum(axis=1) - 1
    expected = reference_ranks(x, y)["local_cloaking"]
    assert (shortcut != expected).any()  # the data really exercise the failure
    for engine in ("brute", "kdtree", "numba"):
        np.testing.assert_array_equal(distance_ranks(x, y, engine=engine).local_cloaking, expected)


def test_auto_picks_the_tree_above_the_brute_budget():
    from gpu_avatar.kernels import cpu

    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, size=(200, 2)).astype(np.float64)
    y = rng.integers(0, 3, size=(200, 2)).astype(np.float64)
    expected = reference_ranks(x, y)
    with (
        mock.patch.object(cpu, "RANKS_BRUTE_MAX_ROWS", 10),
        mock.patch.object(reductions, "_tree", wraps=reductions._tree) as engine,
    ):
        got = distance_ranks(x, y)
    assert engine.call_count == 1
    np.testing.assert_array_equal(got.local_cloaking, expected["local_cloaking"])
    np.testing.assert_array_equal(got.hidden, expected["hidden"])


# --------------------------------------------------------------------------- errors
def test_unknown_engine_is_rejected():
    x = np.zeros((3, 2))
    with pytest.raises(AvatarError, match="engine"):
        distance_ranks(x, x, engine="annoy")


def test_shape_mismatch_is_rejected():
    with pytest.raises(AvatarError, match="same shape"):
        distance_ranks(np.zeros((4, 2)), np.zeros((3, 2)))


def test_fewer_than_two_rows_is_rejected():
    with pytest.raises(AvatarError, match="at least 2 rows"):
        distance_ranks(np.zeros((1, 2)), np.zeros((1, 2)))


def test_massive_ties():
    """Two distinct points only: every row has ~n/2 avatars at exactly its own distance."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2, size=(1200, 1)).astype(np.float64)
    y = rng.integers(0, 2, size=(1200, 1)).astype(np.float64)
    expected = reference_ranks(x, y)
    got = distance_ranks(x, y, engine="kdtree")
    np.testing.assert_array_equal(got.local_cloaking, expected["local_cloaking"])
    np.testing.assert_array_equal(got.hidden, expected["hidden"])


def test_leaf_slots_hold_each_leaf_once_and_pad_with_nan():
    from gpu_avatar.kernels import tree as kd

    points = np.random.default_rng(6).normal(size=(1000, 3))
    tree = kd.KDTree.build(points)
    columns, lane_order, first_lane = tree.leaf_slots()
    leaves = np.nonzero(tree.left < 0)[0]
    assert (first_lane[tree.left >= 0] == -1).all()
    assert sorted(lane_order[lane_order >= 0]) == list(range(1000))
    slots = np.stack(columns)
    assert np.isnan(slots[:, lane_order == -1]).all()
    for leaf in leaves:
        s, e, lane = tree.start[leaf], tree.stop[leaf], first_lane[leaf]
        np.testing.assert_array_equal(slots[:, lane : lane + e - s], points[tree.order[s:e]].T)
        np.testing.assert_array_equal(lane_order[lane : lane + e - s], tree.order[s:e])
    with mock.patch.object(kd, "LANES", 4), pytest.raises(ValueError, match="lanes"):
        tree.leaf_slots()

"""Exact copies: an avatar identical to an original row is counted (``exact_copies``, and by
how many originals hold the copied row), and ``zero_distance="bounded"`` keeps a duplicated
row from coming out as its own avatar, which the paper's weights do in every seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar import synthesis
from gpu_avatar.cli.commands import _privacy_line

SEEDS = range(5)
TWICE, THRICE = range(0, 8), range(8, 12)  # rows held by 2 and by 3 originals
COPIED = {2: 2 * len(TWICE), 3: 3 * len(THRICE)}  # originals holding the row: their avatars


def duplicated_table() -> pd.DataFrame:
    """100 distinct people (continuous values to 2 or 3 decimals, two categories), then 8 of
    them entered twice and 4 three times: 28 rows that another row duplicates, fewer than k."""
    rng = np.random.default_rng(7)
    n = 100
    people = pd.DataFrame({
        "weight": rng.normal(72.0, 12.0, n).round(2),
        "dose": rng.uniform(1.0, 5.0, n).round(3),
        "creatinine": rng.gamma(4.0, 20.0, n).round(2),
        "sex": rng.choice(["F", "M"], n),
        "stage": rng.choice(["I", "II", "III"], n),
    })
    repeated = [*TWICE, *THRICE, *THRICE]
    return pd.concat([people, people.iloc[repeated]], ignore_index=True)


def own_copies(original: pd.DataFrame, avatars: pd.DataFrame) -> np.ndarray:
    """Whether each avatar is identical to its own original row."""
    keys = pd.util.hash_pandas_object
    return keys(original, index=False).to_numpy() == keys(avatars, index=False).to_numpy()


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return duplicated_table()


@pytest.mark.parametrize("seed", SEEDS)
def test_paper_weights_copy_every_duplicated_row_and_the_copies_are_counted(table, seed):
    result = ga.avatarize(table, k=10, seed=seed, zero_distance="paper")
    avatars = result.sensitive_unshuffled_avatars
    duplicated = table.duplicated(keep=False).to_numpy()
    np.testing.assert_array_equal(own_copies(table, avatars), duplicated)
    privacy = result.privacy_metrics()
    assert privacy.exact_copies == duplicated.sum() == 28
    assert privacy.exact_copies_shared == COPIED
    assert privacy.to_frame().loc["exact_copies", "value"] == 28
    assert "exact copies 28 (16 of a row held by 2, 12 of a row held by 3)" in \
        _privacy_line(privacy)  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
def test_bounded_weights_copy_no_row(table, seed):
    result = ga.avatarize(table, k=10, seed=seed, zero_distance="bounded")
    privacy = result.privacy_metrics()
    assert privacy.exact_copies == 0 and privacy.exact_copies_shared == {}
    assert "exact copies" not in _privacy_line(privacy)
    assert result.parameters.zero_distance == "bounded"


def test_a_row_held_by_more_than_k_originals_is_copied_under_either_rule():
    """All k neighbours at distance 0: every neighbour holds the row, so its avatar is that
    row whatever the weights; the count says how many originals share it."""
    table = duplicated_table()
    table = pd.concat([table, table.iloc[[50] * 6]], ignore_index=True)  # row 50: 7 originals
    for rule in ("paper", "bounded"):
        privacy = ga.avatarize(table, k=5, seed=0, zero_distance=rule).privacy_metrics()
        assert privacy.exact_copies_shared.get(7) == 7, rule


def test_the_rules_differ_only_on_zero_distances():
    """A zero distance is raised to the row's nearest non-zero one (all zero: equal); the
    paper's rule gives it 1e-12; other distances are kept, so rows without a duplicate get
    the same weights, bit for bit."""
    distances = np.array([[0.0, 0.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0], [0.5, 1.0, 1.0, 4.0]])
    np.testing.assert_array_equal(
        synthesis.divisors(distances, "bounded"),
        [[2.0, 2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 1.0, 4.0]])
    np.testing.assert_array_equal(
        synthesis.divisors(distances, "paper"),
        [[1e-12, 1e-12, 2.0, 3.0], [1e-12] * 4, [0.5, 1.0, 1.0, 4.0]])
    seed = np.random.SeedSequence(4)
    paper, bounded = (synthesis.random_weights(distances, seed, 0, rule)
                      for rule in ("paper", "bounded"))  # fmt: skip
    np.testing.assert_array_equal(paper[2], bounded[2])
    assert paper[0, :2].sum() > 1 - 1e-9  # the duplicates take all the weight
    assert bounded[0, :2].sum() < 1 - 1e-3
    np.testing.assert_allclose(paper[1], bounded[1], rtol=1e-12)  # all zero: equal distances


def test_a_table_without_duplicates_gets_the_same_avatars_under_both_rules(aids):
    runs = [ga.avatarize(aids.df, k=20, ncp=5, seed=1, types=aids.types, zero_distance=rule)
            for rule in ("paper", "bounded")]  # fmt: skip
    pd.testing.assert_frame_equal(runs[0].avatars, runs[1].avatars, check_exact=True)


def test_bounded_weights_are_the_same_on_the_gpu(table, gpu):
    settings = dict(k=10, seed=3, zero_distance="bounded")
    cpu = ga.avatarize(table, backend="cpu", **settings).sensitive_unshuffled_avatars
    on_gpu = ga.avatarize(table, backend="gpu", **settings).sensitive_unshuffled_avatars
    pd.testing.assert_frame_equal(on_gpu, cpu, check_exact=False, rtol=1e-9)

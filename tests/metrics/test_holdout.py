"""split_holdout: a random, reproducible, lossless split of the rows before avatarization."""

from __future__ import annotations

import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.demo import load_aids


@pytest.fixture(scope="module")
def aids() -> pd.DataFrame:
    return load_aids()[0]


def test_every_row_goes_to_one_side_in_its_order(aids):
    before = aids.copy()
    training, holdout = ga.split_holdout(aids, fraction=0.2, seed=0)
    pd.testing.assert_frame_equal(aids, before)  # the input is not modified
    assert len(holdout) == round(0.2 * len(aids)) == 428 and len(training) == len(aids) - 428
    assert training.index.intersection(holdout.index).empty
    assert training.index.is_monotonic_increasing and holdout.index.is_monotonic_increasing
    pd.testing.assert_frame_equal(pd.concat([training, holdout]).sort_index(), aids)
    pd.testing.assert_series_equal(training.dtypes, aids.dtypes)


def test_the_same_seed_draws_the_same_split_and_others_differ(aids):
    first = ga.split_holdout(aids, seed=3)[1].index
    assert first.equals(ga.split_holdout(aids, seed=3)[1].index)
    assert not first.equals(ga.split_holdout(aids, seed=4)[1].index)
    # the holdout is a random sample, not the last rows: it spans the table
    assert first.min() < len(aids) // 10 and first.max() > len(aids) * 9 // 10


@pytest.mark.parametrize(
    ("fraction", "rows", "error", "message"),
    [
        (0.0, 100, ga.AvatarError, "choose 0 < fraction < 1"),
        (1.0, 100, ga.AvatarError, "choose 0 < fraction < 1"),
        (0.5, 4, ga.AvatarError, "leaves 2 training row"),
        (1.5, 100, ga.AvatarError, "fraction = 1.5 is out of range"),
        ("0.2", 100, ga.AvatarTypeError, "fraction must be a number"),
    ],
)
def test_splits_that_leave_nothing_to_avatarize_are_refused(aids, fraction, rows, error, message):
    with pytest.raises(error, match=message):
        ga.split_holdout(aids.iloc[:rows], fraction=fraction)
    with pytest.raises(ga.AvatarTypeError, match="expects a pandas DataFrame"):
        ga.split_holdout(aids.to_numpy())

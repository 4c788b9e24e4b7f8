"""The encoder: what it learns chunk by chunk equals what it learns from the whole table, the
column kinds users hold (text as object, str, string or category; timedeltas), and the errors
of a chunked fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.encoding import TableEncoder


def mixed(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "i": rng.integers(0, 50, n),
            "text": pd.Series(rng.choice(["b", "a", "c"], n), dtype="str"),
            "obj": pd.Series(rng.choice(["u", "v"], n), dtype=object),
            "cat": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "mid", "hi"]),
            "flag": rng.random(n) < 0.3,
            "when": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), "D"),
            "stay": pd.to_timedelta(rng.integers(1, 48, n), unit="h"),
        }
    )
    for column in ("x", "text", "obj", "cat", "stay"):
        frame.loc[rng.random(n) < 0.1, column] = None
    return frame


def test_chunk_by_chunk_is_the_whole_table():
    df = mixed()
    whole = TableEncoder().fit(df)
    chunked = TableEncoder()
    for start in range(0, len(df), 70):  # unequal chunks, some without a missing value
        chunked.partial_fit(df.iloc[start : start + 70])
    assert chunked.columns_ == whole.columns_
    for name in df.columns:
        ours, theirs = chunked.specs_[name], whole.specs_[name]
        assert (ours.kind, ours.has_missing, ours.missing, ours.rows) == (
            theirs.kind, theirs.has_missing, theirs.missing, theirs.rows,
        ), name  # fmt: skip
        if ours.kind == "categorical":
            assert list(ours.modalities) == list(theirs.modalities), name
            assert ours.fill_value == theirs.fill_value, name  # the mode's code
    np.testing.assert_array_equal(chunked.encode_codes(df), whole.transform(df).categorical)


def test_a_chunk_may_miss_a_column_entirely_but_the_table_may_not():
    df = pd.DataFrame({"x": [1.0, 2.0, np.nan, np.nan], "g": ["a", "b", "a", "b"]})
    encoder = TableEncoder().partial_fit(df.iloc[2:]).partial_fit(df.iloc[:2])
    assert encoder.empty_columns() == [] and encoder.specs_["x"].has_missing
    empty = TableEncoder().partial_fit(df.iloc[2:])
    assert empty.empty_columns() == ["x"]
    with pytest.raises(ga.AvatarError, match="imputation values"):
        empty.transform(df)  # partial_fit learns no fill value of a continuous column


def test_chunks_must_agree_on_dtypes_and_columns():
    df = mixed(60)
    encoder = TableEncoder().partial_fit(df)
    with pytest.raises(ga.AvatarError, match="'i' is float64 in this chunk but int64"):
        encoder.partial_fit(df.astype({"i": float}))
    with pytest.raises(ga.AvatarError, match="columns"):
        encoder.partial_fit(df.drop(columns="x"))


def test_timedeltas_are_continuous_and_come_back_as_timedeltas():
    df = mixed()
    result = ga.avatarize(df, k=8, seed=0)
    stay = result.avatars["stay"]
    assert stay.dtype == df["stay"].dtype  # timedelta64
    observed = df["stay"].dropna()
    assert stay.dropna().between(observed.min(), observed.max()).all()
    assert abs(stay.isna().mean() - df["stay"].isna().mean()) < 0.08
    assert TableEncoder().fit(df).specs_["stay"].kind == "continuous"


TEXT_DTYPES = ["object", "str", "string[python]", "string[pyarrow]", "category"]


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_text_held_any_way_is_one_kind_with_the_same_avatars(dtype):
    pytest.importorskip("pyarrow")
    df = mixed().drop(columns=["obj", "cat"])
    held = df.astype({"text": dtype})
    reference = ga.avatarize(df, k=8, seed=1).sensitive_unshuffled_avatars
    got = ga.avatarize(held, k=8, seed=1).sensitive_unshuffled_avatars
    assert got["text"].dtype == held["text"].dtype
    missing = reference["text"].isna()
    np.testing.assert_array_equal(got["text"].isna(), missing)  # NaN or NA, as the dtype holds
    assert got["text"][~missing].astype(object).tolist() == reference["text"][~missing].tolist()
    pd.testing.assert_frame_equal(got.drop(columns="text"), reference.drop(columns="text"))


def test_metrics_accept_originals_and_avatars_that_hold_text_differently():
    """pandas 3 reads text as ``str``: object originals against str avatars (and category)
    are the same table to the metrics."""
    df = mixed().drop(columns=["cat"]).astype({"text": object})
    avatars = ga.avatarize(df, k=8, seed=2).sensitive_unshuffled_avatars
    expected = ga.privacy_metrics(df, avatars).to_frame()
    for dtype in ("str", "category"):
        other = avatars.astype({"text": dtype, "obj": dtype})
        pd.testing.assert_frame_equal(ga.privacy_metrics(df, other).to_frame(), expected)
        signal = ga.signal_metrics(df, other).to_frame()
        pd.testing.assert_frame_equal(signal, ga.signal_metrics(df, avatars).to_frame())
    with pytest.raises(ga.AvatarError, match="dtypes differ"):  # text against numbers is not
        ga.privacy_metrics(df, avatars.astype({"text": "category"}).assign(i=avatars["i"] * 1.0))


def test_integers_near_their_type_limits_come_back_within_the_type():
    """float64 rounds 2**63 - 1 up to 2**63: decoded as is, it wraps to the most negative
    value (int64) or to 0 (uint64). Avatars stay within the type, next to the originals."""
    rng = np.random.default_rng(3)
    n = 60
    df = pd.DataFrame(
        {
            "signed": np.iinfo(np.int64).max - rng.integers(0, 1000, n),
            "unsigned": (np.iinfo(np.uint64).max - rng.integers(0, 1000, n).astype(np.uint64)),
            "x": rng.normal(size=n),
        }
    )
    declared = {"signed": "continuous", "unsigned": "continuous"}  # distinct in every row
    avatars = ga.avatarize(df, k=5, seed=0, types=declared).avatars
    assert avatars.dtypes.equals(df.dtypes)
    for column in ("signed", "unsigned"):
        gap = np.abs(avatars[column].to_numpy(float) - df[column].to_numpy(float))
        assert (gap <= 2**12).all(), column  # float64's spacing there is 2048


def test_fresh_identifiers_that_do_not_fit_the_column_type_are_refused():
    """200 fresh uint8 identifiers avoiding 50..249 would run past 255 and wrap onto real
    ones: refused, with the remedy."""
    df = pd.DataFrame(
        {"id": np.arange(50, 250, dtype=np.uint8), "x": np.random.default_rng(0).normal(size=200)}
    )
    with pytest.raises(ga.AvatarError, match=r"'id' \(uint8\) cannot hold fresh values.*399.*"
                       r"cast it to a wider integer type"):  # fmt: skip
        ga.avatarize(df, k=5, seed=0, types={"id": "identifier"})
    wide = df.astype({"id": np.int64})
    ids = ga.avatarize(wide, k=5, seed=0, types={"id": "identifier"}).avatars["id"]
    assert ids.is_unique and not ids.isin(wide["id"]).any()


def test_values_no_projection_can_place_are_refused_naming_the_column():
    df = mixed().drop(columns=["when", "stay"])
    with pytest.raises(ga.AvatarError, match="column 'x' holds infinite values"):
        ga.avatarize(df.assign(x=df["x"].where(df.index != 3, np.inf)), k=5)
    with pytest.raises(ga.AvatarError, match=r"column 'x' holds 1 value\(s\) above 1e\+150 in "
                       "magnitude, too large"):
        ga.avatarize(df.assign(x=df["x"].where(df.index != 3, 1e300)), k=5)
    encoder = TableEncoder().fit(df)  # and the tables projected afterwards
    with pytest.raises(ga.AvatarError, match="column 'x' holds infinite values"):
        encoder.transform(df.assign(x=np.inf))


def test_a_table_transformed_with_other_kinds_of_values_is_refused():
    """Text given as integers would all be unseen modalities; numbers given as text cannot
    be read: both refused, naming the columns and their dtypes."""
    df = mixed().drop(columns=["when", "stay"])
    encoder = TableEncoder().fit(df)
    with pytest.raises(ga.AvatarError, match=r"'text': \('str', 'int64'\)"):
        encoder.transform(df.assign(text=np.arange(len(df))))
    with pytest.raises(ga.AvatarError, match=r"'x': \('float64', 'str'\)"):
        encoder.transform(df.assign(x="abc"))
    narrower = df.assign(i=df["i"].astype(np.int32), obj=df["obj"].astype("str"))
    np.testing.assert_array_equal(encoder.transform(narrower).continuous,
                                  encoder.transform(df).continuous)  # fmt: skip

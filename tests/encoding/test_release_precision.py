"""Released values look like the originals: every continuous column comes back at the precision
it was recorded with (whole numbers, decimals, days, seconds), inside its observed range, learnt
chunk by chunk as from the whole table; integer types, nullable ones included, are kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.encoding import TableEncoder
from gpu_avatar.encoding.precision import decimals
from gpu_avatar.encoding.text_values import TextValues

AIDS = Path(ga.__file__).parent / "data" / "aids.csv"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """The AIDS table (cd496: whole numbers with blanks, read as float64; wtkg: up to 5
    decimals) with columns of the other precisions users hold."""
    df = pd.read_csv(AIDS, sep=";", na_values="NA").drop(columns="pidnum")  # an identifier
    rng = np.random.default_rng(0)
    visit = pd.Timestamp("1989-01-01") + pd.to_timedelta(df["days"], unit="D")
    seconds = pd.to_timedelta(rng.integers(0, 10**7, len(df)), unit="s")
    return df.assign(
        cd4_ratio=(df["cd40"] / df["cd80"]).round(1).mask(rng.random(len(df)) < 0.05),
        visit=visit,
        visit_paris=visit.dt.tz_localize("Europe/Paris"),  # three years of clock changes
        stamp=pd.Timestamp("2020-03-01 08:00") + seconds,
        delay=pd.to_timedelta(df["days"], unit="D"),
        karnof_na=df["karnof"].astype("Int64").mask(rng.random(len(df)) < 0.1),
    )


@pytest.fixture(scope="module")
def avatars(table) -> pd.DataFrame:
    return ga.avatarize(table, k=10, seed=0).avatars


def shown_decimals(series: pd.Series) -> int:
    """The most decimals a value of ``series`` shows when printed (42.0 shows none)."""
    return max(len(repr(v).partition(".")[2].rstrip("0")) for v in series.dropna())


def test_whole_numbers_with_blanks_come_back_whole_with_blanks(table, avatars):
    released, original = avatars["cd496"], table["cd496"]
    assert released.dtype == np.float64
    observed = released.dropna().to_numpy()
    np.testing.assert_array_equal(observed, np.rint(observed))
    assert released.isna().mean() == pytest.approx(original.isna().mean(), abs=0.05)


def test_decimals_come_back_at_the_recorded_precision(table, avatars):
    assert shown_decimals(table["cd4_ratio"]) == 1
    assert shown_decimals(avatars["cd4_ratio"]) == 1  # not 0.4273..., nor rounded to whole
    assert shown_decimals(avatars["wtkg"]) <= shown_decimals(table["wtkg"]) == 5


def test_dates_come_back_at_midnight_and_timestamps_to_the_second(table, avatars):
    for column in ("visit", "visit_paris"):  # midnight in local time, clock changes or not
        released = avatars[column]
        assert released.dtype == table[column].dtype
        assert (released == released.dt.normalize()).all(), column
    stamps = avatars["stamp"]
    assert (stamps == stamps.dt.floor("s")).all()
    assert (stamps.dt.second != 0).any()  # seconds are kept, not rounded further
    assert (avatars["delay"] == avatars["delay"].dt.floor("D")).all()


def test_integer_types_are_kept_nullable_ones_with_their_blanks(table, avatars):
    released = avatars["karnof_na"]
    assert released.dtype == "Int64" and released.isna().any()
    for column in table.columns[table.dtypes == np.int64]:
        assert avatars[column].dtype == np.int64, column


@pytest.mark.parametrize("dtype", ["Int32", "UInt8"])
def test_narrow_nullable_integers_are_kept(table, dtype):
    df = table[["age", "wtkg", "cd496"]].assign(score=(table["karnof"] // 10).astype(dtype))
    df.loc[::7, "score"] = pd.NA
    released = ga.avatarize(df, k=5, seed=0).avatars["score"]
    assert released.dtype == dtype and released.isna().any()
    assert released.min() >= df["score"].min() and released.max() <= df["score"].max()


def test_rounding_keeps_released_values_in_the_observed_range(table, avatars):
    for column in table.columns:
        assert avatars[column].min() >= table[column].min(), column
        assert avatars[column].max() <= table[column].max(), column


def test_direct_match_protection_compares_released_values(table):
    result = ga.avatarize(table, k=10, seed=0)
    per_variable = result.privacy_metrics().column_direct_match_protection_per_variable
    assert set(per_variable) == set(map(str, table.columns))
    assert all(0.0 <= value <= 100.0 for value in per_variable.values())
    assert per_variable["cd496"] < 100.0  # released whole, some unique originals reappear


def test_a_chunked_fit_learns_the_precision_of_the_whole_table(table):
    df = table[["wtkg", "cd4_ratio", "visit", "stamp", "karnof_na"]].copy()
    first = np.arange(len(df)) < 1000
    df["cd4_ratio"] = df["cd4_ratio"].where(~first, df["cd4_ratio"].round())  # whole, then 0.1
    df["when"] = df["visit"].where(first, df["stamp"])  # days, then seconds
    df.loc[first, "wtkg"] = np.nan  # the first chunk shows no value
    whole = TableEncoder().fit(df)
    chunked = TableEncoder().partial_fit(df.iloc[:1000]).partial_fit(df.iloc[1000:])
    for name in df.columns:
        ours, theirs = chunked.specs_[name], whole.specs_[name]
        assert (ours.decimals, ours.time_step, ours.low, ours.high) == (
            theirs.decimals, theirs.time_step, theirs.low, theirs.high,
        ), name  # fmt: skip
    encoded = whole.transform(df)
    rng = np.random.default_rng(1)  # values between the originals, as avatars are
    continuous = (encoded.continuous + rng.permutation(encoded.continuous)) / 2
    released = whole.decode(continuous, encoded.categorical)
    pd.testing.assert_frame_equal(chunked.decode(continuous, encoded.categorical), released)
    assert shown_decimals(released["cd4_ratio"]) == 1
    assert (released["when"] == released["when"].dt.floor("s")).all()
    assert (released["when"] != released["when"].dt.normalize()).any()


def test_decimals_allow_for_float_representation_error_only():
    assert decimals(np.array([0.1 + 0.2, 1.25, np.nan])) == 2  # 0.30000000000000004: one
    assert decimals(np.array([41.0, 1e20, 0.0])) == 0
    assert decimals(np.array([1 / 3])) is None  # more than 8: released as computed
    assert decimals(np.array([1.0, 1.5e-10])) is None  # a tiny value is not rounded to 0
    assert decimals(np.array([np.nan])) == 0  # a chunk of blanks needs nothing
    float32 = np.array([0.1, 2.5], dtype=np.float32).astype(np.float64)  # 0.10000000149...
    assert decimals(float32, np.float32) == 1 and decimals(float32, pd.Float32Dtype()) == 1


def test_the_typical_precision_is_released_not_the_finest():
    rng = np.random.default_rng(0)
    creatinine = np.round(rng.normal(80, 20, 1354), 1)  # one decimal in all but 4 rows
    creatinine[:4] += [0.01, 0.02, 0.03, 0.04]
    df = pd.DataFrame({"creatinine": creatinine, "age": rng.integers(20, 90, 1354)})
    whole = TableEncoder().fit(df)
    chunked = TableEncoder().partial_fit(df.iloc[:677]).partial_fit(df.iloc[677:])
    assert whole.specs_["creatinine"].decimals == chunked.specs_["creatinine"].decimals == 1
    encoded = whole.transform(df)
    continuous = (encoded.continuous + rng.permutation(encoded.continuous)) / 2
    assert shown_decimals(whole.decode(continuous, encoded.categorical)["creatinine"]) == 1
    assert decimals(np.r_[np.full(19, 0.5), 0.25]) == 1  # 95 % of the values show one
    assert decimals(np.r_[np.full(18, 0.5), 0.25, 0.125]) == 2  # 90 %: two for 95 %
    assert decimals(np.r_[np.full(18, 0.5), [1 / 3, 2 / 3]]) is None


def test_text_numbers_are_written_with_the_decimals_most_are_written_with():
    series = pd.Series(["12,5", "7,0", "3,25"] + ["1,5"] * 40 + [None], name="x")
    text = TextValues.declared(series, "continuous")
    text.add(series.iloc[:20])
    other = text.blank()
    other.add(series.iloc[20:])
    text.merge(other)
    assert text.decimals == 1
    written = text.decode(np.array([2.25, 3.0]), None, object)
    assert written.tolist() == ["2,2", "3,0"]  # half to even


def test_decoding_rounds_half_to_even_inside_the_range_it_was_in():
    df = pd.DataFrame(
        {
            "x": [0.1 + 0.2, 0.5, 0.7, 0.6],  # one decimal; the lowest is not exactly 0.3
            "whole": [1.0, 2.0, 5.0, np.nan],
            "ms": pd.to_datetime(["2020-01-01 00:00:00.123", "2020-01-02 10:00:00.5"] * 2),
        }
    ).astype({"ms": "M8[ns]"})
    encoder = TableEncoder().fit(df)
    ms = pd.Timestamp("2020-01-01 12:00:00.1234567").value / 1e9
    values = np.array([[0.31, 2.5, ms], [0.74, 3.5, ms], [0.23, 1.2, ms]])
    missing = np.zeros((3, 1), dtype=np.int64)
    released = encoder.decode(values, missing)
    # 0.31 rounds to 0.3, below the lowest value (kept there); 0.23, outside, is still rounded
    assert released["x"].tolist() == [0.1 + 0.2, 0.7, 0.2]
    assert released["whole"].tolist() == [2.0, 4.0, 1.0]  # half to even, as integers
    assert (released["ms"] == pd.Timestamp("2020-01-01 12:00:00.123")).all()


def test_a_day_whose_midnight_does_not_exist_gets_its_first_instant():
    days = pd.to_datetime(["2018-11-02", "2018-11-03", "2018-11-05", "2018-11-06"])
    df = pd.DataFrame({"day": days.tz_localize("America/Sao_Paulo"), "x": [1.0, 2.0, 3.0, 4.0]})
    encoder = TableEncoder().fit(df)  # clocks went from 00:00 to 01:00 on 2018-11-04
    morning = pd.Timestamp("2018-11-04 10:00", tz="America/Sao_Paulo").value / 1e9
    released = encoder.decode(np.array([[morning, 2.0]]), np.zeros((1, 0), dtype=np.int64))
    assert released["day"].iloc[0] == pd.Timestamp("2018-11-04 01:00", tz="America/Sao_Paulo")

"""Tables with rules for the rules' tests: the AIDS originals with columns derived from
them (dates, shares, a total), their avatars, and neighbours to repair from."""

from __future__ import annotations

import pandas as pd
import pytest
from rule_helpers import avatars_of


@pytest.fixture(scope="session")
def table(aids) -> pd.DataFrame:
    """AIDS plus: ``entry`` and ``end`` dates (end = entry + days, after it), ``mid`` a date
    between them, three shares of 0.01 adding up to 1, ``cdsum`` = cd40 + cd80 and ``age5``
    (age to a multiple of 5)."""
    df = aids.df.copy()
    df["entry"] = pd.Timestamp("1990-01-01") + pd.to_timedelta(df["age"] * 7, unit="D")
    df["end"] = df["entry"] + pd.to_timedelta(df["days"], unit="D")
    df["mid"] = df["entry"] + pd.to_timedelta(df["days"] // 2, unit="D")
    total = df["cd40"] + df["cd80"] + df["cd420"]
    df["s1"] = (df["cd40"] / total).round(2)
    df["s2"] = (df["cd80"] / total).round(2)
    df["s3"] = (1 - df["s1"] - df["s2"]).round(2)
    df["cdsum"] = df["cd40"] + df["cd80"]
    df["age5"] = (df["age"] / 5).round() * 5
    return df


@pytest.fixture(scope="session")
def types(aids) -> dict:
    """The paper's kinds: AIDS columns with <= 10 distinct values are categorical."""
    return dict(aids.types)


@pytest.fixture(scope="session")
def avatars(table, types) -> pd.DataFrame:
    return avatars_of(table, types)

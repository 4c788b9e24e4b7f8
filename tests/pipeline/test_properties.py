"""Property tests: avatarize() on random small mixed tables keeps its contract.

Tables: 10 to 60 rows; 1 to 3 continuous columns (float, int, constant, few distinct values);
1 to 3 categorical columns (text object, pandas ``str``, category with unused categories, bool,
nullable boolean); optional missing cells; sometimes integer column labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_avatar as ga

CONTINUOUS_KINDS = ("float", "int", "constant", "few_values", "float32")
CATEGORICAL_KINDS = ("object", "str", "category", "bool", "boolean")
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _with_missing(values: pd.Series, rng: np.random.Generator, rate: float, marker) -> pd.Series:
    holes = rng.random(len(values)) < rate
    holes[rng.integers(len(values))] = False  # never an all-missing column
    values = values.copy()
    values[holes] = marker
    return values


@st.composite
def mixed_tables(draw):
    """(table, k, seed) with a random mix of column kinds."""
    n = draw(st.integers(10, 60))
    continuous = draw(st.lists(st.sampled_from(CONTINUOUS_KINDS), min_size=1, max_size=3))
    categorical = draw(st.lists(st.sampled_from(CATEGORICAL_KINDS), min_size=1, max_size=3))
    missing_rate = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3, 0.6]))
    integer_labels = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    columns = {}
    for kind in continuous:
        if kind == "float":
            values = pd.Series(rng.normal(rng.uniform(-100, 100), rng.uniform(0.1, 50), n))
            values = _with_missing(values, rng, missing_rate, np.nan)
        elif kind == "float32":
            values = pd.Series(rng.normal(0, 1, n).astype(np.float32))
        elif kind == "int":
            # ten distinct values: an integer distinct on (nearly) every row is an identifier
            values = pd.Series(rng.integers(-5, 5, n) * 200)
        elif kind == "constant":
            values = pd.Series(np.full(n, 7, dtype=np.int64))
        else:
            values = pd.Series(rng.choice([0.0, 1.5, 3.0], n))
            values = _with_missing(values, rng, missing_rate, np.nan)
        columns[f"{kind}_{len(columns)}"] = values
    for kind in categorical:
        modalities = [f"m{i}" for i in range(int(rng.integers(1, 6)))]
        text = rng.choice(modalities, n)
        if kind == "object":
            values = _with_missing(pd.Series(text, dtype=object), rng, missing_rate, None)
        elif kind == "str":
            values = _with_missing(pd.Series(text, dtype="str"), rng, missing_rate, np.nan)
        elif kind == "category":
            values = pd.Series(pd.Categorical(text, categories=[*modalities, "never_seen"]))
            values = _with_missing(values, rng, missing_rate, np.nan)
        elif kind == "bool":
            values = pd.Series(rng.random(n) < rng.uniform(0.05, 0.95))
        else:
            values = pd.Series(pd.array(rng.random(n) < 0.5, dtype="boolean"))
            values = _with_missing(values, rng, missing_rate, pd.NA)
        columns[f"{kind}_{len(columns)}"] = values
    df = pd.DataFrame(columns)
    order = rng.permutation(df.shape[1])
    df = df.iloc[:, order]
    if integer_labels:
        df.columns = list(range(10, 10 + df.shape[1]))
    k = draw(st.integers(2, min(n - 1, 10)))
    seed = draw(st.integers(0, 2**63 - 1))
    return df, k, seed


def _categorical_columns(df: pd.DataFrame) -> list:
    return [
        c for c in df.columns
        if df[c].dtype == object or isinstance(df[c].dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(df[c].dtype) or pd.api.types.is_string_dtype(df[c].dtype)
    ]


@FAST
@given(mixed_tables())
def test_output_contract(case):
    df, k, seed = case
    before = df.copy(deep=True)
    result = ga.avatarize(df, k=k, ncp=3, seed=seed)
    pd.testing.assert_frame_equal(df, before, check_exact=True)  # input untouched

    for frame in (result.avatars, result.sensitive_unshuffled_avatars):
        assert frame.shape == df.shape
        assert list(frame.columns) == list(df.columns)
        for column in df.columns:
            assert frame[column].dtype == df[column].dtype, column
    assert result.sensitive_unshuffled_avatars.index.equals(df.index)

    avatars = result.avatars
    for column in _categorical_columns(df):
        produced = set(avatars[column].dropna().tolist())
        assert produced <= set(df[column].dropna().tolist()), column
    for column in df.columns.difference(_categorical_columns(df), sort=False):
        observed = df[column].dropna().astype(float)
        produced = avatars[column].dropna().astype(float)
        if produced.empty:  # every avatar drew "missing"
            continue
        # Exact: an avatar value is a weighted mean of neighbours' values, clipped to them.
        assert produced.min() >= observed.min(), column
        assert produced.max() <= observed.max(), column
    for column in df.columns:
        if not df[column].isna().any():
            assert not avatars[column].isna().any(), column


@FAST
@given(mixed_tables())
def test_same_seed_same_avatars(case):
    df, k, seed = case
    first = ga.avatarize(df, k=k, seed=seed)
    second = ga.avatarize(df, k=k, seed=seed)
    pd.testing.assert_frame_equal(first.avatars, second.avatars, check_exact=True)
    pd.testing.assert_frame_equal(
        first.sensitive_unshuffled_avatars, second.sensitive_unshuffled_avatars,
        check_exact=True,
    )
    assert first.seed == second.seed


# The missing rate is random (the indicator is drawn like any categorical value): fixed
# examples keep this statistical check reproducible in CI.
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(mixed_tables())
def test_missing_rate_is_kept(case):
    df, k, seed = case
    avatars = ga.avatarize(df, k=k, seed=seed).avatars
    n = len(df)
    for column in df.columns:
        rate = df[column].isna().mean()
        produced = avatars[column].isna().mean()
        tolerance = 0.15 + 3 * np.sqrt(rate * (1 - rate) / n)
        assert abs(produced - rate) <= tolerance, (column, rate, produced)

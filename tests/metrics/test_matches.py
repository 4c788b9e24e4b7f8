"""Direct matches on integer codes (``metrics/matches.py``): the same values as a
straightforward reference (Python tuples in dicts) and as the 64-bit row hash used before,
on tables built to trip them: missing values of every kind, 0.1 + 0.2 against 0.3, -0.0
against 0.0 (equal, as pandas' hash had them), integers at the ends of their range,
categories against text, nullable dtypes; the CuPy stand-in gives the same values; the
grouping stays exact when every value hashes to one of four slots."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.backend import CPU
from gpu_avatar.metrics import matches

MISSING = object()  # what every missing value is, in the reference
SEEDS = range(6)


# ---------------------------------------------------------------------------- the tables
def _pools() -> dict[str, tuple[list, str | None]]:
    """Per column: values to draw from (the originals from the first half, the avatars from
    all of it) and a dtype."""
    day = pd.Timestamp("2024-02-29")
    return {
        "float": ([0.1 + 0.2, 0.3, -0.0, np.nan, 1e300, 0.0, -1e-300, 2.5], "float64"),
        "float32": ([np.float32(0.1), np.nan, np.float32(-0.0), np.float32(1 / 3), 0.0],
                    "float32"),  # fmt: skip
        "small_int": ([-3, 0, 2, 1, 3, -1], "int64"),
        "wide_int": ([-(2**63), 2**63 - 1, 0, -1, 2**62], "int64"),
        "uint": ([2**64 - 1, 0, 2**63, 7], "uint64"),
        "flag": ([True, False], "bool"),
        "category": (["a", "b", np.nan, "c", "d"], "category"),
        "int_category": ([1, 2, np.nan, 3], "category"),
        "text": (["x", "", None, "é", np.nan, "y"], "object"),
        "str": (["x", None, "y", "z"], "str"),
        "date": ([day, pd.NaT, day + pd.Timedelta(days=1), pd.Timestamp("1970-01-01")],
                 "datetime64[ns]"),  # fmt: skip
        "delay": ([pd.Timedelta(0), pd.NaT, pd.Timedelta(seconds=1)], "timedelta64[ns]"),
        "nullable_int": ([1, pd.NA, -(2**63), 2], "Int64"),
        "nullable_float": ([0.0, pd.NA, -0.0, 0.1 + 0.2, 0.3], "Float64"),
        "nullable_flag": ([True, pd.NA, False], "boolean"),
    }


def _column(pool: list, dtype: str | None, picks: np.ndarray) -> pd.Series:
    values = [pool[i] for i in picks]
    if dtype == "category":
        return pd.Series(pd.Categorical(values, categories=[v for v in pool if not pd.isna(v)]))
    return pd.Series(values, dtype=dtype)


def tricky_tables(seed: int, n: int = 300, m: int = 280) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Originals with repeated rows, avatars partly copied from them, partly drawn from
    values the originals never hold; a few columns at a time, so whole rows repeat."""
    rng = np.random.default_rng(seed)
    pools = _pools()
    names = rng.choice(list(pools), size=4, replace=False)
    copied = rng.choice(n, size=m // 3, replace=False)
    original, avatars = {}, {}
    for name in names:
        pool, dtype = pools[name]
        half = max(len(pool) // 2, 1)
        original[name] = _column(pool, dtype, rng.integers(0, half + 1, n))
        drawn = _column(pool, dtype, rng.integers(0, len(pool), m - len(copied)))
        avatars[name] = pd.concat([original[name].iloc[copied], drawn], ignore_index=True)
    return pd.DataFrame(original), pd.DataFrame(avatars)


# ------------------------------------------------------------------- straightforward one
def _key(value) -> object:
    return MISSING if pd.isna(value) else value  # -0.0 == 0.0, 1 == 1.0: one dict key


def _rows(table: pd.DataFrame) -> list[tuple]:
    columns = [table[c].tolist() for c in table.columns]
    return [tuple(_key(v) for v in row) for row in zip(*columns, strict=True)]


def reference(original: pd.DataFrame, avatars: pd.DataFrame) -> matches.DirectMatches:
    n = len(original)
    protection = {}
    for name in original.columns:
        own = [_key(v) for v in original[name].tolist()]
        present = {_key(v) for v in avatars[name].tolist()} - {MISSING}
        counts = Counter(own)
        exposed = sum(counts[v] == 1 and v in present for v in own)
        protection[str(name)] = 100.0 * (1.0 - exposed / n)
    own_rows, their_rows = _rows(original), _rows(avatars)
    held, present_rows = Counter(own_rows), set(their_rows)
    copies = Counter(held[row] for row in their_rows if held[row])
    return matches.DirectMatches(
        column_protection=protection,
        row_protection=100.0 * (1.0 - sum(row in present_rows for row in own_rows) / n),
        exact_copies=dict(sorted(copies.items())),
    )


def reference_hidden_rate(original, avatars, variables) -> float:
    own, theirs = _rows(original[variables]), _rows(avatars[variables])
    matching = Counter(theirs)
    at_risk = sum(o == t and matching[o] == 1 for o, t in zip(own, theirs, strict=True))
    return 100.0 * (1.0 - at_risk / len(own))


def reference_unique(original, variables) -> np.ndarray:
    rows = _rows(original[variables])
    counts = Counter(rows)
    return np.array([counts[row] == 1 for row in rows])


# --------------------------------------------------------------- the 64-bit hash, before
def _hashed(df: pd.DataFrame) -> np.ndarray:
    return pd.util.hash_pandas_object(df, index=False).to_numpy()


def hashed(original: pd.DataFrame, avatars: pd.DataFrame) -> matches.DirectMatches:
    """The direct-match metrics as privacy.py computed them before the integer codes."""
    protection = {}
    for column in original.columns:
        values = original[column]
        counts = values.value_counts(dropna=False)
        unique_values = counts.index[counts.to_numpy() == 1]
        exposed = values.isin(unique_values) & values.isin(avatars[column].dropna().unique())
        protection[str(column)] = 100.0 * (1.0 - exposed.to_numpy().mean())
    held = pd.Series(_hashed(original)).value_counts()
    shared = held.reindex(_hashed(avatars), fill_value=0).to_numpy()
    counts = np.bincount(shared)
    return matches.DirectMatches(
        column_protection=protection,
        row_protection=100.0 * (1.0 - np.isin(_hashed(original), _hashed(avatars)).mean()),
        exact_copies={int(s): int(counts[s]) for s in np.flatnonzero(counts) if s > 0},
    )


# -------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("seed", SEEDS)
def test_direct_matches_equal_the_reference_and_the_hash(seed):
    original, avatars = tricky_tables(seed)
    got = matches.direct_matches(original, avatars, CPU)
    assert got == reference(original, avatars), list(original.columns)
    assert got == hashed(original, avatars), list(original.columns)
    assert got.exact_copies  # the tables do hold copies


@pytest.mark.parametrize("seed", SEEDS)
def test_rows_on_some_variables_equal_the_reference(seed):
    original, avatars = tricky_tables(seed, m=300)  # row i: the avatar of original i
    variables = list(original.columns[:2])
    assert matches.categorical_hidden_rate(original, avatars, variables, CPU) == \
        reference_hidden_rate(original, avatars, variables)  # fmt: skip
    np.testing.assert_array_equal(
        matches.unique_rows(original, variables, CPU), reference_unique(original, variables)
    )


def test_every_dtype_alone():
    """Each kind of column on its own, so that none hides behind another."""
    for name in _pools():
        for seed in range(3):
            original, avatars = tricky_tables(seed)
            rng = np.random.default_rng(seed)
            pool, dtype = _pools()[name]
            original = pd.DataFrame({name: _column(pool, dtype, rng.integers(0, len(pool), 50))})
            avatars = pd.DataFrame({name: _column(pool, dtype, rng.integers(0, len(pool), 40))})
            got = matches.direct_matches(original, avatars, CPU)
            assert got == reference(original, avatars), name
            assert got == hashed(original, avatars), name


def test_floats_compare_exactly_and_minus_zero_is_zero():
    original = pd.DataFrame({"x": [0.1 + 0.2, -0.0, np.nan, 1.0, 2.0]})
    avatars = pd.DataFrame({"x": [0.3, 0.0, np.nan, np.nextafter(1.0, 2.0), 5.0]})
    got = matches.direct_matches(original, avatars, CPU)
    # -0.0 is found as 0.0; 0.1 + 0.2 is not 0.3; 1.0 is not the next float; NaN is missing
    # (equal to NaN as a row, never "appearing" as a value)
    assert got.column_protection == {"x": 80.0}
    assert got.row_protection == 60.0
    assert got.exact_copies == {1: 2}


def test_text_held_as_a_category_equals_the_same_text():
    """check_same_table casts avatars' text to the original categories' dtype: the original
    is a category, the avatars str."""
    original = pd.DataFrame({"g": pd.Categorical(["a", "b", None, "c"]), "x": [1, 2, 3, 4]})
    avatars = pd.DataFrame({"g": pd.Series(["a", "c", None, "z"], dtype="str"),
                            "x": [1, 4, 3, 4]})  # fmt: skip
    got = matches.direct_matches(original, avatars, CPU)
    assert got == reference(original, avatars) == hashed(original, avatars)
    assert got.exact_copies == {1: 3}  # (a, 1), (NaN, 3) and (c, 4)


def test_many_columns_overflow_one_word():
    """30 columns of 5 codes (5^30 > 2^63): the packing groups, then splits."""
    rng = np.random.default_rng(3)
    original = pd.DataFrame({f"c{j}": rng.integers(0, 5, 400) for j in range(30)})
    original.iloc[200:] = original.iloc[:200].to_numpy()  # every row twice
    avatars = original.sample(frac=0.5, random_state=1).reset_index(drop=True)
    avatars.iloc[::3, 7] = 9  # a value the originals never hold
    got = matches.direct_matches(original, avatars, CPU)
    assert got == reference(original, avatars)
    assert got.exact_copies == reference(original, avatars).exact_copies != {}


def test_rows_split_on_two_words_when_one_would_overflow():
    total = 50
    rng = np.random.default_rng(0)
    first = rng.integers(0, 5, total)
    second = rng.integers(0, 4, total) * (2**61)  # codes in a range of 2^63: two words
    rows = matches._Rows(total, CPU)
    rows.add(matches.Codes(matches.group([first.astype(np.uint64)], CPU), total, rows=True))
    rows.add(matches.Codes(second.astype(np.int64), 2**63 - 1))
    codes, size = rows.codes()
    pairs = list(zip(first.tolist(), second.tolist(), strict=True))
    for i in range(total):
        for j in range(total):
            assert (codes[i] == codes[j]) == (pairs[i] == pairs[j])
    assert size == total


def test_grouping_is_exact_when_every_value_collides(monkeypatch):
    """A hash that sends every value to one of four slots: the rounds go on until every row
    found a row with its own values, and no row takes another value's code."""
    monkeypatch.setattr(matches, "_mix", lambda word, xp: word & xp.uint64(3))
    rng = np.random.default_rng(1)
    values = rng.integers(0, 60, 500).astype(np.uint64) * np.uint64(4)  # all in slot 0
    codes = matches.group([values], CPU)
    assert (values[codes] == values).all()  # each code is a row with the same value
    assert len(np.unique(codes)) == len(np.unique(values))  # one code per value
    original, avatars = tricky_tables(2)
    assert matches.direct_matches(original, avatars, CPU) == reference(original, avatars)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_the_gpu_gives_the_same_values(seed, gpu):
    original, avatars = tricky_tables(seed, m=300)
    variables = list(original.columns[1:3])
    assert matches.direct_matches(original, avatars, gpu) == \
        matches.direct_matches(original, avatars, CPU)  # fmt: skip
    assert matches.categorical_hidden_rate(original, avatars, variables, gpu) == \
        matches.categorical_hidden_rate(original, avatars, variables, CPU)  # fmt: skip
    np.testing.assert_array_equal(
        matches.unique_rows(original, variables, gpu),
        matches.unique_rows(original, variables, CPU),
    )


def test_privacy_metrics_leave_identifiers_out_and_agree_on_the_gpu(gpu):
    """Through the public call: an avatar equal to an original row but for its identifier
    is a copy; the GPU backend reports the same direct-match values."""
    rng = np.random.default_rng(5)
    n = 60
    original = pd.DataFrame({
        "id": np.arange(n),
        "x": rng.integers(0, 6, n) * 0.1,  # 0.30000000000000004 among them
        "g": pd.Categorical(rng.choice(["u", "v", "w"], n)),
        "t": rng.choice(["p", "q"], n).astype(object),
    })  # fmt: skip
    avatars = original.sample(frac=1.0, random_state=0).reset_index(drop=True)
    avatars["id"] = np.arange(n) + 1000
    avatars.loc[::2, "x"] += 0.05
    settings = dict(types={"id": "identifier"}, check_alignment=False,
                    categorical_hidden_rate_variables=["g", "t"], known_variables=["g", "t"])
    on_cpu = ga.privacy_metrics(original, avatars, backend="cpu", **settings)
    on_gpu = ga.privacy_metrics(original, avatars, backend=gpu, **settings)
    variables = ["x", "g", "t"]
    expected = reference(original[variables], avatars[variables])
    assert on_cpu.exact_copies_shared == expected.exact_copies
    assert on_cpu.exact_copies == sum(expected.exact_copies.values()) > 0
    assert on_cpu.row_direct_match_protection == expected.row_protection
    assert on_cpu.column_direct_match_protection_per_variable == expected.column_protection
    assert on_cpu.categorical_hidden_rate == reference_hidden_rate(original, avatars, ["g", "t"])
    for name in ("exact_copies", "exact_copies_shared", "row_direct_match_protection",
                 "column_direct_match_protection_per_variable", "categorical_hidden_rate",
                 "correlation_protection_rate"):  # fmt: skip
        assert getattr(on_gpu, name) == getattr(on_cpu, name), name


def test_avatars_missing_everywhere_in_a_column(cupy13):
    """No avatar value to appear (CuPy 13 cannot bincount an empty array): nothing is
    exposed in that column, and missing rows still equal missing rows."""
    original = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0], "g": ["a", "b", "c", "d"]})
    avatars = pd.DataFrame({"x": [np.nan] * 4, "g": ["a", "b", "c", "z"]})
    for backend in (CPU, cupy13):
        got = matches.direct_matches(original, avatars, backend)
        assert got == reference(original, avatars) == hashed(original, avatars)
        assert got.column_protection["x"] == 100.0 and got.exact_copies == {1: 1}


def test_a_column_of_few_values_first():
    """The first float column leaves every row alike; the next, of distinct values, takes
    over as the codes to split (the rows' codes are the same either way)."""
    rng = np.random.default_rng(4)
    n = 2000
    original = pd.DataFrame({"few": rng.integers(0, 5, n) * 1.0, "many": rng.standard_normal(n),
                             "g": rng.choice(["a", "b"], n)})  # fmt: skip
    avatars = pd.DataFrame({"few": rng.integers(0, 5, n) * 1.0, "many": rng.standard_normal(n),
                            "g": rng.choice(["a", "b"], n)})  # fmt: skip
    avatars.iloc[::10] = original.iloc[::10].to_numpy()
    original.iloc[1::10] = original.iloc[::10].to_numpy()  # rows held by two originals
    got = matches.direct_matches(original, avatars, CPU)
    assert got == reference(original, avatars)
    assert got.exact_copies == {2: n // 10}

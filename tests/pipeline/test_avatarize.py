"""The single-table engine end to end: paper results, output contract, types, errors, backends.

Paper settings (docs/spec/method.md, section 6): k = 20; WBCD with every column categorical (MCA)
and ncp = 2; AIDS with the columns of <= 10 distinct values categorical (FAMD) and ncp = 5.
Privacy is measured with the brute-force reference helper of conftest.py (docs/spec/metrics.md,
section 2); it must first reproduce the values of the published avatars.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar import synthesis
from gpu_avatar.backend.choice import BACKEND_ENV_VAR, _probe_gpu

SEEDS = (0, 1, 2)

# Published ranges over 25 runs (WBCD 92.7-94.3 %, LC 22-28; AIDS 92.6-94.3 %, LC 10-11),
# widened slightly for the noise of 3 seeds. Measured here: AIDS 93.9/10, 93.7/10, 93.5/10;
# WBCD 93.9/24, 93.3/24, 94.0/26. With zero_distance="bounded" AIDS (no duplicate row) is
# unchanged and WBCD leaves the range (98.1/50, 97.5/44, 97.4/49): its duplicated rows, which
# the paper's weights copy, no longer come out as their own avatar; hence "paper" by default.
HIDDEN_RANGE = (92.0, 95.0)
CLOAKING_RANGE = {"aids": (9, 12), "wbcd": (20, 30)}


@pytest.fixture(scope="module")
def paper_runs(aids, wbcd):
    """avatarize() of both data sets with the paper's settings (its weights included, and its
    copies of unique rows kept: test_unique_copies.py measures the redraw), for every seed."""
    runs = {}
    for data in (aids, wbcd):
        for seed in SEEDS:
            runs[data.name, seed] = ga.avatarize(
                data.df, k=data.k, ncp=data.ncp, seed=seed, types=data.types,
                zero_distance="paper", unique_copies="keep",
            )
    return runs


def total_variation(a: pd.Series, b: pd.Series) -> float:
    """Total variation distance between two empirical distributions (missing is a value)."""
    p = a.value_counts(normalize=True, dropna=False)
    q = b.value_counts(normalize=True, dropna=False)
    return 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())


def rows_sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), na_position="last").reset_index(drop=True)


# --------------------------------------------------------------------- paper's results
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dataset", ["aids", "wbcd"])
def test_privacy_in_published_range(dataset, seed, request, paper_runs, metric_helper):
    data = request.getfixturevalue(dataset)
    result = paper_runs[dataset, seed]
    assert result.projection_kind == ("famd" if dataset == "aids" else "mca")
    metrics = metric_helper(
        data.df, result.sensitive_unshuffled_avatars, data.metric_types, data.ncp
    )
    low, high = HIDDEN_RANGE
    assert low <= metrics.hidden_rate <= high, f"hidden rate {metrics.hidden_rate:.2f} %"
    low, high = CLOAKING_RANGE[dataset]
    assert low <= metrics.median_local_cloaking <= high, (
        f"median local cloaking {metrics.median_local_cloaking}"
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_aids_continuous_spread_like_published(aids, paper_runs, seed):
    """Standard deviations shrink as in the published avatars (ratios 0.66 to 0.87)."""
    avatars = paper_runs["aids", seed].sensitive_unshuffled_avatars
    original_std = aids.df[aids.continuous].std()
    ours = avatars[aids.continuous].std() / original_std
    published = aids.published[aids.continuous].std() / original_std
    difference = (ours - published).abs()
    assert (difference < 0.1).all(), f"std ratios ours {ours.round(3).to_dict()} vs published " \
        f"{published.round(3).to_dict()}"
    assert (ours < 1).all()  # averaging k neighbours always shrinks the spread


@pytest.mark.parametrize("seed", SEEDS)
def test_continuous_values_stay_within_the_original_range(aids, paper_runs, seed):
    avatars = paper_runs["aids", seed].avatars
    for column in aids.continuous:
        assert avatars[column].min() >= aids.df[column].min(), column
        assert avatars[column].max() <= aids.df[column].max(), column


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dataset", ["aids", "wbcd"])
def test_categorical_marginals_like_published(dataset, seed, request, paper_runs):
    # WBCD: 683 rows and up to 10 modalities per column, so two independent avatar tables
    # differ more (published vs original is already 0.045 on one column).
    limit = {"aids": 0.05, "wbcd": 0.06}[dataset]
    data = request.getfixturevalue(dataset)
    avatars = paper_runs[dataset, seed].sensitive_unshuffled_avatars
    distances = {c: total_variation(avatars[c], data.published[c]) for c in data.categorical}
    worst = max(distances, key=distances.get)
    assert distances[worst] < limit, f"{worst}: total variation {distances[worst]:.3f}"
    for column in data.categorical:
        assert set(avatars[column].dropna()) <= set(data.df[column].dropna()), column


def test_draw_copies_records_as_often_as_published_and_argmax_more(wbcd, paper_runs):
    """The 'draw' rule (checked against the published avatars) vs 'argmax', and the paper's
    weights vs ``zero_distance="bounded"``.

    WBCD is all categorical: the share of avatars identical to some original record is 0.54 in
    the published avatars; 'draw' must match it, 'argmax' copies neighbours far more often.
    41 % of the paper's avatars are their own row: 280 rows have a duplicate, which takes all
    the weight. Bounded weights halve that share (what remains: 71 rows held by more than k
    originals, and draws); copies of some record stay about as common, as drawing each
    category from a neighbour makes them in a table of few distinct rows.
    """
    originals = set(map(tuple, wbcd.df.to_numpy()))

    def copy_rate(avatars: pd.DataFrame) -> float:
        return float(np.mean([tuple(row) in originals for row in avatars.to_numpy()]))

    def own_rate(avatars: pd.DataFrame) -> float:
        return float((avatars.to_numpy() == wbcd.df.to_numpy()).all(axis=1).mean())

    published = copy_rate(wbcd.published)
    for seed in SEEDS:
        paper = paper_runs["wbcd", seed].sensitive_unshuffled_avatars
        assert abs(copy_rate(paper) - published) < 0.08, f"seed {seed}: {copy_rate(paper):.3f}"
        assert own_rate(paper) > 0.38, f"seed {seed}: own rows {own_rate(paper):.3f}"
        bounded = ga.avatarize(wbcd.df, k=20, ncp=2, seed=seed, types=wbcd.types,
                               zero_distance="bounded",
                               unique_copies="keep").sensitive_unshuffled_avatars
        assert own_rate(bounded) < 0.6 * own_rate(paper), f"seed {seed}: {own_rate(bounded)}"
        assert copy_rate(bounded) > 0.4, f"seed {seed}: {copy_rate(bounded)}"
    argmax = ga.avatarize(
        wbcd.df, k=20, ncp=2, seed=0, types=wbcd.types, categorical="argmax",
        unique_copies="keep").sensitive_unshuffled_avatars
    assert copy_rate(argmax) > published + 0.15


@pytest.mark.parametrize("seed", SEEDS)
def test_aids_missing_values_are_avatarized(aids, paper_runs, seed):
    """cd496: 37.3 % missing, exactly where r == 0; the avatars keep the rate (published
    36.9 %) and break the deterministic rule on a few rows (published: 48 of 2139)."""
    avatars = paper_runs["aids", seed].sensitive_unshuffled_avatars
    assert aids.df["cd496"].isna().mean() == pytest.approx(0.3726, abs=1e-3)
    assert 0.34 <= avatars["cd496"].isna().mean() <= 0.40
    broken = int((avatars["cd496"].isna() != (avatars["r"] == 0)).sum())
    assert 0 < broken < 150
    for column in aids.df.columns.drop("cd496"):
        assert not avatars[column].isna().any(), column


# ---------------------------------------------------------------------- output contract
@pytest.mark.parametrize("dataset", ["aids", "wbcd"])
def test_output_contract(dataset, request, paper_runs):
    data = request.getfixturevalue(dataset)
    result = paper_runs[dataset, 0]
    avatars, unshuffled = result.avatars, result.sensitive_unshuffled_avatars
    for frame in (avatars, unshuffled):
        assert list(frame.columns) == list(data.df.columns)
        pd.testing.assert_series_equal(frame.dtypes, data.df.dtypes)
        assert len(frame) == len(data.df)
    assert isinstance(avatars.index, pd.RangeIndex) and avatars.index.equals(
        pd.RangeIndex(len(data.df))
    )
    assert unshuffled.index.equals(data.df.index)
    # The release is the unshuffled avatars in another order.
    pd.testing.assert_frame_equal(rows_sorted(avatars), rows_sorted(unshuffled))
    assert not avatars.equals(unshuffled.reset_index(drop=True))
    assert result.parameters.k == 20 and result.parameters.ncp == data.ncp


def test_unshuffled_avatars_keep_the_input_index(wbcd):
    df = wbcd.df.set_axis(pd.Index([f"row{i}" for i in range(len(wbcd.df))]), axis=0)
    result = ga.avatarize(df, k=20, ncp=2, seed=0, types=wbcd.types)
    assert result.sensitive_unshuffled_avatars.index.equals(df.index)
    assert result.avatars.index.equals(pd.RangeIndex(len(df)))


def test_same_seed_same_output_and_different_seeds_differ(aids, paper_runs):
    again = ga.avatarize(aids.df, k=20, ncp=5, seed=0, types=aids.types)
    first = paper_runs["aids", 0]
    pd.testing.assert_frame_equal(again.avatars, first.avatars)
    pd.testing.assert_frame_equal(
        again.sensitive_unshuffled_avatars, first.sensitive_unshuffled_avatars
    )
    other = paper_runs["aids", 1]
    assert not other.sensitive_unshuffled_avatars.equals(first.sensitive_unshuffled_avatars)
    assert not other.avatars.equals(first.avatars)


def test_seed_of_an_unseeded_run_reproduces_it(wbcd):
    first = ga.avatarize(wbcd.df, k=20, ncp=2, types=wbcd.types)
    second = ga.avatarize(wbcd.df, k=20, ncp=2, types=wbcd.types)
    assert first.seed != second.seed  # fresh entropy
    replay = ga.avatarize(wbcd.df, k=20, ncp=2, types=wbcd.types, seed=first.seed)
    pd.testing.assert_frame_equal(replay.avatars, first.avatars)
    pd.testing.assert_frame_equal(
        replay.sensitive_unshuffled_avatars, first.sensitive_unshuffled_avatars
    )


def test_input_is_never_modified(aids):
    df = aids.df.copy()
    before = df.copy(deep=True)
    ga.avatarize(df, k=20, ncp=5, seed=0, types=aids.types, imputation="mean")
    pd.testing.assert_frame_equal(df, before, check_exact=True)
    mixed = mixed_table()
    mixed_before = mixed.copy(deep=True)
    ga.avatarize(mixed, k=10, seed=0, types={"numcat": "categorical", "fcat": "categorical"})
    pd.testing.assert_frame_equal(mixed, mixed_before, check_exact=True)
    pd.testing.assert_series_equal(mixed.dtypes, mixed_before.dtypes)


def test_ncp_is_capped_at_the_number_of_dimensions():
    df = pd.DataFrame({"x": np.arange(20.0) + 0.5, "g": ["a", "b"] * 10})
    result = ga.avatarize(df, k=3, ncp=50, seed=0)
    assert result.parameters.ncp == 2  # 1 continuous + (2 - 1) categorical dimensions


def test_smallest_tables():
    df = pd.DataFrame({"x": [1.0, 2.0, 4.0], "g": ["a", "b", "a"]})
    result = ga.avatarize(df, k=2, seed=0)
    assert result.avatars.shape == (3, 2)
    assert set(result.avatars["g"]) <= {"a", "b"}


def test_table_where_nothing_varies():
    df = pd.DataFrame({"c": [7] * 10, "t": pd.Series(["m0"] * 10, dtype=object)})
    result = ga.avatarize(df, k=2, seed=0)
    pd.testing.assert_frame_equal(result.avatars, df)


def test_constant_columns_stay_exactly_constant(aids):
    """Weighted means of equal values must not drift by rounding (it did, on most rows)."""
    df = aids.df.assign(const=1.5, tenth=0.1, big=123456.789, label="same")
    avatars = ga.avatarize(df, k=20, seed=0, types=aids.types).avatars
    for column in ("const", "tenth", "big", "label"):
        assert (avatars[column] == df[column].iloc[0]).all(), column


@pytest.mark.parametrize("imputation", ["median", "mean", "mode", "knn"])
def test_every_imputation_keeps_the_missing_rate(aids, imputation):
    df = aids.df.head(600)
    result = ga.avatarize(df, k=20, ncp=5, seed=0, types=aids.types, imputation=imputation)
    rate = result.avatars["cd496"].isna().mean()
    assert abs(rate - df["cd496"].isna().mean()) < 0.06
    pd.testing.assert_series_equal(result.avatars.dtypes, df.dtypes)


def test_column_weights_pull_avatars_towards_their_originals_on_that_column(aids):
    plain = ga.avatarize(aids.df, k=20, seed=0, types=aids.types).sensitive_unshuffled_avatars
    heavy = ga.avatarize(
        aids.df, k=20, seed=0, types=aids.types, column_weights={"age": 10.0}
    ).sensitive_unshuffled_avatars
    error_plain = (plain["age"] - aids.df["age"]).abs().mean()
    error_heavy = (heavy["age"] - aids.df["age"]).abs().mean()
    assert error_heavy < 0.9 * error_plain


# ------------------------------------------------------------------------------- types
def mixed_table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Every supported dtype, most with missing cells."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "int": rng.integers(18, 90, n),
            "float": rng.normal(50, 10, n),
            "int32": rng.integers(-5, 5, n).astype(np.int32),
            "float32": rng.normal(0, 1, n).astype(np.float32),
            "text_obj": pd.Series(rng.choice(["a", "b", "c"], n), dtype=object),
            "text_str": pd.Series(rng.choice(["x", "y", "z", "w"], n), dtype="str"),
            "cat": pd.Categorical(
                rng.choice(["low", "mid", "high"], n),
                categories=["low", "mid", "high", "unused"],
                ordered=True,
            ),
            "bool": rng.random(n) < 0.3,
            "nint": pd.array(rng.integers(0, 100, n), dtype="Int64"),
            "nbool": pd.array(rng.random(n) < 0.5, dtype="boolean"),
            "dt": pd.Timestamp("2020-01-01")
            + pd.to_timedelta(rng.integers(0, 10**6, n), unit="s"),
            "dttz": pd.Timestamp("2021-06-01", tz="Europe/Paris")
            + pd.to_timedelta(rng.integers(0, 10**5, n), unit="min"),
            "numcat": rng.choice([1, 2, 5, 10], n),
            "fcat": rng.choice([0.5, 1.5, 2.25], n),
        }
    )
    for column in ("float", "text_obj", "text_str", "cat", "nint", "nbool", "dt", "dttz",
                   "fcat"):
        df.loc[rng.random(n) < 0.15, column] = None
    return df


MIXED_TYPES = {"numcat": "categorical", "fcat": "categorical"}


@pytest.fixture(scope="module")
def mixed_run():
    df = mixed_table()
    return df, ga.avatarize(df, k=10, ncp=5, seed=0, types=MIXED_TYPES)


def test_every_dtype_is_preserved(mixed_run):
    df, result = mixed_run
    for frame in (result.avatars, result.sensitive_unshuffled_avatars):
        assert list(frame.columns) == list(df.columns)
        for column in df.columns:
            assert frame[column].dtype == df[column].dtype, column
    assert result.avatars["dttz"].dt.tz == df["dttz"].dt.tz
    assert result.avatars["cat"].cat.ordered


def test_categorical_values_come_from_the_input_only(mixed_run):
    df, result = mixed_run
    avatars = result.avatars
    for column in ("text_obj", "text_str", "cat", "bool", "nbool", "numcat", "fcat"):
        produced = set(avatars[column].dropna().tolist())
        assert produced <= set(df[column].dropna().tolist()), column
    assert list(avatars["cat"].cat.categories) == ["low", "mid", "high", "unused"]
    assert "unused" not in set(avatars["cat"].dropna())


def test_continuous_values_are_within_range_and_integers_stay_integers(mixed_run):
    df, result = mixed_run
    avatars = result.avatars
    for column in ("int", "float", "int32", "float32", "nint", "dt", "dttz"):
        observed = df[column].dropna()
        assert avatars[column].min() >= observed.min(), column
        assert avatars[column].max() <= observed.max(), column
    # Continuous values are weighted means, not copies; integers are rounded.
    assert avatars["float"].dropna().isin(df["float"].dropna()).mean() < 0.2
    assert avatars["int"].nunique() > 20
    assert (avatars["nint"].dropna() % 1 == 0).all()


def test_missing_cells_are_restored_at_a_similar_rate(mixed_run):
    df, result = mixed_run
    for column in df.columns:
        original = df[column].isna().mean()
        produced = result.avatars[column].isna().mean()
        assert abs(produced - original) < 0.08, (column, original, produced)
        if original == 0:
            assert produced == 0, column


def test_missing_cells_look_like_the_inputs(mixed_run):
    """A missing text cell given as None comes back as None; pandas NA stays NA; NaT, NaT."""
    df, result = mixed_run
    avatars = result.avatars
    assert df["text_obj"][df["text_obj"].isna()].iloc[0] is None
    missing_text = avatars["text_obj"][avatars["text_obj"].isna()]
    assert len(missing_text) and all(value is None for value in missing_text)
    assert avatars["nint"][avatars["nint"].isna()].iloc[0] is pd.NA
    assert avatars["dttz"][avatars["dttz"].isna()].iloc[0] is pd.NaT


def test_identifiers_are_fresh_and_unique():
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame(
        {
            "pid": rng.permutation(np.arange(0, 2 * n, 2)),  # 0, 2, 4, ...: fresh ids exist
            "name": pd.Series([f"patient{i}" for i in range(n)], dtype="str"),
            "code": pd.Series([f"avatar_{i}" for i in range(n)], dtype=object),  # collision bait
            "age": rng.integers(0, 90, n),
            "group": rng.choice(["a", "b", "c"], n),
        }
    )
    types = {"pid": "identifier", "name": "identifier", "code": "identifier"}
    result = ga.avatarize(df, k=5, seed=0, types=types)
    for frame in (result.avatars, result.sensitive_unshuffled_avatars):
        for column in types:
            assert frame[column].dtype == df[column].dtype, column
            assert frame[column].is_unique, column
            assert not frame[column].isna().any(), column
            assert not set(frame[column]) & set(df[column]), column
    # The released identifiers are those of the unshuffled table, row for row.
    pd.testing.assert_frame_equal(
        rows_sorted(result.avatars), rows_sorted(result.sensitive_unshuffled_avatars)
    )


def test_identifiers_do_not_drive_the_avatars():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"pid": np.arange(100), "x": rng.normal(size=100),
                       "g": rng.choice(["a", "b"], 100)})
    with_id = ga.avatarize(df, k=5, seed=3, types={"pid": "identifier"})
    without = ga.avatarize(df[["x", "g"]], k=5, seed=3)
    pd.testing.assert_frame_equal(with_id.avatars[["x", "g"]], without.avatars)


# ------------------------------------------------------------------------------ errors
def small_table(n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"age": rng.integers(0, 90, n), "weight": rng.normal(70, 10, n),
         "group": rng.choice(["a", "b"], n)}
    )


BAD_CALLS = {
    "empty rows": (lambda df: dict(df=df.iloc[:0], k=2), r"is empty \(shape \(0, 3\)\); give"),
    "no columns": (lambda df: dict(df=df.iloc[:, :0], k=2), r"shape \(30, 0\)"),
    "not a DataFrame": (lambda df: dict(df=df.to_numpy(), k=2), "DataFrame"),
    "k below 2": (lambda df: dict(df=df, k=1), "k"),
    "k equal n": (lambda df: dict(df=df, k=len(df)), "k"),
    "k above n": (lambda df: dict(df=df, k=10 * len(df)), "k"),
    "k not an integer": (lambda df: dict(df=df, k=2.5), "k"),
    "ncp zero": (lambda df: dict(df=df, k=3, ncp=0), "ncp"),
    "ncp negative": (lambda df: dict(df=df, k=3, ncp=-2), "ncp"),
    "unknown weight column": (lambda df: dict(df=df, k=3, column_weights={"hight": 2}), "hight"),
    "negative weight": (lambda df: dict(df=df, k=3, column_weights={"age": -1.0}), "age"),
    "unknown types column": (lambda df: dict(df=df, k=3, types={"sexe": "categorical"}), "sexe"),
    "unknown kind": (lambda df: dict(df=df, k=3, types={"age": "ordinal"}), "age"),
    "text as continuous": (lambda df: dict(df=df, k=3, types={"group": "continuous"}), "group"),
    "duplicate names": (
        lambda df: dict(df=pd.concat([df, df[["age"]]], axis=1), k=3), "age"),
    "sparse column": (lambda df: dict(df=df.astype({"weight": pd.SparseDtype(float)}), k=3),
                      r"\['weight'\] are sparse; make them dense first: "
                      r"df\['weight'\] = df\['weight'\]\.sparse\.to_dense\(\)"),
    "all missing": (lambda df: dict(df=df.assign(empty=np.nan), k=3), "empty"),
    "all missing text": (
        lambda df: dict(df=df.assign(note=pd.Series([None] * len(df), dtype=object)), k=3),
        "note"),
    "complex": (lambda df: dict(df=df.assign(z=np.ones(len(df)) * 1j), k=3), "'z'"),
    "mixed object": (
        lambda df: dict(df=df.assign(mix=pd.Series([1, "a"] * (len(df) // 2), dtype=object)),
                        k=3), "mix"),
    "infinite value": (
        lambda df: dict(df=df.assign(weight=df["weight"].replace(df["weight"].iloc[3], np.inf)),
                        k=3), "weight"),
    "bad categorical rule": (lambda df: dict(df=df, k=3, categorical="mode"), "categorical"),
    "bad imputation": (lambda df: dict(df=df, k=3, imputation="zero"), "imputation"),
    "bad backend": (lambda df: dict(df=df, k=3, backend="tpu"), "backend"),
    "negative seed": (lambda df: dict(df=df, k=3, seed=-1), "seed"),
    "only identifiers": (
        lambda df: dict(df=df[["age"]], k=3, types={"age": "identifier"}), "identifier"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_raises_a_clear_error(case):
    build, named = BAD_CALLS[case]
    df = small_table()
    before = df.copy(deep=True)
    kwargs = build(df)
    with pytest.raises(ga.AvatarError, match=named):
        ga.avatarize(**kwargs)
    pd.testing.assert_frame_equal(df, before)


WRONG_TYPES = {
    "not a DataFrame": dict(df=np.zeros((5, 2))),
    "k as text": dict(k="3"),
    "k as a float": dict(k=3.0),
    "seed as text": dict(seed="0"),
    "types not a mapping": dict(types=["age"]),
    "weights not numbers": dict(column_weights={"age": "2"}),
    "parameters not AvatarParameters": dict(parameters={"k": 3}),
}


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_a_wrong_type_is_also_a_type_error(case):
    arguments = {"df": small_table(), "k": 3, **WRONG_TYPES[case]}
    with pytest.raises(TypeError) as caught:
        ga.avatarize(arguments.pop("df"), **arguments)
    assert isinstance(caught.value, ga.AvatarError)  # one except clause catches every input error


def test_the_result_keeps_the_original_as_it_was():
    """Editing the input after the run leaves the result's metrics unchanged."""
    df = small_table(60)
    result = ga.avatarize(df, k=5, seed=0)
    before = result.privacy_metrics(ncp=2).hidden_rate
    df.loc[:, "weight"] = 0.0
    df.iloc[0, 0] = 999
    assert result.privacy_metrics(ncp=2).hidden_rate == before
    assert result.original["weight"].ne(0.0).all()


def test_an_engine_whose_library_is_missing_says_how_to_install_it():
    try:
        import cuml  # noqa: F401
    except ImportError:
        with pytest.raises(ga.MissingExtraError, match="engine='cuml' needs cuml.*RAPIDS"):
            ga.avatarize(small_table(), k=3, engine="cuml")
    else:
        pytest.skip("cuML is installed")


def test_an_unknown_parameter_names_the_valid_ones():
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['kk'\].*'k', 'ncp'"):
        ga.avatarize(small_table(), kk=3)


# ----------------------------------------------------------------------------- backends
def _has_gpu() -> bool:
    module, _reason = _probe_gpu()
    return module is not None


@pytest.mark.skipif(_has_gpu(), reason="a CUDA device is available")
def test_gpu_backend_without_device_raises(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    with pytest.raises(ga.BackendUnavailableError, match="gpu"):
        ga.avatarize(small_table(), k=3, backend="gpu")
    with pytest.raises(ga.BackendUnavailableError):
        ga.resolve_backend("gpu")


@pytest.mark.skipif(_has_gpu(), reason="a CUDA device is available")
def test_auto_backend_falls_back_to_the_cpu(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    df = small_table()
    auto = ga.avatarize(df, k=3, seed=0, backend="auto")
    cpu = ga.avatarize(df, k=3, seed=0, backend="cpu")
    assert auto.parameters.backend == "cpu"
    pd.testing.assert_frame_equal(auto.avatars, cpu.avatars)


def test_backend_environment_variable(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "cpu")
    assert ga.resolve_backend("auto").name == "cpu"
    monkeypatch.setenv(BACKEND_ENV_VAR, "quantum")
    with pytest.raises(ga.AvatarError, match=BACKEND_ENV_VAR):
        ga.resolve_backend("auto")


@pytest.mark.parametrize("engine", ["kdtree", "brute"])
def test_neighbour_engines_give_the_same_avatars(wbcd, paper_runs, engine):
    """WBCD coordinates are full of exact duplicates: every engine must break ties alike."""
    result = ga.avatarize(
        wbcd.df, k=20, ncp=2, seed=0, types=wbcd.types, engine=engine, unique_copies="keep"
    )
    pd.testing.assert_frame_equal(result.avatars, paper_runs["wbcd", 0].avatars)


@pytest.mark.parametrize("n_codes", [0, 4])
def test_compiled_synthesis_equals_the_array_reference(n_codes):
    """The compiled pass (``synthesis_kernels.py``) gives the bits of the array code: the
    barycentre of ``synthesis._barycentre`` and the categorical draw written with numpy (each
    code that of the neighbour counted by the cumulative weights, summed left to right, at
    most the uniform times their total)."""
    from gpu_avatar import synthesis_kernels

    rng = np.random.default_rng(7)
    n, k = 500, 9
    weights = rng.exponential(size=(n, k)) * 2.0 ** -rng.integers(1, k + 1, size=(n, k))
    weights /= weights.sum(axis=1, keepdims=True)
    continuous = rng.normal(size=(n, 3)).round(1)  # ties and a constant column
    continuous[:, 2] = 0.7
    codes = rng.integers(0, 3, size=(n, n_codes))
    neighbours = rng.integers(0, n, size=(n, k))
    uniforms = rng.random((n, n_codes))
    got_continuous, got_codes = synthesis_kernels.synthesize_block(
        continuous, codes, neighbours, weights, uniforms
    )
    cumulative = np.cumsum(weights, axis=1)
    chosen = (cumulative[:, :, None] <= (uniforms * cumulative[:, -1:])[:, None, :]).sum(axis=1)
    chosen = np.take_along_axis(neighbours, np.minimum(chosen, k - 1), axis=1)
    np.testing.assert_array_equal(got_continuous,
                                  synthesis._barycentre(continuous, neighbours, weights, np))
    np.testing.assert_array_equal(got_codes, codes[chosen, np.arange(n_codes)])


def test_random_ranks_are_uniform_permutations():
    """Each row of the weights' ranks is a permutation of 1..k, every rank equally likely at
    every position, drawn by Fisher-Yates from the uniforms (checked on the first rows)."""
    uniforms = np.random.default_rng(0).random((20_000, 9))
    ranks = synthesis.random_ranks(uniforms)
    assert ranks.shape == (20_000, 10)
    np.testing.assert_array_equal(np.sort(ranks, axis=1), np.tile(np.arange(1, 11), (20_000, 1)))
    frequencies = np.stack([(ranks == r).mean(axis=0) for r in range(1, 11)])  # (rank, position)
    np.testing.assert_allclose(frequencies, 0.1, atol=0.01)
    for row, draws in enumerate(uniforms[:50]):
        expected = list(range(1, 11))
        for i in range(9, 0, -1):
            other = min(int(draws[i - 1] * (i + 1)), i)
            expected[i], expected[other] = expected[other], expected[i]
        assert ranks[row].tolist() == expected

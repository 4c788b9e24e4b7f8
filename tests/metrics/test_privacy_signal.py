"""Privacy and signal metrics: published reference values, hand-computed semantics, errors.

The published avatars of the Avatar paper (``tests/data``, see its README for their licences)
must give the spec's reference values (docs/spec/metrics.md, section 5;
docs/spec/method.md, section 6) with
every reduction engine; small hand-built tables pin down what each metric means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar import AvatarError
from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS, SIGNAL_TARGETS
from gpu_avatar.metrics.privacy import copies_text

CATEGORICAL_MAX_DISTINCT = 10
ENGINES = ("brute", "kdtree")


# ------------------------------------------------------------------------ data sets


def load_aids() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """AIDS original (``pidnum`` dropped), published avatars in the original dtypes, types."""
    original = read_dataset("aids.csv", sep=";").drop(columns="pidnum")
    published = read_dataset("aids_published_avatars_k20_ncp5.csv").astype(
        original.dtypes.to_dict()
    )
    types = {
        c: "categorical"
        for c in original.columns
        if original[c].nunique() <= CATEGORICAL_MAX_DISTINCT
    }
    return original, published, types


def load_wbcd() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """WBCD original (id dropped), published avatars, metric types (only ``Class``)."""
    original = read_dataset("wbcd.csv").drop(columns="Sample_code_number")
    published = read_dataset("wbcd_published_avatars_k20_ncp2.csv").astype(
        original.dtypes.to_dict()
    )
    return original, published, {"Class": "categorical"}


# --------------------------------------------------------------- published reference values
@pytest.mark.parametrize("engine", ENGINES)
def test_aids_published_avatars_reference_privacy(engine):
    original, published, types = load_aids()
    pm = ga.privacy_metrics(original, published, ncp=5, types=types, engine=engine)
    assert pm.ncp == 5
    assert pm.hidden_rate == pytest.approx(92.9, abs=0.3)
    assert pm.local_cloaking == 11
    assert len(pm.local_cloaking_per_individual) == len(original)
    assert pm.local_cloaking == np.median(pm.local_cloaking_per_individual)
    assert pm.hidden_rate == pytest.approx(100 * pm.hidden_per_individual.mean())


@pytest.mark.parametrize("engine", ENGINES)
def test_wbcd_published_avatars_reference_privacy(engine):
    original, published, types = load_wbcd()
    pm = ga.privacy_metrics(original, published, ncp=2, types=types, engine=engine)
    assert pm.ncp == 2
    assert pm.hidden_rate == pytest.approx(92.7, abs=0.3)
    assert pm.local_cloaking == 24


@pytest.mark.parametrize("loader, ncp", [(load_aids, 5), (load_wbcd, 2)])
@pytest.mark.parametrize("engine", ENGINES[1:])
def test_published_avatars_engines_agree_per_individual(loader, ncp, engine):
    # WBCD is full of duplicated rows: exact ties at the own distance everywhere
    original, published, types = loader()
    brute = ga.privacy_metrics(original, published, ncp=ncp, types=types, engine="brute")
    tree = ga.privacy_metrics(original, published, ncp=ncp, types=types, engine=engine)
    np.testing.assert_array_equal(
        brute.local_cloaking_per_individual, tree.local_cloaking_per_individual
    )
    np.testing.assert_array_equal(brute.hidden_per_individual, tree.hidden_per_individual)
    np.testing.assert_allclose(
        brute.distance_to_closest_per_avatar, tree.distance_to_closest_per_avatar, rtol=1e-12
    )
    np.testing.assert_allclose(
        brute.closest_distances_ratio_per_avatar,
        tree.closest_distances_ratio_per_avatar,
        rtol=1e-12,
    )
    for name in PRIVACY_TARGETS:
        a, b = getattr(brute, name), getattr(tree, name)
        assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), name


def test_aids_published_avatars_reference_signal():
    original, published, types = load_aids()
    sm = ga.signal_metrics(original, published, types=types)
    assert sm.hellinger_mean == pytest.approx(0.0505, abs=0.001)
    assert sm.correlation_difference_ratio == pytest.approx(6.86, abs=0.05)
    assert set(sm.hellinger_per_variable) == set(original.columns)
    # order-free: the released (shuffled) avatars give the same values
    shuffled = published.sample(frac=1.0, random_state=0).reset_index(drop=True)
    again = ga.signal_metrics(original, shuffled, types=types)
    assert again.hellinger_per_variable == pytest.approx(sm.hellinger_per_variable, abs=1e-12)
    assert again.correlation_difference_ratio == pytest.approx(
        sm.correlation_difference_ratio, rel=1e-9
    )


def test_aids_published_avatars_passes_the_targets():
    original, published, types = load_aids()
    frame = ga.privacy_metrics(original, published, ncp=5, types=types).to_frame()
    assert frame.loc["hidden_rate", "passed"] is True
    assert frame.loc["local_cloaking", "passed"] is True
    assert frame.loc["hidden_rate", "target"] == "> 90"
    signal = ga.signal_metrics(original, published, types=types).to_frame()
    assert signal.loc["hellinger_mean", "passed"] is True
    assert signal.loc["correlation_difference_ratio", "passed"] is True
    assert signal.loc["hellinger_std", "passed"] is None


def test_avatarize_result_metrics_use_the_run_settings():
    original, _, types = load_aids()
    result = ga.avatarize(original, k=20, ncp=5, seed=0, types=types)
    pm = result.privacy_metrics()
    direct = ga.privacy_metrics(
        original,
        result.sensitive_unshuffled_avatars,
        ncp=5,
        types=types,
        backend=result.parameters.backend,
    )
    for name in PRIVACY_TARGETS:
        assert getattr(pm, name) == getattr(direct, name), name
    np.testing.assert_array_equal(
        pm.local_cloaking_per_individual, direct.local_cloaking_per_individual
    )
    assert pm.ncp == 5
    # an avatarization with the paper's settings lands in the paper's range (25 runs: 92.6-94.3)
    assert 90.0 < pm.hidden_rate < 97.0
    assert 5 <= pm.local_cloaking <= 20

    sm = result.signal_metrics()
    direct_signal = ga.signal_metrics(original, result.avatars, types=types)
    assert sm.hellinger_per_variable == direct_signal.hellinger_per_variable
    assert sm.correlation_difference_ratio == direct_signal.correlation_difference_ratio
    # released (shuffled) and unshuffled avatars: same signal
    unshuffled = ga.signal_metrics(original, result.sensitive_unshuffled_avatars, types=types)
    assert unshuffled.hellinger_per_variable == pytest.approx(sm.hellinger_per_variable, abs=1e-12)
    # overrides reach the call
    assert result.privacy_metrics(ncp=2).ncp == 2


# ------------------------------------------------------------------- privacy semantics
def _hand_metrics(original, avatars, **options):
    """``ga.privacy_metrics`` of avatars made by hand, on a few rows (or equal to the
    originals, with ties): the definitions' tests, not the alignment test's."""
    return ga.privacy_metrics(original, avatars, check_alignment=False, **options)


def _distinct_numeric(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.standard_normal(n),
            "b": rng.standard_normal(n) * 10 + 3,
            "c": rng.uniform(0, 1, n),
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_avatars_identical_to_originals_have_no_protection(engine):
    df = _distinct_numeric()
    pm = ga.privacy_metrics(df, df.copy(), ncp=3, engine=engine)
    assert pm.hidden_rate == 0.0
    assert pm.local_cloaking == 0.0
    assert pm.distance_to_closest == 0.0
    assert pm.closest_distances_ratio == 0.0
    assert pm.closest_rate == 0.0
    assert pm.row_direct_match_protection == 0.0
    assert pm.column_direct_match_protection == 0.0
    frame = pm.to_frame()
    assert frame.loc["hidden_rate", "passed"] is False
    assert frame.loc["row_direct_match_protection", "passed"] is False


@pytest.mark.parametrize("engine", ENGINES)
def test_duplicated_rows_follow_the_documented_tie_rule(engine):
    df = _distinct_numeric(12)
    df = pd.concat([df, df.iloc[[3, 5, 5]]], ignore_index=True)  # rows 12 = 3; 13, 14 = 5
    pm = _hand_metrics(df, df.copy(), ncp=3, engine=engine)
    # an avatar at exactly the own distance hides an individual only with a lower index
    expected_hidden = np.zeros(15, dtype=bool)
    expected_hidden[[12, 13, 14]] = True
    np.testing.assert_array_equal(pm.hidden_per_individual, expected_hidden)
    assert pm.hidden_rate == pytest.approx(100 * 3 / 15)
    expected_cloaking = np.zeros(15, dtype=int)
    expected_cloaking[[3, 12]] = 1
    expected_cloaking[[5, 13, 14]] = 2
    np.testing.assert_array_equal(pm.local_cloaking_per_individual, expected_cloaking)
    # closest and second closest originals both at 0: the ratio is 1 by definition
    ratio = pm.closest_distances_ratio_per_avatar
    duplicated = [3, 5, 12, 13, 14]
    np.testing.assert_array_equal(ratio[duplicated], np.ones(5))
    assert (np.delete(ratio, duplicated) == 0).all()


def test_mixed_table_identical_avatars_with_categorical_columns():
    rng = np.random.default_rng(2)
    n = 30
    df = pd.DataFrame(
        {
            "x": rng.standard_normal(n),
            "y": rng.standard_normal(n),
            "g": pd.Categorical(rng.choice(["u", "v", "w"], n)),
            "t": rng.choice(["p", "q"], n).astype(object),
        }
    )
    pm = _hand_metrics(df, df.copy(), ncp=3)
    assert pm.hidden_rate == 0.0
    assert pm.row_direct_match_protection == 0.0


def test_row_direct_match_protection_hand_computed():
    df = pd.DataFrame(
        {
            "x": [1.0, 2.0, 3.0, 4.0, np.nan, 6.0],
            "g": ["a", "b", "a", "b", "a", "b"],
        }
    )
    avatars = pd.DataFrame(
        {
            # row 1 of the avatars equals original row 0 (not its own: still a match);
            # row 4 equals original row 4 including its missing value (missing == missing)
            "x": [9.0, 1.0, 3.0, 4.5, np.nan, 6.0],
            "g": ["a", "a", "b", "b", "a", "a"],
        }
    )
    pm = _hand_metrics(df, avatars, ncp=2)
    # originals 0 and 4 appear among the avatars: 4 of 6 protected
    assert pm.row_direct_match_protection == pytest.approx(100 * 4 / 6)


def test_exact_copies_hand_computed():
    """Avatars identical to an original row on every variable (the identifier left out, a
    missing value equal to a missing value), counted by how many originals hold the row."""
    df = pd.DataFrame({"id": [101, 102, 103, 104, 105, 106],
                       "x": [1.5, 1.5, 2.5, np.nan, np.nan, 3.5],
                       "g": ["a", "a", "b", "c", "c", "d"]})  # fmt: skip
    avatars = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6],
                            "x": [1.5, 2.5, np.nan, 1.5, 3.5, np.nan],
                            "g": ["a", "b", "c", "b", "d", "a"]})  # fmt: skip
    pm = _hand_metrics(df, avatars, ncp=2, types={"id": "identifier"})
    # avatars 0 and 2 copy rows held by two originals, avatars 1 and 4 unique rows
    assert pm.exact_copies == 4
    assert pm.exact_copies_shared == {1: 2, 2: 2}
    assert pm.exact_copies_text() == "2 of a unique row, 2 of a row held by 2"
    assert pm.to_frame().loc["exact_copies", "passed"] is None  # reported, no threshold


def test_column_direct_match_protection_hand_computed():
    df = pd.DataFrame(
        {
            "a": [1, 2, 2, 3, 4],  # unique in the original: 1, 3, 4
            "b": [10.5, 11.5, 12.5, 13.5, 14.5],  # all unique
        }
    )
    avatars = pd.DataFrame({"a": [1, 2, 5, 3, 3], "b": [10.5, 99.0, 98.0, 97.0, 96.0]})
    pm = _hand_metrics(df, avatars, ncp=2)
    # a: originals 0 (value 1) and 3 (value 3) are unique and appear -> 100 * (1 - 2/5);
    # 2 appears too but is shared by two originals: not an identifier
    # b: original 0 (10.5) -> 100 * (1 - 1/5)
    assert pm.column_direct_match_protection_per_variable == pytest.approx({"a": 60.0, "b": 80.0})
    assert pm.column_direct_match_protection == pytest.approx(60.0)


def _categorical_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    df = pd.DataFrame(
        {
            "A": ["p", "p", "q", "r", "s", "t"],
            "B": ["u", "v", "u", "u", "v", "u"],
            "x": [0.1, 2.0, 3.5, 1.2, 4.4, 0.7],
        }
    )
    avatars = pd.DataFrame(
        {
            "A": ["p", "q", "q", "r", "r", "t"],
            "B": ["u", "u", "u", "u", "u", "v"],
            "x": [0.3, 2.5, 3.0, 1.0, 4.0, 0.9],
        }
    )
    return df, avatars


def test_categorical_hidden_rate_hand_computed():
    df, avatars = _categorical_table()
    # on A: row 0 (p, own p, the only avatar p) is at risk; 1 (own q != p) safe;
    # 2 (q, two avatars q) safe; 3 (r, two avatars r) safe; 4 (own r != s) safe;
    # 5 (t, own t, the only t) at risk -> 4 of 6 hidden
    pm = _hand_metrics(df, avatars, ncp=2, categorical_hidden_rate_variables=["A"])
    assert pm.categorical_hidden_rate == pytest.approx(100 * 4 / 6)
    # on (A, B): row 5 (t, u) vs own (t, v) is now safe; row 0 (p, u) still the only match;
    # row 2 (q, u): avatars 1 and 2 are (q, u) -> safe; row 3 (r, u): avatars 3 and 4 -> safe
    pm = _hand_metrics(df, avatars, ncp=2, categorical_hidden_rate_variables=["A", "B"])
    assert pm.categorical_hidden_rate == pytest.approx(100 * 5 / 6)
    # a single name is accepted
    pm = _hand_metrics(df, avatars, ncp=2, categorical_hidden_rate_variables="A")
    assert pm.categorical_hidden_rate == pytest.approx(100 * 4 / 6)


def test_correlation_protection_rate_hand_computed():
    # numeric tolerance: 5 % of the original mean of x (437.5) = 21.875
    df = pd.DataFrame(
        {
            "g": ["a", "a", "b", "b", "c", "c", "d", "d"],
            "x": [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 700.0],
            "z": [1.0, 5.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0],
        }
    )
    avatars = pd.DataFrame(
        {
            "g": ["a", "a", "b", "a", "c", "c", "d", "d"],
            # 0: +20 (inside) -> only own matches            -> counted
            # 1: +25 (outside) and nothing else near 200      -> no match
            # 2: +0 own matches; avatar 3 is g=a              -> counted
            # 3: own has g=a != b                             -> no match
            # 4: own at 510 matches, avatar 5 at 505 too      -> two matches
            # 5: own moved to 505, 600 has no match           -> no match
            # 6, 7: (d, 700) is not unique among originals     -> excluded
            "x": [120.0, 225.0, 300.0, 400.0, 510.0, 505.0, 700.0, 700.0],
            "z": [8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0],  # scrambled: most rows hidden
        }
    )
    pm = _hand_metrics(df, avatars, ncp=2, known_variables=["g", "x"])
    n2, n = 2, 8
    assert pm.hidden_rate > 25  # round(n2 * (1 - hidden)) < n2: the hidden rate matters
    expected = 100 * (1 - round(n2 * (1 - pm.hidden_rate / 100)) / n)
    assert pm.correlation_protection_rate == pytest.approx(expected)
    # with no hidden individual every counted match is a re-identification
    same = _hand_metrics(df, df.copy(), ncp=2, known_variables=["g", "x"])
    assert same.hidden_rate == 0.0
    # identical avatars: the 6 unique combinations each match only their own avatar
    assert same.correlation_protection_rate == pytest.approx(100 * (1 - 6 / 8))


def test_inference_metrics_kinds_and_values():
    rng = np.random.default_rng(4)
    n = 60
    df = pd.DataFrame(
        {
            "x": rng.standard_normal(n),
            "y": rng.standard_normal(n),
            "w": rng.uniform(0, 100, n),
            "g": rng.choice(["a", "b", "c"], n).astype(object),
        }
    )
    noisy = df.copy()
    noisy["x"] += rng.normal(0, 0.5, n)
    noisy["w"] = rng.permutation(df["w"].to_numpy())

    continuous = ga.privacy_metrics(df, noisy, ncp=3, known_variables=["x", "y"], target="w")
    assert isinstance(continuous.inference_continuous, float)
    assert continuous.inference_categorical is None
    # w was shuffled: the link teaches nothing, the guess is worse than the median's
    assert continuous.inference_continuous > 1.0
    # the targets themselves released: the link finds every w exactly
    leaked = ga.privacy_metrics(df, df, ncp=3, known_variables=["x", "y"], target="w")
    assert leaked.inference_continuous == 0.0
    leaked = ga.privacy_metrics(df, df, ncp=3, known_variables=["x", "y"], target="g")
    assert leaked.inference_categorical == 1.0

    categorical = ga.privacy_metrics(df, noisy, ncp=3, known_variables=["x", "y"], target="g")
    assert isinstance(categorical.inference_categorical, float)
    assert categorical.inference_continuous is None
    assert 0.0 <= categorical.inference_categorical <= 1.0
    assert 0.0 <= categorical.inference_baseline <= 1.0

    # avatars equal to the originals: the link finds the own avatar and reads the truth
    exact_c = ga.privacy_metrics(df, df.copy(), ncp=3, known_variables=["x", "y"], target="w")
    assert exact_c.inference_continuous == pytest.approx(0.0)
    exact_g = ga.privacy_metrics(df, df.copy(), ncp=3, known_variables=["x", "y"], target="g")
    assert exact_g.inference_categorical == pytest.approx(1.0)

    # not applicable: no known variables or no target
    neither = ga.privacy_metrics(df, noisy, ncp=3)
    assert neither.inference_continuous is None and neither.inference_categorical is None
    assert neither.correlation_protection_rate is None
    assert neither.categorical_hidden_rate is None
    known_only = ga.privacy_metrics(df, noisy, ncp=3, known_variables=["x"])
    assert known_only.inference_continuous is None and known_only.inference_categorical is None
    assert isinstance(known_only.correlation_protection_rate, float)


def test_privacy_to_frame_rows_targets_and_pass_flags():
    df, avatars = _categorical_table()
    pm = _hand_metrics(df, avatars, ncp=2)
    frame = pm.to_frame()
    assert list(frame.index) == list(PRIVACY_TARGETS)
    assert list(frame.columns) == ["value", "target", "passed", "baseline", "holdout baseline"]
    for name, target in PRIVACY_TARGETS.items():
        value = getattr(pm, name)
        shown, passed = frame.loc[name, "value"], frame.loc[name, "passed"]
        if value is None:
            assert math.isnan(shown) and passed is None, name
            continue
        assert shown == pytest.approx(value), name
        if target.threshold is None:
            assert frame.loc[name, "target"] == "report" and passed is None, name
        else:
            higher = target.better == "higher"
            expected = value > target.threshold if higher else value < target.threshold
            assert passed is bool(expected), name
    # this table: a low hidden rate fails, no direct row match passes
    assert frame.loc["hidden_rate", "passed"] is False
    assert frame.loc["row_direct_match_protection", "passed"] is True
    assert frame.loc["categorical_hidden_rate", "passed"] is None  # not computed here
    assert frame.loc["local_cloaking", "target"] == "> 5"
    assert frame.loc["inference_continuous", "target"] == "report"


def test_identifier_columns_are_left_out_of_the_privacy_metrics():
    df = _distinct_numeric(20)
    df.insert(0, "id", np.arange(20))
    avatars = df.copy()
    avatars["id"] = np.arange(100, 120)
    pm = _hand_metrics(df, avatars, ncp=2, types={"id": "identifier"})
    assert pm.row_direct_match_protection == 0.0  # identical apart from the identifier
    assert "id" not in pm.column_direct_match_protection_per_variable


# ------------------------------------------------------------------------------ signal
def test_signal_identical_tables_score_zero():
    df, _ = _categorical_table()
    df["y"] = df["x"] ** 2 + np.array([0.3, -0.1, 0.2, 0.0, 0.5, -0.4])
    sm = ga.signal_metrics(df, df.copy())
    assert sm.hellinger_mean == 0.0
    assert sm.hellinger_std == 0.0
    assert sm.correlation_difference_ratio == 0.0
    assert all(v == 0.0 for v in sm.hellinger_per_variable.values())


def test_signal_is_order_free():
    rng = np.random.default_rng(8)
    n = 200
    df = pd.DataFrame(
        {
            "x": rng.standard_normal(n),
            "y": rng.standard_normal(n),
            "g": rng.choice(["a", "b", "c"], n).astype(object),
        }
    )
    df["z"] = df["x"] + 0.5 * rng.standard_normal(n)
    avatars = df.copy()
    avatars["x"] += rng.normal(0, 0.3, n)
    avatars["g"] = rng.choice(["a", "b", "c"], n)
    sm = ga.signal_metrics(df, avatars)
    shuffled = ga.signal_metrics(df, avatars.sample(frac=1.0, random_state=1))
    assert shuffled.hellinger_per_variable == pytest.approx(sm.hellinger_per_variable, abs=1e-12)
    assert shuffled.correlation_difference_ratio == pytest.approx(
        sm.correlation_difference_ratio, rel=1e-9
    )
    assert sm.hellinger_mean > 0 and sm.correlation_difference_ratio > 0
    # fewer avatars than originals is fine for the signal (no row link needed)
    subset = ga.signal_metrics(df, df.iloc[:50]).hellinger_per_variable["g"]
    share = df["g"].value_counts(normalize=True)
    share_50 = df["g"].iloc[:50].value_counts(normalize=True).reindex(share.index, fill_value=0)
    assert subset == pytest.approx(_h(share.to_numpy(), share_50.to_numpy()), abs=1e-12)


def _h(p, q) -> float:
    return math.sqrt(sum((math.sqrt(a) - math.sqrt(b)) ** 2 for a, b in zip(p, q, strict=True)) / 2)


def test_categorical_hellinger_hand_computed():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "h": ["x", "x", "x", "y"]})
    avatars = pd.DataFrame({"g": ["a", "b", "b", "b"], "h": ["x", "x", "x", "z"]})
    sm = ga.signal_metrics(df, avatars)
    g = _h([0.5, 0.5], [0.25, 0.75])
    h = _h([0.75, 0.25, 0.0], [0.75, 0.0, 0.25])  # union of modalities x, y, z
    assert sm.hellinger_per_variable == pytest.approx({"g": g, "h": h})
    assert sm.hellinger_mean == pytest.approx((g + h) / 2)
    assert sm.hellinger_std == pytest.approx(abs(g - h) / 2)  # population std of two values
    assert sm.correlation_difference_ratio is None  # no continuous pair


def test_continuous_hellinger_uses_edges_from_both_samples():
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    avatars = pd.DataFrame({"x": [0.0, 1.0, 2.0, 9.0]})
    # 3 equal-width bins on [0, 9] (both samples): [0, 3), [3, 6), [6, 9]
    sm = ga.signal_metrics(df, avatars, bins=3)
    assert sm.hellinger_per_variable["x"] == pytest.approx(_h([0.75, 0.25, 0], [0.75, 0, 0.25]))
    # 2 bins on [0, 3]: [0, 1.5), [1.5, 3]
    sm = ga.signal_metrics(df, pd.DataFrame({"x": [0.0, 0.0, 0.0, 3.0]}), bins=2)
    assert sm.hellinger_per_variable["x"] == pytest.approx(_h([0.5, 0.5], [0.75, 0.25]))


def test_missing_values_are_their_own_modality_and_bin():
    df = pd.DataFrame({"g": ["a", "a", None, None], "x": [1.0, 2.0, np.nan, np.nan]})
    avatars = pd.DataFrame({"g": ["a", "a", "a", "a"], "x": [1.0, 2.0, 1.0, 2.0]})
    sm = ga.signal_metrics(df, avatars, bins=1)
    expected = _h([0.5, 0.5], [1.0, 0.0])
    assert sm.hellinger_per_variable == pytest.approx({"g": expected, "x": expected})
    # missing in both at the same rate: no difference
    same = ga.signal_metrics(df, df.iloc[::-1].reset_index(drop=True), bins=1)
    assert same.hellinger_mean == 0.0


def test_correlation_difference_ratio_hand_computed():
    rng = np.random.default_rng(11)
    n = 100
    x = rng.standard_normal(n)
    df = pd.DataFrame({"x": x, "y": 2 * x + 1, "z": rng.standard_normal(n)})
    avatars = pd.DataFrame({"x": x, "y": x + rng.standard_normal(n), "z": rng.standard_normal(n)})
    r_o = np.corrcoef(df.to_numpy().T)
    r_a = np.corrcoef(avatars.to_numpy().T)
    upper = np.triu_indices(3, k=1)
    expected = 100 * np.abs(r_o[upper] - r_a[upper]).mean()
    sm = ga.signal_metrics(df, avatars)
    assert sm.correlation_difference_ratio == pytest.approx(expected, rel=1e-9)


def test_signal_to_frame():
    df, avatars = _categorical_table()
    frame = ga.signal_metrics(df, avatars).to_frame()
    assert list(frame.index) == list(SIGNAL_TARGETS)
    assert list(frame.columns) == ["value", "target", "passed"]
    assert frame.loc["hellinger_mean", "target"] == "< 0.1"
    # one continuous variable: no correlation pair -> NaN value, no verdict
    assert math.isnan(frame.loc["correlation_difference_ratio", "value"])
    assert frame.loc["correlation_difference_ratio", "passed"] is None
    value = frame.loc["hellinger_mean", "value"]
    assert frame.loc["hellinger_mean", "passed"] is bool(value < 0.1)


# ------------------------------------------------------------------------------ errors
def _pair() -> tuple[pd.DataFrame, pd.DataFrame]:
    df = _distinct_numeric(10)
    df["g"] = ["a", "b"] * 5
    return df, df.copy()


def test_different_columns_are_rejected():
    df, avatars = _pair()
    with pytest.raises(AvatarError, match=r"missing \['c'\]"):
        ga.privacy_metrics(df, avatars.drop(columns="c"))
    with pytest.raises(AvatarError, match=r"extra \['extra'\]"):
        ga.privacy_metrics(df, avatars.assign(extra=1.0))
    with pytest.raises(AvatarError, match="columns"):
        ga.signal_metrics(df, avatars.rename(columns={"a": "A"}))


def test_different_dtypes_are_rejected():
    df, avatars = _pair()
    avatars["a"] = avatars["a"].astype(str)
    with pytest.raises(AvatarError, match=r"dtype.*'a'"):
        ga.privacy_metrics(df, avatars)
    with pytest.raises(AvatarError, match=r"dtype.*'a'"):
        ga.signal_metrics(df, avatars)


def test_reordered_columns_are_accepted():
    df, avatars = _pair()
    reordered = avatars[list(reversed(df.columns))]
    assert _hand_metrics(df, reordered, ncp=2).hidden_rate == 0.0


def test_different_row_counts_are_rejected_for_privacy():
    df, avatars = _pair()
    with pytest.raises(AvatarError, match="unshuffled"):
        ga.privacy_metrics(df, avatars.iloc[:-1])


@pytest.mark.parametrize(
    "argument", ["known_variables", "target", "categorical_hidden_rate_variables"]
)
def test_unknown_variable_names_are_rejected(argument):
    df, avatars = _pair()
    kwargs = {"known_variables": ["a"], argument: ["nope"]}
    if argument == "target":
        kwargs[argument] = "nope"
    with pytest.raises(AvatarError, match=rf"{argument}.*nope"):
        ga.privacy_metrics(df, avatars, ncp=2, **kwargs)


def test_unknown_names_in_types_are_rejected():
    # a misspelt type would silently change the metric projection (e.g. WBCD's "Class")
    df, avatars = _pair()
    with pytest.raises(AvatarError, match=r"types.*'nope'"):
        ga.privacy_metrics(df, avatars, ncp=2, types={"nope": "categorical"})
    with pytest.raises(AvatarError, match=r"types.*'nope'"):
        ga.signal_metrics(df, avatars, types={"nope": "categorical"})
    with pytest.raises(AvatarError, match="weird"):
        ga.privacy_metrics(df, avatars, ncp=2, types={"a": "weird"})


def test_target_must_be_a_single_column():
    df, avatars = _pair()
    with pytest.raises(AvatarError, match="target"):
        ga.privacy_metrics(df, avatars, ncp=2, known_variables=["a"], target=["b", "c"])


def test_not_dataframes_are_rejected_naming_the_argument():
    df, avatars = _pair()
    with pytest.raises(AvatarError, match="unshuffled_avatars must be a pandas DataFrame"):
        ga.privacy_metrics(df, avatars.to_numpy())
    with pytest.raises(AvatarError, match="original must be a pandas .*DataFrame, got ndarray"):
        ga.signal_metrics(df.to_numpy(), avatars)


def test_bad_bins_and_engine_are_rejected():
    df, avatars = _pair()
    with pytest.raises(AvatarError, match="bins"):
        ga.signal_metrics(df, avatars, bins=0)
    with pytest.raises(AvatarError, match="engine"):
        ga.privacy_metrics(df, avatars, ncp=2, engine="faiss")


def test_avatars_no_metric_can_measure_are_rejected():
    """Infinite values would give an infinite distance to closest and NaN ratios or
    Hellinger distances; no rows would give NaN: refused, naming what is wrong."""
    df, avatars = _pair()
    infinite = avatars.assign(a=avatars["a"].where(avatars.index != 2, np.inf))
    with pytest.raises(AvatarError, match=r"unshuffled_avatars column\(s\) \['a'\] hold infinite"):
        ga.privacy_metrics(df, infinite, ncp=2)
    with pytest.raises(AvatarError, match=r"avatars column\(s\) \['a'\] hold infinite"):
        ga.signal_metrics(df, infinite)
    with pytest.raises(AvatarError, match="avatars has no rows"):
        ga.signal_metrics(df, avatars.iloc[:0])


def test_target_needs_known_variables():
    """Without what the attacker knows there is no inference: the target is not ignored."""
    df, avatars = _pair()
    with pytest.raises(AvatarError, match="target needs known_variables"):
        ga.privacy_metrics(df, avatars, ncp=2, target="a")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"closest_rate_percentage_threshold": 200}, r"need 0 <= closest_rate_percentage_"),
        ({"closest_rate_percentage_threshold": -1}, "out of range"),
        ({"closest_rate_ratio_threshold": "a"}, "closest_rate_ratio_threshold must be a num"),
        ({"closest_rate_ratio_threshold": -0.5}, "out of range"),
    ],
)
def test_closest_rate_thresholds_are_checked(setting, message):
    df, avatars = _pair()
    with pytest.raises(AvatarError, match=message):
        ga.privacy_metrics(df, avatars, ncp=2, **setting)


def test_column_names_of_any_hashable_kind_name_variables():
    """A tuple or a numpy integer that is a column is one name, not a list of names."""
    df, avatars = _pair()
    expected = _hand_metrics(df, avatars, ncp=2, known_variables=["a", "b"], target="c")
    for names in ([("a", 1), ("b", 1), ("c", 1), ("g", 1)], [0, 1, 2, 3]):
        renamed = dict(zip(df.columns, names, strict=True))
        got = _hand_metrics(
            df.rename(columns=renamed), avatars.rename(columns=renamed), ncp=2,
            known_variables=[names[0], names[1]], target=np.int64(2) if names[0] == 0 else names[2],
        )  # fmt: skip
        assert got.inference_continuous == expected.inference_continuous
    with pytest.raises(AvatarError, match=r"known_variables names unknown column\(s\) \['z', 1\]"):
        ga.privacy_metrics(df, avatars, ncp=2, known_variables=("z", 1), target="c")


def test_float16_columns_and_unique_label_frames_are_measured():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.normal(size=60).astype(np.float16), "y": rng.normal(size=60),
                       "g": rng.choice(["a", "b"], 60)})  # fmt: skip
    result = ga.avatarize(df, k=5, seed=0)
    assert 0 <= result.privacy_metrics(ncp=2).column_direct_match_protection <= 100
    strict = df.set_flags(allows_duplicate_labels=False)  # a concat of both would repeat labels
    strict_result = ga.avatarize(strict, k=5, seed=0)
    assert strict_result.signal_metrics().hellinger_mean == result.signal_metrics().hellinger_mean


def test_copies_text_stays_short():
    """Hundreds of multiplicities: the first three named, the rest summed, one short line."""
    shared = {held: 2 for held in range(1, 320)}
    text = copies_text(shared)
    assert text == ("2 of a unique row, 2 of a row held by 2, 2 of a row held by 3, "
                    "632 of rows held by 4 or more")
    assert len(text) <= 120
    assert copies_text({2: 5, 1: 3}) == "3 of a unique row, 5 of a row held by 2"

"""FAMD / PCA / MCA against saiph (the reference implementation), exact SVD, to 1e-8.

saiph is the test oracle: ``saiph.fit_transform(df)`` without ``nf`` keeps every component and
uses LAPACK's full SVD (its randomised SVD is only used for few components). saiph decides the
kind of a column from its dtype, so the columns we declare categorical are given to it as text.
saiph keeps the null axes too (one per categorical variable); only the axes with a
non-negligible eigenvalue are compared, and their number must equal ours.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga

saiph = pytest.importorskip("saiph")

TOLERANCE = 1e-8
NULL_RATIO = 1e-10  # eigenvalue / largest eigenvalue below which an axis is null


def _saiph_frame(df: pd.DataFrame, categorical: list) -> pd.DataFrame:
    out = df.copy()
    for column in categorical:
        out[column] = out[column].astype(str)
    return out


def _saiph_coordinates(df: pd.DataFrame, categorical: list, col_weights=None):
    coordinates, model = saiph.fit_transform(_saiph_frame(df, categorical), col_weights=col_weights)
    eigen = np.asarray(model.s, dtype=np.float64) ** 2
    n_useful = int((eigen > NULL_RATIO * eigen[0]).sum())
    return coordinates.to_numpy()[:, :n_useful], model, n_useful


def _assert_equal_up_to_sign(ours: np.ndarray, reference: np.ndarray, what: str) -> None:
    assert ours.shape == reference.shape, f"{what}: shapes {ours.shape} vs {reference.shape}"
    signs = np.sign((ours * reference).sum(axis=0))
    assert np.all(signs != 0), f"{what}: an axis is orthogonal to saiph's"
    error = np.abs(ours - reference * signs).max(axis=0)
    worst = int(error.argmax())
    assert error[worst] <= TOLERANCE, (
        f"{what}: component {worst + 1} differs from saiph by {error[worst]:.3e} "
        f"(per-component max errors: {np.array2string(error, precision=2)})"
    )


@pytest.fixture(scope="module")
def aids_imputed(aids):
    """AIDS with cd496 median-imputed (saiph does not accept missing values)."""
    df = aids.df.copy()
    df["cd496"] = df["cd496"].fillna(df["cd496"].median())
    return df


# ----------------------------------------------------------------------------- FAMD
def test_famd_matches_saiph_on_aids(aids, aids_imputed):
    reference, model, n_useful = _saiph_coordinates(aids_imputed, aids.categorical)
    assert model.type == "famd"
    famd = ga.FAMD(types=aids.types).fit(aids_imputed)
    assert famd.kind_ == "famd"
    assert famd.n_components_ == n_useful
    ours = famd.transform(aids_imputed)
    assert list(ours.index) == list(aids_imputed.index)
    _assert_equal_up_to_sign(ours.to_numpy(), reference, "AIDS FAMD")
    np.testing.assert_allclose(
        famd.explained_variance_ratio_, model.explained_var_ratio[:n_useful], rtol=0, atol=1e-12
    )


def test_famd_imputes_missing_values_for_the_projection(aids, aids_imputed):
    with_missing = ga.FAMD(types=aids.types, imputation="median").fit_transform(aids.df)
    imputed = ga.FAMD(types=aids.types).fit_transform(aids_imputed)
    np.testing.assert_allclose(with_missing.to_numpy(), imputed.to_numpy(), rtol=0, atol=1e-10)


def test_column_weights_match_saiph_on_aids(aids, aids_imputed):
    weights = {"age": 3.0, "cd40": 0.5, "arms": 2.0, "gender": 0.25, "days": 1.5}
    reference, _model, n_useful = _saiph_coordinates(
        aids_imputed, aids.categorical, col_weights=weights
    )
    famd = ga.FAMD(column_weights=weights, types=aids.types).fit(aids_imputed)
    assert famd.n_components_ == n_useful
    ours = famd.transform(aids_imputed).to_numpy()
    _assert_equal_up_to_sign(ours, reference, "AIDS FAMD with column weights")
    # The weights must matter: the unweighted first axis is a different one.
    unweighted = ga.FAMD(types=aids.types).fit_transform(aids_imputed).to_numpy()
    assert abs(np.corrcoef(unweighted[:, 0], ours[:, 0])[0, 1]) < 0.999


def test_column_weights_naming_an_unknown_column_are_rejected(aids_imputed):
    with pytest.raises(ga.AvatarError, match="not_a_column"):
        ga.FAMD(column_weights={"not_a_column": 2.0}).fit(aids_imputed)


@pytest.mark.parametrize(
    ("weights", "error", "message"),
    [
        ({"cd40": "2"}, ga.AvatarTypeError, r"column_weights\['cd40'\] must be a number"),
        ([1, 2], ga.AvatarTypeError, "column_weights must map column names to weights"),
        ({"cd40": -1.0}, ga.AvatarError, "must be finite and > 0"),
        ({"cd40": 1e200}, ga.AvatarError, "column_weights up to 1e\\+200 overflow the proj"),
    ],
)
def test_the_estimators_check_column_weights_as_avatarize_does(aids_imputed, weights, error,
                                                               message):  # fmt: skip
    with pytest.raises(error, match=message):
        ga.FAMD(column_weights=weights).fit(aids_imputed)
    with pytest.raises(error, match=message):
        ga.avatarize(aids_imputed, k=5, column_weights=weights)


# ------------------------------------------------------------------------------ MCA
def test_mca_matches_saiph_on_wbcd(wbcd):
    reference, model, n_useful = _saiph_coordinates(wbcd.df, list(wbcd.df.columns))
    assert model.type == "mca"
    mca = ga.MCA(types=wbcd.types).fit(wbcd.df)
    assert mca.kind_ == "mca"
    assert mca.n_components_ == n_useful
    ours = mca.transform(wbcd.df).to_numpy()
    _assert_equal_up_to_sign(ours, reference, "WBCD MCA")
    np.testing.assert_allclose(
        mca.explained_variance_ratio_, model.explained_var_ratio[:n_useful], rtol=0, atol=1e-12
    )


def test_mca_is_famd_of_categorical_columns_scaled(wbcd):
    """MCA = the categorical FAMD divided by sqrt(number of variables) (saiph's scaling)."""
    mca = ga.MCA(types=wbcd.types).fit_transform(wbcd.df).to_numpy()
    famd = ga.FAMD(types=wbcd.types).fit_transform(wbcd.df).to_numpy()
    _assert_equal_up_to_sign(mca, famd / np.sqrt(wbcd.df.shape[1]), "MCA vs scaled FAMD")


def test_mca_matches_saiph_on_text_columns():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 200),
            "size": rng.choice(["S", "M", "L", "XL"], 200, p=[0.1, 0.4, 0.4, 0.1]),
            "flag": rng.choice(["yes", "no"], 200),
        }
    )
    reference, _model, _n = _saiph_coordinates(df, list(df.columns))
    ours = ga.MCA().fit_transform(df).to_numpy()
    _assert_equal_up_to_sign(ours, reference, "text MCA")


# ------------------------------------------------------------------------------ PCA
def test_pca_matches_saiph_on_continuous_columns(aids, aids_imputed):
    continuous = aids_imputed[aids.continuous]
    reference, model, n_useful = _saiph_coordinates(continuous, [])
    assert model.type == "pca"
    pca = ga.PCA().fit(continuous)
    assert pca.kind_ == "pca"
    assert pca.n_components_ == n_useful == continuous.shape[1]
    _assert_equal_up_to_sign(pca.transform(continuous).to_numpy(), reference, "AIDS PCA")
    # FAMD of a continuous-only table is the same PCA.
    famd = ga.FAMD().fit_transform(continuous).to_numpy()
    _assert_equal_up_to_sign(famd, reference, "FAMD of continuous-only data")


def test_pca_rejects_categorical_and_mca_rejects_continuous(aids_imputed, aids):
    with pytest.raises(ga.AvatarError, match="FAMD"):
        ga.PCA(types=aids.types).fit(aids_imputed)
    with pytest.raises(ga.AvatarError, match="age"):
        ga.MCA(types=aids.types).fit(aids_imputed)


# --------------------------------------------------------------- general properties
def test_axes_are_deterministic_and_sorted(aids, aids_imputed):
    first = ga.FAMD(types=aids.types).fit(aids_imputed)
    second = ga.FAMD(types=aids.types).fit(aids_imputed.iloc[::-1])
    eigenvalues = first.eigenvalues_
    assert np.all(np.diff(eigenvalues) <= 1e-12 * eigenvalues[0])
    # Same data in another row order: same axes with the same signs (deterministic sign rule).
    coordinates = first.transform(aids_imputed).to_numpy()[:, :5]
    again = second.transform(aids_imputed).to_numpy()[:, :5]
    np.testing.assert_allclose(coordinates, again, rtol=0, atol=1e-8)


def test_n_components_truncates(aids, aids_imputed):
    full = ga.FAMD(types=aids.types).fit_transform(aids_imputed)
    five = ga.FAMD(n_components=5, types=aids.types).fit_transform(aids_imputed)
    assert list(five.columns) == [f"Dim. {i}" for i in range(1, 6)]
    np.testing.assert_allclose(five.to_numpy(), full.to_numpy()[:, :5], rtol=0, atol=1e-10)
    capped = ga.FAMD(n_components=10_000, types=aids.types).fit(aids_imputed)
    assert capped.n_components_ == full.shape[1]
    with pytest.raises(ga.AvatarError, match="n_components"):
        ga.FAMD(n_components=0).fit(aids_imputed)  # checked by fit, as scikit-learn does
    with pytest.raises(TypeError, match="n_components"):
        ga.FAMD(n_components=2.5).fit(aids_imputed)


def test_estimators_are_scikit_learn_estimators(aids, aids_imputed):
    """clone, get_params / set_params, a Pipeline, and NotFittedError before fit."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import Pipeline

    famd = ga.FAMD(n_components=3, types=aids.types, imputation="mean")
    assert famd.get_params() == {"n_components": 3, "column_weights": None, "types": aids.types,
                                 "imputation": "mean", "backend": "auto"}  # fmt: skip
    copy = clone(famd).set_params(n_components=4)
    assert copy.get_params()["n_components"] == 4 and famd.n_components == 3
    with pytest.raises(NotFittedError):
        famd.transform(aids_imputed)
    with pytest.raises(ga.AvatarError, match="imputation"):
        ga.FAMD(imputation="zero").fit(aids_imputed)  # __init__ stores, fit checks
    target = aids_imputed["days"]
    features = aids_imputed.drop(columns="days")
    types = {c: k for c, k in aids.types.items() if c != "days"}
    pipeline = Pipeline([("famd", ga.FAMD(n_components=5, types=types)),
                         ("model", LinearRegression())]).fit(features, target)  # fmt: skip
    coordinates = ga.FAMD(n_components=5, types=types).fit_transform(features)
    expected = LinearRegression().fit(coordinates, target).predict(coordinates)
    np.testing.assert_allclose(pipeline.predict(features), expected, rtol=1e-10)
    assert list(pipeline[0].get_feature_names_out()) == [f"Dim. {i}" for i in range(1, 6)]


@pytest.mark.parametrize("dataset", ["aids", "wbcd"])
def test_inverse_transform_round_trip(dataset, request, aids_imputed):
    data = request.getfixturevalue(dataset)
    df = aids_imputed if dataset == "aids" else data.df
    estimator = ga.FAMD(types=data.types) if dataset == "aids" else ga.MCA(types=data.types)
    coordinates = estimator.fit_transform(df)
    back = estimator.inverse_transform(coordinates)
    assert list(back.columns) == list(df.columns)
    pd.testing.assert_series_equal(back.dtypes, df.dtypes)
    for column in df.columns:
        if column in data.types:
            assert (back[column].to_numpy() == df[column].to_numpy()).all(), column
        else:  # within half a unit of the decimals the column is released with (those most
            # values show: wtkg has 4, 77 of its 2,139 values 5)
            decimals = estimator.encoder_.specs_[column].decimals
            np.testing.assert_allclose(
                back[column].to_numpy(dtype=float), df[column].to_numpy(dtype=float),
                rtol=0, atol=1e-8 + (0.5 * 10.0 ** -decimals if decimals is not None else 0),
                err_msg=column,
            )


def test_inverse_transform_round_trip_mixed_dtypes():
    rng = np.random.default_rng(0)
    n = 150
    df = pd.DataFrame(
        {
            "x": rng.normal(10, 3, n),
            "y": rng.integers(0, 1000, n),
            "text": rng.choice(["a", "b", "c"], n),
            "cat": pd.Categorical(rng.choice(["u", "v"], n), categories=["u", "v", "w"]),
            "flag": rng.random(n) < 0.3,
        }
    )
    estimator = ga.FAMD()
    back = estimator.inverse_transform(estimator.fit_transform(df))
    pd.testing.assert_series_equal(back.dtypes, df.dtypes)
    np.testing.assert_allclose(back["x"], df["x"], rtol=0, atol=1e-8)
    assert (back["y"] == df["y"]).all()
    for column in ("text", "cat", "flag"):
        assert (back[column] == df[column]).all(), column


def test_coordinates_that_cannot_be_inverted_are_refused(aids, aids_imputed):
    famd = ga.FAMD(n_components=5, types=aids.types).fit(aids_imputed)
    coordinates = famd.transform(aids_imputed).to_numpy()
    available = famd.projection_.n_components_
    too_wide = np.zeros((3, available + 1))
    for bad, message in (
        (too_wide, rf"shape \(rows, 1 to {available}\).*got shape \(3, {available + 1}\)"),
        (coordinates[:, 0], r"got shape \(2139,\)"),
        (np.full_like(coordinates, np.nan), "missing or infinite coordinates"),
    ):
        with pytest.raises(ga.AvatarError, match=message):
            famd.inverse_transform(bad)
    with pytest.raises(ga.AvatarError, match="X has no rows"):
        famd.transform(aids_imputed.iloc[:0])
    with pytest.raises(ga.AvatarError, match=r"dtypes differ from the fitted table's"):
        famd.transform(aids_imputed.astype({aids_imputed.columns[0]: str}))


def test_transform_new_rows_with_unseen_modality(aids, aids_imputed):
    famd = ga.FAMD(types=aids.types).fit(aids_imputed)
    new = aids_imputed.head(5).copy()
    new.loc[new.index[0], "arms"] = 99  # not a modality seen at fit time
    new.loc[new.index[1], "age"] = 200  # far outside the fitted range: still projects
    coordinates = famd.transform(new)
    assert coordinates.shape == (5, famd.n_components_)
    assert np.isfinite(coordinates.to_numpy()).all()
    # Rows that did not change keep their coordinates.
    fitted = famd.transform(aids_imputed.head(5)).to_numpy()
    np.testing.assert_allclose(coordinates.to_numpy()[2:], fitted[2:], rtol=0, atol=1e-10)

    text = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "t": ["a", "b", "a", "b"]})
    model = ga.FAMD().fit(text)
    unseen = model.transform(pd.DataFrame({"x": [1.5], "t": ["zzz"]}))
    assert np.isfinite(unseen.to_numpy()).all()


def test_projection_does_not_modify_input(aids):
    df = aids.df.copy()  # has missing cd496
    before = df.copy(deep=True)
    estimator = ga.FAMD(types=aids.types, imputation="mean")
    coordinates = estimator.fit_transform(df)
    estimator.inverse_transform(coordinates)
    pd.testing.assert_frame_equal(df, before)
    mixed = pd.DataFrame(
        {
            "t": pd.Series(["a", None, "b", "a"], dtype="str"),
            "c": pd.Categorical(["x", "y", None, "x"]),
            "v": [1.0, np.nan, 3.0, 2.0],
        }
    )
    mixed_before = mixed.copy(deep=True)
    ga.FAMD().fit_transform(mixed)
    pd.testing.assert_frame_equal(mixed, mixed_before)


def test_compiled_statistics_equal_the_bincounts():
    """The Gram statistics' compiled pass (``modalities.py``) sums over the rows in order, as
    a bincount does: the same bits."""
    from gpu_avatar.projection.modalities import modality_statistics

    rng = np.random.default_rng(3)
    n_modalities = [3, 1, 4]
    x = rng.normal(size=(500, 2))
    codes = np.stack([rng.integers(0, m, size=500) for m in n_modalities], axis=1)
    offsets = np.concatenate([[0], np.cumsum(n_modalities)])
    sums, cross = modality_statistics(x, codes, offsets)
    for j, m_j in enumerate(n_modalities):
        block_j = slice(offsets[j], offsets[j + 1])
        for c in range(x.shape[1]):
            expected = np.bincount(codes[:, j], weights=x[:, c], minlength=m_j)
            np.testing.assert_array_equal(sums[block_j, c], expected)
        for other in range(j, len(n_modalities)):
            m_l = n_modalities[other]
            expected = np.bincount(codes[:, j] * m_l + codes[:, other], minlength=m_j * m_l)
            block_l = slice(offsets[other], offsets[other + 1])
            np.testing.assert_array_equal(cross[block_j, block_l], expected.reshape(m_j, m_l))

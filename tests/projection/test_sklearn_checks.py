"""PCA, FAMD and MCA against scikit-learn's own estimator checks, and what those checks need:
arrays (and read-only memmaps) as tables of columns x0, x1, ..., ``n_features_in_`` and
``feature_names_in_``, the declared tags, sparse input refused naming the fix, ``set_output``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.utils.estimator_checks import parametrize_with_checks

import gpu_avatar as ga


@parametrize_with_checks([ga.PCA(), ga.FAMD(), ga.MCA()])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def _table(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(40, 4))


def test_an_array_is_a_table_of_continuous_columns_named_as_scikit_learn_does():
    array = _table()
    frame = pd.DataFrame(array, columns=[f"x{i}" for i in range(4)])
    pca = ga.PCA().fit(array)
    assert pca.n_features_in_ == 4 and not hasattr(pca, "feature_names_in_")
    assert pca.encoder_.continuous_columns_ == ["x0", "x1", "x2", "x3"]
    coordinates = pca.transform(array)
    assert isinstance(coordinates, np.ndarray)
    # the same numbers as the DataFrame of the same columns, and FAMD of continuous columns
    np.testing.assert_array_equal(coordinates, ga.PCA().fit_transform(frame).to_numpy())
    np.testing.assert_array_equal(coordinates, ga.FAMD().fit_transform(array))
    np.testing.assert_allclose(pca.inverse_transform(coordinates), array, atol=1e-10)


def test_a_read_only_memmap_is_an_array(tmp_path):
    array = _table()
    np.save(tmp_path / "x.npy", array)
    memmap = np.load(tmp_path / "x.npy", mmap_mode="r")
    np.testing.assert_array_equal(ga.PCA().fit_transform(memmap), ga.PCA().fit_transform(array))


def test_mca_takes_an_arrays_integer_codes_or_text_as_categories(wbcd):
    df = wbcd.df[wbcd.categorical].iloc[:200]
    expected = ga.MCA(types={c: "categorical" for c in df}).fit_transform(df).to_numpy()
    np.testing.assert_array_equal(ga.MCA().fit_transform(df.to_numpy()), expected)
    np.testing.assert_array_equal(ga.MCA().fit_transform(df.to_numpy().astype(str)), expected)


def test_feature_names_in_only_for_string_column_names():
    array = _table()
    named = ga.PCA().fit(pd.DataFrame(array, columns=list("abcd")))
    assert list(named.feature_names_in_) == list("abcd") and named.n_features_in_ == 4
    assert not hasattr(named.fit(pd.DataFrame(array)), "feature_names_in_")  # refit drops it
    # fitted on a DataFrame, an array is taken column by column
    np.testing.assert_array_equal(
        named.fit(pd.DataFrame(array, columns=list("abcd"))).transform(array),
        named.transform(pd.DataFrame(array, columns=list("abcd"))).to_numpy(),
    )
    mixed = pd.DataFrame({"a": [1.5, 2, 3, 4, 5, 6], "b": list("xyxyzz"), "c": [1, 2, 3] * 2})
    famd = ga.FAMD().fit(mixed)  # an object array of numbers and text, as the mixed columns
    np.testing.assert_array_equal(famd.transform(mixed.to_numpy()), famd.transform(mixed))


def test_set_output_pandas_and_feature_names_out():
    array = _table()
    pca = ga.PCA(n_components=2).set_output(transform="pandas")
    coordinates = pca.fit_transform(array)
    assert isinstance(coordinates, pd.DataFrame)
    assert list(coordinates.columns) == list(pca.get_feature_names_out()) == ["Dim. 1", "Dim. 2"]
    np.testing.assert_array_equal(
        pca.transform(array).to_numpy(), ga.PCA(n_components=2).fit(array).transform(array)
    )
    frame = pd.DataFrame(array, index=range(100, 140))
    assert list(pca.fit(frame).transform(frame).index) == list(range(100, 140))


def test_tags_declare_missing_values_allowed_and_sparse_refused():
    get_tags = getattr(pytest.importorskip("sklearn.utils"), "get_tags", None)
    if get_tags is None:
        pytest.skip("scikit-learn < 1.6 has no get_tags")
    for estimator in (ga.PCA(), ga.FAMD(), ga.MCA()):
        tags = get_tags(estimator)
        assert tags.input_tags.allow_nan and not tags.input_tags.sparse
        assert tags.input_tags.categorical == isinstance(estimator, ga.MCA)


def test_missing_values_of_an_array_are_imputed_as_for_a_dataframe():
    array = _table()
    array[[0, 5], [1, 2]] = np.nan
    expected = ga.FAMD().fit_transform(pd.DataFrame(array, columns=[f"x{i}" for i in range(4)]))
    np.testing.assert_array_equal(ga.FAMD().fit_transform(array), expected.to_numpy())


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (sparse.csr_matrix, ga.AvatarTypeError, "X.toarray()"),
        (lambda a: a[:, 0], ga.AvatarError, "X.reshape(-1, 1)"),
        (lambda a: a[:, :0], ga.AvatarError, "at least one column"),
        (lambda a: a[:2], ga.AvatarError, "at least 3 rows"),
        (lambda a: a + 1j, ga.AvatarError, "real values"),
        (lambda a: np.where(a > 2, np.inf, a), ga.AvatarError, "by NaN"),
        (lambda a: a.astype(str).astype(object) + "kg", ga.AvatarError, "give a DataFrame"),
    ],
)
def test_refused_arrays_are_named_with_the_fix_in_one_line(make, error, words):
    array = _table()
    with pytest.raises(error) as raised:
        ga.PCA().fit(make(array))
    message = str(raised.value)
    assert words in message and "\n" not in message


def test_transform_checks_the_number_of_columns():
    pca = ga.PCA().fit(_table())
    with pytest.raises(ga.AvatarError, match="X has 3 features, but PCA is expecting 4"):
        pca.transform(_table()[:, :3])

"""A column whose spread is negligible against its magnitude (values a few float64 roundings
apart) is a constant wherever columns are scaled (``encoding.kinds.column_scales``): the
privacy metrics, the avatars, a database's scenarios and the attacks are those of the table
without it, where magnifying its rounding noise to a unit variance made it the main variable
(a distance to the closest original of 1e12, every target "met")."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.encoding.kinds import column_scales
from gpu_avatar.metrics.catalogue import PRIVACY_TARGETS

BASE = 369 / 11  # 33.5454545...: written 33.545455 with six decimals
WRITTEN = 33.545455


def _near_constant(n: int, seed: int) -> np.ndarray:
    """``BASE`` a few roundings apart: a std of about 1e-14."""
    return BASE + np.random.default_rng(seed).integers(-3, 4, n) * np.spacing(BASE)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame({"a": rng.normal(size=n).round(3) + 0.0005,
                         "b": rng.gamma(2.0, 3.0, n).round(2) + 0.005,
                         "g": rng.choice(["x", "y", "z"], n)})


def _assert_same_privacy(expected, got) -> None:
    for name in PRIVACY_TARGETS:
        if getattr(expected, name) is None:
            assert getattr(got, name) is None, name
        else:
            assert getattr(got, name) == pytest.approx(getattr(expected, name), rel=1e-9), name
    np.testing.assert_array_equal(got.local_cloaking_per_individual,
                                  expected.local_cloaking_per_individual)
    np.testing.assert_allclose(got.distance_to_closest_per_avatar,
                               expected.distance_to_closest_per_avatar, rtol=1e-9)


def test_the_rule():
    scales = column_scales([1e-14, 3e-8, 1e-6, 0.0, 1e-300], [BASE, BASE, BASE, 0.0, 0.0])
    np.testing.assert_array_equal(scales, [np.inf, np.inf, 1e-6, np.inf, 1e-300])
    assert np.isnan(column_scales(np.nan, 1.0))  # an all-missing column: left to the caller


def test_privacy_metrics_ignore_a_near_constant_column(table):
    avatars = ga.avatarize(table, k=10, seed=0).sensitive_unshuffled_avatars
    expected = ga.privacy_metrics(table, avatars, ncp=3)
    # the avatars' values written with six decimals, 4.5e-7 from the originals'
    got = ga.privacy_metrics(table.assign(c=_near_constant(len(table), 1)),
                             avatars.assign(c=WRITTEN), ncp=3)
    _assert_same_privacy(expected, got)
    assert got.distance_to_closest < 10


def test_avatars_ignore_a_near_constant_column(table):
    expected = ga.avatarize(table, k=10, seed=0)
    got = ga.avatarize(table.assign(c=_near_constant(len(table), 1)), k=10, seed=0)
    pd.testing.assert_frame_equal(got.avatars[list(table.columns)], expected.avatars)
    np.testing.assert_allclose(got.avatars["c"], BASE, rtol=1e-14)
    _assert_same_privacy(expected.privacy_metrics(), got.privacy_metrics())
    signal, expected_signal = got.signal_metrics(), expected.signal_metrics()
    assert signal.hellinger_per_variable["c"] == 0.0  # one bin
    assert signal.correlation_difference_ratio == pytest.approx(
        expected_signal.correlation_difference_ratio)  # no noise correlations


def test_knn_imputation_ignores_a_near_constant_column(table):
    holed = table.assign(a=table["a"].where(table.index % 7 != 0))
    expected = ga.avatarize(holed, k=10, seed=0, imputation="knn")
    got = ga.avatarize(holed.assign(c=_near_constant(len(table), 1)), k=10, seed=0,
                       imputation="knn")
    pd.testing.assert_frame_equal(got.avatars[list(table.columns)], expected.avatars)


def test_database_scenarios_ignore_near_constant_columns():
    data = resources.files("gpu_avatar.data")
    tables = {name: pd.read_csv(data / f"{name}.csv") for name in ("patient", "doctor", "visit")}

    def run(patient, visit):
        db = ga.Database()
        db.add_table("patient", patient, primary_key="p_id")
        db.add_table("doctor", tables["doctor"], primary_key="d_id")
        db.add_table("visit", visit, primary_key="visit_id")
        db.add_link("patient", "p_id", "visit", "patient_id", method="linear_sum_assignment")
        db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
        return ga.avatarize_database(db, k=5, ncp=5, seed=0)

    expected = run(tables["patient"], tables["visit"])
    # visit.dose: each patient's mean dose (to_top_enriched) a few roundings from the others
    got = run(tables["patient"].assign(level=_near_constant(len(tables["patient"]), 1)),
              tables["visit"].assign(dose=_near_constant(len(tables["visit"]), 2)))
    for name, avatars in expected.tables.items():
        pd.testing.assert_frame_equal(got.tables[name][list(avatars.columns)], avatars)
    expected_privacy, got_privacy = expected.privacy_metrics(), got.privacy_metrics()
    assert [(e.table, e.scenario) for e in got_privacy] == \
        [(e.table, e.scenario) for e in expected_privacy]
    assert any(e.scenario == "to_top_enriched" for e in got_privacy)
    for entry, expected_entry in zip(got_privacy, expected_privacy, strict=True):
        _assert_same_privacy(expected_entry.metrics, entry.metrics)


def test_attacks_ignore_a_near_constant_column(table):
    training, holdout = ga.split_holdout(table, 0.2, seed=0)
    avatars = ga.avatarize(training, k=10, seed=0).avatars
    options = dict(secrets=["a", "g"], singling_out_modes=(), seed=0)
    expected = ga.attack_metrics(training, avatars, holdout,
                                 linkability_columns=[["a"], ["b", "g"]], **options)
    got = ga.attack_metrics(training.assign(c=_near_constant(len(training), 1)),
                            avatars.assign(c=_near_constant(len(avatars), 3)),
                            holdout.assign(c=_near_constant(len(holdout), 2)),
                            linkability_columns=[["a", "c"], ["b", "g"]], **options)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())

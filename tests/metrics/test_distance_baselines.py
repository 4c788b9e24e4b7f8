"""DCR and NNDR beside their baselines, and the holdout distances, against brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

import gpu_avatar as ga
from gpu_avatar.backend import CPU
from gpu_avatar.metrics.privacy import metric_coordinates
from gpu_avatar.neighbours import nearest_reference_distances


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n) + 0.01, "b": rng.gamma(2.0, size=n) + 0.01,
                         "c": rng.choice(["x", "y", "z"], n)})


def test_baselines_and_holdout_figures_match_brute_force():
    training, holdout = ga.split_holdout(_table(300, 0), 0.25, seed=1)
    avatars = ga.avatarize(training, k=10, seed=2).sensitive_unshuffled_avatars
    pm = ga.privacy_metrics(training, avatars, holdout=holdout)
    x, (y, h), _ = metric_coordinates(training, [avatars, holdout], 5, None, "mean", CPU)
    among = cdist(x, x)
    np.fill_diagonal(among, np.inf)
    ordered = np.sort(among, axis=1)
    assert np.isclose(pm.distance_to_closest_baseline, np.median(ordered[:, 0]))
    assert np.isclose(pm.closest_distances_ratio_baseline,
                      np.median(ordered[:, 0] / ordered[:, 1]))
    assert np.isclose(pm.holdout_distance_to_closest, np.median(cdist(h, x).min(axis=1)))
    closer = cdist(y, x).min(axis=1) < cdist(y, h).min(axis=1)
    assert np.isclose(pm.closer_to_training_rate, 100 * closer.mean())
    frame = pm.to_frame()
    assert frame.loc["distance_to_closest", "baseline"] == pm.distance_to_closest_baseline
    assert frame.loc["distance_to_closest", "holdout baseline"] == pm.holdout_distance_to_closest
    assert frame.loc["distance_to_closest", "target"] == "report"
    assert frame.loc["distance_to_closest", "passed"] is None
    assert frame.loc["closer_to_training_rate", "value"] == pm.closer_to_training_rate


def test_without_a_holdout_the_holdout_figures_are_missing():
    df = _table(120, 3)
    result = ga.avatarize(df, k=5, seed=0)
    pm = result.privacy_metrics()
    assert pm.holdout_distance_to_closest is None and pm.closer_to_training_rate is None
    assert np.isnan(pm.to_frame().loc["distance_to_closest", "holdout baseline"])
    assert pm.distance_to_closest_baseline > 0


def test_reference_distances_are_exact_with_duplicates_and_ties():
    rng = np.random.default_rng(4)
    references = rng.integers(0, 4, size=(200, 3)).astype(float) / 3  # many duplicates
    queries = np.vstack([references[:20], rng.normal(size=(50, 3))])
    got = nearest_reference_distances(queries, references)
    np.testing.assert_array_equal(got[:20], 0.0)
    squared = ((queries[:, None, :] - references[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(got, np.sqrt(squared.min(axis=1)), rtol=1e-12)

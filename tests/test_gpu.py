"""GPU backend: CPU/GPU parity on the same seed. Skipped cleanly without a CUDA device.

Run on a GPU machine with ``pytest -m gpu`` (``benchmarks/gpu_check.py`` does it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar.backend import CPU, _probe_cupy, resolve_backend
from gpu_avatar.neighbours import nearest_neighbours
from gpu_avatar.reductions import distance_ranks

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_probe_cupy()[0] is None, reason="needs cupy and a CUDA device"),
]


@pytest.fixture(scope="module")
def gpu():
    return resolve_backend("gpu")


@pytest.fixture(scope="module")
def aids():
    df = read_dataset("aids.csv", sep=";").drop(columns="pidnum")
    types = {c: "categorical" for c in df.columns if df[c].nunique() <= 10}
    return df, types


def _point_sets():
    rng = np.random.default_rng(0)
    return {
        "gaussian": rng.normal(size=(3000, 5)),
        "integer ties": rng.integers(0, 4, size=(3000, 3)).astype(float),
        "duplicates": np.repeat(rng.normal(size=(150, 2)), 20, axis=0),
    }


@pytest.mark.parametrize("name", list(_point_sets()))
@pytest.mark.parametrize("engine", ["brute", "kdtree"])
def test_neighbours_identical_to_cpu(gpu, name, engine):
    points = _point_sets()[name]
    cpu_indices, cpu_distances = nearest_neighbours(points, 20, CPU, "kdtree")
    indices, distances = nearest_neighbours(points, 20, gpu, engine)
    np.testing.assert_array_equal(gpu.to_numpy(indices), cpu_indices)
    np.testing.assert_array_equal(gpu.to_numpy(distances), cpu_distances)


@pytest.mark.parametrize("name", list(_point_sets()))
@pytest.mark.parametrize("engine", ["brute", "kdtree"])
def test_distance_ranks_identical_to_cpu(gpu, name, engine):
    originals = _point_sets()[name]
    rng = np.random.default_rng(1)
    avatars = originals[rng.permutation(len(originals))] + np.round(
        rng.normal(size=originals.shape)
    )
    expected = distance_ranks(originals, avatars, CPU, "brute")
    for tile in (None, 257):  # fused kernel, then the xp tiles
        if engine == "kdtree" and tile is not None:
            continue
        got = distance_ranks(originals, avatars, gpu, engine, tile=tile)
        np.testing.assert_array_equal(got.local_cloaking, expected.local_cloaking)
        np.testing.assert_array_equal(got.hidden, expected.hidden)
        np.testing.assert_allclose(got.closest, expected.closest, rtol=1e-12, atol=0)
        np.testing.assert_allclose(got.second_closest, expected.second_closest, rtol=1e-12, atol=0)


def test_famd_coordinates_match_cpu(aids):
    df, types = aids
    cpu = ga.FAMD(types=types, backend="cpu").fit_transform(df)
    gpu = ga.FAMD(types=types, backend="gpu").fit_transform(df)
    np.testing.assert_allclose(gpu.to_numpy(), cpu.to_numpy(), atol=1e-8)


def test_avatarize_same_seed_same_avatars(aids):
    df, types = aids
    cpu = ga.avatarize(df, k=20, ncp=5, seed=3, types=types, backend="cpu")
    gpu = ga.avatarize(df, k=20, ncp=5, seed=3, types=types, backend="gpu")
    assert gpu.parameters["backend"] == "gpu"
    a, b = cpu.sensitive_unshuffled_avatars, gpu.sensitive_unshuffled_avatars
    assert a.dtypes.equals(b.dtypes)
    for column in df.columns:
        if column in types:
            pd.testing.assert_series_equal(a[column], b[column])
        else:
            np.testing.assert_allclose(
                b[column].to_numpy(float),
                a[column].to_numpy(float),
                rtol=1e-6,
                atol=1e-6,
                equal_nan=True,
            )


def test_privacy_metrics_identical_to_cpu(aids):
    df, types = aids
    result = ga.avatarize(df, k=20, ncp=5, seed=0, types=types, backend="cpu")
    cpu = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, types=types, backend="cpu")
    gpu = ga.privacy_metrics(df, result.sensitive_unshuffled_avatars, types=types, backend="gpu")
    np.testing.assert_array_equal(
        gpu.local_cloaking_per_individual, cpu.local_cloaking_per_individual
    )
    assert gpu.hidden_rate == cpu.hidden_rate


def test_database_runs_on_gpu_with_integrity():
    db = ga.Database()
    db.add_table("patient", read_dataset("patient.csv"), primary_key="p_id")
    db.add_table("doctor", read_dataset("doctor.csv"), primary_key="d_id")
    db.add_table("visit", read_dataset("visit.csv"), primary_key="visit_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
    result = ga.avatarize_database(db, k=5, seed=0, backend="gpu")
    assert all(link.referential_integrity == 100.0 for link in result.links)


def test_cudf_in_cudf_out(aids):
    cudf = pytest.importorskip("cudf")
    df, types = aids
    result = ga.avatarize(cudf.from_pandas(df), k=20, seed=0, types=types, backend="gpu")
    assert type(result.avatars).__module__.startswith("cudf")
    assert len(result.avatars) == len(df)

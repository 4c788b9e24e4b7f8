"""The GPU path (``backend="gpu"``), on the device where there is one, else on the CuPy
stand-in (``cupy_standin.py``) with the kernels in numba's CUDA simulator: in CI every GPU
branch runs, and a CuPy call that a device would refuse fails here too.

What a user relies on: the same seed gives the same avatars on both backends (categorical
values identical, continuous within 1e-9 relative) and run after run; neighbours, counts and
hidden flags equal the CPU's exactly; a table too large for the device is refused before any
work, with the figures. Tests named "tree" force the device k-d tree on small inputs (the
simulator runs every thread as Python).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from realdata import read_dataset

import gpu_avatar as ga
from gpu_avatar.backend import CPU
from gpu_avatar.metrics.reductions import distance_ranks
from gpu_avatar.neighbours.search import nearest_neighbours
from gpu_avatar.pipeline.avatarize import check_device_memory


@pytest.fixture(scope="module")
def aids():
    df = read_dataset("aids.csv", sep=";").drop(columns="pidnum")
    types = {c: "categorical" for c in df.columns if df[c].nunique() <= 10}
    return df, types


@pytest.fixture
def tree_path(monkeypatch):
    """The device k-d tree above 64 rows (instead of 4096): "auto" takes it on small inputs."""
    from gpu_avatar.kernels import cuda

    monkeypatch.setattr(cuda, "KNN_BRUTE_MAX_ROWS", 64)
    monkeypatch.setattr(cuda, "RANKS_BRUTE_MAX_ROWS", 64)


def _point_sets(n: int = 400):
    rng = np.random.default_rng(0)
    return {
        "gaussian": rng.normal(size=(n, 5)),
        "integer ties": rng.integers(0, 4, size=(n, 3)).astype(float),
        "duplicates": np.repeat(rng.normal(size=(n // 20, 2)), 20, axis=0),
    }


def assert_same_avatars(got: pd.DataFrame, expected: pd.DataFrame, categorical) -> None:
    """Categorical columns identical, continuous ones within 1e-9 relative, same dtypes."""
    assert got.dtypes.equals(expected.dtypes)
    for column in expected.columns:
        if column in categorical:
            pd.testing.assert_series_equal(got[column], expected[column])
        else:
            np.testing.assert_allclose(
                got[column].to_numpy(float), expected[column].to_numpy(float),
                rtol=1e-9, atol=0, equal_nan=True, err_msg=str(column),
            )  # fmt: skip


# ------------------------------------------------------------------ exact searches
@pytest.mark.parametrize("name", list(_point_sets()))
@pytest.mark.parametrize("engine", ["brute", "kdtree"])
def test_neighbours_identical_to_cpu(gpu, name, engine):
    points = _point_sets()[name]
    cpu_indices, cpu_distances = nearest_neighbours(points, 20, CPU, "brute")
    indices, distances = nearest_neighbours(points, 20, gpu, engine)
    np.testing.assert_array_equal(gpu.to_numpy(indices), cpu_indices)
    np.testing.assert_array_equal(gpu.to_numpy(distances), cpu_distances)


@pytest.mark.parametrize("name", list(_point_sets()))
@pytest.mark.parametrize("engine, tile", [("brute", None), ("brute", 97), ("kdtree", None)])
def test_distance_ranks_identical_to_cpu(gpu, name, engine, tile):
    originals = _point_sets()[name]
    rng = np.random.default_rng(1)
    avatars = originals[rng.permutation(len(originals))] + np.round(
        rng.normal(size=originals.shape)
    )
    expected = distance_ranks(originals, avatars, CPU, "brute")
    got = distance_ranks(originals, avatars, gpu, engine, tile=tile)
    np.testing.assert_array_equal(got.local_cloaking, expected.local_cloaking)
    np.testing.assert_array_equal(got.hidden, expected.hidden)
    np.testing.assert_array_equal(got.closest, expected.closest)
    np.testing.assert_array_equal(got.second_closest, expected.second_closest)


def test_tie_heavy_candidates_are_resolved_by_the_tree_not_by_full_tiles(standin):
    """FAISS proposes candidates; on duplicated points most rows are uncertain (ties at the
    k-th distance). They are answered by the device tree, whose memory follows n k, where the
    former fallback sorted (1024 x n) tiles (tens of minutes at 10^6 rows)."""
    pytest.importorskip("faiss")
    points = _point_sets(600)["duplicates"]
    expected = nearest_neighbours(points, 20, CPU, "brute")
    standin.xp.largest = 0
    indices, distances = nearest_neighbours(points, 20, standin, "faiss")
    np.testing.assert_array_equal(standin.to_numpy(indices), expected[0])
    np.testing.assert_array_equal(standin.to_numpy(distances), expected[1])
    assert standin.xp.largest < len(points) ** 2 / 4, standin.xp.largest


def test_more_neighbours_than_the_tree_keeps(gpu, tree_path):
    points = _point_sets(300)["gaussian"]
    with pytest.raises(ga.AvatarError, match="at most 128 neighbours.*engine='brute'"):
        nearest_neighbours(points, 130, gpu, "kdtree")
    indices, _ = nearest_neighbours(points, 130, gpu)  # "auto": exact tiles instead
    np.testing.assert_array_equal(gpu.to_numpy(indices), nearest_neighbours(points, 130)[0])


def test_kernels_run_on_cupys_current_stream(standin, monkeypatch):
    """A kernel launched on another stream than the CuPy work around it could read its inputs
    before they are written: launches go to CuPy's current stream. (The simulator has no
    external streams: the launch is recorded, then run on its one stream.)"""
    from numba import cuda

    from gpu_avatar.kernels import cuda as driver

    launched = []

    def external_stream(pointer):
        launched.append(pointer)
        return cuda.default_stream()

    monkeypatch.setattr(driver.cuda, "external_stream", external_stream)
    points = _point_sets(100)["gaussian"]
    expected = nearest_neighbours(points, 3)
    standin.xp.current_stream = type("Stream", (), {"ptr": 0x7F00})()
    indices, _ = driver.nearest_others(standin, standin.asarray(points), 3)
    driver.distance_ranks(standin, *(standin.asarray(a) for a in (points, points[::-1])),
                          standin.asarray(np.ones(100)))  # fmt: skip
    assert launched == [0x7F00] * 3  # the kNN, ranks and two-nearest kernels
    np.testing.assert_array_equal(standin.to_numpy(indices), expected[0])
    standin.xp.current_stream = type("Stream", (), {"ptr": 0})()  # CuPy's legacy default
    driver.nearest_others(standin, standin.asarray(points), 3)
    assert len(launched) == 3  # numba's default stream is the legacy one too


# ------------------------------------------------------------------- the pipeline
def test_famd_coordinates_are_the_cpu_bits(gpu, aids):
    df, types = aids
    cpu = ga.FAMD(types=types, backend="cpu").fit_transform(df)
    on_gpu = ga.FAMD(types=types, backend=gpu).fit_transform(df)
    pd.testing.assert_frame_equal(on_gpu, cpu, check_exact=True)


def test_avatarize_same_seed_same_avatars(gpu, aids):
    df, types = aids
    cpu = ga.avatarize(df, k=20, ncp=5, seed=3, types=types, backend="cpu")
    on_gpu = ga.avatarize(df, k=20, ncp=5, seed=3, types=types, backend="gpu")
    assert on_gpu.parameters.backend == "gpu"
    unshuffled = on_gpu.sensitive_unshuffled_avatars
    assert_same_avatars(unshuffled, cpu.sensitive_unshuffled_avatars, types)
    assert_same_avatars(on_gpu.avatars, cpu.avatars, types)


@pytest.mark.parametrize("categorical", ["draw", "argmax"])
def test_tree_avatarize_equals_the_cpu_run_after_run(gpu, aids, tree_path, categorical):
    df, types = aids
    sample = df.iloc[:300]
    settings = dict(k=10, ncp=5, seed=11, types=types, categorical=categorical)
    cpu = ga.avatarize(sample, backend="cpu", **settings).sensitive_unshuffled_avatars
    runs = [ga.avatarize(sample, backend="gpu", **settings).sensitive_unshuffled_avatars
            for _ in range(2)]  # fmt: skip
    pd.testing.assert_frame_equal(runs[0], runs[1], check_exact=True)  # run after run
    assert_same_avatars(runs[0], cpu, types)


def test_tree_privacy_metrics_equal_the_cpu(gpu, aids, tree_path):
    """Above the brute size the GPU took cupyx's ball query, which takes one scalar radius
    (``float(r)``) and returns an (n_points x n) index array: it failed for every table over
    200k rows. The device tree answers with the CPU's counts, and the same nearest avatars and
    matches for the inference and the correlation protection."""
    df, types = aids
    sample = df.iloc[:300]
    avatars = ga.avatarize(sample, k=10, seed=0, types=types, backend="cpu")
    unshuffled = avatars.sensitive_unshuffled_avatars
    attacker = dict(types=types, known_variables=["age", "wtkg"], target="cd40")
    cpu = ga.privacy_metrics(sample, unshuffled, backend="cpu", **attacker)
    on_gpu = ga.privacy_metrics(sample, unshuffled, backend="gpu", **attacker)
    assert None not in (cpu.inference_continuous, cpu.correlation_protection_rate)
    np.testing.assert_array_equal(
        on_gpu.local_cloaking_per_individual, cpu.local_cloaking_per_individual
    )
    np.testing.assert_array_equal(on_gpu.hidden_per_individual, cpu.hidden_per_individual)
    pd.testing.assert_frame_equal(on_gpu.to_frame(), cpu.to_frame())


def test_signal_metrics_equal_the_cpu(gpu, aids):
    df, types = aids
    result = ga.avatarize(df, k=20, seed=1, types=types, backend="cpu")
    cpu = ga.signal_metrics(df, result.avatars, types=types, backend="cpu")
    on_gpu = ga.signal_metrics(df, result.avatars, types=types, backend="gpu")
    assert on_gpu.hellinger_per_variable.keys() == cpu.hellinger_per_variable.keys()
    for name, value in cpu.hellinger_per_variable.items():
        assert on_gpu.hellinger_per_variable[name] == pytest.approx(value, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------- CuPy 13
def test_cupy13_avatarizes_above_the_brute_size(cupy13, aids, tree_path):
    """``cupyx.scipy.spatial.KDTree`` first ships in CuPy 14: with CuPy 13 (RAPIDS) the GPU
    path broke above the brute size. The device tree needs only CuPy and numba-cuda."""
    df, types = aids
    sample = df.iloc[:200]
    got = ga.avatarize(sample, k=8, seed=2, types=types, backend="gpu")
    expected = ga.avatarize(sample, k=8, seed=2, types=types, backend="cpu")
    assert_same_avatars(got.sensitive_unshuffled_avatars, expected.sensitive_unshuffled_avatars,
                        types)  # fmt: skip


def test_cupy13_all_categorical_table(cupy13, aids):
    """An all-categorical table (MCA) has no continuous column: CuPy 13's ``bincount`` of the
    empty continuous block raised. The fit's statistics now run on the host."""
    df, types = aids
    categorical = df[list(types)].iloc[:500]
    got = ga.avatarize(categorical, k=10, seed=4, types=types, backend="gpu")
    expected = ga.avatarize(categorical, k=10, seed=4, types=types, backend="cpu")
    assert got.projection_kind == "mca"
    pd.testing.assert_frame_equal(got.avatars, expected.avatars, check_exact=True)


# ---------------------------------------------------------------------- memory
def test_a_table_too_large_is_refused_before_any_work(standin, aids):
    """The estimate counts the rows' arrays, the working memory and the tree kernels' local
    memory (3 KB a thread for the 132 x 2048 threads of the stand-in's H200: 0.83 GB)."""
    df, types = aids
    large = pd.concat([df] * 50, ignore_index=True)  # 106,950 rows: about 0.2 GB on a device
    xp = standin.xp
    xp.device_free, xp.pool_free, xp.largest = 1600 * 2**20, 0, 0
    with pytest.raises(ga.AvatarError, match=r"needs about 1\.56 GB.*90% of the 1\.68 GB free"
                       r".*about 80,659 rows fit.*batch_size=80,659 or less"):  # fmt: skip
        ga.avatarize(large, k=20, types=types, backend="gpu")
    assert xp.largest < len(large)  # nothing per row reached the device
    xp.device_free = 1460 * 2**20  # the exact metrics cannot be batched: no batch size offered
    with pytest.raises(ga.AvatarError, match=r"privacy metrics of 106,950 rows.*rows fit at "
                       r"once: it needs every row at once, or use backend='cpu'"):  # fmt: skip
        ga.privacy_metrics(large, large, types=types, backend="gpu")
    xp.device_free = 1400 * 2**20
    with pytest.raises(ga.AvatarError, match="not even the 1.37 GB of working memory"):
        ga.avatarize(df, k=20, types=types, backend="gpu")
    # what CuPy's pool holds unused is reused first: it counts as free
    xp.pool_free = 2 * 2**30
    check_device_memory(standin, len(large), large.shape[1], k=20, ncp=5)


# ------------------------------------------------------------------- databases
def test_database_runs_on_gpu_with_integrity(gpu):
    db = ga.Database()
    db.add_table("patient", read_dataset("patient.csv"), primary_key="p_id")
    db.add_table("doctor", read_dataset("doctor.csv"), primary_key="d_id")
    db.add_table("visit", read_dataset("visit.csv"), primary_key="visit_id")
    db.add_link("patient", "p_id", "visit", "patient_id")
    db.add_link("doctor", "d_id", "visit", "doctor_id", method="minimum_distance")
    on_gpu = ga.avatarize_database(db, k=5, seed=0, backend="gpu")
    cpu = ga.avatarize_database(db, k=5, seed=0, backend="cpu")
    assert all(link.referential_integrity == 100.0 for link in on_gpu.links)
    for name, table in cpu.tables.items():
        pd.testing.assert_frame_equal(on_gpu.tables[name], table, check_exact=False, rtol=1e-9)


def test_cudf_in_cudf_out(gpu, aids):
    cudf = pytest.importorskip("cudf")
    df, types = aids
    result = ga.avatarize(cudf.from_pandas(df), k=20, seed=0, types=types, backend="gpu")
    assert type(result.avatars).__module__.startswith("cudf")
    assert len(result.avatars) == len(df)

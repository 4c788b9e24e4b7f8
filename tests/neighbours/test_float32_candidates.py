"""Exact neighbours from float32 candidate indexes (``engine="faiss"``, ``engine="cuml"``).

FAISS and cuML work on float32 points and compute ``|x|^2 + |y|^2 - 2 x.y`` in float32: near-ties
come out reordered and a true neighbour can be left out of the candidates. The library re-measures
the candidates in float64 and answers exactly every row its float32 error bound cannot certify.
These tests run that path for real through fake ``faiss`` and ``cuml`` modules
(``fake_indexes.py``) that compute as the real indexes do, on data where float32 rounding does
miss true neighbours, and through a worst-case index whose every distance is as wrong as the
bound allows. The result must equal the exact float64 reference: distance
``sqrt(sum_d (x_d - y_d)^2)``, ties to the lower index, the point itself excluded by index.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from fake_indexes import U, make_cuml, make_faiss, squared_float32

from gpu_avatar.backend import CPU
from gpu_avatar.neighbours import search as nb

FAKE_ENGINES = ("faiss", "cuml")


def install(monkeypatch, engine: str, arithmetic: str = "expanded", gpus: int = 0):
    """Put the fake ``engine`` module where ``import`` finds it (before any real one)."""
    if engine == "faiss":
        module = make_faiss(arithmetic, gpus)
        monkeypatch.setitem(sys.modules, "faiss", module)
        return module
    cuml, neighbors = make_cuml(arithmetic)
    monkeypatch.setitem(sys.modules, "cuml", cuml)
    monkeypatch.setitem(sys.modules, "cuml.neighbors", neighbors)
    return neighbors


@pytest.fixture
def exact_rows(monkeypatch):
    """Records how many rows each call sends to the exact walk (certification failed)."""
    calls: list[int] = []
    original = nb._tree_neighbours

    def recording(points, k, backend, rows=None):
        if rows is not None:
            calls.append(int(rows.size))
        return original(points, k, backend, rows)

    monkeypatch.setattr(nb, "_tree_neighbours", recording)
    return calls


def naive_neighbours(points: np.ndarray, k: int):
    """Every other point sorted by (float64 distance, index)."""
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    indices, distances = np.empty((n, k), np.int64), np.empty((n, k))
    for i in range(n):
        squared = ((points - points[i]) ** 2).sum(axis=1)
        order = np.lexsort((np.arange(n), squared))
        order = order[order != i][:k]
        indices[i], distances[i] = order, np.sqrt(squared[order])
    return indices, distances


def far_clusters(n=240, dim=3, seed=0):
    """Two tight clusters 2 10^4 apart (centring cannot shrink the norms), points 10^-3
    apart inside: float32 squared distances are multiples of about 8 there, the true ones
    about 10^-6, so the float32 order inside a cluster is noise."""
    rng = np.random.default_rng(seed)
    centre = np.zeros(dim)
    centre[0] = 1e4
    side = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)[:, None]
    return side * centre + 1e-3 * rng.normal(size=(n, dim))


def near_ties(n=300, dim=4, seed=1):
    """Gaussian points, and around some of them rings of points at radii equal to 10^-7
    relative: far below float32's error at these norms."""
    rng = np.random.default_rng(seed)
    anchors = rng.normal(size=(n // 17, dim))
    directions = rng.normal(size=(n // 17, 16, dim))
    directions /= np.linalg.norm(directions, axis=2, keepdims=True)
    radii = 0.3 * (1 + 1e-7 * rng.integers(-3, 4, size=(n // 17, 16, 1)))
    ring = anchors[:, None, :] + radii * directions
    return np.concatenate([anchors, ring.reshape(-1, dim)])


def near_clusters(n=300, dim=3, seed=2):
    """Unit-spread clusters 200 apart: float32 errors (about 10^-2 on squared distances)
    of the order of the gaps between neighbours' distances."""
    rng = np.random.default_rng(seed)
    side = np.where(np.arange(n) % 2 == 0, 100.0, -100.0)
    points = rng.normal(size=(n, dim))
    points[:, 0] += side
    return points


def gaussian(n=2000, dim=5, seed=3):
    return np.random.default_rng(seed).normal(size=(n, dim))


DATA = {"far_clusters": far_clusters, "near_ties": near_ties, "near_clusters": near_clusters}


def assert_exact(points, k, backend, engine):
    expected_idx, expected_dist = naive_neighbours(points, k)
    indices, distances = nb.nearest_neighbours(points, k, backend, engine)
    indices, distances = backend.to_numpy(indices), backend.to_numpy(distances)
    assert indices.dtype == np.int64 and distances.dtype == np.float64
    wrong = np.flatnonzero((indices != expected_idx).any(axis=1))
    assert wrong.size == 0, (
        f"{engine}: {wrong.size} rows differ, e.g. row {wrong[0]}: {indices[wrong[0]]} "
        f"against {expected_idx[wrong[0]]}"
    )
    np.testing.assert_array_equal(distances, expected_dist)


def proposals_miss(points, k, arithmetic="expanded") -> int:
    """How many rows the float32 index's k + 2 candidates lack a true k nearest for."""
    cast = (points - points.mean(axis=0)).astype(np.float32)
    faiss = make_faiss(arithmetic)
    index = faiss.IndexFlatL2(cast.shape[1])
    index.add(cast)
    _, candidates = index.search(cast, k + 2)
    expected, _ = naive_neighbours(points, k)
    return sum(not set(expected[i]) <= set(candidates[i]) for i in range(len(points)))


# ------------------------------------------------------------------------------- the data
@pytest.mark.parametrize(
    ("data", "arithmetic"),
    [("far_clusters", "expanded"), ("near_ties", "expanded"), ("near_clusters", "worst")],
)
@pytest.mark.parametrize("k", [1, 4])
def test_float32_candidates_do_miss_true_neighbours_on_these_data(data, arithmetic, k):
    """The data are hard: the fake index's k + 2 candidates leave true neighbours out (on
    ``near_clusters`` the real float32 arithmetic does not, its worst case does)."""
    assert proposals_miss(DATA[data](), k, arithmetic) > 0


# ------------------------------------------------------------------------- the guarantee
@pytest.mark.parametrize("engine", FAKE_ENGINES)
@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("k", [1, 4, 12])
def test_float32_index_gives_the_exact_neighbours(monkeypatch, engine, data, k):
    install(monkeypatch, engine)
    assert_exact(DATA[data](), k, CPU, engine)


@pytest.mark.parametrize("engine", FAKE_ENGINES)
@pytest.mark.parametrize("k", [1, 4, 12])
def test_worst_case_float32_index_gives_the_exact_neighbours(monkeypatch, engine, k):
    """An index whose every distance errs by the largest amount the bound admits, in the
    direction that hides true neighbours: certified rows are still exact. (With cuML's former
    margin, 10^-9 relative, rows were certified with a true neighbour missing.)"""
    install(monkeypatch, engine, "worst")
    assert_exact(near_clusters(), k, CPU, engine)


@pytest.mark.parametrize("engine", FAKE_ENGINES)
def test_own_row_excluded_by_index_and_duplicates_kept(monkeypatch, engine):
    """Duplicates of far-off points: every distance inside a group is 0, float32 reports
    whatever the cancellation leaves; ties go to the lower index, the point itself never."""
    install(monkeypatch, engine)
    base = np.array([[1e4, 0.0], [-1e4, 0.0], [1e4, 1e-3]])
    points = base[np.repeat(np.arange(3), [5, 4, 3])]
    assert_exact(points, 1, CPU, engine)
    assert_exact(points, 4, CPU, engine)
    indices, _ = nb.nearest_neighbours(points, 4, CPU, engine)
    np.testing.assert_array_equal(indices[0], [1, 2, 3, 4])
    np.testing.assert_array_equal(indices[4], [0, 1, 2, 3])


@pytest.mark.parametrize("engine", FAKE_ENGINES)
def test_bound_holds_for_every_pair(monkeypatch, engine):
    """What the certificate assumes, measured: for every pair, the index's reported squared
    distance is within the row's margin of the float64 one; and the margin is not vacuous
    (the largest error seen is over 5 % of it: 10-40 % on these points)."""
    for points in (far_clusters(120), near_clusters(120), gaussian(120, dim=8)):
        cast, norms = nb._float32_points(points, np)
        reported = squared_float32(cast, cast).astype(np.float64)
        if engine == "cuml":  # float32 square roots, squared in float64
            reported = np.sqrt(reported, dtype=np.float32).astype(np.float64) ** 2
        exact = ((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2)
        far, margin = nb._float32_certificate(reported, norms, points.shape[1], np)
        np.testing.assert_array_equal(far, reported.max(axis=1))
        error = np.abs(reported - exact).max(axis=1)
        assert (error <= margin).all(), (error / margin).max()
        assert (error / margin).max() > 0.05


# ------------------------------------------------------------------------ the fast path
@pytest.mark.parametrize("engine", FAKE_ENGINES)
def test_most_rows_certified_on_ordinary_data(monkeypatch, exact_rows, engine):
    """The bound leaves the float32 index useful: on Gaussian points few rows need the exact
    walk; on the far-off clusters every row does (float32 cannot separate 10^-3 at 10^4)."""
    install(monkeypatch, engine)
    points = gaussian()
    assert_exact(points, 10, CPU, engine)
    assert sum(exact_rows) < 0.05 * len(points), exact_rows
    exact_rows.clear()
    assert_exact(far_clusters(), 3, CPU, engine)
    assert sum(exact_rows) == len(far_clusters())


def test_offset_alone_costs_no_certification(monkeypatch, exact_rows):
    """The points are centred before the cast: Gaussian points moved by 10^4 are certified
    as often as the originals."""
    install(monkeypatch, "faiss")
    points = gaussian(1000, 4)
    assert_exact(points, 5, CPU, "faiss")
    centred = sum(exact_rows)
    exact_rows.clear()
    assert_exact(points + 1e4, 5, CPU, "faiss")
    assert sum(exact_rows) <= centred + 0.01 * len(points)


def test_cuml_is_given_float32_points(monkeypatch):
    """cuML's brute force is float32: the library casts (and bounds) the points itself."""
    neighbors = install(monkeypatch, "cuml")
    nb.nearest_neighbours(gaussian(50), 3, CPU, "cuml")
    assert neighbors.fitted == [np.dtype(np.float32)]


@pytest.mark.parametrize("engine", FAKE_ENGINES)
def test_uncertifiable_points_are_answered_exactly(monkeypatch, exact_rows, engine):
    """Squared norms beyond float32's range (the index's distances overflow to inf or nan):
    no certificate, every row answered by the exact walk."""
    install(monkeypatch, engine)
    points = gaussian(60, 3) * 1e20
    with np.errstate(over="ignore", invalid="ignore"):
        assert_exact(points, 3, CPU, engine)
    assert sum(exact_rows) == len(points)


# ----------------------------------------------------------------- the GPU backend's path
@pytest.mark.parametrize("engine", FAKE_ENGINES)
def test_float32_index_on_the_gpu_backend(monkeypatch, standin, engine):
    """The same on the GPU backend (CuPy stand-in, the device tree in the simulator for the
    uncertain rows): cuML gets device arrays; FAISS's index goes to the GPU."""
    module = install(monkeypatch, engine, gpus=1)
    points = np.concatenate([far_clusters(40), near_clusters(60)])
    assert_exact(points, 3, standin, engine)
    if engine == "faiss":
        assert module.moved_to_gpus == 1


def test_margin_scale():
    """The coefficient: (2 d + 16) u (1 + O(d u)), with u = 2^-24."""
    norms = np.array([1.0, 3.0])
    _, margin = nb._float32_certificate(np.zeros((2, 2)), norms, 5, np)
    np.testing.assert_allclose(margin, (2 * 5 + 16) * U * (norms + 3.0), rtol=1e-6)

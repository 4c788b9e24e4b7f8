"""Shared fixtures: the GPU backend (a device, or the CuPy stand-in with numba's CUDA
simulator), the real data sets, the published avatars and a brute-force metric helper.

The data sets live in ``tests/data`` (see its README for sources and licences); set
``GPU_AVATAR_DATASETS`` to point elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _cuda_device() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, no device
        return False


# Without a CUDA device the GPU kernels run in numba's CUDA simulator; numba reads the switch
# when it is first imported, which is below (gpu_avatar imports numba lazily).
CUDA_DEVICE = _cuda_device()
if not CUDA_DEVICE:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from cupy_standin import make_cupy  # noqa: E402
from realdata import datasets_dir, read_dataset  # noqa: E402
from scipy.spatial.distance import cdist  # noqa: E402

import gpu_avatar as ga  # noqa: E402
from gpu_avatar.backend import choice as backend_module  # noqa: E402


def _standin_backend(monkeypatch, version: str):
    """The GPU backend on the CuPy stand-in of ``version``: every entry point asked for
    "gpu" (or "auto") resolves to it."""
    module = make_cupy(version)
    monkeypatch.setattr(backend_module, "_probe_gpu", lambda: (module, ""))
    return ga.resolve_backend("gpu")


@pytest.fixture
def gpu(monkeypatch):
    """The ``backend="gpu"`` Backend: the device where there is one, else the CuPy 14
    stand-in with the kernels in numba's CUDA simulator."""
    if CUDA_DEVICE:
        return ga.resolve_backend("gpu")
    return _standin_backend(monkeypatch, "14.2.0")


@pytest.fixture
def standin(gpu):
    """The GPU backend on the CuPy stand-in only, for what only it can observe (device
    memory figures, the largest allocation)."""
    if CUDA_DEVICE:
        pytest.skip("observes the CuPy stand-in, not a device")
    return gpu


@pytest.fixture
def cupy13(monkeypatch):
    """The GPU backend with CuPy 13's behaviours (RAPIDS images on CUDA 12), on the
    stand-in."""
    if CUDA_DEVICE:
        pytest.skip("CuPy 13's behaviours are reproduced by the stand-in only")
    return _standin_backend(monkeypatch, "13.6.0")

CATEGORICAL_MAX_DISTINCT = 10  # the paper: <= 10 distinct values -> categorical


@pytest.fixture(scope="session")
def datasets_path() -> Path:
    return datasets_dir()


# --------------------------------------------------------------------------- AIDS
@dataclass(frozen=True)
class Dataset:
    """An original table, its published avatars (unshuffled) and the paper's settings."""

    name: str
    df: pd.DataFrame
    published: pd.DataFrame
    types: dict  # kinds for avatarize (paper settings)
    metric_types: dict  # kinds for the reference metric projection
    ncp: int
    k: int = 20

    @property
    def categorical(self) -> list:
        return [c for c, kind in self.types.items() if kind == "categorical"]

    @property
    def continuous(self) -> list:
        return [c for c in self.df.columns if c not in self.types]


def load_aids() -> pd.DataFrame:
    return read_dataset("aids.csv", sep=";").drop(columns="pidnum")


def aids_categorical_columns(df: pd.DataFrame) -> list:
    return [c for c in df.columns if df[c].nunique() <= CATEGORICAL_MAX_DISTINCT]


def load_wbcd() -> pd.DataFrame:
    return read_dataset("wbcd.csv").drop(columns="Sample_code_number")


@pytest.fixture(scope="session")
def aids() -> Dataset:
    df = load_aids()
    published = read_dataset("aids_published_avatars_k20_ncp5.csv")
    types = {c: "categorical" for c in aids_categorical_columns(df)}
    return Dataset("aids", df, published, types=types, metric_types=types, ncp=5)


@pytest.fixture(scope="session")
def wbcd() -> Dataset:
    df = load_wbcd()
    published = read_dataset("wbcd_published_avatars_k20_ncp2.csv")
    types = {c: "categorical" for c in df.columns}
    return Dataset("wbcd", df, published, types=types, metric_types={"Class": "categorical"}, ncp=2)


# ------------------------------------------------------------------ reference metrics
@dataclass(frozen=True)
class ReferenceMetrics:
    hidden_rate: float  # percent
    local_cloaking: np.ndarray  # per original
    median_local_cloaking: float


def reference_metrics(
    original: pd.DataFrame, unshuffled_avatars: pd.DataFrame, metric_types: dict, ncp: int
) -> ReferenceMetrics:
    """Hidden rate and local cloaking by brute force (docs/spec/metrics.md, section 2).

    Metric projection: FAMD fitted on the originals (missing values mean-imputed), first ``ncp``
    axes; full originals x avatars distance matrix. ``c_i = #{j != i : d(x_i, y_j) <= d(x_i,
    y_i)}``; original i is hidden when its nearest avatar (first index on ties) is not avatar i.
    """
    model = ga.FAMD(n_components=ncp, types=metric_types, imputation="mean").fit(original)
    x = model.transform(original).to_numpy()
    y = model.transform(unshuffled_avatars).to_numpy()
    distances = cdist(x, y)
    n = len(distances)
    own = distances[np.arange(n), np.arange(n)]
    cloaking = (distances <= own[:, None]).sum(axis=1) - 1  # the own avatar always counts once
    hidden = distances.argmin(axis=1) != np.arange(n)
    return ReferenceMetrics(
        hidden_rate=100.0 * hidden.mean(),
        local_cloaking=cloaking,
        median_local_cloaking=float(np.median(cloaking)),
    )


@pytest.fixture(scope="session")
def metric_helper():
    return reference_metrics

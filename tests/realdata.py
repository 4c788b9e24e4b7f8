"""The real data sets the tests use: the package's bundled copy where it has the file (the
same bytes as the shared one: AIDS and the tutorial database), the tests' own copy
(``tests/data``: the time series, see its README), else ``../shared/datasets``
beside the repository or the folder named by ``$GPU_AVATAR_DATASETS``. A test whose data set
is absent is skipped, saying where it looked."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

DATASETS_ENV_VAR = "GPU_AVATAR_DATASETS"
BUNDLED = Path(__file__).resolve().parents[1] / "gpu_avatar" / "data"
TESTS_DATA = Path(__file__).resolve().parent / "data"


def datasets_dir() -> Path:
    """``$GPU_AVATAR_DATASETS`` or ``<repo>/../shared/datasets``."""
    override = os.environ.get(DATASETS_ENV_VAR)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "datasets"


def read_dataset(name: str, **read_csv_options) -> pd.DataFrame:
    """A fresh copy of data set ``name`` (read once per session), or skip the test."""
    path = next((folder / name for folder in (BUNDLED, TESTS_DATA) if (folder / name).is_file()),
                datasets_dir() / name)
    if not path.is_file():
        pytest.skip(f"data set {path} not found (set {DATASETS_ENV_VAR})")
    return _read_cached(str(path), tuple(sorted(read_csv_options.items()))).copy()


@cache
def _read_cached(path: str, options: tuple) -> pd.DataFrame:
    return pd.read_csv(path, **dict(options))

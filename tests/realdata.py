"""The real data sets the tests use, copied into ``tests/data`` (see its README for their
sources and licences) so that a fresh clone runs every test: the published avatars of the
Avatar paper (WBCD, AIDS) and their originals, the tutorial database and the time series.
``$GPU_AVATAR_DATASETS`` names another folder holding the same files."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pandas as pd

DATASETS_ENV_VAR = "GPU_AVATAR_DATASETS"
TESTS_DATA = Path(__file__).resolve().parent / "data"


def datasets_dir() -> Path:
    """``$GPU_AVATAR_DATASETS`` or ``tests/data``."""
    override = os.environ.get(DATASETS_ENV_VAR)
    return Path(override) if override else TESTS_DATA


def read_dataset(name: str, **read_csv_options) -> pd.DataFrame:
    """A fresh copy of data set ``name`` (read once per session)."""
    path = datasets_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"data set {path} not found: the tests' data live in "
                                f"{TESTS_DATA} (or ${DATASETS_ENV_VAR})")
    return _read_cached(str(path), tuple(sorted(read_csv_options.items()))).copy()


@cache
def _read_cached(path: str, options: tuple) -> pd.DataFrame:
    return pd.read_csv(path, **dict(options))

"""Backend choice on a machine without a GPU: the CPU path, the environment variable, the
memory check's message, and frames passed through unchanged when they are not cuDF."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.backend import (
    BACKEND_ENV_VAR,
    CPU,
    Backend,
    ensure_fits,
    is_cudf,
    like_input,
    resolve_backend,
    to_pandas,
)


def test_environment_variable_sets_the_auto_choice(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "cpu")
    assert resolve_backend("auto") is CPU
    monkeypatch.setenv(BACKEND_ENV_VAR, "tpu")
    with pytest.raises(ga.AvatarError, match=BACKEND_ENV_VAR):
        resolve_backend("auto")


def test_backend_pickles_by_name():
    assert pickle.loads(pickle.dumps(CPU)) is CPU


@dataclass(frozen=True)
class _SmallDevice(Backend):
    """A backend reporting 1 GB free, to exercise the memory check without a GPU."""

    def free_memory_bytes(self) -> int:
        return 10**9


def test_memory_check_names_the_need_and_the_fixes():
    small = _SmallDevice("gpu", np)
    ensure_fits(small, 5 * 10**8, "a small table")  # fits: no error
    with pytest.raises(ga.AvatarError, match=r"needs about 2\.0 GB.*1\.0 GB are free.*batch_size"):
        ensure_fits(small, 2 * 10**9, "a large table")
    ensure_fits(CPU, 10**15, "anything")  # host memory is not probed


def test_pandas_frames_pass_through():
    frame = pd.DataFrame({"a": [1, 2]})
    assert not is_cudf(frame)
    assert to_pandas(frame) is frame and like_input(frame, frame) is frame

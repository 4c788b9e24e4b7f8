"""Backend choice on a machine without a GPU: the CPU path, the environment variable, and
frames passed through unchanged when they are not cuDF."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

import gpu_avatar as ga
from gpu_avatar.backend import (
    BACKEND_ENV_VAR,
    CPU,
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


def test_host_memory_is_not_probed():
    """The memory check guards the device only (its figures: tests/test_gpu.py)."""
    ensure_fits(CPU, 10**9, 10**9, "a table of 10^18 bytes")


def test_pandas_frames_pass_through():
    frame = pd.DataFrame({"a": [1, 2]})
    assert not is_cudf(frame)
    assert to_pandas(frame) is frame and like_input(frame, frame) is frame


def test_a_device_numba_cuda_cannot_use_is_no_gpu(monkeypatch):
    """CuPy sees a device but numba-cuda cannot run kernels on it (e.g. built for another
    CUDA than the driver's): the GPU backend is unavailable, and the reason says so."""
    import sys
    import types

    from numba import cuda

    from gpu_avatar.backend import choice

    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=runtime)))  # fmt: skip
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    module, reason = choice._probe_gpu.__wrapped__()
    assert module is None
    assert "numba-cuda sees no usable CUDA device" in reason and "gpu_avatar[gpu]" in reason
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    module, reason = choice._probe_gpu.__wrapped__()
    assert module is sys.modules["cupy"] and reason == ""

"""The first use of the CPU kernels says so once, above the progress bar: with a cold disk
cache (a fresh ``NUMBA_CACHE_DIR``), not with a warm one (the same folder, next process), and
never without a bar. Each run is a fresh interpreter: numba reads its cache folder at import,
and the notice is once a process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh_python import run_fresh

from gpu_avatar.kernels import COMPILE_NOTICE

pytestmark = pytest.mark.slow  # fresh interpreters compiling kernels: -m 'not slow' skips them

SCRIPT = r"""
import sys
import numpy as np
from gpu_avatar.progress import Steps
from gpu_avatar.projection.modalities import modality_statistics
from gpu_avatar.relational.transport import transport

steps = Steps(sys.argv[1] == "bar", "test", total=2)
with steps.step("transport"):
    transport(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1, 1]))
with steps.step("modalities"):  # another kernel compiles: no second notice
    modality_statistics(np.ones((3, 1)), np.zeros((3, 1), np.int64), np.array([0, 1]))
"""


def _stderr(cache: Path, progress: str) -> str:
    return run_fresh(SCRIPT, progress, cache=cache).stderr


def test_a_cold_cache_is_announced_once_above_the_bar(tmp_path):
    cold = _stderr(tmp_path, "bar")
    assert cold.count(COMPILE_NOTICE) == 1, cold
    assert any(line.strip() == COMPILE_NOTICE for line in cold.splitlines()), cold  # one line
    warm = _stderr(tmp_path, "bar")
    assert COMPILE_NOTICE not in warm, warm


def test_nothing_is_said_without_a_bar(tmp_path):
    assert _stderr(tmp_path, "silent") == ""

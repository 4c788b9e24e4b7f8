"""``benchmarks/device_run.sh``, the script of the first run on a GPU machine, end to end in
numba-cuda's simulator on the CuPy stand-in (``GA_DEVICE_SIMULATE=1``: tiny sizes and budget):
from any folder, it writes the versions, the GPU tests' log and gpu_check's record under
``$OUT``, every stage and every step of each size in the record, and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_run.sh"
STEPS = ("kNN", "distance_ranks", "generate table", "avatarize", "privacy_metrics")

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'


def test_the_device_run_goes_end_to_end_in_the_simulator(tmp_path):
    out = tmp_path / "out"
    environment = dict(os.environ, OUT=str(out), GA_DEVICE_SIMULATE="1", PYTHON=sys.executable,
                       TMPDIR=str(tmp_path),  # gpu_check's dated copy, kept out of the checkout
                       GA_DEVICE_TESTS="tests/test_gpu.py::test_more_neighbours_than_the_tree_keeps")
    completed = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=environment,
                               capture_output=True, text=True, timeout=600)  # fmt: skip
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]
    assert sorted(path.name for path in out.iterdir()) == [
        "env.txt", "gpu_check.json", "gpu_check.log", "gpu_check.md", "gpu_tests.log"]
    record = json.loads((out / "gpu_check.json").read_text())
    assert [(s["name"], s["status"]) for s in record["stages"]] == [
        ("preflight", "ok"), ("warm-up", "ok"), ("timings at 200 rows", "ok"),
        ("timings at 400 rows", "ok"), ("parity", "ok")]  # fmt: skip
    assert record["preflight"]["probe"]["usable"] is True
    assert record["preflight"]["numba_cuda"]["simulator"] is True
    measured = {(m["rows"], m["step"]): m["seconds"] for m in record["measurements"]}
    assert all(measured[size, step] > 0 for size in (200, 400) for step in STEPS)
    assert "numba-cuda" in (out / "env.txt").read_text()
    tests = (out / "gpu_tests.log").read_text()
    assert "1 passed" in tests and "pytest rc=0" in tests
    assert "gpu_check rc=0" in completed.stdout


def test_the_script_fits_a_device_call():
    """The device tool takes a command of at most 2,000 characters: the script is run as a
    file, and kept under that size so that it can be pasted as one."""
    assert len(SCRIPT.read_text()) < 2000
    assert os.access(SCRIPT, os.X_OK)

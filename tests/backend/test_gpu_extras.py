"""The ``gpu`` and ``gpu-cuda13`` extras bring everything numba-cuda needs to compile: a fresh
virtual environment with the package and that extra only (no ``CUDA_HOME``, no CUDA toolkit
looked for) compiles the backend's probe kernel to PTX for sm_90 (the H100/H200) with a libNVVM
found in its own ``site-packages``, and assembles it for sm_90 with nvJitLink. No GPU is needed:
compiling PTX needs only libNVVM.

It installs from the package registry, as CI does (each extra is a few hundred MB the first
time, then pip's cache). Offline, pip cannot install and the test fails, saying so: it cannot
be checked without the wheels. A wheelhouse works too (``PIP_FIND_LINKS=/wheels`` with
``PIP_NO_INDEX=1``, which pip reads from the environment).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

ROOT = Path(__file__).resolve().parents[2]
# Variables that would let the fresh environment find a CUDA toolkit, or this checkout, or run
# numba-cuda in its simulator: removed, so that only what the extra installed can be used.
HIDDEN = ("CUDA_HOME", "CUDA_PATH", "NUMBA_ENABLE_CUDASIM", "PYTHONPATH", "VIRTUAL_ENV",
          "LD_LIBRARY_PATH")  # fmt: skip

COMPILE = r"""
import json
from importlib import metadata
from gpu_avatar.backend import choice
from cuda.bindings import nvjitlink

ptx = choice.probe_ptx((9, 0))
handle = nvjitlink.create(2, ["-arch=sm_90", "-verbose"])
nvjitlink.add_data(handle, nvjitlink.InputType.PTX, ptx.encode(), len(ptx.encode()), "probe")
nvjitlink.complete(handle)
cubin = nvjitlink.get_linked_cubin_size(handle)
versions = {}
for name in ("numba-cuda", "cupy-cuda12x", "cupy-cuda13x", "nvidia-nvvm", "nvidia-cuda-nvcc-cu12"):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps({"sm_90": ".target sm_90" in ptx, "cubin_bytes": cubin, **versions,
                  **choice.nvvm_details()}))
"""


@pytest.mark.parametrize("extra, cupy", [("gpu", "cupy-cuda12x"), ("gpu-cuda13", "cupy-cuda13x")])
def test_an_extra_alone_compiles_for_sm_90(extra, cupy, tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    source = tmp_path / "source"  # a copy: building the wheel writes build/ and egg-info
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "gpu_avatar", source / "gpu_avatar",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
         f"{source}[{extra}]"],
        env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert installed.returncode == 0, (
        f"pip could not install gpu_avatar[{extra}] (this test needs the package registry, or "
        f"a wheelhouse through PIP_FIND_LINKS):\n{installed.stderr[-3000:]}"
    )
    compiled = subprocess.run([python, "-c", COMPILE], env=environment, cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr[-4000:]
    report = json.loads(compiled.stdout.strip().splitlines()[-1])
    assert report["sm_90"] and report["cubin_bytes"] > 0, report
    assert cupy in report, report  # the extra's CuPy, installed beside numba-cuda
    # libNVVM came with the extra, not from a toolkit this machine happens to have
    assert report["nvvm_found_via"] == "site-packages", report
    assert str(venv) in report["nvvm_path"], report


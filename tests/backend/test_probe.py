"""The GPU probe: ``backend="auto"`` takes the GPU only when a one-line kernel compiles (numba-cuda
finds libNVVM) and runs on the device; otherwise it falls back to the CPU and says why once, and
``backend="gpu"`` raises that reason with its fix (``CUDA_HOME``, or the wheel that carries
libNVVM). On a machine without a GPU: a CuPy module that sees one device, the kernel in
numba-cuda's simulator, and numba-cuda's own errors planted where it raises them."""

from __future__ import annotations

import logging
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cuda.pathfinder import DynamicLibNotFoundError
from numba import cuda

import gpu_avatar as ga
from gpu_avatar.backend import BACKEND_ENV_VAR, CPU, choice, gpu_status

# What numba-cuda 0.30 raises when no libNVVM is found (cuda-pathfinder's error, read from a
# machine without one).
NVVM_MISSING = ('Failure finding "libnvvm.so.4 or libnvvm.so": No such file: libnvvm.so.4 or '
                'libnvvm.so, No such file: libnvvm.so.4 or libnvvm.so')  # fmt: skip


def fake_cupy(devices: int = 1, driver: int = 13000) -> types.ModuleType:
    """CuPy as the probe reads it: a device count, the driver's and runtime's versions, the
    current device's compute capability."""
    module = types.ModuleType("cupy")
    module.__version__ = "14.2.0"
    runtime = types.SimpleNamespace(getDeviceCount=lambda: devices,
                                    driverGetVersion=lambda: driver,
                                    runtimeGetVersion=lambda: driver)  # fmt: skip
    device = types.SimpleNamespace(compute_capability="90")
    module.cuda = types.SimpleNamespace(runtime=runtime, Device=lambda *_: device)
    return module


def make_toolkit(folder: Path, version: str | None = None) -> Path:
    """A CUDA toolkit's folder as the search reads it: nvvm/lib64/libnvvm.so.4 (empty), and
    ``version.json`` when ``version`` is given."""
    (folder / "nvvm" / "lib64").mkdir(parents=True)
    (folder / "nvvm" / "lib64" / "libnvvm.so.4").touch()
    if version:
        (folder / "version.json").write_text(f'{{"cuda": {{"version": "{version}"}}}}')
    return folder


@pytest.fixture
def device(monkeypatch):
    """One CUDA device, seen by CuPy and by numba-cuda (the simulator), a fresh probe."""
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(choice, "_fallbacks_said", set())
    choice._probe_gpu.cache_clear()
    yield sys.modules["cupy"]
    choice._probe_gpu.cache_clear()


@pytest.fixture
def no_nvvm(device, monkeypatch):
    """numba-cuda without libNVVM: compiling raises what numba-cuda 0.30 raises then (not in
    the simulator, which compiles nothing)."""
    def compile_ptx(*args, **kwargs):
        raise DynamicLibNotFoundError(NVVM_MISSING)

    monkeypatch.setattr(choice, "_simulated", lambda: False)
    monkeypatch.setattr(cuda, "compile_ptx", compile_ptx)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    return device


def test_a_kernel_that_compiles_and_runs_makes_the_gpu_usable(device):
    status = gpu_status()
    assert status.usable and status.reason == ""
    assert status.details["stage"] == "ok" and status.details["compute_capability"] == "9.0"
    backend = ga.resolve_backend("auto")
    assert backend.is_gpu and backend.xp is device


def test_auto_falls_back_to_the_cpu_when_nvvm_is_missing_and_says_so_once(no_nvvm):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ga.resolve_backend("auto") is CPU
        assert ga.resolve_backend("auto") is CPU
    said = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "backend='auto' runs on the CPU" in str(said[0].message)
    assert "libNVVM" in str(said[0].message)
    status = gpu_status()
    assert not status.usable
    assert status.details["stage"] == "compile"
    assert status.details["missing_library"].startswith("libNVVM")
    assert "DynamicLibNotFoundError" in status.details["error"]


def test_gpu_raises_the_reason_with_the_fix(no_nvvm):
    with pytest.raises(ga.BackendUnavailableError) as raised:
        ga.resolve_backend("gpu")
    message = str(raised.value)
    assert "backend='gpu' was requested but numba-cuda cannot compile" in message
    assert "found no libNVVM" in message and "libnvvm.so.4" in message
    assert "CUDA_HOME" in message  # either fix: the toolkit ...
    assert "pip install 'gpu_avatar[gpu-cuda13]' (brings nvidia-nvvm, CUDA 13)" in message
    assert "[gpu]'" not in message  # ... or the wheel for this CUDA (13, from the driver)
    with pytest.raises(ga.BackendUnavailableError):
        ga.avatarize(pd.DataFrame({"a": np.arange(50.0), "b": np.arange(50.0) % 7}), k=3,
                     backend="gpu")  # fmt: skip


def test_the_fix_names_a_toolkit_found_here_or_a_wrong_cuda_home(no_nvvm, monkeypatch,
                                                                 tmp_path):  # fmt: skip
    toolkit, empty = make_toolkit(tmp_path / "cuda-13.0"), tmp_path / "elsewhere"
    (empty / "nvvm").mkdir(parents=True)  # a folder named nvvm/ alone is no libNVVM
    monkeypatch.setenv("CUDA_PATH", str(toolkit))  # one of the places looked at
    assert f"export CUDA_HOME={toolkit}" in choice.nvvm_fix(13)
    monkeypatch.setenv("CUDA_HOME", str(empty))
    fix = choice.nvvm_fix(12)
    assert f"CUDA_HOME={empty} has no libNVVM" in fix and f"CUDA_HOME={toolkit}" in fix
    assert "gpu_avatar[gpu]' (brings nvidia-cuda-nvcc-cu12, CUDA 12)" in fix
    assert "gpu-cuda13" not in fix


def test_a_cuda_12_driver_is_told_the_cuda_12_wheel(no_nvvm, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(driver=12040))
    reason = gpu_status().reason
    assert "pip install 'gpu_avatar[gpu]' (brings nvidia-cuda-nvcc-cu12, CUDA 12)" in reason


@pytest.mark.parametrize("error, library", [
    (DynamicLibNotFoundError(NVVM_MISSING), "libNVVM"),  # numba-cuda 0.2x-0.30
    (type("NvvmSupportError", (ImportError,), {})("libNVVM cannot be found. Do `conda install "
                                                  "cudatoolkit`"), "libNVVM"),  # older
    (DynamicLibNotFoundError('Failure finding "libnvrtc.so.13 or libnvrtc.so.12"'), "NVRTC"),
    (RuntimeError("compilation failed"), None),
])  # fmt: skip
def test_the_missing_library_is_read_from_numba_cudas_errors(error, library):
    found = choice.missing_cuda_library(error)
    assert found is None if library is None else found.startswith(library)


def test_the_missing_library_is_found_in_the_exception_chain():
    try:
        try:
            raise OSError("libnvvm.so: cannot open shared object file: No such file or directory")
        except OSError as cause:
            raise RuntimeError("NVVM initialisation failed") from cause
    except RuntimeError as error:
        assert choice.missing_cuda_library(error).startswith("libNVVM")


def test_a_kernel_that_compiles_but_cannot_run_is_no_gpu(device, monkeypatch):
    def launch(cuda_module):
        raise RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled "
                           "with an unsupported toolchain")  # fmt: skip

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(driver=12040))
    monkeypatch.setattr(choice, "_launch_probe_kernel", launch)
    status = gpu_status()
    assert not status.usable and status.details["stage"] == "launch"
    assert "compiled" in status.reason and "did not run on the device" in status.reason
    assert "UNSUPPORTED_PTX_VERSION" in status.reason
    assert "the driver runs CUDA 12.4" in status.reason and "gpu_avatar[gpu]" in status.reason


def test_a_kernel_that_writes_a_wrong_value_is_no_gpu(device, monkeypatch):
    monkeypatch.setattr(choice, "_launch_probe_kernel", lambda cuda_module: 0.0)
    assert "wrote 0.0 instead of 42.0" in gpu_status().reason


def test_the_probe_runs_once_a_process(device, monkeypatch):
    launches = []
    launch = choice._launch_probe_kernel
    monkeypatch.setattr(choice, "_launch_probe_kernel",
                        lambda cuda_module: launches.append(1) or launch(cuda_module))
    for _ in range(3):
        assert ga.resolve_backend("auto").is_gpu
    assert ga.resolve_backend("gpu").is_gpu and gpu_status().usable
    assert launches == [1]


def test_no_device_is_a_log_line_not_a_warning(device, monkeypatch, caplog):
    """The ordinary CPU machine (CuPy installed, no device) is not warned at: the reason is
    logged once, and ``gpu_status`` holds it."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(devices=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.INFO, logger="gpu_avatar"):
            assert ga.resolve_backend("auto") is CPU
            assert ga.resolve_backend("auto") is CPU
    lines = [r.getMessage() for r in caplog.records if "runs on the CPU" in r.getMessage()]
    assert lines == ["backend='auto' runs on the CPU: no CUDA device is visible"]
    assert gpu_status().details["stage"] == "device"


def test_the_probe_compiles_ptx_without_a_device(monkeypatch):
    """``probe_ptx`` is what the fresh environments of test_gpu_extras.py compile for sm_90;
    here (the simulator) it reaches numba-cuda's ``compile_ptx`` with the signature and cc."""
    seen = {}

    def compile_ptx(function, signature, cc=None):
        seen.update(function=function, signature=signature, cc=cc)
        return ".target sm_90", None

    monkeypatch.setattr(cuda, "compile_ptx", compile_ptx)
    assert choice.probe_ptx((9, 0)) == ".target sm_90"
    assert seen == {"function": choice._probe_kernel, "signature": "void(float64[::1])",
                    "cc": (9, 0)}  # fmt: skip


def test_the_fix_names_the_wheels_the_extras_bring():
    """The probe's fix says which extra brings which libNVVM wheel: pyproject.toml's extras
    list those wheels (tests/backend/test_gpu_extras.py installs them and compiles)."""
    lines = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text().splitlines()
    for extra, wheel in choice._NVVM_WHEELS.values():
        (line,) = [line for line in lines if line.startswith(f"{extra} = [")]
        assert f'"{wheel}' in line, (extra, wheel, line)
        (dask,) = [line for line in lines if line.startswith(f"dask-{extra} = [")]  # its cluster
        assert f'"gpu_avatar[dask,{extra}]"' in dask, (extra, dask)


def test_toolkits_need_a_libnvvm_and_the_one_matching_the_driver_comes_first(monkeypatch,
                                                                            tmp_path):
    """An NVVM newer than the driver emits PTX the driver rejects: with the driver's version,
    the newest toolkit no newer than it comes first."""
    newer = make_toolkit(tmp_path / "cuda-13.5")
    matching = make_toolkit(tmp_path / "local", version="13.0.48")
    (tmp_path / "empty" / "nvvm").mkdir(parents=True)
    (tmp_path / "cuda-13.1").symlink_to(matching)
    monkeypatch.setenv("CUDA_HOME", str(newer))
    monkeypatch.setenv("CUDA_PATH", str(matching))
    library = choice.nvvm_library  # this machine's own toolkits left out
    monkeypatch.setattr(choice, "nvvm_library", lambda folder: library(folder) if folder.startswith(
        str(tmp_path)) else None)  # fmt: skip
    assert choice.cuda_toolkits_with_nvvm() == [str(newer), str(matching)]
    assert choice.cuda_toolkits_with_nvvm((13, 0)) == [str(matching), str(newer)]
    assert choice.toolkit_version(str(newer)) == (13, 5)
    assert choice.nvvm_library(str(tmp_path / "empty")) is None
    assert choice.toolkit_version(str(tmp_path / "cuda-13.1")) == (13, 0)  # its version.json
    (matching / "version.json").unlink()
    assert choice.toolkit_version(str(tmp_path / "cuda-13.1")) is None  # "local": no version


@pytest.mark.parametrize("isa, cuda_version", [("9.5", (13, 5)), ("9.0", (13, 0)),
                                               ("8.8", (12, 9)), ("8.4", (12, 4))])
def test_the_cuda_release_is_read_from_the_ptx_version(isa, cuda_version):
    assert choice.ptx_cuda_version(f"//\n.version {isa}\n.target sm_90\n") == cuda_version
    assert choice.ptx_cuda_version("") is None


def test_an_nvvm_newer_than_the_driver_is_said_with_the_toolkit_that_matches(device, monkeypatch,
                                                                            tmp_path):
    """NVVM from CUDA 13.5 (PTX ISA 9.5) on a CUDA 13.0 driver: the launch fails, and the
    reason says why and names the CUDA 13.0 toolkit found here."""
    def launch(cuda_module):
        raise RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")

    toolkit = make_toolkit(tmp_path / "cuda-13.0")
    monkeypatch.setenv("CUDA_PATH", str(toolkit))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(choice, "_simulated", lambda: False)
    monkeypatch.setattr(choice, "probe_ptx", lambda cc: ".version 9.5\n.target sm_90\n")
    monkeypatch.setattr(choice, "nvvm_details", lambda: {"nvvm_path": "/x/libnvvm.so.4"})
    monkeypatch.setattr(choice, "_launch_probe_kernel", launch)
    status = gpu_status()
    assert not status.usable and status.details["stage"] == "launch"
    assert status.details["nvvm_cuda"] == "13.5"
    assert "PTX of CUDA 13.5, newer than the driver's CUDA 13.0" in status.reason
    assert f"export CUDA_HOME={toolkit} (CUDA 13.0, found here)" in status.reason


def test_kernels_that_cannot_import_name_the_numba_cuda_floor(device, monkeypatch):
    """numba-cuda older than 0.21 imports and compiles the probe, then fails on the kernels'
    ``numba.cuda.extending.overload``: the probe imports them and says which version is
    needed."""
    def kernels(name):
        raise ImportError("cannot import name 'overload' from 'numba.cuda.extending'")

    monkeypatch.setattr(choice, "_kernels", kernels)
    status = gpu_status()
    assert not status.usable and status.details["stage"] == "kernels"
    assert "numba-cuda >= 0.21" in status.reason and "'overload'" in status.reason
    assert "pip install 'gpu_avatar[gpu-cuda13]'" in status.reason  # the driver's CUDA 13

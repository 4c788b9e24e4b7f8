"""Choice of the array backend: numpy on the CPU, cupy on an NVIDIA GPU.

The backend is resolved once per entry point (``resolve_backend``) and the resulting
``Backend`` is passed down with what runs on it: numeric code is written against
``backend.xp`` and ``backend.kernels`` (the compiled kernels: ``gpu_avatar.kernels.cpu`` or
``.cuda``, the same functions with the same signatures), and never tests which library it runs
on.

The GPU is usable when cupy imports and sees a device, numba-cuda imports, the package's CUDA
kernels import (numba-cuda >= 0.21), and a one-line kernel compiles (numba-cuda finds libNVVM:
a pip wheel, conda, the loader path or ``CUDA_HOME``) and runs on the device: a driver alone is
not enough, since every tree search is a numba-cuda kernel. A libNVVM newer than the driver
emits PTX the driver may reject: the probe records it, and a failed launch says so. The probe
runs once a process; ``gpu_status()`` says what it found.
"""

from __future__ import annotations

import functools
import glob
import importlib
import json
import logging
import os
import re
import site
import time
import warnings
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import AvatarError, BackendUnavailableError
from ..parameters import BACKENDS

BACKEND_ENV_VAR = "GPU_AVATAR_BACKEND"


@dataclass(frozen=True)
class Backend:
    """An array namespace (``xp``), its compiled kernels and their limits, plus the
    conversions to and from host numpy arrays.

    - ``max_k``: the most neighbours a kernel keeps per query (a CUDA thread's top-k has a
      capacity fixed at compile time; the CPU's none);
    - ``tile_rows``: rows per step of the array code (gathers, tiles): cache-sized on the CPU,
      a large launch on the GPU.
    """

    name: str
    xp: ModuleType
    max_k: int
    tile_rows: int

    def __reduce__(self):
        # Pickled by name (for Dask workers): the receiving process resolves its own module.
        return (resolve_backend, (self.name,))

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def kernels(self) -> ModuleType:
        """The compiled kernels: ``gpu_avatar.kernels.cpu`` (numba) or ``.cuda`` (numba-cuda),
        imported on first use."""
        return _kernels(self.name)

    def asarray(self, array: Any, dtype: Any = None) -> Any:
        """Move a host array to the backend's device (no copy on the CPU)."""
        return self.xp.asarray(array, dtype=dtype)

    def to_numpy(self, array: Any) -> np.ndarray:
        """Bring a backend array back to the host as a numpy array."""
        if self.is_gpu:
            return self.xp.asnumpy(array)
        return np.asarray(array)

    def faiss_index(self, faiss: ModuleType, index: Any) -> Any:
        """A FAISS ``index`` on this backend's device: copied to the GPUs on the GPU backend
        when FAISS was built with GPU support; else unchanged."""
        if self.is_gpu and getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
            return faiss.index_cpu_to_all_gpus(index)
        return index

    def free_memory_bytes(self) -> int | None:
        """Device memory a new allocation can use: free on the device plus what CuPy's memory
        pool holds unused (it reuses that first); None on the CPU (host memory is not
        probed)."""
        if not self.is_gpu:
            return None
        free, _total = self.xp.cuda.runtime.memGetInfo()
        return int(free) + int(self.xp.get_default_memory_pool().free_bytes())


CPU = Backend("cpu", np, max_k=np.iinfo(np.int64).max, tile_rows=1 << 13)


@functools.cache
def _kernels(name: str) -> ModuleType:
    return importlib.import_module(f"..kernels.{'cuda' if name == 'gpu' else 'cpu'}", __package__)


# The probe's kernel: one thread, one line. 20.5 in, 42.0 out: a kernel that compiled (NVVM
# found), was linked and loaded, and ran on the device.
PROBE_SIGNATURE = "void(float64[::1])"
PROBE_INPUT, PROBE_OUTPUT = 20.5, 42.0


def _probe_kernel(out):
    out[0] = out[0] * 2.0 + 1.0


@dataclass(frozen=True)
class GpuStatus:
    """What the GPU probe found: ``usable`` (``backend="auto"`` takes the GPU), else
    ``reason`` (why not, and the fix); ``details``: what it saw (stage reached, versions, the
    NVVM library and its version, the probe's seconds)."""

    usable: bool
    reason: str
    details: dict


class _Probed(tuple):
    """``_probe_gpu``'s answer, (cupy or None, reason), with what the probe saw."""

    details: dict[str, Any]


# The stages a probe can stop at; from "numba-cuda" on, a CUDA device is visible.
PROBE_STAGES = ("cupy", "device", "numba-cuda", "kernels", "compile", "launch", "ok")
_DEVICE_SEEN = frozenset(PROBE_STAGES[2:])
_fallbacks_said: set[str] = set()
logger = logging.getLogger("gpu_avatar")


def gpu_status() -> GpuStatus:
    """Whether the GPU backend can run here and, when not, why and how to fix it (the probe
    runs once a process; see ``resolve_backend``)."""
    probed = _probe_gpu()
    cupy, reason = probed
    return GpuStatus(cupy is not None, reason, dict(getattr(probed, "details", {})))


@functools.lru_cache(maxsize=1)
def _probe_gpu() -> tuple[ModuleType | None, str]:
    """Import cupy, count devices, import numba-cuda, then compile a one-line kernel and run it
    on the device, once a process; returns (the cupy module or None, the reason when None),
    with ``details``: what it saw."""
    details: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        probed = _Probed(_probe(details))
    finally:
        details["seconds"] = round(time.perf_counter() - start, 3)
    probed.details = details
    return probed


def _probe(details: dict[str, Any]) -> tuple[ModuleType | None, str]:
    details["stage"] = "cupy"
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA installation
        return None, f"cupy could not be imported ({_first_line(exc)}); {_INSTALL}"
    details["cupy"] = getattr(cupy, "__version__", "?")
    details["stage"] = "device"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        return None, f"no usable CUDA device ({_first_line(exc)})"
    if count < 1:
        return None, "no CUDA device is visible"
    runtime = cupy.cuda.runtime
    for key, read in (("cuda_driver", "driverGetVersion"), ("cuda_runtime", "runtimeGetVersion")):
        try:
            details[key] = int(getattr(runtime, read)())
        except Exception:  # an older CuPy or a stand-in without it
            pass
    details["stage"] = "numba-cuda"
    try:
        from numba import cuda
    except Exception as exc:
        return None, (
            f"numba-cuda, which runs the GPU tree searches, could not be imported "
            f"({_first_line(exc)}); {_INSTALL}"
        )
    if not cuda.is_available():  # e.g. numba-cuda built for another CUDA than the driver's
        return None, f"numba-cuda sees no usable CUDA device (cupy does); {_INSTALL}"
    details["simulator"] = _simulated()
    details["stage"] = "kernels"
    try:  # the package's kernels need numba-cuda >= 0.21 (numba.cuda.extending.overload)
        _kernels("gpu")
    except Exception as exc:
        return None, _kernels_failure(exc, details)
    details["stage"] = "compile"
    cc = _compute_capability(cupy)
    details["compute_capability"] = ".".join(map(str, cc)) if cc else "unknown"
    try:  # NVVM alone: PTX for the device's compute capability (the simulator has no PTX)
        ptx = "" if details["simulator"] else probe_ptx(cc)
    except Exception as exc:
        return None, _compile_failure(exc, details)
    details.update(nvvm_details())
    _compare_ptx_with_driver(ptx, details)
    details["stage"] = "launch"
    try:  # the driver: compiled for the current device, linked, loaded and run
        value = _launch_probe_kernel(cuda)
    except Exception as exc:
        return None, _launch_failure(exc, details)
    if value != PROBE_OUTPUT:
        return None, (
            f"a one-line CUDA kernel ran but wrote {value!r} instead of {PROBE_OUTPUT!r}: "
            "the device or its driver is not working; check nvidia-smi"
        )
    details["stage"] = "ok"
    return cupy, ""


def _compute_capability(cupy: ModuleType) -> tuple[int, int] | None:
    """The current device's compute capability from cupy ("90" -> (9, 0)), None if unknown."""
    try:
        text = str(cupy.cuda.Device().compute_capability)
        return int(text[:-1]), int(text[-1])
    except Exception:  # a stand-in without it
        return None


def _launch_probe_kernel(cuda: ModuleType) -> float:
    """Compile the probe for the current device, run it on one thread and read its output."""
    with warnings.catch_warnings():  # numba-cuda warns of a grid of one block
        warnings.simplefilter("ignore")
        kernel = cuda.jit(PROBE_SIGNATURE)(_probe_kernel)
        out = cuda.to_device(np.array([PROBE_INPUT]))
        kernel[1, 1](out)
        cuda.synchronize()
        return float(out.copy_to_host()[0])


def probe_ptx(cc: tuple[int, int] | None = (9, 0)) -> str:
    """The probe kernel compiled to PTX for compute capability ``cc`` (None: numba-cuda's
    default) with no device needed, only numba-cuda and libNVVM; raises what numba-cuda raises
    when it cannot (``missing_cuda_library`` names what was missing)."""
    from numba import cuda

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ptx, _ = cuda.compile_ptx(_probe_kernel, PROBE_SIGNATURE, **({"cc": cc} if cc else {}))
    return ptx


def nvvm_details() -> dict[str, Any]:
    """The libNVVM numba-cuda uses: its version and where it was found (a pip wheel's
    ``site-packages``, conda, the system's loader path or ``CUDA_HOME``); an entry that cannot
    be read says why."""
    found: dict[str, Any] = {}
    if _simulated():
        return found
    try:
        from numba.cuda.cudadrv import nvvm

        library = nvvm.NVVM()
        found["nvvm_version"] = ".".join(map(str, library.get_version()))
        found["nvvm_ir_version"] = ".".join(map(str, library.get_ir_version()))
    except Exception as exc:
        found["nvvm_version"] = f"unknown ({_first_line(exc)})"
    try:
        from numba.cuda.cuda_paths import get_cuda_paths

        by, path = get_cuda_paths()["nvvm"]
        found["nvvm_found_via"], found["nvvm_path"] = by, path
    except Exception as exc:
        found["nvvm_path"] = f"unknown ({_first_line(exc)})"
    return found


def nvvm_library(folder: str) -> str | None:
    """The libNVVM a CUDA toolkit (``nvvm/lib64``) or a pip wheel's folder (``lib``, as in
    ``nvidia/cu13``) holds, or None: a folder named ``nvvm/`` alone loads nothing."""
    for pattern in ("nvvm/lib64", "nvvm/lib", "lib64", "lib"):
        found = sorted(glob.glob(os.path.join(folder, pattern, "libnvvm.so*")))
        if found:
            return found[0]
    return None


def toolkit_version(folder: str) -> tuple[int, int] | None:
    """A toolkit's CUDA version (major, minor): its ``version.json``, else its folder's name
    once links are resolved (``/usr/local/cuda`` -> ``cuda-13.0``), else None."""
    try:
        with open(os.path.join(folder, "version.json")) as file:
            text = json.load(file)["cuda"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        text = os.path.basename(os.path.realpath(folder)).rpartition("-")[2]
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


def cuda_toolkits_with_nvvm(driver: tuple[int, int] | None = None) -> list[str]:
    """CUDA toolkit folders on this machine that hold libNVVM (where numba-cuda finds it when
    ``CUDA_HOME`` names one): ``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda``,
    ``/usr/local/cuda-*`` (newest first), ``/opt/cuda``, then the pip wheels' folders
    (``nvidia/cu13``, ``nvidia/cuda_nvcc``). With the driver's CUDA version, the toolkits no
    newer than the driver come first (newest first): a newer NVVM emits PTX the driver
    rejects."""
    wheels = [os.path.join(path, "nvidia", name) for path in site.getsitepackages()
              for name in ("cu13", "cuda_nvcc")]  # fmt: skip
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
                  *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/opt/cuda", *wheels]
    found: list[str] = []
    for folder in candidates:
        if folder and folder not in found and nvvm_library(folder):
            found.append(folder)
    if driver:
        def preference(folder: str) -> tuple[int, int, int]:
            version = toolkit_version(folder)
            if version is None or version > driver:
                return 1, 0, 0  # after, in the order above (the sort is stable)
            return 0, -version[0], -version[1]

        found.sort(key=preference)
    return found


_INSTALL = "install gpu_avatar[gpu] (CUDA 12) or gpu_avatar[gpu-cuda13] (CUDA 13)"
# The pip wheels that carry libNVVM, by CUDA major version, and the extra that brings each.
_NVVM_WHEELS = {13: ("gpu-cuda13", "nvidia-nvvm"), 12: ("gpu", "nvidia-cuda-nvcc-cu12")}


def nvvm_fix(cuda_major: int | None = None, driver: tuple[int, int] | None = None) -> str:
    """How to give numba-cuda libNVVM (and what else the same wheels carry): ``CUDA_HOME`` (a
    toolkit found here first, one no newer than ``driver`` first), or the pip wheel for this
    CUDA (``cuda_major``, else both)."""
    home = os.environ.get("CUDA_HOME")
    toolkits = cuda_toolkits_with_nvvm(driver)
    if home and home not in toolkits:
        where = f"CUDA_HOME={home} has no libNVVM (nvvm/lib64/libnvvm.so*): set it to a CUDA "
        where += "toolkit's root" + (f" (export CUDA_HOME={toolkits[0]})" if toolkits else "")
    elif home:
        where = f"CUDA_HOME={home} holds libNVVM but it did not load: check that toolkit"
    elif toolkits:
        where = f"export CUDA_HOME={toolkits[0]} (a CUDA toolkit with libNVVM is there)"
    else:
        where = "set CUDA_HOME to a CUDA toolkit's root (the folder that holds nvvm/lib64/)"
    majors = [cuda_major] if cuda_major in _NVVM_WHEELS else sorted(_NVVM_WHEELS, reverse=True)
    wheels = " or ".join(
        f"pip install 'gpu_avatar[{_NVVM_WHEELS[m][0]}]' (brings {_NVVM_WHEELS[m][1]}, "
        f"CUDA {m})" for m in majors
    )
    return f"Fix: {where}; or install the wheel that carries libNVVM: {wheels}"


def _cuda_major(details: dict[str, Any]) -> int | None:
    version = details.get("cuda_runtime") or details.get("cuda_driver")
    return int(version) // 1000 if version else None


def _driver_version(details: dict[str, Any]) -> tuple[int, int] | None:
    """The driver's CUDA version (13000 -> (13, 0)), None if unknown."""
    version = details.get("cuda_driver")
    return (int(version) // 1000, int(version) % 1000 // 10) if version else None


def ptx_cuda_version(ptx: str) -> tuple[int, int] | None:
    """The oldest CUDA release (so the oldest driver) that takes ``ptx``, from its ISA version:
    ``.version 9.5`` -> (13, 5); PTX 8.6 came with CUDA 12.7 (never released), so 8.7 with
    12.8; None when ``ptx`` has no version line."""
    match = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    if not match:
        return None
    major, minor = int(match[1]), int(match[2])
    return major + 4, minor + 1 if major == 8 and minor > 5 else minor


def _compare_ptx_with_driver(ptx: str, details: dict[str, Any]) -> None:
    """Record the CUDA release of libNVVM's PTX and whether it is newer than the driver's (a
    driver rejects PTX of a later release: the launch then fails, and its reason says so)."""
    emitted, driver = ptx_cuda_version(ptx), _driver_version(details)
    if emitted:
        details["nvvm_cuda"] = f"{emitted[0]}.{emitted[1]}"
    if emitted and driver and emitted > driver:
        details["nvvm_newer_than_driver"] = (
            f"libNVVM emits PTX of CUDA {details['nvvm_cuda']}, newer than the driver's CUDA "
            f"{driver[0]}.{driver[1]}: the driver rejects it unless numba-cuda links with "
            "nvJitLink"
        )


# The CUDA libraries numba-cuda loads to compile and link, by the name its errors use.
_CUDA_LIBRARIES = (("nvvm", "libNVVM (its compiler)"), ("libdevice", "libdevice"),
                   ("nvrtc", "NVRTC"), ("nvjitlink", "nvJitLink (its linker)"),
                   ("cudart", "the CUDA runtime"))  # fmt: skip
_NOT_FOUND = ("not found", "cannot be found", "failure finding", "no such file", "not available")


def missing_cuda_library(exc: BaseException | None) -> str | None:
    """The CUDA library whose absence made numba-cuda fail, or None: ``NvvmSupportError``
    (numba-cuda before 0.2x, or cuda.bindings without NVVM), cuda-pathfinder's
    ``DynamicLibNotFoundError`` (numba-cuda 0.2x-0.30: 'Failure finding "libnvvm.so.4 or
    libnvvm.so"'), or an ``OSError`` naming the library, anywhere in the exception chain."""
    for _ in range(8):
        if exc is None:
            return None
        if type(exc).__name__ == "NvvmSupportError":
            return _CUDA_LIBRARIES[0][1]
        text = str(exc).lower()
        if any(words in text for words in _NOT_FOUND):
            for name, said in _CUDA_LIBRARIES:
                if name in text:
                    return said
        exc = exc.__cause__ or exc.__context__
    return None


def _compile_failure(exc: BaseException, details: dict[str, Any]) -> str:
    details["error"] = f"{type(exc).__name__}: {_first_line(exc)}"
    fix = nvvm_fix(_cuda_major(details), _driver_version(details))
    library = missing_cuda_library(exc)
    if library:
        details["missing_library"] = library
        return (
            f"numba-cuda cannot compile the GPU kernels: it found no {library} "
            f"({details['error']}). {fix}"
        )
    return (
        f"numba-cuda could not compile and load a one-line kernel ({details['error']}): check "
        "the driver (nvidia-smi) and that numba-cuda's CUDA matches it; "
        f"{_INSTALL}, or set CUDA_HOME to a CUDA toolkit"
    )


def _kernels_failure(exc: BaseException, details: dict[str, Any]) -> str:
    details["error"] = f"{type(exc).__name__}: {_first_line(exc)}"
    try:
        found = f"numba-cuda {metadata.version('numba-cuda')} is installed"
    except metadata.PackageNotFoundError:
        found = "numba-cuda's version is unknown"
    extra = "gpu-cuda13" if _cuda_major(details) == 13 else "gpu"
    return (
        f"gpu_avatar's CUDA kernels could not be imported ({details['error']}): they need "
        f"numba-cuda >= 0.21 (numba.cuda.extending.overload), and {found}. Fix: pip install "
        f"'gpu_avatar[{extra}]' (brings numba-cuda >= 0.21 for the driver's CUDA)"
    )


def _launch_failure(exc: BaseException, details: dict[str, Any]) -> str:
    if missing_cuda_library(exc):
        return _compile_failure(exc, details)
    details["error"] = f"{type(exc).__name__}: {_first_line(exc)}"
    driver = _driver_version(details)
    if "nvvm_newer_than_driver" in details:
        toolkits = cuda_toolkits_with_nvvm(driver)
        version = toolkit_version(toolkits[0]) if toolkits else None
        where = f"set CUDA_HOME to a CUDA {driver[0]}.{driver[1]} toolkit"
        if version and version <= driver:
            where = f"export CUDA_HOME={toolkits[0]} (CUDA {version[0]}.{version[1]}, found here)"
        return (
            f"a one-line kernel compiled but did not run on the device ({details['error']}): "
            f"{details['nvvm_newer_than_driver']} ({details.get('nvvm_path', '?')}). Fix: "
            f"{where}, put its nvvm/lib64 first on LD_LIBRARY_PATH, or update the driver"
        )
    driver_text = f"the driver runs CUDA {driver[0]}.{driver[1]}" if driver else (
        "the driver's CUDA version is unknown")
    return (
        f"a one-line kernel compiled (libNVVM {details.get('nvvm_version', '?')}) but did not "
        f"run on the device ({details['error']}); {driver_text}. Fix: check the driver "
        "(nvidia-smi); install the extra that matches the driver's CUDA (gpu_avatar[gpu] for "
        "CUDA 12, gpu_avatar[gpu-cuda13] for CUDA 13), or update the driver"
    )


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _simulated() -> bool:
    """Whether numba-cuda runs in its simulator (``NUMBA_ENABLE_CUDASIM=1``: the tests)."""
    try:
        from numba import config
    except ImportError:
        return False
    return bool(getattr(config, "ENABLE_CUDASIM", False))


def _say_fallback(reason: str, stage: str | None) -> None:
    """Say once a process why ``backend="auto"`` runs on the CPU: a warning when a CUDA
    device is there but cannot run the kernels (the user expects the GPU), else a log line."""
    if reason in _fallbacks_said:
        return
    _fallbacks_said.add(reason)
    message = f"backend='auto' runs on the CPU: {reason}"
    if stage in _DEVICE_SEEN:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    else:
        logger.info(message)


def resolve_backend(backend: str | Backend | None = "auto") -> Backend:
    """Turn ``"auto" | "cpu" | "gpu"`` (or the GPU_AVATAR_BACKEND variable) into a Backend.

    ``"auto"`` takes the GPU when cupy imports, sees a device, and numba-cuda compiles a
    one-line kernel and runs it there (the probe, once a process: about a second, the
    compiler's start-up, paid only where cupy sees a device); else the CPU, and says why once
    (a ``RuntimeWarning`` when a device is there, else a log line; ``gpu_status()`` returns
    it). ``"gpu"`` without a usable GPU raises ``BackendUnavailableError`` with that reason
    and its fix.
    """
    if isinstance(backend, Backend):
        return backend
    choice = backend if backend is not None else "auto"
    if choice == "auto":
        choice = os.environ.get(BACKEND_ENV_VAR, "auto") or "auto"
    if choice not in BACKENDS:
        raise AvatarError(
            f"backend={choice!r} is not one of {BACKENDS} (check the argument and the "
            f"{BACKEND_ENV_VAR} environment variable)"
        )
    if choice == "cpu":
        return CPU
    probed = _probe_gpu()
    cupy, reason = probed
    if cupy is None:
        if choice == "gpu":
            raise BackendUnavailableError(
                f"backend='gpu' was requested but {reason}. Use backend='cpu' or 'auto' "
                "to run on the CPU."
            )
        _say_fallback(reason, getattr(probed, "details", {}).get("stage"))
        return CPU
    kernels = _kernels("gpu")
    return Backend("gpu", cupy, max_k=kernels.MAX_K, tile_rows=1 << 16)

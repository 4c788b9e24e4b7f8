"""Choice of the array backend: numpy on the CPU, cupy on an NVIDIA GPU.

The backend is resolved once per entry point (``resolve_backend``) and the resulting
``Backend`` is passed down with what runs on it: numeric code is written against
``backend.xp`` and ``backend.kernels`` (the compiled kernels: ``gpu_avatar.kernels.cpu`` or
``.cuda``, the same functions with the same signatures), and never tests which library it runs
on.
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
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


@functools.lru_cache(maxsize=1)
def _probe_gpu() -> tuple[ModuleType | None, str]:
    """Import cupy, count devices and import numba-cuda (the tree kernels) once; returns
    (the cupy module or None, the reason when None)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA installation
        return None, f"cupy could not be imported ({exc}); install gpu_avatar[gpu]"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        return None, f"no usable CUDA device ({exc})"
    if count < 1:
        return None, "no CUDA device is visible"
    install = "install gpu_avatar[gpu] (CUDA 12) or gpu_avatar[gpu-cuda13]"
    try:
        from numba import cuda
    except Exception as exc:
        return None, (
            f"numba-cuda, which runs the GPU tree searches, could not be imported ({exc}); "
            f"{install}"
        )
    if not cuda.is_available():  # e.g. numba-cuda built for another CUDA than the driver's
        return None, f"numba-cuda sees no usable CUDA device (cupy does); {install}"
    return cupy, ""


def resolve_backend(backend: str | Backend | None = "auto") -> Backend:
    """Turn ``"auto" | "cpu" | "gpu"`` (or the GPU_AVATAR_BACKEND variable) into a Backend.

    ``"auto"`` takes the GPU when cupy imports and sees a device, else the CPU; ``"gpu"``
    without a usable device raises ``BackendUnavailableError`` saying why.
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
    cupy, reason = _probe_gpu()
    if cupy is None:
        if choice == "gpu":
            raise BackendUnavailableError(
                f"backend='gpu' was requested but {reason}. Use backend='cpu' or 'auto' "
                "to run on the CPU."
            )
        return CPU
    kernels = _kernels("gpu")
    return Backend("gpu", cupy, max_k=kernels.MAX_K, tile_rows=1 << 16)

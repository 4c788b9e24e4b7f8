"""The compute backend: numpy on the CPU or cupy on an NVIDIA GPU, chosen once per entry point
and passed down with what it can run (``choice.py``); the device-memory check (``memory.py``);
cuDF frames in and out (``frames.py``). The compiled kernels live in ``gpu_avatar.kernels``."""

from .choice import BACKEND_ENV_VAR, CPU, Backend, GpuStatus, gpu_status, resolve_backend
from .frames import is_cudf, like_input, snapshot, to_pandas
from .memory import ensure_fits

__all__ = [
    "BACKEND_ENV_VAR", "CPU", "Backend", "GpuStatus", "ensure_fits", "gpu_status", "is_cudf",
    "like_input", "resolve_backend", "snapshot", "to_pandas",
]  # fmt: skip

"""The compute backend: numpy on the CPU or cupy on an NVIDIA GPU, chosen once per entry point
(``choice.py``) and passed down; the compiled kernels both run (``cpu_kernels.py``, numba) and
their CUDA kernels (``cuda_kernels.py``, numba-cuda; imported only for the GPU)."""

from .choice import CPU, Backend, resolve_backend

__all__ = ["CPU", "Backend", "resolve_backend"]

"""The ``gpu-avatar`` command (also ``python -m gpu_avatar``)."""

from .commands import main

__all__ = ["main"]

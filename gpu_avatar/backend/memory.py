"""The device-memory check every GPU step passes before it starts: an estimate against the
free memory (device plus what CuPy's pool holds unused), refused with the figures and, where
the caller can split its work, how many rows fit at once."""

from __future__ import annotations

from ..errors import AvatarError
from .choice import Backend

DEVICE_MEMORY_SHARE = 0.9  # of the free memory a run may plan to use
WORK_BYTES = 512 << 20  # row chunks of the projection, synthesis blocks


def ensure_fits(
    backend: Backend, n_rows: int, bytes_per_row: int, what: str, split: str | None = None
) -> None:
    """Refuse, before any work, a step whose estimate (``bytes_per_row`` for each of
    ``n_rows`` rows, ``WORK_BYTES`` and the tree kernels' local memory) exceeds the device's
    free memory. ``split`` says how the caller's work is cut into batches, with ``{rows}``
    for the number that fits (e.g. ``"pass batch_size={rows} or less"``); without it, the
    step needs every row at once."""
    free = backend.free_memory_bytes()
    if free is None:
        return
    working = WORK_BYTES + kernel_local_bytes(backend)
    needed = working + n_rows * bytes_per_row
    usable = DEVICE_MEMORY_SHARE * free
    if needed <= usable:
        return
    figures = (
        f"{what} needs about {needed / 1e9:.2f} GB of GPU memory, more than "
        f"{DEVICE_MEMORY_SHARE:.0%} of the {free / 1e9:.2f} GB free (device and CuPy pool)"
    )
    fitting = int((usable - working) // bytes_per_row)
    if fitting < 1:
        raise AvatarError(
            f"{figures}: not even the {working / 1e9:.2f} GB of working memory; free the device "
            "(other processes, CuPy's pool) or use backend='cpu'"
        )
    remedy = split.format(rows=f"{fitting:,}") if split else "it needs every row at once"
    raise AvatarError(
        f"{figures}; about {fitting:,} rows fit at once: {remedy}, or use backend='cpu'"
    )


def resident_threads(backend: Backend) -> int:
    """The threads the device holds at once (every multiprocessor full)."""
    runtime = backend.xp.cuda.runtime
    properties = runtime.getDeviceProperties(backend.xp.cuda.Device().id)
    return properties["multiProcessorCount"] * properties["maxThreadsPerMultiProcessor"]


def kernel_local_bytes(backend: Backend) -> int:
    """Local memory the driver reserves for the tree kernels: the largest kernel's per-thread
    arrays for every thread the device can hold at once."""
    return resident_threads(backend) * backend.kernels.LOCAL_BYTES_PER_THREAD

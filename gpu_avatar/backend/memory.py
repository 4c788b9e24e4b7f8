"""The device-memory check every GPU step passes before it starts: an estimate against the
free memory (device plus what CuPy's pool holds unused), refused with the figures and a batch
size that fits."""

from __future__ import annotations

from ..errors import AvatarError
from .choice import Backend

DEVICE_MEMORY_SHARE = 0.9  # of the free memory a run may plan to use
WORK_BYTES = 512 << 20  # row chunks of the projection, synthesis blocks, kernel stacks


def ensure_fits(backend: Backend, n_rows: int, bytes_per_row: int, what: str) -> None:
    """Refuse, before any work, a step whose estimate (``bytes_per_row`` for each of
    ``n_rows`` rows, plus ``WORK_BYTES``) exceeds the device's free memory, saying how many
    rows per batch would fit."""
    free = backend.free_memory_bytes()
    needed = WORK_BYTES + n_rows * bytes_per_row
    if free is None or needed <= DEVICE_MEMORY_SHARE * free:
        return
    usable = DEVICE_MEMORY_SHARE * free
    if usable <= WORK_BYTES:
        raise AvatarError(
            f"{what} needs about {needed / 1e9:.2f} GB of GPU memory but {free / 1e9:.2f} GB "
            f"are free (device and CuPy pool): not even the {WORK_BYTES / 1e9:.2f} GB of "
            "working memory; free the device (other processes, CuPy's pool) or use "
            "backend='cpu'"
        )
    fitting = int((usable - WORK_BYTES) // bytes_per_row)
    raise AvatarError(
        f"{what} needs about {needed / 1e9:.2f} GB of GPU memory, more than "
        f"{DEVICE_MEMORY_SHARE:.0%} of the {free / 1e9:.2f} GB free (device and CuPy pool); "
        f"about {fitting:,} rows fit at once: pass batch_size={fitting:,} or less, or use "
        "backend='cpu'"
    )

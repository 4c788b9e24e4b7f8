"""``import cupy`` as the CuPy stand-in (``tests/cupy_standin.py``, CuPy 14): put on the path by
``benchmarks/device_run.sh`` under ``GA_DEVICE_SIMULATE=1``, so that the device run goes end to
end on a machine without a GPU, its kernels in numba-cuda's simulator."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cupy_standin import make_cupy  # noqa: E402

sys.modules[__name__] = make_cupy("14.2.0")

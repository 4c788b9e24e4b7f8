"""Compiled kernels (numba), by topic, each walk written once for the CPU and the GPU:

- ``tree.py``: the flat k-d tree (built on the host for both backends) and the rules every
  walk shares: the exact pair arithmetic, box bounds, the running top-k;
- ``knn.py``: each point's exact k nearest others, and the exact re-check of index candidates;
- ``ranks.py``: the distance-rank walks (local cloaking, hidden flag, two nearest originals),
  a query's nearest reference and its matches within a Chebyshev radius;
- ``mixed.py``: the attacks' scan for the nearest references by the mixed-type distance;
- ``cpu.py`` and ``cuda.py``: the two drivers, the same functions with the same signatures,
  one of which is ``Backend.kernels``: on the CPU the walks run over ranges of work items
  (``parallel.in_blocks``: GIL-free kernels on Python threads; each item writes its own
  results, so no result depends on the thread count; the attacks' scan alone on numba's
  parallel loop, ``mixed.py`` says why); on the GPU they are compiled by numba-cuda, one CUDA thread
  per query (the attacks' scan: several, over reference tiles in shared memory).

Compiled passes that serve one caller live next to it: ``synthesis_kernels.py`` (also run by
``cuda.py``), ``projection/modalities.py``, ``relational/transport.py``. Kernels compile on
first use and are cached on disk; numba keys a cache on the compiled function's own file only,
so after editing a walk that another module inlines, clear that module's ``__pycache__``. The
CPU drivers pass their kernels ``host_array``s and Python ints, so that each kernel compiles
once whatever arrays the caller has.
"""

import numpy as np
from numba.core import event

from ..progress import notice

# Said once a process, on the progress output, when a kernel compiles: the seconds are those of
# every CPU kernel a default run meets (benchmarks/bench_compile.py, 2 cores).
COMPILE_NOTICE = "compiling the CPU kernels once (about 15 s; cached afterwards)"


class _CompileNotice(event.Listener):
    """Shows ``COMPILE_NOTICE`` when one of the kernels starts compiling. numba compiles a
    kernel only when its disk cache has no entry for it (a cold or outdated cache), so this costs
    nothing when the cache is warm; shown once a process, above the first progress bar open
    when a kernel compiles."""

    shown = False

    def on_start(self, ev) -> None:
        if not self.shown and ev.data["dispatcher"].py_func.__module__.startswith("gpu_avatar."):
            self.shown = notice(COMPILE_NOTICE)

    def on_end(self, ev) -> None:
        pass


event.register("numba:compile", _CompileNotice())


def host_array(values, dtype) -> np.ndarray:
    """``values`` as a writable C-contiguous numpy array of ``dtype``, copied only when it is
    not one already: what the CPU drivers pass their kernels, since numba compiles a kernel
    again for each other dtype, memory layout or read-only flag of an argument."""
    array = np.ascontiguousarray(values, dtype=dtype)
    return array if array.flags.writeable else array.copy()

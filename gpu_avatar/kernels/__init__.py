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
first use and are cached on disk. numba keys a cache on the compiled function's own file only,
while the kernels here inline the walks of the others: ``key_caches_on_sources`` folds a digest
of every file here and of ``synthesis_kernels.py`` into their caches' stamp, so that editing a
walk makes every kernel that may inline it compile again (on the GPU too: a warm machine runs
no stale code). The CPU drivers pass their kernels ``host_array``s and Python ints, so that
each kernel compiles once whatever arrays the caller has.
"""

import functools
import hashlib
from pathlib import Path

import numpy as np
from numba.core import caching, event

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

# The files whose walks the kernels inline: a kernel of one is cached under a digest of all.
SOURCES = (*sorted(Path(__file__).parent.glob("*.py")),
           Path(__file__).parents[1] / "synthesis_kernels.py")  # fmt: skip


@functools.cache
def sources_digest(paths: tuple[Path, ...] = SOURCES) -> str:
    """sha256 of ``paths``' contents, in order: read once a process, when the first kernel of
    them is decorated."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key_caches_on_sources(cache_impl: type) -> None:
    """Put before ``cache_impl``'s locators (numba's or numba-cuda's) a subclass of each of its
    file-backed ones, in the same order, that takes the functions of ``SOURCES`` only and stamps
    their cache with the file's own stamp and ``sources_digest()``: numba finds a cache whose
    stamp differs stale, compiles again and overwrites it."""
    sources = {str(path.resolve()) for path in SOURCES}

    def keyed(locator: type) -> type:
        class Keyed(locator):
            @classmethod
            def from_function(cls, py_func, py_file):
                if str(Path(py_file).resolve()) not in sources:
                    return None
                return super().from_function(py_func, py_file)

            def get_source_stamp(self):
                return super().get_source_stamp(), sources_digest()

        Keyed.__name__ = Keyed.__qualname__ = f"SourcesKeyed{locator.__name__}"
        return Keyed

    known = [c for c in cache_impl._locator_classes if not c.__name__.startswith("SourcesKeyed")]
    file_backed = [c for c in known if any(base.__name__ == "_SourceFileBackedLocatorMixin"
                                           for base in c.__mro__)]  # fmt: skip
    cache_impl._locator_classes = [*map(keyed, file_backed), *known]


key_caches_on_sources(caching.CompileResultCacheImpl)


def host_array(values, dtype) -> np.ndarray:
    """``values`` as a writable C-contiguous numpy array of ``dtype``, copied only when it is
    not one already: what the CPU drivers pass their kernels, since numba compiles a kernel
    again for each other dtype, memory layout or read-only flag of an argument."""
    array = np.ascontiguousarray(values, dtype=dtype)
    return array if array.flags.writeable else array.copy()

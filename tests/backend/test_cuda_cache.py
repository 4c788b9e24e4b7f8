"""The CUDA kernels are cached on disk, as the CPU ones are: a second process loads every
kernel and compiles none. The simulator has no cache (its kernels run as Python), so this runs
numba-cuda itself in subprocesses, without a GPU: each kernel is compiled to a cubin for sm_90
by NVVM and nvJitLink (from pip) and saved to a fresh ``NUMBA_CACHE_DIR``. What needs a device
is stood in for: its compute capability, a context, and loading the cubin (``bind``) into it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh_python import last_json, run_fresh

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

CACHE_SCRIPT = r"""
import json, sys, types
import numba.cuda.dispatcher as dispatcher
from numba.cuda.cudadrv import devices
device = types.SimpleNamespace(compute_capability=(9, 0), id=0)
dispatcher.get_current_device = lambda: device
devices.get_context = lambda devnum=None: types.SimpleNamespace(device=device)
dispatcher._Kernel.bind = lambda self: self._codelibrary.get_cubin()
if sys.argv[1] == "forbid":  # the second process: any compilation fails
    def compiling(*args, **kwargs):
        raise AssertionError("a kernel was compiled instead of loaded from the cache")
    dispatcher._Kernel.__init__ = compiling
sys.path.insert(0, "tests/backend")
from cuda_signatures import kernels
report = {}
for name, (kernel, signature) in kernels().items():
    kernel.compile(signature)
    stats = kernel.stats
    report[name] = {"cached": isinstance(kernel._cache, dispatcher.CUDACache),
                    "misses": sum(stats.cache_misses.values()),
                    "hits": sum(stats.cache_hits.values())}
print(json.dumps(report))
"""


def _run(cache: Path, mode: str) -> dict:
    return last_json(run_fresh(CACHE_SCRIPT, mode, cache=cache, simulator=False, timeout=600))


def test_a_second_process_loads_every_cuda_kernel_from_the_disk_cache(tmp_path):
    first = _run(tmp_path, "compile")
    assert len(first) == 13, first  # 5 kernels, and the kNN and mixed ones at 4 capacities
    for name, kernel in first.items():
        assert kernel == {"cached": True, "misses": 1, "hits": 0}, (name, kernel)
    indexes = {path.name.split("-")[0] for path in tmp_path.rglob("*.nbi")}
    assert indexes == {"cuda._rank_kernel", "cuda._two_nearest_kernel", "cuda._verify_kernel",
                       "cuda._count_within_kernel",
                       "cuda._synthesis_kernel", "cuda._knn_kernel.locals.kernel",
                       "cuda._mixed_kernel.locals.kernel"}, indexes  # fmt: skip
    second = _run(tmp_path, "forbid")
    for name, kernel in second.items():
        assert kernel == {"cached": True, "misses": 0, "hits": 1}, (name, kernel)


STAMP_SCRIPT = r"""
import json
from gpu_avatar.kernels import cuda, sources_digest
stamps = {name: kernel._cache._impl.locator.get_source_stamp()[1] == sources_digest()
          for name, kernel in (("rank", cuda._rank_kernel), ("knn", cuda._knn_kernel(32)))}
print(json.dumps(stamps))
"""


def test_kernel_caches_are_keyed_on_every_walk_they_inline(tmp_path):
    """numba keys a cache on the kernel's own file, but the kernels inline the walks of the
    others (tree.py's in knn.py's, every walk in cuda.py's): a warm machine would run a stale
    kernel after a walk was edited. Their stamp holds a digest of every kernels/*.py and
    synthesis_kernels.py, CPU and CUDA kernels alike; other cached modules keep numba's own."""
    from gpu_avatar import kernels
    from gpu_avatar.kernels import knn
    from gpu_avatar.projection import modalities

    names = {path.name for path in kernels.SOURCES}
    assert {"tree.py", "knn.py", "ranks.py", "mixed.py", "cuda.py",
            "synthesis_kernels.py"} <= names  # fmt: skip
    stamp = knn._group_nearest._cache._impl.locator.get_source_stamp()
    assert stamp[1] == kernels.sources_digest()
    assert not type(modalities._modality_statistics._cache._impl.locator).__name__.startswith(
        "SourcesKeyed")  # fmt: skip
    copies = []
    for path in kernels.SOURCES:
        copies.append(tmp_path / path.name)
        copies[-1].write_bytes(path.read_bytes())
    digest = kernels.sources_digest.__wrapped__  # not memoised: read the files each time
    before = digest(tuple(copies))
    with open(tmp_path / "tree.py", "a") as tree:
        tree.write("# a walk edited\n")
    assert digest(tuple(copies)) != before
    # numba-cuda's kernels (not the simulator's), decorated without a device
    assert last_json(run_fresh(STAMP_SCRIPT, cache=tmp_path, simulator=False)) == {
        "rank": True, "knn": True}

"""The CUDA kernels compile for the H200 (sm_90) without register spills, within the local
memory the device-memory check reserves, and their pair
distances are round-to-nearest operations that no compiler contracts into an FMA: checked
without a GPU. numba-cuda compiles each kernel to PTX with NVVM (from pip), nvJitLink (from
pip) assembles it and reports what ptxas reports. It runs in a subprocess because the rest of
the suite imports numba-cuda in its simulator mode.
"""

from __future__ import annotations

import pytest
from fresh_python import last_json, run_fresh

pytestmark = pytest.mark.slow  # end-to-end: deselect with -m 'not slow'

COMPILE_SCRIPT = r"""
import json, re, sys, types
import numba.cuda.dispatcher as dispatcher
# No driver here: device functions compile for the compute capability asked, not the current
# device's.
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
from cuda.bindings import nvjitlink
from numba import cuda
from gpu_avatar.kernels import cuda as ck
sys.path.insert(0, "tests/backend")
from cuda_signatures import kernels
report = {}
for name, (kernel, signature) in kernels().items():
    ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
    handle = nvjitlink.create(2, ["-arch=sm_90", "-verbose"])
    data = ptx.encode()
    nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
    nvjitlink.complete(handle)
    log = bytearray(nvjitlink.get_info_log_size(handle))
    nvjitlink.get_info_log(handle, log)
    log = log.decode()
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    report[name] = {
        "stack_frame": int(re.search(r"(\d+) bytes stack frame", log).group(1)),
        "local_estimate": ck.LOCAL_BYTES_PER_THREAD,
        "sm_90": "for 'sm_90'" in log,
        "spill_stores": int(spills.group(1)),
        "spill_loads": int(spills.group(2)),
        "registers": int(re.search(r"Used (\d+) registers", log).group(1)),
        "exact_multiplies": ptx.count("mul.rn.f64"),
        "exact_adds": ptx.count("add.rn.f64"),
    }
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def compiled() -> dict:
    return last_json(run_fresh(COMPILE_SCRIPT, simulator=False))


def test_every_kernel_compiles_for_sm_90_without_spills(compiled):
    assert set(compiled) == {"rank", "two nearest", "count within", "verify", "synthesis"} | {
        f"{kind} {capacity}" for kind in ("knn", "mixed") for capacity in (16, 32, 64, 128)}
    for name, kernel in compiled.items():
        assert kernel["sm_90"], name
        assert kernel["spill_stores"] == kernel["spill_loads"] == 0, (name, kernel)
        assert kernel["registers"] <= 128, (name, kernel)  # 16 warps per SM stay resident


def test_the_memory_estimate_covers_every_kernels_local_memory(compiled):
    """``ensure_fits`` reserves ``LOCAL_BYTES_PER_THREAD`` for every resident thread: no
    kernel's stack frame (its per-thread arrays) may be larger, and the largest fills it."""
    frames = {name: kernel["stack_frame"] for name, kernel in compiled.items()}
    estimate = compiled["rank"]["local_estimate"]
    assert max(frames.values()) <= estimate, frames
    assert frames["knn 128"] >= 0.9 * estimate, frames


def test_pair_distances_use_round_to_nearest_operations(compiled):
    """``exact_sub``/``exact_mul``/``exact_add`` become ``add.rn``/``mul.rn``: PTX that the
    assembler may not fuse, so the device computes every pair as the CPU does (the mixed-type
    distance has no multiplication; the Chebyshev count only differences)."""
    for name, kernel in compiled.items():
        multiplies, adds = ((0, 1) if name == "count within" else
                            (0, 2) if name.startswith("mixed") else (1, 2))  # fmt: skip
        assert kernel["exact_multiplies"] >= multiplies, (name, kernel)
        assert kernel["exact_adds"] >= adds, (name, kernel)

"""Every CUDA kernel of ``gpu_avatar.kernels.cuda`` with the argument types its host wrapper
launches it with: for the checks that compile them outside the simulator, in a subprocess
(``test_cuda_compile.py``, ``test_cuda_cache.py``)."""

from __future__ import annotations


def kernels() -> dict:
    """``{name: (kernel, argument types)}``, one entry per kernel and top-k capacity."""
    from numba import types as nt

    from gpu_avatar.kernels import cuda as ck

    f2, f1 = nt.float64[:, ::1], nt.float64[::1]
    i2, i1, b1 = nt.int64[:, ::1], nt.int64[::1], nt.boolean[::1]
    tree = (f2, i1, i1, i1, i1, i1, f2, f2, i1)  # points, order, nodes, boxes, lowest indices
    table = {
        "rank": (ck._rank_kernel, tree + (f2, f1, i1, b1)),
        "two nearest": (ck._two_nearest_kernel, tree + (f2, f1, f1, i1)),
        "count within": (ck._count_within_kernel, (f2, i1, i1, i1, i1, f2, f2, f2, nt.float64,
                                                   nt.int64, i1)),
    }
    for capacity in ck.K_CAPACITIES:
        table[f"knn {capacity}"] = (ck._knn_kernel(capacity), tree + (i1, nt.int64, i2, f2))
        table[f"mixed {capacity}"] = (ck._mixed_kernel(capacity, ck.MIXED_TILE_VALUES),
                                      (f1, nt.int64, b1, f2) + (nt.int64,) * 4 + (i2, f2))
    table["verify"] = (ck._verify_kernel, (f2, i2, nt.int64, i2, f2))
    table["synthesis"] = (ck._synthesis_kernel, (f2, i2, i2, f2, f2, f2, i2))
    return table

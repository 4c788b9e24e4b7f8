"""Each CPU kernel compiles once, whatever arrays its driver is given: numba compiles a kernel
again for each other dtype, memory layout or read-only flag of an argument, and for a numpy
integer ``k``, so the drivers pass their kernels ``kernels.host_array``s and Python ints. Each
driver is called with its arrays as they come from the pipeline, then with every array
Fortran-ordered or strided, read-only, of a narrower dtype (values exact in it), and ``k`` a
numpy int32: no kernel gains a signature, and every result is the same, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.dispatcher import Dispatcher

from gpu_avatar import parallel, synthesis_kernels
from gpu_avatar.kernels import knn, mixed, ranks, tree
from gpu_avatar.projection import modalities
from gpu_avatar.relational import transport


def _eighths(rng, shape, low=-4, high=4):
    """Multiples of 1/8: exact in float32, and so are their squared distances here."""
    return rng.integers(8 * low, 8 * high, size=shape) / 8.0


def _layout(array):
    """The array Fortran-ordered (2-D) or strided (1-D), the same values."""
    if array.ndim == 2:
        return np.asfortranarray(array)
    return np.repeat(array, 2)[::2]


def _read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def _narrower(array):
    """float32 for floats, int32 for integers (the values are exact in both)."""
    narrow = {"f": np.float32, "i": np.int32}.get(array.dtype.kind)
    return array if narrow is None else array.astype(narrow)


VARIANTS = {"layout": _layout, "read-only": _read_only, "narrower dtype": _narrower}


def _cases():
    """(name, driver, arguments, the kernels it compiles)."""
    rng = np.random.default_rng(0)
    n, k = 300, 5
    points = _eighths(rng, (n, 3))
    avatars = points + _eighths(rng, (n, 3), -1, 1)
    own = ((points - avatars) ** 2).sum(axis=1)
    candidates = np.argsort(((points[:, None] - points[None]) ** 2).sum(axis=2), axis=1)[:, :8]
    references = np.column_stack([_eighths(rng, (n, 2), 0, 1), rng.integers(0, 3, (n, 2))])
    continuous, codes = _eighths(rng, (n, 2)), rng.integers(0, 4, (n, 3))
    neighbours = rng.integers(0, n, (50, k))
    weights, uniforms = _eighths(rng, (50, k), 0, 1) + 0.125, _eighths(rng, (50, 3), 0, 1)
    offsets = np.array([0, 4, 8, 12])
    cost, capacity = _eighths(rng, (40, 6), 0, 4), np.array([10, 10, 5, 5, 5, 5])
    return [
        ("KDTree.build", tree.KDTree.build, (points,), [tree._boxes, tree._split]),
        ("nearest_others", knn.nearest_others, (points, k),
         [knn._nearest_by_leaf, knn._group_nearest]),
        ("nearest_others_of", knn.nearest_others_of, (points, np.arange(0, n, 7), k),
         [knn._nearest_others_of]),
        ("verify_candidates", knn.verify_candidates,
         (points, candidates, np.full(n, 4.0), np.full(n, 0.125), k), [knn._verify]),
        ("distance_ranks", ranks.distance_ranks, (points, avatars, own),
         [ranks._ranks, knn._nearest_by_leaf, knn._group_nearest, ranks._rank_visit,
          ranks._scan_slot]),
        ("nearest_reference", ranks.nearest_reference, (avatars, points),
         [knn._nearest_by_leaf, knn._group_nearest]),
        ("count_within", ranks.count_within, (avatars, points, 0, 2), [ranks._count_within]),
        ("nearest_mixed", mixed.nearest_mixed,
         (references, np.array([False, False, True, True]), references[:60], k),
         [mixed._nearest_mixed]),
        ("synthesize_block", synthesis_kernels.synthesize_block,
         (continuous, codes, neighbours, weights, uniforms), [synthesis_kernels._synthesize]),
        ("random_ranks", synthesis_kernels.random_ranks, (uniforms,),
         [synthesis_kernels._random_ranks]),
        ("modality_statistics", modalities.modality_statistics, (continuous, codes, offsets),
         [modalities._modality_statistics]),
        ("transport", transport.transport, (cost, capacity),
         [transport._transport, transport._move_costs]),
    ]  # fmt: skip


SERIAL_DRIVERS = {"nearest_mixed", "modality_statistics", "transport"}  # not on in_blocks


def _results(value):
    if isinstance(value, tree.KDTree):
        return value.walk()
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case[0])
def test_each_cpu_kernel_compiles_once_whatever_the_arrays(case):
    name, driver, arguments, kernels = case
    expected = _results(driver(*arguments))
    signatures = {kernel: set(kernel.signatures) for kernel in kernels}
    for variant, transform in VARIANTS.items():
        changed = [transform(a) if isinstance(a, np.ndarray) else np.int32(a)
                   for a in arguments]  # fmt: skip
        got = _results(driver(*changed))
        for want, have in zip(expected, got, strict=True):
            np.testing.assert_array_equal(have, want, err_msg=f"{name}, {variant}")
        for kernel, before in signatures.items():
            assert set(kernel.signatures) == before, (name, variant, kernel.py_func.__name__)


def test_the_shared_walks_compile_only_inline():
    """The CPU versions of the shared walks (``tree.shared``) are inlined by numba into the
    drivers that call them, before typing: none is ever compiled on its own (which would add
    to the kernels' first-use compile time)."""
    walks = {name: walk for name, walk in vars(tree.cpu_walks).items()
             if isinstance(walk, Dispatcher)}  # fmt: skip
    assert {"pair_squared", "knn_query", "two_nearest_query", "synthesize_row",
            "exact_add"} <= set(walks)  # fmt: skip
    for _, driver, arguments, _ in _cases():
        driver(*arguments)
    assert {name: walk.signatures for name, walk in walks.items() if walk.signatures} == {}


@pytest.mark.parametrize("case", [case for case in _cases() if case[0] not in SERIAL_DRIVERS],
                         ids=lambda case: case[0])
def test_each_cpu_kernel_gives_the_same_bits_on_any_number_of_threads(case, monkeypatch):
    """``parallel.in_blocks`` splits the work items by thread count (and the rank walk its
    blocks of originals): one thread, three or seven, the same results. (The attacks' scan runs
    on numba's parallel loop; the transport and modality statistics are serial.)"""
    name, driver, arguments, _ = case
    results = []
    for count in (1, 3, 7):
        monkeypatch.setattr(parallel, "thread_count", lambda count=count: count)
        results.append(_results(driver(*arguments)))
    for other in results[1:]:
        for want, have in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(have, want, err_msg=name)

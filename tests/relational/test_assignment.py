"""Giving avatar children avatar parents (docs/spec/multitable.md, section 2,
step 3, and section 3): sum-preserving
rounding of the avatarized children counts, nearest parent, and the linear sum assignment,
exact below the block size and in balanced blocks above it."""

from __future__ import annotations

import multiprocessing
import sys
import types
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from gpu_avatar import AvatarError
from gpu_avatar.backend import CPU
from gpu_avatar.relational import assignment
from gpu_avatar.relational.assignment import (
    DEFAULT_BLOCK_SIZE,
    assign_linear_sum,
    assign_minimum_distance,
    balanced_blocks,
    calibrated_counts,
)


def assignment_problem(n_children: int, n_parents: int, seed: int, dim: int = 5):
    """Parents in a ``dim``-D shared space with skewed children counts (zeros included), and
    children scattered around their parent, as after avatarization."""
    rng = np.random.default_rng(seed)
    parents = rng.standard_normal((n_parents, dim))
    draws = rng.negative_binomial(1, 0.3, n_parents)
    counts = calibrated_counts(draws, draws, n_children, k=1)
    owner = np.repeat(np.arange(n_parents), rng.permutation(counts))
    children = parents[owner] + 0.5 * rng.standard_normal((n_children, dim))
    return children, parents, counts


def exact_cost(children, parents, counts) -> float:
    """The optimum, straight from scipy on the dense slots x children matrix."""
    cost = cdist(parents[np.repeat(np.arange(len(parents)), counts)], children)
    rows, columns = linear_sum_assignment(cost)
    return float(cost[rows, columns].sum())


def assignment_cost(children, parents, parent_of_child) -> float:
    return float(np.linalg.norm(children - parents[parent_of_child], axis=1).sum())


# ------------------------------------------------------------ children per parent, calibrated
def test_calibrated_counts_keep_the_original_distribution_in_the_avatarized_order():
    rng = np.random.default_rng(0)
    original = np.repeat([0, 1, 2, 3, 4, 5], [400, 165, 53, 21, 7, 1])  # rhDNase's infections
    avatarized = original + rng.normal(0, 0.6, original.size)  # barycentres: shrunk, noisy
    avatarized = 0.5 * avatarized + 0.5 * original.mean()
    counts = calibrated_counts(avatarized, original, int(original.sum()) - 1, k=5)
    # every count held by k parents or more and 1 % of them, as held; the one patient with 5
    # infections gets 4, the nearest count held more widely
    np.testing.assert_array_equal(np.bincount(counts), [400, 165, 53, 21, 8])
    order = np.argsort(avatarized, kind="stable")
    assert (np.diff(counts[order]) >= 0).all()  # the avatarized ranks kept
    # the shrunk counts rounded, as before, lose the tails
    assert (np.rint(avatarized) >= 3).sum() < 29
    # with k = 20, 4 and 5 infections (7 and 1 patients) are not handed out as such
    assert calibrated_counts(avatarized, original, int(original.sum()), k=20).max() == 3


@pytest.mark.parametrize("total", [0, 400, 600, 1200])
def test_calibrated_counts_sum_to_the_avatar_children_within_a_point_per_count(total):
    rng = np.random.default_rng(1)
    original = rng.negative_binomial(1, 0.4, 500)
    counts = calibrated_counts(original + rng.normal(0, 1, 500), original, total, k=1)
    assert counts.sum() == total and (counts >= 0).all() and counts.dtype.kind == "i"
    if abs(total - original.sum()) <= 50:  # a few more or fewer children: shares within 1 pt
        width = max(counts.max(), original.max()) + 1
        held = np.bincount(original, minlength=width)
        common = held >= 0.01 * 500
        shares = np.bincount(counts, minlength=width) / 500
        off = np.abs(shares - held / 500)[common[:width]]
        assert off.max() <= 0.01 + held[~common].sum() / 500 + abs(total - original.sum()) / 500


def test_calibrated_counts_refuse_inconsistent_sizes_and_read_missing_as_zero():
    counts = calibrated_counts(np.array([np.nan, 2.0, 0.5]), np.array([0, 1, 3]), 4, k=1)
    assert counts.sum() == 4 and counts[0] == 0  # the missing one ranks lowest
    for avatarized, original, total in ((np.ones(3), np.ones(3, dtype=int), -1),
                                        (np.ones(0), np.ones(0, dtype=int), 3),
                                        (np.ones(2), np.ones(3, dtype=int), 3)):
        with pytest.raises(AvatarError, match="children"):
            calibrated_counts(avatarized, original, total, k=1)


# ----------------------------------------------------------------------- minimum distance
def test_minimum_distance_gives_each_child_its_nearest_parent():
    rng = np.random.default_rng(0)
    parents, children = rng.standard_normal((40, 3)), rng.standard_normal((300, 3))
    result = assign_minimum_distance(children, parents)
    distances = cdist(children, parents)
    np.testing.assert_array_equal(result.parent, distances.argmin(axis=1))
    assert result.total_cost == pytest.approx(distances.min(axis=1).sum())


def test_minimum_distance_ties_go_to_the_lowest_parent_on_both_backends(gpu):
    """Parents on a grid (duplicates, children halfway between two): each child takes the
    lowest-index parent among the nearest, on the CPU and on the GPU alike."""
    rng = np.random.default_rng(1)
    parents = rng.integers(0, 3, size=(60, 2)).astype(float)
    children = rng.integers(0, 5, size=(200, 2)) / 2.0
    expected = cdist(children, parents).argmin(axis=1)  # the first of the minima
    assert (np.sort(cdist(children, parents), axis=1)[:, 1]
            == cdist(children, parents).min(axis=1)).all()  # every child has a tie
    for backend in (CPU, gpu):
        result = assign_minimum_distance(children, parents, backend)
        np.testing.assert_array_equal(result.parent, expected)


# ------------------------------------------------------------------ linear sum assignment
def test_exact_path_returns_the_optimum():
    children, parents, counts = assignment_problem(600, 200, seed=1)
    assert (counts == 0).any()
    result = assign_linear_sum(children, parents, counts)  # 600 <= default block size
    assert result.n_blocks == 1
    np.testing.assert_array_equal(np.bincount(result.parent, minlength=len(parents)), counts)
    optimum = exact_cost(children, parents, counts)
    assert result.total_cost == pytest.approx(optimum, rel=1e-9)
    assert assignment_cost(children, parents, result.parent) == pytest.approx(optimum, rel=1e-9)


def test_blocked_assignment_at_4000_is_within_5_percent_of_the_exact_optimum():
    n = 4000
    children, parents, counts = assignment_problem(n, 1300, seed=0)
    result = assign_linear_sum(children, parents, counts)
    assert n > DEFAULT_BLOCK_SIZE and result.n_blocks >= 2
    np.testing.assert_array_equal(np.bincount(result.parent, minlength=len(parents)), counts)
    achieved = assignment_cost(children, parents, result.parent)
    assert result.total_cost == pytest.approx(achieved, rel=1e-9)
    optimum = exact_cost(children, parents, counts)  # the dense solve: seconds, once
    assert optimum <= achieved * (1 + 1e-9)
    assert achieved <= 1.05 * optimum


def test_blocked_assignment_is_deterministic_and_independent_of_workers():
    children, parents, counts = assignment_problem(1500, 500, seed=2)
    runs = [
        assign_linear_sum(children, parents, counts, block_size=300),
        assign_linear_sum(children, parents, counts, block_size=300),
        assign_linear_sum(children, parents, counts, block_size=300, workers=1),
    ]
    assert runs[0].n_blocks >= 5
    for run in runs[1:]:
        np.testing.assert_array_equal(run.parent, runs[0].parent)
        assert run.total_cost == runs[0].total_cost
    np.testing.assert_array_equal(np.bincount(runs[0].parent, minlength=len(parents)), counts)


def test_blocked_assignment_reports_its_ratio_to_the_optimum_on_small_problems():
    children, parents, counts = assignment_problem(1200, 400, seed=3)
    result = assign_linear_sum(children, parents, counts, block_size=250)
    assert result.n_blocks > 1
    optimum = exact_cost(children, parents, counts)
    assert result.cost_ratio_to_exact == pytest.approx(result.total_cost / optimum, rel=1e-9)
    assert 1.0 - 1e-9 <= result.cost_ratio_to_exact < 1.3


@pytest.mark.parametrize("block_size", [1, 7, 64, 1000])
def test_balanced_blocks_partition_both_sides_into_equal_blocks(block_size):
    rng = np.random.default_rng(block_size)
    parents, children = rng.standard_normal((111, 4)), rng.standard_normal((333, 4))
    blocks = balanced_blocks(parents, np.repeat(np.arange(111), 3), children, block_size)
    for block_slots, block_children in blocks:
        assert len(block_slots) == len(block_children) <= block_size
    np.testing.assert_array_equal(np.sort(np.concatenate([b[0] for b in blocks])), np.arange(333))
    np.testing.assert_array_equal(np.sort(np.concatenate([b[1] for b in blocks])), np.arange(333))


def test_inconsistent_counts_and_bad_block_size_are_refused():
    children, parents, counts = assignment_problem(100, 30, seed=4)
    with pytest.raises(AvatarError, match="sum to 99 but there are 100 children"):
        assign_linear_sum(children, parents, counts - np.eye(1, 30, int(counts.argmax()), int))
    with pytest.raises(AvatarError, match="block_size"):
        assign_linear_sum(children, parents, counts, block_size=0)


@pytest.mark.parametrize("seed", range(6))
def test_transportation_solver_reaches_the_dense_optimum(seed):
    """Few parents with many children each (the transportation solver's case), ties included
    (rounded coordinates): the same total distance as the dense assignment of the slots,
    every parent receiving exactly its count."""
    from gpu_avatar.relational.transport import transport

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(50, 600)), int(rng.integers(1, 40))
    children, parents = rng.normal(size=(n, 3)), rng.normal(size=(m, 3))
    if seed % 2:
        children, parents = np.round(children), np.round(parents)
    counts = np.bincount(rng.integers(0, m, n), minlength=m)
    cost = cdist(children, parents)
    parent = transport(cost, counts)
    np.testing.assert_array_equal(np.bincount(parent, minlength=m), counts)
    assert cost[np.arange(n), parent].sum() == pytest.approx(
        exact_cost(children, parents, counts), rel=1e-12)


def test_blocked_transportation_is_exact_per_block_and_lowers_the_total():
    """Children gathered around few parents (the bench_multitable shape): blocks of the
    transportation solver give each block's optimum, and larger blocks a lower total."""
    rng = np.random.default_rng(4)
    parents = rng.normal(size=(60, 4))
    children = parents[rng.integers(0, 60, 6000)] + 0.5 * rng.normal(size=(6000, 4))
    counts = np.bincount(rng.integers(0, 60, 6000), minlength=60)
    small = assign_linear_sum(children, parents, counts, block_size=750)
    large = assign_linear_sum(children, parents, counts)  # the default: 4000-child blocks
    assert small.n_blocks == 8 and large.n_blocks == 2
    for result in (small, large):
        np.testing.assert_array_equal(np.bincount(result.parent, minlength=60), counts)
        assert assignment_cost(children, parents, result.parent) == pytest.approx(
            result.total_cost, rel=1e-9)
    assert large.total_cost < small.total_cost


# ------------------------------------------------------------- the worker processes' start
def test_workers_are_forked_unless_cuda_may_be_initialised(monkeypatch):
    """CUDA does not survive a fork: once it may be initialised, the block-solving workers
    come from a forkserver, with the same result; otherwise the platform's default start
    (fork on Linux), the cheapest."""
    started = []

    class Recording(ProcessPoolExecutor):
        def __init__(self, *args, mp_context=None, **kwargs):
            started.append(mp_context)
            super().__init__(*args, mp_context=mp_context, **kwargs)

    monkeypatch.setattr(assignment, "ProcessPoolExecutor", Recording)
    children, parents, counts = assignment_problem(600, 200, seed=4)
    monkeypatch.setattr(assignment, "cuda_may_be_initialised", lambda: False)
    forked = assign_linear_sum(children, parents, counts, block_size=150, workers=2)
    monkeypatch.setattr(assignment, "cuda_may_be_initialised", lambda: True)
    served = assign_linear_sum(children, parents, counts, block_size=150, workers=2)
    assert started[0] is None
    assert started[1].get_start_method() == "forkserver"
    assert forked.n_blocks >= 4
    np.testing.assert_array_equal(served.parent, forked.parent)
    assert served.total_cost == forked.total_cost


def test_spawned_workers_where_there_is_no_forkserver(monkeypatch):
    monkeypatch.setattr(assignment, "cuda_may_be_initialised", lambda: True)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert assignment.pool_context().get_start_method() == "spawn"


@pytest.fixture
def no_cuda_modules(monkeypatch):
    """A process where no CUDA library is imported (restored afterwards)."""
    for name in (*assignment.CUDA_MODULES, "torch"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert not assignment.cuda_may_be_initialised()
    assert assignment.pool_context() is None
    return monkeypatch


@pytest.mark.parametrize("module", assignment.CUDA_MODULES)
def test_cuda_may_be_initialised_once_a_cuda_library_is_imported(no_cuda_modules, module):
    no_cuda_modules.setitem(sys.modules, module, types.ModuleType(module))
    no_cuda_modules.setitem(
        sys.modules, "numba.cuda.core.config", types.SimpleNamespace(ENABLE_CUDASIM=0)
    )
    assert assignment.cuda_may_be_initialised()
    assert assignment.pool_context().get_start_method() == "forkserver"


def test_numba_cuda_simulator_and_torch_without_cuda_keep_the_fork(no_cuda_modules):
    """numba-cuda's simulator never initialises CUDA; torch only when it says so."""
    no_cuda_modules.setitem(sys.modules, "numba.cuda", types.ModuleType("numba.cuda"))
    no_cuda_modules.setitem(
        sys.modules, "numba.cuda.core.config", types.SimpleNamespace(ENABLE_CUDASIM=1)
    )
    initialised = [False]
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: initialised[0]))
    no_cuda_modules.setitem(sys.modules, "torch", torch)
    assert not assignment.cuda_may_be_initialised()
    initialised[0] = True
    assert assignment.cuda_may_be_initialised()

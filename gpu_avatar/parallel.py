"""The threads every CPU pass runs on: GIL-free compiled kernels and numpy calls, split into
independent tasks, each writing its own results, so no result depends on the thread count.
numba is imported only when a count is asked for (``import gpu_avatar`` imports no extra)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def thread_count() -> int:
    """numba's thread count of the calling thread (set per Dask task by
    ``distributed.cluster.on_worker``), at most the cores this process may use."""
    import numba

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(numba.get_num_threads(), cores or 1))


def on_threads(task: Callable[[int], None], starts) -> None:
    """``task(start)`` for every start, on ``thread_count()`` threads. Each task writes its own
    results, so the order the tasks run in changes no bit; numpy's generators and array
    operations, and the GIL-free (``nogil``) kernels, release the GIL while they run."""
    workers = min(len(starts), thread_count())
    if workers < 2:
        for start in starts:
            task(start)
        return
    with ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(task, start) for start in starts]:
            done.result()  # a task's error raised here


def in_blocks(kernel, items: int, *arguments) -> None:
    """``kernel(*arguments, first, last)`` over consecutive ranges covering items ``0..items``,
    eight ranges a thread (the items cost unevenly): the CPU kernels' parallel loop. A kernel
    is compiled ``nogil`` and serial: numba's ``parallel=True`` costs 1-3 s of compilation a
    kernel (its gufunc lowering); without it the first run compiles in half the time."""
    size = max(1, -(-items // (8 * thread_count())))
    on_threads(lambda first: kernel(*arguments, first, min(first + size, items)),
               range(0, items, size))  # fmt: skip

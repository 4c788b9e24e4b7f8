"""The threads every CPU pass runs on: GIL-free compiled kernels and numpy calls, split into
independent tasks, each writing its own results, so no result depends on the thread count.

Tasks of several callers at once (the threads of a Dask worker) share the process's cores: at
most one task a core runs at a time. A task never opens a pool of its own (it runs its inner
passes inline), so no pool waits on another. numba is imported only when a count is asked for
(``import gpu_avatar`` imports no extra)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

_inside = threading.local()  # ``task``: set in the threads of a pool


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@cache
def _slots() -> threading.Semaphore:
    """One slot a core, taken by each running task of every pool of the process."""
    return threading.Semaphore(_cores())


def thread_count() -> int:
    """numba's thread count of the calling thread (set per Dask task by
    ``distributed.cluster.on_worker``), at most the cores; 1 inside a pool's task."""
    if getattr(_inside, "task", False):
        return 1
    import numba

    return max(1, min(numba.get_num_threads(), _cores()))


def on_threads(task: Callable[[int], None], starts, threads: int | None = None) -> None:
    """``task(start)`` for every start, on ``threads`` threads (default ``thread_count()``).
    Each task writes its own results, so the order the tasks run in changes no bit; numpy's
    generators and array operations, and the GIL-free (``nogil``) kernels, release the GIL
    while they run. The first error is raised once the running tasks end; the tasks not
    started are dropped."""
    workers = min(len(starts), thread_count() if threads is None else threads)
    if workers < 2:
        for start in starts:
            task(start)
        return

    def run(start: int) -> None:
        _inside.task = True
        with _slots():
            task(start)

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run, start) for start in starts]
        try:
            for done in futures:
                done.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def in_blocks(kernel, items: int, *arguments) -> None:
    """``kernel(*arguments, first, last)`` over consecutive ranges covering items ``0..items``,
    eight ranges a thread (the items cost unevenly): the CPU kernels' parallel loop. A kernel
    is compiled ``nogil`` and serial: numba's ``parallel=True`` costs 1-4 s of compilation a
    kernel (its gufunc lowering); without it the first run compiles in half the time."""
    threads = thread_count()
    size = max(1, -(-items // (8 * threads)))
    on_threads(lambda first: kernel(*arguments, first, min(first + size, items)),
               range(0, items, size), threads)  # fmt: skip

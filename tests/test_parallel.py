"""``parallel.on_threads``, the CPU passes' thread pool: callers at once share the cores, a
task runs its inner passes inline, and an error stops what has not started."""

from __future__ import annotations

import threading
import time

import numba
import pytest

from gpu_avatar import parallel


@pytest.fixture
def two_cores(monkeypatch):
    """A process with two cores, numba asked for three threads, whatever the runner has."""
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)
    parallel._slots.cache_clear()
    yield
    parallel._slots.cache_clear()


def test_callers_at_once_run_at_most_a_task_a_core(two_cores):
    running, most, lock = [0], [0], threading.Lock()

    def task(_):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    callers = [threading.Thread(target=parallel.on_threads, args=(task, range(6)))
               for _ in range(3)]  # fmt: skip
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert most[0] == 2  # 3 callers x 2 threads each, 2 cores


def test_a_task_runs_its_inner_passes_inline(two_cores):
    inner = []

    def task(_):
        outer = threading.current_thread()
        parallel.on_threads(lambda start: inner.append((outer, threading.current_thread())),
                            range(4))  # fmt: skip

    parallel.on_threads(task, range(3))
    assert len(inner) == 12
    assert all(outer is thread for outer, thread in inner)  # no pool of the task's own
    assert parallel.thread_count() == 2  # outside a task: numba's count, at most the cores


def test_an_error_stops_the_tasks_not_started(two_cores):
    started = []

    def task(start):
        started.append(start)
        if start == 0:
            raise RuntimeError("task 0 failed")
        time.sleep(0.05)

    with pytest.raises(RuntimeError, match="task 0 failed"):
        parallel.on_threads(task, range(40))
    assert len(started) < 40
